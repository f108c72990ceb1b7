package pull

import "sync/atomic"

// stats are the store's counters. They are atomics so that reads and posts
// on any goroutine can bump them without a lock.
type stats struct {
	pages        atomic.Int64 // pages served by a strategy that counts rows
	rowsRead     atomic.Int64 // index entries and rows its queries examined
	cacheHits    atomic.Int64 // author lists used from memcached
	cacheMisses  atomic.Int64 // author lists missing, unreadable, too old or distrusted
	cacheErrors  atomic.Int64 // memcached operations that failed
	rebuilds     atomic.Int64 // author lists rebuilt from the database and stored
	fallbacks    atomic.Int64 // authors whose page part came from the database
	messageHits  atomic.Int64 // pages whose bodies all came from the message cache
	followHits   atomic.Int64 // reads whose followees came from the in-process cache
	followMisses atomic.Int64 // reads that loaded the followees from the database

	indexReads     atomic.Int64 // pages served from the authors a user's index named
	indexBuilds    atomic.Int64 // indexes built from the database
	indexFallbacks atomic.Int64 // indexed reads that could not prove the page
	hints          atomic.Int64 // hints posts appended to followers' indexes
	hintErrors     atomic.Int64 // hint deliveries that failed (indexes distrusted)
}

// Stats is a snapshot of a store's counters.
type Stats struct {
	// Pages is the number of timeline pages served by a strategy that
	// counts rows (StrategyUnion, StrategyMerge, StrategyRecent); the
	// others leave it and RowsRead at 0.
	Pages int64
	// RowsRead is how many index entries and table rows those pages made
	// the database examine, as far as the strategy can tell: one per
	// followee for step 1, each row a batch or branch returned or skipped
	// over, and each message row fetched for its body. RowsRead/Pages is
	// the cost per page that the early stop is meant to bring from about
	// N² + followees down to about N + followees.
	RowsRead int64

	// StrategyRecent only.
	CacheHits    int64 // author lists taken from memcached
	CacheMisses  int64 // author lists that were missing, unreadable, too old or distrusted (rebuilt)
	CacheErrors  int64 // memcached operations that failed (the read or post went on without it)
	Rebuilds     int64 // author lists rebuilt from the database and stored
	Fallbacks    int64 // authors whose share of a page came from the database
	MessageHits  int64 // pages whose bodies all came from the in-process message cache
	FollowHits   int64 // reads whose followees came from the in-process cache, confirmed by their token
	FollowMisses int64 // reads that loaded the followees from the database (first read, or a follow since)

	// StrategyActive, and posts with Config.ActiveHints.
	IndexReads     int64 // pages read from the lists of the authors a user's index named
	IndexBuilds    int64 // indexes built from the database
	IndexFallbacks int64 // indexed reads whose page the index could not prove (read from every list instead)
	Hints          int64 // hints that posts appended to their followers' indexes
	HintErrors     int64 // posts whose hints could not be delivered (this process then distrusts older indexes)
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{
		Pages:        s.stats.pages.Load(),
		RowsRead:     s.stats.rowsRead.Load(),
		CacheHits:    s.stats.cacheHits.Load(),
		CacheMisses:  s.stats.cacheMisses.Load(),
		CacheErrors:  s.stats.cacheErrors.Load(),
		Rebuilds:     s.stats.rebuilds.Load(),
		Fallbacks:    s.stats.fallbacks.Load(),
		MessageHits:  s.stats.messageHits.Load(),
		FollowHits:   s.stats.followHits.Load(),
		FollowMisses: s.stats.followMisses.Load(),

		IndexReads:     s.stats.indexReads.Load(),
		IndexBuilds:    s.stats.indexBuilds.Load(),
		IndexFallbacks: s.stats.indexFallbacks.Load(),
		Hints:          s.stats.hints.Load(),
		HintErrors:     s.stats.hintErrors.Load(),
	}
}

// RowsRead returns the total rows read by the pages Pages counts; see
// Stats.RowsRead.
func (s *Store) RowsRead() int64 { return s.stats.rowsRead.Load() }

// Pages returns the number of pages served by a strategy that counts rows
// read; see Stats.Pages.
func (s *Store) Pages() int64 { return s.stats.pages.Load() }

// countPage records one page that read rows rows.
func (s *Store) countPage(rows int64) {
	s.stats.pages.Add(1)
	s.stats.rowsRead.Add(rows)
}
