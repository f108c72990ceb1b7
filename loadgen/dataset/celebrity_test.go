package dataset

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/timeline"
)

// TestCelebrity: Spec.Celebrity gives user 1 exactly that many followers on
// the uniform and zipf graphs, leaves every followee count as drawn, keeps
// rows sorted, free of duplicates and self-follows, and is deterministic;
// ActivityCelebrity makes user 1 the author of every workload post.
func TestCelebrity(t *testing.T) {
	for _, graph := range []string{GraphUniform, GraphZipf} {
		base := Spec{Users: 3000, Messages: 1000, AvgFollowees: 30, Graph: graph, Seed: 4}
		plain := mustGenerate(t, base)
		for _, f := range []int{1, 10, 31, 500, 2900} {
			s := base
			s.Celebrity = f
			d := mustGenerate(t, s)
			if got := len(d.Followers(1)); got != f {
				t.Errorf("%s, celebrity %d: user 1 has %d followers", graph, f, got)
			}
			for i, row := range d.Followees {
				if len(row) != len(plain.Followees[i]) {
					t.Fatalf("%s, celebrity %d: user %d follows %d, %d without the celebrity", graph, f, i+1, len(row), len(plain.Followees[i]))
				}
				if !slices.IsSorted(row) || len(slices.Compact(slices.Clone(row))) != len(row) || slices.Contains(row, uint32(i+1)) {
					t.Fatalf("%s, celebrity %d: user %d's row %v", graph, f, i+1, row)
				}
			}
			again := mustGenerate(t, s)
			for i := range d.Followees {
				if !slices.Equal(d.Followees[i], again.Followees[i]) {
					t.Fatalf("%s, celebrity %d: two generations differ at user %d", graph, f, i+1)
				}
			}
		}
	}

	s := Spec{Users: 50, Messages: 100, AvgFollowees: 5, Celebrity: 30, Seed: 1,
		Activity: Activity{Mode: ActivityCelebrity}}
	d := mustGenerate(t, s)
	r := rand.New(rand.NewPCG(1, 1))
	for range 100 {
		if a := d.PickAuthor(r); a != 1 {
			t.Fatalf("ActivityCelebrity drew author %d, want 1", a)
		}
	}
	readers := map[timeline.UserID]bool{}
	for range 1000 {
		readers[d.PickReader(r)] = true
	}
	if len(readers) < 40 {
		t.Errorf("ActivityCelebrity drew %d distinct readers of 50, want them uniform", len(readers))
	}
	// Without Spec.Celebrity, the celebrity is the most followed user.
	s = Spec{Users: 500, Messages: 100, AvgFollowees: 10, Graph: GraphZipf, Seed: 2, Activity: Activity{Mode: ActivityCelebrity}}
	d = mustGenerate(t, s)
	in, _ := degreesOf(d)
	top := d.PickAuthor(r)
	if slices.Max(in) != in[top-1] {
		t.Errorf("celebrity %d has %d followers; the most followed has %d", top, in[top-1], slices.Max(in))
	}

	for _, bad := range []Spec{
		{Users: 50, Messages: 1, AvgFollowees: 5, Celebrity: 50},
		{Users: 50, Messages: 1, AvgFollowees: 5, Celebrity: -1},
		{Users: 50, Messages: 1, AvgFollowees: 5, Celebrity: 3, Graph: GraphPowerLaw},
		{Users: 50, Messages: 1, AvgFollowees: 0.1, Celebrity: 40}, // only ~5 users follow anyone
		{Users: 50, Messages: 1, Followees: 49, Celebrity: 40},     // everyone follows everyone
	} {
		_, err := Generate(bad)
		var se *SpecError
		if !errors.As(err, &se) || se.Field != "Celebrity" {
			t.Errorf("Generate(%+v): %v, want a SpecError on Celebrity", bad, err)
		}
	}
}

// TestWorkloadMeans checks the dataset's account of what a workload post
// reaches and a workload read merges against the pickers' own draws.
func TestWorkloadMeans(t *testing.T) {
	for _, s := range []Spec{
		{Users: 2000, Messages: 1000, AvgFollowees: 20, Seed: 1},
		{Users: 2000, Messages: 1000, AvgFollowees: 20, Graph: GraphPowerLaw, Seed: 1},
		{Users: 2000, Messages: 1000, AvgFollowees: 20, Graph: GraphPowerLaw, Seed: 1, Activity: Activity{Mode: ActivitySkewed, PostExponent: 1, ReadExponent: 0.2}},
		{Users: 2000, Messages: 1000, AvgFollowees: 20, Celebrity: 700, Seed: 1, Activity: Activity{Mode: ActivityCelebrity}},
	} {
		d := mustGenerate(t, s)
		audience, followees := d.WorkloadMeans()
		in, out := degreesOf(d)
		r := rand.New(rand.NewPCG(5, 6))
		const draws = 200_000
		var a, f float64
		for range draws {
			a += float64(in[d.PickAuthor(r)-1])
			f += float64(out[d.PickReader(r)-1])
		}
		a, f = a/draws, f/draws
		t.Logf("%s %s: audience %.1f (drawn %.1f), followees %.1f (drawn %.1f)", s.Graph, d.Spec.Activity, audience, a, followees, f)
		if math.Abs(a-audience) > 0.05*audience || math.Abs(f-followees) > 0.05*followees {
			t.Errorf("%s %s: WorkloadMeans %.1f, %.1f; the pickers drew %.1f, %.1f", s.Graph, d.Spec.Activity, audience, followees, a, f)
		}
	}
}
