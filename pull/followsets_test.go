package pull_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/timeline"
)

// authorsOf returns the authors on user's newest page, in page order.
func authorsOf(t *testing.T, s *pull.Store, user timeline.UserID) []timeline.UserID {
	t.Helper()
	p, err := s.Timeline(context.Background(), user, timeline.Query{Limit: timeline.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var out []timeline.UserID
	for _, m := range p.Messages {
		if !slices.Contains(out, m.Author) {
			out = append(out, m.Author)
		}
	}
	slices.Sort(out)
	return out
}

// TestFolloweesCachedAcrossStores: two StrategyRecent stores share a
// database and memcached, as two processes of one service would. One
// caches user 1's followees; every follow and unfollow through the other
// reaches its next read, and reads with no change in between need no
// database query for the followees.
func TestFolloweesCachedAcrossStores(t *testing.T) {
	ctx := context.Background()
	cfg := config(t, pull.StrategyRecent, testserver.Database(t))
	reader, writer := openConfig(t, cfg), openConfig(t, cfg)
	for a := timeline.UserID(2); a <= 5; a++ {
		if _, err := writer.Post(ctx, a, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	follow := func(a timeline.UserID) {
		if err := writer.Follow(ctx, 1, a); err != nil {
			t.Fatal(err)
		}
	}
	unfollow := func(a timeline.UserID) {
		if err := writer.Unfollow(ctx, 1, a); err != nil {
			t.Fatal(err)
		}
	}
	mc := reader.RawMemcache(t, testserver.Memcache(t))
	steps := []struct {
		name   string
		change func()
		want   []timeline.UserID
		miss   bool // the reader must reload its followees
	}{
		{"first read", func() {}, nil, true},
		{"a follow", func() { follow(2) }, []timeline.UserID{2}, true},
		{"no change", func() {}, []timeline.UserID{2}, false},
		{"two follows", func() { follow(3); follow(4) }, []timeline.UserID{2, 3, 4}, true},
		{"an unfollow", func() { unfollow(3) }, []timeline.UserID{2, 4}, true},
		{"following one already followed", func() { follow(2) }, []timeline.UserID{2, 4}, true},
		{"no change again", func() {}, []timeline.UserID{2, 4}, false},
		{"the token evicted", func() { mc.Delete(reader.FollowKey(1)) }, []timeline.UserID{2, 4}, true},
		{"the token garbled", func() { mc.Set(&memcache.Item{Key: reader.FollowKey(1), Value: []byte("x")}) }, []timeline.UserID{2, 4}, true},
		{"a follow after that", func() { follow(5) }, []timeline.UserID{2, 4, 5}, true},
		{"unfollowing everyone", func() { unfollow(2); unfollow(4); unfollow(5) }, nil, true},
		{"nobody, no change", func() {}, nil, false},
	}
	for _, st := range steps {
		before := reader.Stats()
		st.change()
		if got := authorsOf(t, reader, 1); !slices.Equal(got, st.want) {
			t.Fatalf("%s: the reader shows posts by %v, want %v", st.name, got, st.want)
		}
		after := reader.Stats()
		hits, misses := after.FollowHits-before.FollowHits, after.FollowMisses-before.FollowMisses
		if st.miss && (misses != 1 || hits != 0) || !st.miss && (misses != 0 || hits != 1) {
			t.Fatalf("%s: %d followee hits, %d misses; want a %s", st.name, hits, misses, map[bool]string{true: "miss", false: "hit"}[st.miss])
		}
	}
	// A store that keeps no followees reads the same pages.
	cfg.Read = recent.Recent{FolloweeCache: -1}
	uncached := openConfig(t, cfg)
	follow(2)
	follow(5)
	if got := authorsOf(t, uncached, 1); !slices.Equal(got, []timeline.UserID{2, 5}) {
		t.Fatalf("FolloweeCache -1: posts by %v, want [2 5]", got)
	}
	if st := uncached.Stats(); st.FollowHits != 0 || st.FollowMisses != 0 {
		t.Fatalf("FolloweeCache -1 still counts followee lookups: %+v", st)
	}
}

// TestFollowWhileMemcachedDown: a follow whose token cannot be replaced
// still reaches the next read of the store that made it.
func TestFollowWhileMemcachedDown(t *testing.T) {
	ctx := context.Background()
	p := testserver.StartProxy(t, "tcp", testserver.Memcache(t))
	f := newRecentFixture(t, p.Addr)
	if _, err := f.s.Post(ctx, 5, "by 5"); err != nil {
		t.Fatal(err)
	}
	if got := authorsOf(t, f.s, 1); !slices.Equal(got, []timeline.UserID{2, 3, 4}) {
		t.Fatalf("warm: posts by %v", got)
	}
	p.Cut()
	if err := f.s.Follow(ctx, 1, 5); err != nil {
		t.Fatalf("follow with memcached down: %v", err)
	}
	if got := authorsOf(t, f.s, 1); !slices.Equal(got, []timeline.UserID{2, 3, 4, 5}) {
		t.Fatalf("memcached down: posts by %v", got)
	}
	p.Restore(t)
	if got := authorsOf(t, f.s, 1); !slices.Equal(got, []timeline.UserID{2, 3, 4, 5}) {
		t.Fatalf("memcached back: posts by %v", got)
	}
	if err := f.s.Unfollow(ctx, 1, 5); err != nil {
		t.Fatal(err)
	}
	if got := authorsOf(t, f.s, 1); !slices.Equal(got, []timeline.UserID{2, 3, 4}) {
		t.Fatalf("unfollow after memcached came back: posts by %v", got)
	}
	if st := f.s.Stats(); st.CacheErrors == 0 {
		t.Fatalf("no cache errors counted while memcached was down: %+v", st)
	}
}

// TestFollowsRaceReads toggles a follow from one store while another
// reads: every read that neither overlaps a follow or unfollow nor the
// gap between two shows exactly what the follow graph held.
func TestFollowsRaceReads(t *testing.T) {
	ctx := context.Background()
	cfg := config(t, pull.StrategyRecent, testserver.Database(t))
	reader, writer := openConfig(t, cfg), openConfig(t, cfg)
	for _, a := range []timeline.UserID{2, 5} {
		if err := writer.Follow(ctx, 1, a); err != nil && a == 2 {
			t.Fatal(err)
		}
		if _, err := writer.Post(ctx, a, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	if err := writer.Unfollow(ctx, 1, 5); err != nil {
		t.Fatal(err)
	}
	// state is 2k+1 while the k-th change is under way, 2k+2 once it has
	// returned; the odd-numbered changes (k = 0, 2, ...) follow user 5.
	var state atomic.Int64
	state.Store(0)
	var checked atomic.Int64
	end := newRaceEnd(func() bool {
		st := reader.Stats()
		return checked.Load() >= 20 && st.FollowMisses >= 5 && st.FollowHits > 0
	})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	wg.Go(func() {
		for k := int64(0); !end.over(); k++ {
			state.Store(2*k + 1)
			var err error
			if k%2 == 0 {
				err = writer.Follow(ctx, 1, 5)
			} else {
				err = writer.Unfollow(ctx, 1, 5)
			}
			if err != nil {
				errs <- err
				return
			}
			state.Store(2*k + 2)
			time.Sleep(time.Duration(k%3) * time.Millisecond)
		}
	})
	for range 2 {
		wg.Go(func() {
			for !end.over() {
				before := state.Load()
				p, err := reader.Timeline(ctx, 1, timeline.Query{})
				if err != nil {
					errs <- err
					return
				}
				if state.Load() != before || before%2 == 1 {
					continue // a change overlapped the read
				}
				following := before > 0 && (before/2)%2 == 1
				shows := slices.ContainsFunc(p.Messages, func(m timeline.Message) bool { return m.Author == 5 })
				if shows != following {
					errs <- fmt.Errorf("after %d changes the read shows user 5: %v, want %v", before/2, shows, following)
					return
				}
				checked.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := reader.Stats()
	t.Logf("%d reads checked; reader %+v", checked.Load(), st)
	if checked.Load() < 20 || st.FollowMisses < 5 || st.FollowHits == 0 {
		t.Fatalf("the race did not happen: %d reads checked, %+v", checked.Load(), st)
	}
}
