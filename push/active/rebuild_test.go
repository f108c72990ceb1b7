package active

import (
	"testing"

	"github.com/pushpull/pushpull/registry"
)

// TestRebuildMergeManyFollowees: a reader of more followees than the
// rebuild's fetch is Read's range scan, which reads the fetch newest
// heads' authors down to the fetch-th head: at least the fetch ids, and
// few more when the followees are many (a reader of 100,000 replayed with
// mergeFollowees fetches' worth).
func TestRebuildMergeManyFollowees(t *testing.T) {
	const fetch = DefaultRebuild + 1
	for _, g := range []float64{2 * fetch, 100_000} {
		d := registry.Demand{Users: g + 1, Messages: 100 * g, Page: 20, PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1,
			Classes: []registry.UserClass{
				{Users: g, Followers: 1, Posts: 1},
				{Users: 1, Followees: g, Reads: 1},
			}}
		m := rebuildMerge(d.Prepared(), DefaultRebuild)
		t.Logf("%.0f followees: %.0f ids scanned, %.0f scratch rows", g, m.scanned, m.scratch)
		if m.scanned < fetch || m.scanned > 1.5*fetch || m.scratch != m.scanned {
			t.Errorf("%.0f followees: %.0f ids scanned and %.0f scratch rows, want the range scan's, %d to %.0f, both alike",
				g, m.scanned, m.scratch, fetch, 1.5*fetch)
		}
	}
}
