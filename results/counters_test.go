package results

import (
	"maps"
	"testing"

	"github.com/pushpull/pushpull/timeline/counter"
)

// TestIndexFigures: builds, patches and fallbacks per operation over a
// phase, and nothing for a store that counts no builds.
func TestIndexFigures(t *testing.T) {
	before := map[string]int64{counter.IndexBuilds: 10, counter.IndexPatches: 4, counter.IndexFallbacks: 100}
	after := map[string]int64{counter.IndexBuilds: 15, counter.IndexPatches: 24, counter.IndexFallbacks: 140}
	got := IndexFigures("traffic_", before, after, 1000)
	want := map[string]float64{"traffic_index_builds_per_op": 0.005, "traffic_index_patches_per_op": 0.02,
		"traffic_index_fallbacks_per_op": 0.04}
	if !maps.Equal(got, want) {
		t.Fatalf("figures %v, want %v", got, want)
	}
	if got := IndexFigures("", nil, map[string]int64{counter.Hints: 3}, 1000); got != nil {
		t.Fatalf("a store without indexes: %v", got)
	}
	if got := IndexFigures("", before, after, 0); got != nil {
		t.Fatalf("no operations: %v", got)
	}
}
