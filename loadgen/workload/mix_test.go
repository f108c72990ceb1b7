package workload

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseMix(t *testing.T) {
	m, err := ParseMix(" newest=80, older=10,post=8,follow=1,unfollow=1 ")
	if err != nil {
		t.Fatal(err)
	}
	if m.String() != "newest=80,older=10,post=8,follow=1,unfollow=1" || m.Share(OpPost) != 0.08 {
		t.Fatalf("%s, post share %v", m, m.Share(OpPost))
	}
	if d, _ := ParseMix("default"); d.String() != DefaultMixSpec || d.Share(OpNewest)+d.Share(OpOlder) < 0.9 {
		t.Fatalf("default mix %s", d)
	}
	// pick follows the weights.
	counts := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		counts[MixOps[m.pick(rng.Float64())]]++
	}
	if counts[OpNewest] < 79000 || counts[OpNewest] > 81000 || counts[OpFollow] < 800 || counts[OpFollow] > 1200 {
		t.Fatalf("picked %v", counts)
	}
	if only, _ := ParseMix("post=1"); only.pick(0.999) != 2 || only.pick(0) != 2 {
		t.Fatal("a one-operation mix picked another")
	}
	if del, err := ParseMix("newest=90,post=9,delete=1"); err != nil || del.Share(OpDelete) != 0.01 || del.String() != "newest=90,post=9,delete=1" {
		t.Fatalf("a mix with deletes: %v, %v", del, err)
	}
	for _, bad := range []string{"", "newest", "newest=", "newest=-1", "newest=NaN", "newest=Inf", "newest=1,newest=2",
		"read=1", "newest=0,post=0", "newest=1;post=1", "newest=9,delete=1", "post=0,delete=1"} {
		_, err := ParseMix(bad)
		var me *MixError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), "mix") {
			t.Errorf("%q: got %v, want a *MixError", bad, err)
		}
	}
}
