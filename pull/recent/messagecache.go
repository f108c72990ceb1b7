package recent

import (
	"sync/atomic"

	"github.com/pushpull/pushpull/timeline"
)

// DefaultMessageCache is how many messages a reader keeps in process
// unless Recent.MessageCache says otherwise: about 45 MB at the paper's
// body lengths.
const DefaultMessageCache = 1 << 18

// messageCache keeps messages by id in this process, so that
// Recent, which learns a page's ids from memcached, can often skip
// the database altogether. A message never changes once written, so a
// copy is never stale, and the cache needs no invalidation across
// processes: it is filled only with rows read from the database or just
// inserted into it. A deleted message's copy may stay in another
// process's cache, but no list or index names its id once the delete's
// hooks have run (State.Deleted), so no read asks for it.
//
// It is direct-mapped by id (directMapped): no locks, and a collision costs
// a miss.
type messageCache struct{ directMapped[timeline.Message] }

// newMessageCache returns a cache of at least size slots (rounded up to a
// power of two), or nil for size <= 0.
func newMessageCache(size int) *messageCache {
	if size <= 0 {
		return nil
	}
	return &messageCache{newDirectMapped[timeline.Message](size)}
}

// directMapped is a lock-free table of immutable values: the value for key
// k lives in slot k % len(slots), and a later one with another key there
// replaces it. Readers check the key they find, so a collision costs a
// miss, never a wrong answer.
type directMapped[T any] struct {
	slots []atomic.Pointer[T]
	mask  uint64
}

// newDirectMapped returns a table of at least size slots, rounded up to a
// power of two.
func newDirectMapped[T any](size int) directMapped[T] {
	n := 1
	for n < size {
		n <<= 1
	}
	return directMapped[T]{slots: make([]atomic.Pointer[T], n), mask: uint64(n - 1)}
}

// slot returns the slot of key.
func (d *directMapped[T]) slot(key uint64) *atomic.Pointer[T] { return &d.slots[key&d.mask] }

func (c *messageCache) put(m timeline.Message) {
	if c == nil || m.ID <= 0 {
		return
	}
	c.slot(uint64(m.ID)).Store(&m)
}

// forget drops id's copy, if this slot holds it.
func (c *messageCache) forget(id timeline.MessageID) {
	if c == nil {
		return
	}
	slot := c.slot(uint64(id))
	if m := slot.Load(); m != nil && m.ID == id {
		slot.CompareAndSwap(m, nil)
	}
}

func (c *messageCache) putAll(ms []timeline.Message) {
	for _, m := range ms {
		c.put(m)
	}
}

// getAll returns the messages of ids, in the same order, if every one is
// cached.
func (c *messageCache) getAll(ids []uint64) ([]timeline.Message, bool) {
	if c == nil || len(ids) == 0 {
		return nil, false
	}
	out := make([]timeline.Message, len(ids))
	for i, id := range ids {
		m := c.slot(id).Load()
		if m == nil || uint64(m.ID) != id {
			return nil, false
		}
		out[i] = *m
	}
	return out, true
}
