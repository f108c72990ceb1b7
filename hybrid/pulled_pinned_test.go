package hybrid_test

import (
	"math"
	"testing"

	"github.com/pushpull/pushpull/hybrid"
	"github.com/pushpull/pushpull/registry"
)

// pulledPageDemand is a skewed graph of four classes: two of authors
// followed by many (the pulled ones above a threshold of 50), one of
// rare authors and one of readers only.
func pulledPageDemand(followees float64) registry.Demand {
	return registry.Demand{Users: 1000, Messages: 1e5, Page: 20, OlderDepth: 3.5, PostsPerSec: 10, ReadsPerSec: 100, ActiveShare: 1,
		Classes: []registry.UserClass{
			{Users: 5, Followers: 400, Followees: 10, Posts: 20, Reads: 1},
			{Users: 20, Followers: 80, Followees: followees, Posts: 5, Reads: 1},
			{Users: 500, Followers: 10, Followees: followees, Posts: 1, Reads: 1},
			{Users: 475, Followers: 2, Followees: 2 * followees, Posts: 0.1, Reads: 2},
		}}.Prepared()
}

// TestPulledPagePinned pins PulledPage's rows on a few skewed graphs
// (pulledPageDemand) to the values it gave before its span's search
// became registry.SolveIncreasing: the search's result must not move.
func TestPulledPagePinned(t *testing.T) {
	for _, c := range []struct {
		followees, threshold float64
		read, written        uint64 // math.Float64bits of the rows
	}{
		{followees: 5, threshold: 50, read: 0x404cbf4a3e3a3b41, written: 0x405307e28d52515a},
		{followees: 30, threshold: 50, read: 0x404db0c7e8e97752, written: 0x4050711a283b7c95},
		{followees: 30, threshold: 300, read: 0x40417b144c276141, written: 0x40473452794c6cbf},
		{followees: 200, threshold: 50, read: 0x40355ee51519606a, written: 0x4037addf36991da3},
	} {
		w := hybrid.PulledPage(pulledPageDemand(c.followees), c.threshold)
		if math.Float64bits(w.RowsRead) != c.read || math.Float64bits(w.RowsWritten) != c.written {
			t.Errorf("%v followees, threshold %v: rows read %v and written %v, want %v and %v", c.followees, c.threshold,
				w.RowsRead, w.RowsWritten, math.Float64frombits(c.read), math.Float64frombits(c.written))
		}
	}
}
