package results

import hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

// Counter keys: the names under which stores report their cumulative
// counts (registry.Counting). The benchmark snapshots them before and after
// a phase, and CounterFigures turns the difference into the figures of a
// model's Extra. A store reports only the keys that apply to it.
const (
	// CounterPages: timeline pages served by a read that counts rows.
	CounterPages = "pages"
	// CounterRowsRead: index entries and rows those pages made the
	// database examine.
	CounterRowsRead = "rows_read"
	// CounterPageHits, CounterPageMisses: newest pages served from a page
	// cache, and read from the store behind it.
	CounterPageHits   = "page_hits"
	CounterPageMisses = "page_misses"
	// CounterListHits, CounterListMisses: per-author lists of recent ids
	// taken from memcached, and rebuilt from the database.
	CounterListHits   = "list_hits"
	CounterListMisses = "list_misses"
	// CounterCacheErrors: memcached operations that failed (the call went
	// on without memcached).
	CounterCacheErrors = "cache_errors"
	// CounterFolloweeHits, CounterFolloweeMisses: reads whose followee
	// list came from the process's cache, and from the database.
	CounterFolloweeHits   = "followee_hits"
	CounterFolloweeMisses = "followee_misses"
	// CounterIndexReads: pages served from the lists a recently-active
	// index named; CounterIndexFallbacks: indexed reads the index could
	// not prove (read from every list); CounterIndexBuilds: indexes
	// built from the database; CounterIndexPatches: indexes brought up to
	// date after a follow or unfollow without a build.
	CounterIndexReads     = "index_reads"
	CounterIndexFallbacks = "index_fallbacks"
	CounterIndexBuilds    = "index_builds"
	CounterIndexPatches   = "index_patches"
	// CounterHints: hints that posts appended to their followers'
	// indexes.
	CounterHints = "hints"
)

// Edge counters of a store that decides push or pull per follow edge
// (selective). CounterEdgesPushed and CounterEdgesPulled are how many
// edges are each now (levels, not cumulative); the flips are cumulative,
// and CounterFlipRows the mailbox rows they backfilled or removed.
// CounterCostH and CounterCostL are the store's current H and L (one
// fan-out row, one pulled author's probe) in nanoseconds.
const (
	CounterEdgesPushed   = "edges_pushed"
	CounterEdgesPulled   = "edges_pulled"
	CounterEdgeFlipsPush = "edge_flips_push"
	CounterEdgeFlipsPull = "edge_flips_pull"
	CounterFlipRows      = "flip_rows"
	CounterCostH         = "cost_h_ns"
	CounterCostL         = "cost_l_ns"
)

// CounterFigures turns the counts a store kept over a phase of reads (after
// minus before) into figures, named with prefix: hit ratios, errors, rows
// per page, the share of indexed pages. A figure whose counts are absent or
// zero is left out.
func CounterFigures(prefix string, before, after map[string]int64) map[string]float64 {
	if after == nil {
		return nil
	}
	d := func(key string) int64 { return after[key] - before[key] }
	has := func(key string) bool { _, ok := after[key]; return ok }
	out := map[string]float64{}
	ratio := func(name, hits, misses string) bool {
		h, m := d(hits), d(misses)
		if h+m > 0 {
			out[prefix+name] = float64(h) / float64(h+m)
			return true
		}
		return false
	}
	if has(CounterPageHits) {
		ratio("hit_ratio", CounterPageHits, CounterPageMisses)
		out[prefix+"cache_errors"] = float64(d(CounterCacheErrors))
	}
	pages := d(CounterPages)
	if pages > 0 && has(CounterRowsRead) {
		out[prefix+"rows_per_page"] = float64(d(CounterRowsRead)) / float64(pages)
	}
	if ratio("list_hit_ratio", CounterListHits, CounterListMisses) {
		out[prefix+"cache_errors"] = float64(d(CounterCacheErrors))
	}
	ratio("followee_hit_ratio", CounterFolloweeHits, CounterFolloweeMisses)
	if p, q := after[CounterEdgesPushed], after[CounterEdgesPulled]; p+q > 0 {
		// Levels at the phase's end, and the flips during it.
		out[prefix+"pushed_edge_share"] = float64(p) / float64(p+q)
		out[prefix+"edge_flips"] = float64(d(CounterEdgeFlipsPush) + d(CounterEdgeFlipsPull))
		if h, l := after[CounterCostH], after[CounterCostL]; h > 0 && l > 0 {
			out[prefix+"h_over_l"] = float64(h) / float64(l)
		}
	}
	if indexed, short := d(CounterIndexReads), d(CounterIndexFallbacks); pages > 0 && after[CounterIndexBuilds] > 0 {
		out[prefix+"indexed_page_ratio"] = float64(indexed) / float64(pages)
		if indexed+short > 0 {
			out[prefix+"index_fallback_ratio"] = float64(short) / float64(indexed+short)
		}
	}
	return out
}

// IndexFigures turns what a store that keeps indexes in memcached counted
// over a phase of ops operations into figures named with prefix: the
// indexes built from the database and patched, and the reads an index
// could not prove (read from every list instead), per operation. Nil for
// a store that counts no builds.
func IndexFigures(prefix string, before, after map[string]int64, ops int64) map[string]float64 {
	if _, ok := after[CounterIndexBuilds]; !ok || ops <= 0 {
		return nil
	}
	out := map[string]float64{prefix + "index_builds_per_op": float64(after[CounterIndexBuilds]-before[CounterIndexBuilds]) / float64(ops)}
	for _, c := range []struct{ counter, figure string }{
		{CounterIndexPatches, "index_patches_per_op"},
		{CounterIndexFallbacks, "index_fallbacks_per_op"},
	} {
		if _, ok := after[c.counter]; ok {
			out[prefix+c.figure] = float64(after[c.counter]-before[c.counter]) / float64(ops)
		}
	}
	return out
}

// PostFigures turns the counts a store kept over a submission phase of
// posts posts into figures: the hints each post sent, for a store that
// sends them.
func PostFigures(before, after map[string]int64, posts int64) map[string]float64 {
	if _, ok := after[CounterHints]; !ok || posts <= 0 {
		return nil
	}
	return map[string]float64{"hints_per_post": float64(after[CounterHints]-before[CounterHints]) / float64(posts)}
}

// Fan-out counters of a store that fans out asynchronously (push-async).
const (
	// CounterFanoutJobs: fan-out jobs finished (every follower written).
	CounterFanoutJobs = "fanout_jobs"
	// CounterFanoutChunks: chunk transactions committed.
	CounterFanoutChunks = "fanout_chunks"
	// CounterFanoutRows: mailbox rows those chunks wrote.
	CounterFanoutRows = "fanout_rows"
	// CounterFanoutErrors: chunks that failed (the database down, say)
	// and were retried.
	CounterFanoutErrors = "fanout_errors"
)

// LagFigures turns a histogram of lags in microseconds (registry.Lagging)
// into figures named with prefix: how many (lag_count) and their p50, p99
// and max in milliseconds. An empty or nil histogram gives none.
func LagFigures(prefix string, h *hdrhistogram.Histogram) map[string]float64 {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return map[string]float64{
		prefix + "lag_count":  float64(h.TotalCount()),
		prefix + "lag_p50_ms": ms(h.ValueAtQuantile(50)),
		prefix + "lag_p99_ms": ms(h.ValueAtQuantile(99)),
		prefix + "lag_max_ms": ms(h.Max()),
	}
}

// The counts of a store on Vitess, from vtgate (package vtstats).
const (
	// CounterTabletCalls counts vtgate's calls to tablets: one statement
	// on one shard each.
	CounterTabletCalls = "tablet_calls"
)

// TabletCallFigures turns the tablet calls a store on Vitess counted over
// a phase of ops operations into a figure named with prefix: calls per
// operation, the shards an operation touched, with repeats. Nil for a
// store that counts none.
func TabletCallFigures(prefix string, before, after map[string]int64, ops int64) map[string]float64 {
	if _, ok := after[CounterTabletCalls]; !ok || ops <= 0 {
		return nil
	}
	return map[string]float64{prefix + "tablet_calls": float64(after[CounterTabletCalls]-before[CounterTabletCalls]) / float64(ops)}
}

// Counters of a store that fans out to active readers only (push-active).
const (
	// CounterPushedRows: mailbox rows posts wrote (their active
	// followers).
	CounterPushedRows = "pushed_rows"
	// CounterSkippedRows: followers posts passed over as inactive: the
	// rows push would have written on top.
	CounterSkippedRows = "skipped_rows"
	// CounterRebuilds: mailboxes rebuilt by pull on an inactive user's
	// read; CounterRebuildRows: the rows those rebuilds wrote.
	CounterRebuilds    = "rebuilds"
	CounterRebuildRows = "rebuild_rows"
	// CounterExpired: users flagged inactive, their last read older than
	// the window.
	CounterExpired = "expired"
)

// ActiveFigures turns what a store that fans out to active readers counted
// over a phase of ops operations into figures named with prefix: the rows
// posts wrote and skipped and the rebuilds and their rows, per operation,
// and the rows per rebuild. Nil for a store that counts none of them.
func ActiveFigures(prefix string, before, after map[string]int64, ops int64) map[string]float64 {
	if _, ok := after[CounterRebuilds]; !ok || ops <= 0 {
		return nil
	}
	d := func(key string) int64 { return after[key] - before[key] }
	out := map[string]float64{}
	for _, key := range []string{CounterPushedRows, CounterSkippedRows, CounterRebuilds, CounterRebuildRows} {
		out[prefix+key+"_per_op"] = float64(d(key)) / float64(ops)
	}
	if n := d(CounterRebuilds); n > 0 {
		out[prefix+"rows_per_rebuild"] = float64(d(CounterRebuildRows)) / float64(n)
	}
	return out
}
