package recent

import (
	"testing"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

func TestMessageCache(t *testing.T) {
	c := newMessageCache(5) // rounded up to 8 slots
	if len(c.slots) != 8 {
		t.Fatalf("%d slots, want 8", len(c.slots))
	}
	msg := func(id int64) timeline.Message {
		return timeline.Message{ID: timeline.MessageID(id), Author: timeline.UserID(id % 3), Body: "m", CreatedAt: time.Unix(id, 0)}
	}
	c.putAll([]timeline.Message{msg(3), msg(2), msg(1)})
	got, ok := c.getAll([]uint64{3, 1})
	if !ok || len(got) != 2 || got[0] != msg(3) || got[1] != msg(1) {
		t.Fatalf("getAll(3, 1) = %v, %v", got, ok)
	}
	// 11 shares 3's slot: it replaces it, and a lookup of 3 misses rather
	// than answering with 11.
	c.put(msg(11))
	if _, ok := c.getAll([]uint64{3}); ok {
		t.Fatal("a collision answered for the wrong id")
	}
	if _, ok := c.getAll([]uint64{11, 2, 4}); ok {
		t.Fatal("a page with an uncached id was served")
	}
	if got, ok := c.getAll([]uint64{11, 2}); !ok || got[0].ID != 11 {
		t.Fatalf("getAll(11, 2) = %v, %v", got, ok)
	}
	var off *messageCache = newMessageCache(-1)
	off.put(msg(1))
	if _, ok := off.getAll([]uint64{1}); ok || off != nil {
		t.Fatal("a disabled cache served a message")
	}
}
