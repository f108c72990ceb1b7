// Package redistest holds the fault tests that every store keeping state
// derived from MariaDB in Redis runs: RestartUnderTraffic, and
// CanceledWrites.
package redistest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// Store is a store that keeps derived state in Redis and counts what it
// does with it.
type Store interface {
	timeline.Store
	timeline.Counting
}

// RestartCase is a store under RestartUnderTraffic.
type RestartCase struct {
	// Open opens the store on the redis-server at addr, in a fresh
	// database; the test closes it.
	Open func(t *testing.T, addr string) Store
	// Rebuilds, Served and FellBack name the store's counters of its
	// Redis state rebuilt from MariaDB (a feed or an index), of the
	// newest pages served through that state, and of the pages served
	// from MariaDB alone because Redis failed.
	Rebuilds, Served, FellBack string
}

// RestartUnderTraffic: readers and writers run on the store while its
// redis-server is killed and restarted. No read fails (MariaDB is up), at
// least one falls back to MariaDB, no acknowledged post or follow is
// lost, and after the restart the Redis state is rebuilt on read and
// serves the pages again. Users 1 to 4 read and follow user 5 from the
// start; users 5 to 8 post, and now and then one of them is followed.
func RestartUnderTraffic(t *testing.T, c RestartCase) {
	rd := testserver.StartFaultRedis(t)
	s := c.Open(t, rd.Addr())
	t.Cleanup(func() { s.Close() })
	const readers, authors = 4, 4 // users 1..4 read; 5..8 post
	for u := timeline.UserID(1); u <= readers; u++ {
		timelinetest.Follow(t, s, u, readers+1)
		timelinetest.PostN(t, s, readers+1, 2)
	}
	for u := timeline.UserID(1); u <= readers; u++ {
		timelinetest.Newest(t, s, u) // builds every reader's state
	}

	var reads, failed, posts atomic.Int64
	var firstFail atomic.Value
	var mu sync.Mutex
	var acked []timeline.Message
	followed := map[timeline.UserID][]timeline.UserID{} // reader: followees added under traffic
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() { // reader
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := s.Timeline(context.Background(), timeline.UserID(1+i%readers), timeline.Query{})
				reads.Add(1)
				if err != nil && failed.Add(1) == 1 {
					firstFail.Store(err)
				}
			}
		})
		wg.Go(func() { // writer: posts, and now and then a follow
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				author := timeline.UserID(readers + 1 + (i+w)%authors)
				if i%5 == 4 {
					reader := timeline.UserID(1 + (i/5+w)%readers)
					if s.Follow(context.Background(), reader, author) == nil {
						mu.Lock()
						followed[reader] = append(followed[reader], author)
						mu.Unlock()
					}
					continue
				}
				m, err := s.Post(context.Background(), author, "under traffic")
				posts.Add(1)
				if err == nil {
					mu.Lock()
					acked = append(acked, m)
					mu.Unlock()
				}
			}
		})
	}
	// Each step waits for traffic to have run through it.
	waitReads := func(what string, n int64) {
		from := reads.Load()
		testserver.Poll(t, time.Minute, what, func() bool { return reads.Load() >= from+n })
	}
	waitReads("reads before the kill", 50)
	if err := rd.Kill(); err != nil {
		t.Fatal(err)
	}
	waitReads("reads while Redis is dead", 50)
	if err := rd.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := s.Counters()
	testserver.Poll(t, time.Minute, "Redis state rebuilt and read after the restart", func() bool {
		c2 := s.Counters()
		return c2[c.Rebuilds] > before[c.Rebuilds] && c2[c.Served] >= before[c.Served]+50
	})
	close(stop)
	wg.Wait()
	after := s.Counters()
	t.Logf("%d reads, %d failed; %d posts, %d acknowledged; counters before the restart's rebuilds %v, at the end %v",
		reads.Load(), failed.Load(), posts.Load(), len(acked), before, after)
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d reads failed with MariaDB up; the first: %v", n, firstFail.Load())
	}
	if after[c.FellBack] == 0 {
		t.Fatal("no read fell back to MariaDB: Redis was not lost under the traffic")
	}

	// Nothing acknowledged is lost: every post by the author all readers
	// follow is on every reader's timeline, read through the rebuilt
	// state, and every follow made under traffic holds.
	for u := timeline.UserID(1); u <= readers; u++ {
		have := map[timeline.MessageID]bool{}
		for _, id := range timelinetest.WalkIDs(t, s, u, 100) {
			have[id] = true
		}
		lost := 0
		for _, m := range acked {
			if m.Author == readers+1 && !have[m.ID] {
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("user %d's timeline lacks %d acknowledged posts", u, lost)
		}
	}
	for reader, authors := range followed {
		for _, a := range authors {
			if ok, err := s.Follows(context.Background(), reader, a); err != nil || !ok {
				t.Errorf("follow %d -> %d acknowledged under traffic: %v, %v", reader, a, ok, err)
			}
		}
	}
}
