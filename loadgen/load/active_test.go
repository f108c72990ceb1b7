package load

import (
	"math"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/registry"
)

// TestActiveUsers: under uniform activity about 1-exp(-ActiveReads) of
// the users start active; under skewed activity the heavy readers (the
// most followed) are active far more often than the rest; the choice
// follows the seed, not the call.
func TestActiveUsers(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.05)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, reads := range []float64{0.2, 1, 3} {
		active, users := ActiveUsers(d, registry.MailboxShape{ActiveReads: reads})
		want := -math.Expm1(-reads)
		if got := float64(active) / float64(users); math.Abs(got-want) > 0.03 {
			t.Fatalf("uniform, %g reads per window: %.3f of users active, want about %.3f", reads, got, want)
		}
	}
	if a, n := ActiveUsers(d, registry.MailboxShape{}); a != n {
		t.Fatalf("no ActiveReads: %d of %d users active, want all", a, n)
	}

	spec.Graph, spec.Activity = dataset.GraphPowerLaw, dataset.Activity{Mode: dataset.ActivitySkewed}
	skewed, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	shape := registry.MailboxShape{ActiveReads: 1}
	set := activeUsers(skewed, shape)
	byFollowers := make([]int, spec.Users)
	for i := range byFollowers {
		byFollowers[i] = i + 1
	}
	slices.SortFunc(byFollowers, func(a, b int) int { return len(skewed.Followers(uint32(b))) - len(skewed.Followers(uint32(a))) })
	share := func(us []int) float64 {
		n := 0
		for _, u := range us {
			if set[u-1] {
				n++
			}
		}
		return float64(n) / float64(len(us))
	}
	tenth := spec.Users / 10
	top, rest := share(byFollowers[:tenth]), share(byFollowers[tenth:])
	if top < rest+0.15 {
		t.Fatalf("skewed: %.2f of the most followed tenth active, %.2f of the rest: want the heavy readers active more often", top, rest)
	}
	again, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(activeUsers(again, shape), set) {
		t.Fatal("the same spec made different users active")
	}
}
