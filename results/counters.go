package results

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pushpull/pushpull/timeline/counter"
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
	if has(counter.PageHits) {
		ratio("hit_ratio", counter.PageHits, counter.PageMisses)
		out[prefix+"cache_errors"] = float64(d(counter.CacheErrors))
	}
	pages := d(counter.Pages)
	if pages > 0 && has(counter.RowsRead) {
		out[prefix+"rows_per_page"] = float64(d(counter.RowsRead)) / float64(pages)
	}
	if ratio("list_hit_ratio", counter.ListHits, counter.ListMisses) {
		out[prefix+"cache_errors"] = float64(d(counter.CacheErrors))
	}
	ratio("followee_hit_ratio", counter.FolloweeHits, counter.FolloweeMisses)
	if p, q := after[counter.EdgesPushed], after[counter.EdgesPulled]; p+q > 0 {
		// Levels at the phase's end, and the flips during it.
		out[prefix+"pushed_edge_share"] = float64(p) / float64(p+q)
		out[prefix+"edge_flips"] = float64(d(counter.EdgeFlipsPush) + d(counter.EdgeFlipsPull))
		if h, l := after[counter.CostH], after[counter.CostL]; h > 0 && l > 0 {
			out[prefix+"h_over_l"] = float64(h) / float64(l)
		}
	}
	if indexed, short := d(counter.IndexReads), d(counter.IndexFallbacks); pages > 0 && after[counter.IndexBuilds] > 0 {
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
	if _, ok := after[counter.IndexBuilds]; !ok || ops <= 0 {
		return nil
	}
	out := map[string]float64{prefix + "index_builds_per_op": float64(after[counter.IndexBuilds]-before[counter.IndexBuilds]) / float64(ops)}
	for _, c := range []struct{ counter, figure string }{
		{counter.IndexPatches, "index_patches_per_op"},
		{counter.IndexFallbacks, "index_fallbacks_per_op"},
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
	if _, ok := after[counter.Hints]; !ok || posts <= 0 {
		return nil
	}
	return map[string]float64{"hints_per_post": float64(after[counter.Hints]-before[counter.Hints]) / float64(posts)}
}

// LagFigures turns a histogram of lags in microseconds (timeline.Lagging)
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

// TabletCallFigures turns what a store on Vitess counted over a phase of
// ops operations (package internal/vtstats) into figures named with
// prefix, each per operation: tablet_calls, vtgate's calls to the tablets
// of the store's keyspace and the sequence's (the shards an operation
// touched, with repeats); tablet_trips, those and the begins, commits and
// rollbacks of transactions; tablet_commits and tablet_savepoints among
// them; tablet_sequence_calls, the calls for sequence values; and
// tablet_cross_shard, vtgate's transactions that spanned shards. Nil for
// a store that counts none, and when either end lacks the counts (the
// store could not read them).
func TabletCallFigures(prefix string, before, after map[string]int64, ops int64) map[string]float64 {
	_, had := before[counter.TabletCalls]
	if _, ok := after[counter.TabletCalls]; !ok || !had || ops <= 0 {
		return nil // a store that counts none, or a read of the counts failed
	}
	out := map[string]float64{}
	for name, key := range tabletFigures {
		if _, ok := after[key]; ok {
			out[prefix+name] = float64(after[key]-before[key]) / float64(ops)
		}
	}
	return out
}

// tabletFigures are the figures TabletCallFigures makes, by the counter
// each is made from.
var tabletFigures = map[string]string{
	"tablet_calls":          counter.TabletCalls,
	"tablet_trips":          counter.TabletTrips,
	"tablet_commits":        counter.TabletCommits,
	"tablet_savepoints":     counter.TabletSavepoints,
	"tablet_sequence_calls": counter.SequenceCalls,
	"tablet_cross_shard":    counter.CrossShardTransactions,
}

// ActiveFigures turns what a store that fans out to active readers counted
// over a phase of ops operations into figures named with prefix: the rows
// posts wrote and skipped and the rebuilds and their rows, per operation,
// and the rows per rebuild; for a store that keeps its feeds in Redis,
// also the pages served from them, the pages that fell back to the
// database, the fences paid and the feeds dropped, per operation. Nil for a store that
// counts none of them.
func ActiveFigures(prefix string, before, after map[string]int64, ops int64) map[string]float64 {
	if _, ok := after[counter.Rebuilds]; !ok || ops <= 0 {
		return nil
	}
	d := func(key string) int64 { return after[key] - before[key] }
	out := map[string]float64{}
	for _, key := range []string{counter.PushedRows, counter.SkippedRows, counter.Rebuilds, counter.RebuildRows} {
		out[prefix+key+"_per_op"] = float64(d(key)) / float64(ops)
	}
	if n := d(counter.Rebuilds); n > 0 {
		out[prefix+"rows_per_rebuild"] = float64(d(counter.RebuildRows)) / float64(n)
	}
	// Stores that keep feeds beside the database: pages served from
	// them, pages that fell back to the database, fences paid, feeds
	// dropped.
	for _, key := range []string{counter.FeedPages, counter.CacheErrors, counter.Fences, counter.DroppedFeeds} {
		if _, ok := after[key]; ok {
			out[prefix+key+"_per_op"] = float64(d(key)) / float64(ops)
		}
	}
	return out
}

// FanoutFigures turns what the fan-out workers of push-async@vitess
// counted over a phase and the settle after it (after minus before) into
// figures named with prefix, each per chunk committed: fanout_jobs_per_chunk
// and fanout_rows_per_chunk; fanout_looks_per_chunk, the reads of a
// shard's oldest job ids, and fanout_empty_looks_per_chunk and
// fanout_held_looks_per_chunk, those that found no job and those whose
// jobs other workers held; and the workers' milliseconds in each part of
// their steps (fanout_claim_ms, fanout_read_ms, fanout_route_ms,
// fanout_write_ms, fanout_commit_ms), summed over the workers and divided
// by the chunks, the looks that found nothing in fanout_claim_ms. Nil for a store that
// counts none or committed no chunk.
func FanoutFigures(prefix string, before, after map[string]int64) map[string]float64 {
	if _, ok := after[counter.FanoutClaimMicros]; !ok {
		return nil
	}
	d := func(key string) float64 { return float64(after[key] - before[key]) }
	chunks := d(counter.FanoutChunks)
	if chunks <= 0 {
		return nil
	}
	out := map[string]float64{}
	for figure, key := range map[string]string{
		"fanout_jobs_per_chunk":        counter.FanoutJobs,
		"fanout_rows_per_chunk":        counter.FanoutRows,
		"fanout_looks_per_chunk":       counter.FanoutLooks,
		"fanout_empty_looks_per_chunk": counter.FanoutEmptyLooks,
		"fanout_held_looks_per_chunk":  counter.FanoutHeldLooks,
	} {
		out[prefix+figure] = d(key) / chunks
	}
	for figure, key := range map[string]string{
		"fanout_claim_ms":  counter.FanoutClaimMicros,
		"fanout_read_ms":   counter.FanoutReadMicros,
		"fanout_route_ms":  counter.FanoutRouteMicros,
		"fanout_write_ms":  counter.FanoutWriteMicros,
		"fanout_commit_ms": counter.FanoutCommitMicros,
	} {
		out[prefix+figure] = d(key) / 1000 / chunks
	}
	return out
}
