package recent

import (
	"context"
	"sync/atomic"

	"github.com/pushpull/pushpull/internal/memcached"
)

// counters are a State's counters, atomics so that reads and posts on any
// goroutine can bump them without a lock.
type counters struct {
	cacheHits, cacheMisses, cacheErrors, rebuilds, fallbacks, messageHits    atomic.Int64
	followHits, followMisses                                                 atomic.Int64
	indexReads, indexBuilds, indexPatches, indexFallbacks, hints, hintErrors atomic.Int64
}

// Stats is a snapshot of a State's counters.
type Stats struct {
	// Lists and followees (Recent and Active reads, and every post).
	CacheHits    int64 // author lists taken from memcached
	CacheMisses  int64 // author lists that were missing, unreadable, too old or distrusted (rebuilt)
	CacheErrors  int64 // memcached operations that failed (the read or post went on without it), not counting those whose caller canceled
	Rebuilds     int64 // author lists rebuilt from the database and stored
	Fallbacks    int64 // authors whose share of a page came from the database
	MessageHits  int64 // pages whose bodies all came from the in-process message cache
	FollowHits   int64 // reads whose followees came from the in-process cache, confirmed by their token
	FollowMisses int64 // reads that loaded the followees from the database (first read, or a follow since)

	// Indexes (Active reads, and posts that send hints).
	IndexReads     int64 // pages read from the lists of the authors a user's index named
	IndexBuilds    int64 // indexes built from the database
	IndexPatches   int64 // home indexes brought up to date after a follow or unfollow without a build (Home)
	IndexFallbacks int64 // indexed reads whose page the index could not prove (read from every list instead; Home's from the database)
	Hints          int64 // hints that posts appended to their followers' indexes
	HintErrors     int64 // posts whose hints could not be delivered (this process then distrusts older indexes)
}

// Stats returns the State's counters.
func (st *State) Stats() Stats {
	c := &st.stats
	return Stats{
		CacheHits:    c.cacheHits.Load(),
		CacheMisses:  c.cacheMisses.Load(),
		CacheErrors:  c.cacheErrors.Load(),
		Rebuilds:     c.rebuilds.Load(),
		Fallbacks:    c.fallbacks.Load(),
		MessageHits:  c.messageHits.Load(),
		FollowHits:   c.followHits.Load(),
		FollowMisses: c.followMisses.Load(),

		IndexReads:     c.indexReads.Load(),
		IndexBuilds:    c.indexBuilds.Load(),
		IndexPatches:   c.indexPatches.Load(),
		IndexFallbacks: c.indexFallbacks.Load(),
		Hints:          c.hints.Load(),
		HintErrors:     c.hintErrors.Load(),
	}
}

// cacheFailed counts a memcached operation that failed, unless its
// caller gave up (memcached.CallerGaveUp).
func (st *State) cacheFailed(ctx context.Context) {
	if !memcached.CallerGaveUp(ctx) {
		st.stats.cacheErrors.Add(1)
	}
}
