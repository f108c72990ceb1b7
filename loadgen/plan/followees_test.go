package plan

import (
	"math"
	"testing"

	"github.com/pushpull/pushpull/loadgen/dataset"
)

// TestPowerLawFolloweesAreTheGenerators: the plan's followee counts of a
// power-law graph are those the generator draws, spread and all: the
// share of users who follow fewer than x authors, in a generated graph and
// in the plan's classes, within 8 points (the classes are steps: the
// lowest group of ranks, half the users, is five classes of a tenth) at counts from a page's worth
// (fewer than a page's followees leave a merge no floor) to a few times
// the mean, and the follows add up. The ranks' shares of the follows,
// which the classes took before, put half the users of a graph of mean 43
// at 19 followees, where the generator puts 23 % below 24.
func TestPowerLawFolloweesAreTheGenerators(t *testing.T) {
	for _, users := range []int{1000, 3000} {
		s := dataset.Spec{Users: users, Messages: 10, AvgFollowees: 42.9, Graph: dataset.GraphPowerLaw, Seed: 1}
		d, err := dataset.Generate(s)
		if err != nil {
			t.Fatal(err)
		}
		w := Workload{Users: users, AvgFollowees: 42.9, Graph: dataset.GraphPowerLaw, MessagesPerUser: 10, NewestPerSec: 1, PostsPerSec: 1}
		dc, err := w.classes()
		if err != nil {
			t.Fatal(err)
		}
		var edges float64
		for _, c := range dc.classes {
			edges += c.Users * c.Followees
		}
		if math.Abs(edges-float64(s.Edges())) > 0.01*edges {
			t.Errorf("%d users: %.0f follows in the classes, %d in the graph", users, edges, s.Edges())
		}
		for _, x := range []float64{16, 21, 24, 32, 48, 96, 200} {
			var gen, plan float64
			for _, fs := range d.Followees {
				if float64(len(fs)) < x {
					gen++
				}
			}
			gen /= float64(users)
			for _, c := range dc.classes {
				if c.Followees < x {
					plan += c.Users
				}
			}
			plan /= float64(users)
			t.Logf("%d users, fewer than %.0f followees: %.3f of the graph's users, %.3f of the plan's", users, x, gen, plan)
			if math.Abs(gen-plan) > 0.08 {
				t.Errorf("%d users, fewer than %.0f followees: %.3f of the graph's users, %.3f of the plan's", users, x, gen, plan)
			}
		}
	}
}
