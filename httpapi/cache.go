package httpapi

import (
	"sync"
	"sync/atomic"

	"github.com/pushpull/pushpull/timeline"
)

// statusCache keeps the Status entities a server rendered, by message id,
// so that a status that many pages show is rendered once: a message never
// changes, and a page of 20 statuses is 19 KB to write (Mastodon caches
// its rendered statuses too).
//
// An entity is kept without its origin (the scheme and host that its uri
// and urls start with, taken from each request), cut where the origin
// goes, so that one entry serves every Host a client names.
//
// The cache renders only messages the store has just returned, and an
// entry serves only the message it was rendered from: same id, author,
// body and time, compared at each hit. So it never serves a status the
// store no longer returns, nor one that a store which reuses ids holds
// under an old id; a delete through the server also evicts the entry
// at once, to free its memory.
//
// Its size is bounded in bytes: the entities, the bodies they were
// rendered from and a fixed overhead per entry. It is split into shards,
// each with its own lock and an equal share of the bound, and each
// evicts by second chance: the oldest entry goes first unless it served
// a page since it was last looked at, in which case it is kept once more.
// It is safe for concurrent use; a nil cache renders every status.
//
// It is off unless asked for (Config.StatusCacheBytes): at the
// benchmark's scale a hit costs what rendering costs. Rendering a status
// writes about a kilobyte from the message just read and from constants,
// all in the processor's caches, while a hit looks up a map and reads an
// entry and a kilobyte that a cache of tens of thousands of statuses
// keeps far out of them. It pays where few statuses are read very often.
type statusCache struct {
	shards [cacheShards]cacheShard
}

// cacheShards is the number of independently locked parts of a cache.
const cacheShards = 16

// entryOverhead is what an entry costs besides its bytes: the entry, its
// map slot and its pointers, roughly.
const entryOverhead = 160

// cacheShard is one part of a cache: its entries by id and a ring of
// them, oldest first.
type cacheShard struct {
	mu    sync.Mutex
	byID  map[timeline.MessageID]*rendered
	head  *rendered // the oldest entry; head.prev is the newest
	bytes int64     // the entries' sizes
	max   int64
}

// rendered is one cached entity.
type rendered struct {
	msg  timeline.Message
	json []byte          // the entity with an empty origin; never changed
	cuts [originCuts]int // where in json the origin goes, ascending
	used atomic.Bool     // served since the ring's hand last passed it
	size int64           // what it counts against the bound
	prev *rendered       // the ring, under the shard's lock
	next *rendered
}

// newStatusCache returns a cache of at most maxBytes, or nil (no cache)
// when maxBytes is not positive.
func newStatusCache(maxBytes int64) *statusCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &statusCache{}
	for i := range c.shards {
		c.shards[i].byID = map[timeline.MessageID]*rendered{}
		c.shards[i].max = maxBytes / cacheShards
	}
	return c
}

func (c *statusCache) shard(id timeline.MessageID) *cacheShard {
	return &c.shards[uint64(id)%cacheShards]
}

// appendStatus appends m's Status entity for origin, as appendStatus
// does; it reports whether the cache held it.
func (c *statusCache) appendStatus(b []byte, origin string, m timeline.Message) ([]byte, bool) {
	if c == nil {
		return appendStatus(b, origin, m), false
	}
	sh := c.shard(m.ID)
	sh.mu.Lock()
	e := sh.byID[m.ID]
	sh.mu.Unlock()
	if e != nil && e.holds(m) {
		if !e.used.Load() {
			e.used.Store(true)
		}
		return e.appendTo(b, origin), true
	}
	e = &rendered{msg: m}
	e.json = appendStatusCut(make([]byte, 0, 1024), "", m, &e.cuts)
	e.size = int64(len(e.json)+len(m.Body)) + entryOverhead
	sh.add(e)
	return e.appendTo(b, origin), false
}

// holds reports whether e was rendered from m.
func (e *rendered) holds(m timeline.Message) bool {
	return e.msg.ID == m.ID && e.msg.Author == m.Author && e.msg.Body == m.Body && e.msg.CreatedAt.Equal(m.CreatedAt)
}

// appendTo appends e's entity with origin in its places.
func (e *rendered) appendTo(b []byte, origin string) []byte {
	from := 0
	for _, at := range e.cuts {
		b = append(b, e.json[from:at]...)
		b = append(b, origin...)
		from = at
	}
	return append(b, e.json[from:]...)
}

// add keeps e, in place of any entry of its id, and evicts until the
// shard is within its bound. An entry larger than the whole shard is not
// kept.
func (sh *cacheShard) add(e *rendered) {
	if e.size > sh.max {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old := sh.byID[e.msg.ID]; old != nil {
		sh.remove(old)
	}
	sh.byID[e.msg.ID] = e
	sh.bytes += e.size
	if sh.head == nil {
		e.prev, e.next = e, e
		sh.head = e
	} else {
		e.prev, e.next = sh.head.prev, sh.head
		sh.head.prev.next = e
		sh.head.prev = e
	}
	// Second chance: the oldest entry goes unless it was used since the
	// hand last passed it, or is e, just rendered; those are passed over
	// (the head moves on, which makes them the newest), at most once
	// each per add however often hits mark them again.
	for spared := 0; sh.bytes > sh.max; {
		h := sh.head
		if spared < len(sh.byID) && (h == e || h.used.Load()) {
			h.used.Store(false)
			sh.head = h.next
			spared++
			continue
		}
		sh.remove(h)
	}
}

// remove takes e out of the shard; the caller holds the lock.
func (sh *cacheShard) remove(e *rendered) {
	delete(sh.byID, e.msg.ID)
	sh.bytes -= e.size
	if e.next == e {
		sh.head = nil
	} else {
		e.prev.next = e.next
		e.next.prev = e.prev
		if sh.head == e {
			sh.head = e.next
		}
	}
	e.prev, e.next = nil, nil
}

// evict forgets message id.
func (c *statusCache) evict(id timeline.MessageID) {
	if c == nil {
		return
	}
	sh := c.shard(id)
	sh.mu.Lock()
	if e := sh.byID[id]; e != nil {
		sh.remove(e)
	}
	sh.mu.Unlock()
}
