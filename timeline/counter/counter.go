// Package counter names the counts a store reports through
// timeline.Counting: cumulative since the store was opened, each under one
// of the keys below. A store reports only the keys that apply to it. The
// benchmark takes their difference over a phase and turns it into figures
// (package results); a service may export them as metrics.
package counter

// Counts of a store that reads pages, and of the memcached state it keeps.
const (
	// Pages: timeline pages served by a read that counts rows.
	Pages = "pages"
	// RowsRead: index entries and rows those pages made the
	// database examine.
	RowsRead = "rows_read"
	// PageHits, PageMisses: newest pages served from a page
	// cache, and read from the store behind it.
	PageHits   = "page_hits"
	PageMisses = "page_misses"
	// ListHits, ListMisses: per-author lists of recent ids
	// taken from memcached, and rebuilt from the database.
	ListHits   = "list_hits"
	ListMisses = "list_misses"
	// CacheErrors: memcached operations that failed (the call went
	// on without memcached).
	CacheErrors = "cache_errors"
	// FolloweeHits, FolloweeMisses: reads whose followee
	// list came from the process's cache, and from the database.
	FolloweeHits   = "followee_hits"
	FolloweeMisses = "followee_misses"
	// IndexReads: pages served from the lists a recently-active
	// index named; IndexFallbacks: indexed reads the index could
	// not prove (read from every list); IndexBuilds: indexes
	// built from the database; IndexPatches: indexes brought up to
	// date after a follow or unfollow without a build.
	IndexReads     = "index_reads"
	IndexFallbacks = "index_fallbacks"
	IndexBuilds    = "index_builds"
	IndexPatches   = "index_patches"
	// Hints: hints that posts appended to their followers'
	// indexes.
	Hints = "hints"
)

// Edge counters of a store that decides push or pull per follow edge
// (selective). EdgesPushed and EdgesPulled are how many
// edges are each now (levels, not cumulative); the flips are cumulative,
// and FlipRows the mailbox rows they backfilled or removed.
// CostH and CostL are the store's current H and L (one
// fan-out row, one pulled author's probe) in nanoseconds.
const (
	EdgesPushed   = "edges_pushed"
	EdgesPulled   = "edges_pulled"
	EdgeFlipsPush = "edge_flips_push"
	EdgeFlipsPull = "edge_flips_pull"
	FlipRows      = "flip_rows"
	CostH         = "cost_h_ns"
	CostL         = "cost_l_ns"
)

// Fan-out counters of a store that fans out asynchronously (push-async).
const (
	// FanoutJobs: fan-out jobs finished (every follower written).
	FanoutJobs = "fanout_jobs"
	// FanoutChunks: chunk transactions committed.
	FanoutChunks = "fanout_chunks"
	// FanoutRows: mailbox rows those chunks wrote.
	FanoutRows = "fanout_rows"
	// FanoutErrors: chunks that failed (the database down, say)
	// and were retried.
	FanoutErrors = "fanout_errors"
)

// Where the fan-out workers of push-async@vitess spend their time, each
// cumulative over every worker of the store (so up to the workers times
// the wall time), in microseconds from the first statement of a step to
// the end of each part, whether the step committed a chunk or not.
const (
	// FanoutLooks: reads of a shard's oldest job ids; FanoutEmptyLooks
	// those that found none, and FanoutHeldLooks those whose jobs other
	// workers held, all of them.
	FanoutLooks      = "fanout_looks"
	FanoutEmptyLooks = "fanout_empty_looks"
	FanoutHeldLooks  = "fanout_held_looks"
	// FanoutClaimMicros: reading the ids and locking the jobs.
	FanoutClaimMicros = "fanout_claim_us"
	// FanoutReadMicros: reading the jobs' messages and followers.
	FanoutReadMicros = "fanout_read_us"
	// FanoutRouteMicros: finding the followers' shards.
	FanoutRouteMicros = "fanout_route_us"
	// FanoutWriteMicros: writing the mailbox rows on their shards.
	FanoutWriteMicros = "fanout_write_us"
	// FanoutCommitMicros: deleting or moving the jobs and committing.
	FanoutCommitMicros = "fanout_commit_us"
)

// The counts of a store on Vitess, from vtgate (package internal/vtstats).
const (
	// TabletCalls counts vtgate's calls to tablets: one statement
	// on one shard each.
	TabletCalls = "tablet_calls"
	// TabletTrips adds to them the begins, commits and rollbacks of
	// transactions on the same tablets; TabletCommits and
	// TabletSavepoints count those among them.
	TabletTrips      = "tablet_trips"
	TabletCommits    = "tablet_commits"
	TabletSavepoints = "tablet_savepoints"
	// SequenceCalls counts the calls that handed out sequence values.
	SequenceCalls = "sequence_calls"
	// LongTransactions counts the transactions the tablets ended after
	// more than a second.
	LongTransactions = "long_transactions"
	// CrossShardTransactions counts vtgate's transactions that spanned
	// shards, in any keyspace.
	CrossShardTransactions = "cross_shard_transactions"
)

// Counters of a store that fans out to active readers only (push-active).
const (
	// PushedRows: mailbox rows posts wrote (their active
	// followers).
	PushedRows = "pushed_rows"
	// SkippedRows: followers posts passed over as inactive: the
	// rows push would have written on top.
	SkippedRows = "skipped_rows"
	// Rebuilds: mailboxes rebuilt by pull on an inactive user's
	// read; RebuildRows: the rows those rebuilds wrote.
	Rebuilds    = "rebuilds"
	RebuildRows = "rebuild_rows"
	// Expired: users flagged inactive, their last read older than
	// the window.
	Expired = "expired"
)

// Counters of a store that keeps home feeds in Redis (push-redis); it
// reports PushedRows, SkippedRows, Rebuilds and RebuildRows too, counting
// feed entries rather than mailbox rows, and CacheErrors for the pages
// that fell back to MariaDB.
const (
	// FeedPages: pages read from a feed in Redis.
	FeedPages = "feed_pages"
	// PagesBelowCap: of those, pages whose rest came from the pull
	// merge below the feed's floor.
	PagesBelowCap = "pages_below_cap"
	// Fences: times the store made every feed missing at once, because
	// a write's Redis part failed in a way that may have left a feed
	// behind.
	Fences = "fences"
	// DroppedFeeds: feeds (pull-redis: indexes) deleted, to be rebuilt
	// on their next read, because a write that may have committed could
	// have changed them and its Redis part did not run (its MariaDB
	// part failed): the repair that spares the other feeds a fence.
	DroppedFeeds = "dropped_feeds"
	// RedisCalls: commands the store sent to Redis.
	RedisCalls = "redis_calls"
)
