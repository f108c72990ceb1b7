// Package directmap holds lock-free, direct-mapped tables of immutable
// values kept in process, and the message cache built on one: the reads
// that learn a page's ids from a server beside the database (pull/recent's
// lists in memcached, push/redis's feeds in Redis) take the page's bodies
// from it and skip the database when every one is there.
package directmap

import (
	"sync/atomic"

	"github.com/pushpull/pushpull/timeline"
)

// Table is a lock-free table of immutable values: the value for key k
// lives in slot k % len(slots), and a later one with another key there
// replaces it. Readers check the key they find, so a collision costs a
// miss, never a wrong answer.
type Table[T any] struct {
	slots []atomic.Pointer[T]
	mask  uint64
}

// New returns a table of at least size slots, rounded up to a power of
// two.
func New[T any](size int) Table[T] {
	n := 1
	for n < size {
		n <<= 1
	}
	return Table[T]{slots: make([]atomic.Pointer[T], n), mask: uint64(n - 1)}
}

// Slot returns the slot of key.
func (d *Table[T]) Slot(key uint64) *atomic.Pointer[T] { return &d.slots[key&d.mask] }

// Len returns the number of slots.
func (d *Table[T]) Len() int { return len(d.slots) }

// Messages keeps messages by id in this process, so that a read that
// learns a page's ids elsewhere can often skip the database altogether. A
// message never changes once written, so a copy is never stale, and the
// cache needs no invalidation across processes: it is filled only with
// rows read from the database or just inserted into it. A deleted
// message's copy may stay in another process's cache; the state that
// names a page's ids (a list, an index, a feed) must no longer name it
// once the delete has returned, so that no read asks for it.
//
// It is direct-mapped by id (Table): no locks, and a collision costs a
// miss. A nil *Messages keeps nothing.
type Messages struct{ Table[timeline.Message] }

// NewMessages returns a cache of at least size slots (rounded up to a
// power of two), or nil for size <= 0.
func NewMessages(size int) *Messages {
	if size <= 0 {
		return nil
	}
	return &Messages{New[timeline.Message](size)}
}

// Put keeps m.
func (c *Messages) Put(m timeline.Message) {
	if c == nil || m.ID <= 0 {
		return
	}
	c.Slot(uint64(m.ID)).Store(&m)
}

// Forget drops id's copy, if its slot holds it.
func (c *Messages) Forget(id timeline.MessageID) {
	if c == nil {
		return
	}
	slot := c.Slot(uint64(id))
	if m := slot.Load(); m != nil && m.ID == id {
		slot.CompareAndSwap(m, nil)
	}
}

// PutAll keeps every message of ms.
func (c *Messages) PutAll(ms []timeline.Message) {
	for _, m := range ms {
		c.Put(m)
	}
}

// GetAll returns the messages of ids, in the same order, if every one is
// cached.
func (c *Messages) GetAll(ids []uint64) ([]timeline.Message, bool) {
	if c == nil || len(ids) == 0 {
		return nil, false
	}
	out := make([]timeline.Message, len(ids))
	for i, id := range ids {
		m := c.Slot(id).Load()
		if m == nil || uint64(m.ID) != id {
			return nil, false
		}
		out[i] = *m
	}
	return out, true
}
