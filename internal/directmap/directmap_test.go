package directmap

import (
	"testing"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

func TestMessages(t *testing.T) {
	c := NewMessages(5) // rounded up to 8 slots
	if c.Len() != 8 {
		t.Fatalf("%d slots, want 8", c.Len())
	}
	msg := func(id int64) timeline.Message {
		return timeline.Message{ID: timeline.MessageID(id), Author: timeline.UserID(id % 3), Body: "m", CreatedAt: time.Unix(id, 0)}
	}
	c.PutAll([]timeline.Message{msg(3), msg(2), msg(1)})
	got, ok := c.GetAll([]uint64{3, 1})
	if !ok || len(got) != 2 || got[0] != msg(3) || got[1] != msg(1) {
		t.Fatalf("getAll(3, 1) = %v, %v", got, ok)
	}
	// 11 shares 3's slot: it replaces it, and a lookup of 3 misses rather
	// than answering with 11.
	c.Put(msg(11))
	if _, ok := c.GetAll([]uint64{3}); ok {
		t.Fatal("a collision answered for the wrong id")
	}
	if _, ok := c.GetAll([]uint64{11, 2, 4}); ok {
		t.Fatal("a page with an uncached id was served")
	}
	if got, ok := c.GetAll([]uint64{11, 2}); !ok || got[0].ID != 11 {
		t.Fatalf("getAll(11, 2) = %v, %v", got, ok)
	}
	var off *Messages = NewMessages(-1)
	off.Put(msg(1))
	if _, ok := off.GetAll([]uint64{1}); ok || off != nil {
		t.Fatal("a disabled cache served a message")
	}
}
