package httpapi

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// cacheBodies are bodies that take every path of the escapers.
var cacheBodies = []string{
	"plain text",
	`quotes " and \ backslash`,
	"<b>bold</b> & 'single'",
	"two\nlines\r\nand a\rreturn",
	"tab\there, é and 😀, \u2028 separator",
	"",
}

// cacheMessage is message id, written at a time of its own.
func cacheMessage(id int, body string) timeline.Message {
	return timeline.Message{
		ID:        timeline.MessageID(id),
		Author:    timeline.UserID(id%7 + 1),
		Body:      body,
		CreatedAt: time.Date(2026, 11, 26, 6, 0, 0, id*1e6+999, time.FixedZone("x", 3600)),
	}
}

// TestStatusCacheHit: a status from the cache is byte for byte the one
// rendered afresh, for each origin a request names, and the second
// rendering of a message is a hit.
func TestStatusCacheHit(t *testing.T) {
	c := newStatusCache(1 << 20)
	for i, body := range cacheBodies {
		m := cacheMessage(i+1, body)
		for j, origin := range []string{"http://127.0.0.1:8080", "https://example.org", ""} {
			got, hit := c.appendStatus([]byte("prefix"), origin, m)
			if want := appendStatus([]byte("prefix"), origin, m); !bytes.Equal(got, want) {
				t.Errorf("%q at %q: cached\n%s\nwant\n%s", body, origin, got, want)
			}
			if hit != (j > 0) {
				t.Errorf("%q at %q: hit %v, want %v", body, origin, hit, j > 0)
			}
		}
	}
	var none *statusCache // no cache: renders
	m := cacheMessage(1, "x")
	if got, hit := none.appendStatus(nil, "http://h", m); hit || !bytes.Equal(got, appendStatus(nil, "http://h", m)) {
		t.Errorf("no cache: %s, hit %v", got, hit)
	}
	none.evict(1)
}

// TestStatusCacheChanged: an entry serves only the message it was
// rendered from; another message under its id (a store that reused the
// id) is rendered afresh and takes its place.
func TestStatusCacheChanged(t *testing.T) {
	c := newStatusCache(1 << 20)
	m := cacheMessage(5, "first")
	c.appendStatus(nil, "http://h", m)
	for _, other := range []timeline.Message{
		{ID: 5, Author: m.Author, Body: "second", CreatedAt: m.CreatedAt},
		{ID: 5, Author: m.Author + 1, Body: "second", CreatedAt: m.CreatedAt},
		{ID: 5, Author: m.Author + 1, Body: "second", CreatedAt: m.CreatedAt.Add(time.Millisecond)},
	} {
		got, hit := c.appendStatus(nil, "http://h", other)
		if hit || !bytes.Equal(got, appendStatus(nil, "http://h", other)) {
			t.Fatalf("%+v: hit %v, %s", other, hit, got)
		}
		if _, hit := c.appendStatus(nil, "http://h", other); !hit {
			t.Fatalf("%+v: not kept", other)
		}
	}
	if n := c.entries(); n != 1 {
		t.Fatalf("%d entries, want 1", n)
	}
}

// TestStatusCacheEvict: an evicted message is gone from the cache: its
// memory is freed and the next rendering is a miss.
func TestStatusCacheEvict(t *testing.T) {
	c := newStatusCache(1 << 20)
	m := cacheMessage(9, "to delete")
	c.appendStatus(nil, "http://h", m)
	c.appendStatus(nil, "http://h", cacheMessage(10, "kept"))
	c.evict(m.ID)
	c.evict(m.ID) // twice: nothing
	c.evict(404)  // never cached: nothing
	if c.has(m.ID) || !c.has(10) || c.entries() != 1 {
		t.Fatalf("after evict: has %d %v, has 10 %v, %d entries", m.ID, c.has(m.ID), c.has(10), c.entries())
	}
	if _, hit := c.appendStatus(nil, "http://h", m); hit {
		t.Fatal("an evicted message was a hit")
	}
}

// TestStatusCacheBounded: however many messages pass through it, each
// shard stays within its share of the bound; an entry used since the
// hand last passed outlives an unused one inserted after it (second
// chance); an entry larger than a shard is not kept.
func TestStatusCacheBounded(t *testing.T) {
	// Ids that are multiples of cacheShards share a shard; a shard holds
	// three and a half entries of these.
	a, b := cacheMessage(cacheShards, "a"), cacheMessage(2*cacheShards, "b")
	one := newStatusCache(1 << 20)
	one.appendStatus(nil, "", a)
	size := one.shard(a.ID).byID[a.ID].size
	max := cacheShards * (3*size + size/2)
	c := newStatusCache(max)
	c.appendStatus(nil, "", a)
	c.appendStatus(nil, "", b)
	c.appendStatus(nil, "", a) // a hit: a is used
	c.appendStatus(nil, "", cacheMessage(3*cacheShards, "c"))
	c.appendStatus(nil, "", cacheMessage(4*cacheShards, "d")) // over: b goes, a is spared
	if !c.has(a.ID) || c.has(b.ID) {
		t.Fatalf("second chance: has a %v, has b %v", c.has(a.ID), c.has(b.ID))
	}
	for i := range 5000 {
		c.appendStatus(nil, "http://h", cacheMessage(i+1, cacheBodies[i%len(cacheBodies)]))
		if i%97 == 0 {
			c.appendStatus(nil, "http://h", a) // a hot one
		}
	}
	for i := range c.shards {
		sh := &c.shards[i]
		if sh.bytes > sh.max || sh.bytes <= 0 {
			t.Errorf("shard %d: %d bytes, bound %d", i, sh.bytes, sh.max)
		}
		var sum int64
		n := 0
		if e := sh.head; e != nil {
			for {
				sum += e.size
				n++
				if e = e.next; e == sh.head {
					break
				}
			}
		}
		if sum != sh.bytes || n != len(sh.byID) {
			t.Errorf("shard %d: ring of %d entries, %d bytes; map of %d, %d bytes", i, n, sum, len(sh.byID), sh.bytes)
		}
	}
	if n := c.entries(); n == 0 || int64(n)*500 > max {
		t.Errorf("%d entries in %d bytes", n, max)
	}
	huge := cacheMessage(7, string(bytes.Repeat([]byte("x"), int(max/cacheShards))))
	if got, _ := c.appendStatus(nil, "", huge); !bytes.Equal(got, appendStatus(nil, "", huge)) || c.has(huge.ID) {
		t.Fatalf("an entry over the shard's bound: kept %v", c.has(huge.ID))
	}
}

// TestStatusCacheConcurrent: readers and evictions at once, in a cache
// too small for the messages (run it with -race): every answer is the
// fresh rendering of the message asked for.
func TestStatusCacheConcurrent(t *testing.T) {
	c := newStatusCache(16 * 8192)
	msgs := make([]timeline.Message, 300)
	for i := range msgs {
		msgs[i] = cacheMessage(i+1, fmt.Sprintf("%s %d", cacheBodies[i%len(cacheBodies)], i))
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			var buf []byte
			for range 3000 {
				m := msgs[rng.IntN(len(msgs))]
				if w == 0 && rng.IntN(4) == 0 {
					c.evict(m.ID)
					continue
				}
				origin := fmt.Sprintf("http://h%d", rng.IntN(3))
				buf, _ = c.appendStatus(buf[:0], origin, m)
				if want := appendStatus(nil, origin, m); !bytes.Equal(buf, want) {
					t.Errorf("message %d at %s: %s, want %s", m.ID, origin, buf, want)
					return
				}
			}
		})
	}
	wg.Wait()
	for i := range c.shards {
		if sh := &c.shards[i]; sh.bytes > sh.max {
			t.Errorf("shard %d: %d bytes, bound %d", i, sh.bytes, sh.max)
		}
	}
}

// has reports whether the cache holds message id.
func (c *statusCache) has(id timeline.MessageID) bool {
	sh := c.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.byID[id] != nil
}

// entries counts the cache's entries.
func (c *statusCache) entries() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.byID)
		sh.mu.Unlock()
	}
	return n
}
