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

func TestTabletCallFigures(t *testing.T) {
	before := map[string]int64{counter.TabletCalls: 10, counter.TabletTrips: 20, counter.TabletCommits: 1}
	after := map[string]int64{counter.TabletCalls: 70, counter.TabletTrips: 120, counter.TabletCommits: 21, counter.SequenceCalls: 10}
	got := TabletCallFigures("post_", before, after, 10)
	want := map[string]float64{"post_tablet_calls": 6, "post_tablet_trips": 10, "post_tablet_commits": 2, "post_tablet_sequence_calls": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := TabletCallFigures("post_", nil, map[string]int64{counter.Pages: 3}, 10); got != nil {
		t.Fatalf("a store that counts no tablet calls: %v", got)
	}
	if got := TabletCallFigures("post_", map[string]int64{counter.Pages: 3}, after, 10); got != nil {
		t.Fatalf("counts that could not be read before the phase: %v", got)
	}
}

func TestProbeFigures(t *testing.T) {
	got := ProbeFigures("probe_post_", []ProbeSample{{Shards: 1, Calls: 3, Trips: 5, Commits: 1, Sequence: 1}, {Shards: 2, Calls: 5, Trips: 9, Commits: 2, Sequence: 1, CrossShard: 1}})
	for k, want := range map[string]float64{
		"probe_post_shards_mean": 1.5, "probe_post_shards_max": 2, "probe_post_trips_mean": 7, "probe_post_trips_max": 9,
		"probe_post_sequence_mean": 1, "probe_post_cross_shard_mean": 0.5, "probe_post_savepoints_max": 0,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	if ProbeFigures("x_", nil) != nil {
		t.Error("no samples: want no figures")
	}
	r := &Result{Models: []Model{{Name: "push@vitess", Extra: got}}}
	if g := probeGrid(r); g == nil || len(g.rows) != 2 || g.rows[1][1] != "post" || g.rows[1][2] != "1.50 (2)" {
		t.Fatalf("grid of one probed operation (a header and a row): %+v", g)
	}
}

// TestFanoutFigures: the workers' counts and times per chunk over a phase,
// and nothing for a store that times no steps or committed no chunk.
func TestFanoutFigures(t *testing.T) {
	before := map[string]int64{counter.FanoutChunks: 10, counter.FanoutJobs: 100, counter.FanoutRows: 4000, counter.FanoutLooks: 12,
		counter.FanoutClaimMicros: 1000}
	after := map[string]int64{counter.FanoutChunks: 30, counter.FanoutJobs: 300, counter.FanoutRows: 12000, counter.FanoutLooks: 52,
		counter.FanoutEmptyLooks: 10, counter.FanoutHeldLooks: 10, counter.FanoutClaimMicros: 41000, counter.FanoutReadMicros: 20000,
		counter.FanoutRouteMicros: 0, counter.FanoutWriteMicros: 60000, counter.FanoutCommitMicros: 20000}
	got := FanoutFigures("half_rate_", before, after)
	want := map[string]float64{"half_rate_fanout_jobs_per_chunk": 10, "half_rate_fanout_rows_per_chunk": 400,
		"half_rate_fanout_looks_per_chunk": 2, "half_rate_fanout_empty_looks_per_chunk": 0.5, "half_rate_fanout_held_looks_per_chunk": 0.5,
		"half_rate_fanout_claim_ms": 2, "half_rate_fanout_read_ms": 1, "half_rate_fanout_route_ms": 0,
		"half_rate_fanout_write_ms": 3, "half_rate_fanout_commit_ms": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := FanoutFigures("", before, map[string]int64{counter.FanoutChunks: 30}); got != nil {
		t.Fatalf("workers that time no steps: %v", got)
	}
	if got := FanoutFigures("", after, after); got != nil {
		t.Fatalf("no chunk committed: %v", got)
	}
}
