package pull_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// recentFixture is a StrategyRecent store in a fresh database where user 1
// follows users 2, 3 and 4, who have posted a few messages each.
type recentFixture struct {
	s     *pull.Store
	mc    pull.RawMC
	posts []timeline.Message // everything posted, oldest first
}

func newRecentFixture(t *testing.T, memcacheAddr string) *recentFixture {
	t.Helper()
	cfg := config(t, pull.StrategyRecent, testserver.Database(t))
	if memcacheAddr != "" {
		cfg.Memcache = []string{memcacheAddr}
	}
	f := &recentFixture{s: openConfig(t, cfg)}
	f.mc = f.s.RawMemcache(t, testserver.Memcache(t))
	for a := timeline.UserID(2); a <= 4; a++ {
		timelinetest.Follow(t, f.s, 1, a)
	}
	for i := range 12 {
		f.post(t, timeline.UserID(2+i%3))
	}
	return f
}

func (f *recentFixture) post(t *testing.T, author timeline.UserID) timeline.Message {
	t.Helper()
	m := timelinetest.Post(t, f.s, author, fmt.Sprintf("post %d by %d", len(f.posts), author))
	f.posts = append(f.posts, m)
	return m
}

// check reads user 1's timeline in pages of 5 and compares it with
// everything posted.
func (f *recentFixture) check(t *testing.T, what string) {
	t.Helper()
	want := timelinetest.NewestFirst(f.posts)
	if got := timelinetest.WalkIDs(t, f.s, 1, 5); !slices.Equal(got, want) {
		t.Fatalf("%s: timeline %v, want %v", what, got, want)
	}
}

// TestRecentPostUpdatesList: once the lists are in memcached, a post is
// visible to the next read through its append, with no rebuild.
func TestRecentPostUpdatesList(t *testing.T) {
	f := newRecentFixture(t, "")
	f.check(t, "first read")
	if st := f.s.Stats(); st.Rebuilds != 3 || st.CacheMisses != 3 {
		t.Fatalf("first read: want 3 lists rebuilt, got %+v", st)
	}
	for i := range 40 { // more than compactAt appends
		m := f.post(t, timeline.UserID(2+i%2))
		p, err := f.s.Timeline(context.Background(), 1, timeline.Query{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Messages) != 1 || p.Messages[0].ID != m.ID {
			t.Fatalf("post %d (id %d) returned, then the newest page holds %v", i, m.ID, p.Messages)
		}
	}
	f.check(t, "after 40 posts")
	if st := f.s.Stats(); st.Rebuilds != 3 || st.CacheMisses != 3 || st.CacheErrors != 0 || st.Fallbacks != 0 {
		t.Fatalf("posts should reach reads through their appends alone: %+v", st)
	}
}

// TestRecentSurvivesCacheDamage damages author 2's list in every way a
// cache can lose or garble an entry, and some it cannot by itself, and
// reads after each: the timeline stays exact.
func TestRecentSurvivesCacheDamage(t *testing.T) {
	f := newRecentFixture(t, "")
	f.check(t, "warm")
	key2, key3 := f.s.RecentKey(2), f.s.RecentKey(3)
	get := func(key string) *memcache.Item {
		it, err := f.mc.Get(key)
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		return it
	}
	set := func(key string, v []byte) {
		if err := f.mc.Set(&memcache.Item{Key: key, Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	ids2 := func() []uint64 {
		var out []uint64
		for _, m := range slices.Backward(f.posts) {
			if m.Author == 2 {
				out = append(out, uint64(m.ID))
			}
		}
		return out
	}
	good := get(key2).Value
	for _, tc := range []struct {
		name   string
		damage func()
	}{
		{"evicted", func() { f.mc.Delete(key2) }},
		{"garbage", func() { set(key2, []byte("not a list")) }},
		{"truncated", func() { set(key2, good[:len(good)-1]) }},
		{"a bit flipped", func() { v := slices.Clone(good); v[len(v)/2] ^= 4; set(key2, v) }},
		{"another author's list", func() { set(key2, get(key3).Value) }},
		{"a rebuild that died (placeholder)", func() { set(key2, []byte("P")) }},
		{"a garbled append", func() { f.mc.Append(&memcache.Item{Key: key2, Value: []byte("a1234567890123")}) }},
		{"older than the maximum age", func() { set(key2, pull.EncodeList(key2, ids2(), true, time.Now().Add(-time.Hour).Unix())) }},
		// These pass the checksum: a bug, not the cache, would write them.
		{"claims another author's message", func() {
			set(key2, pull.EncodeList(key2, append([]uint64{uint64(f.posts[len(f.posts)-1].ID)}, ids2()...), true, time.Now().Unix()))
		}},
		{"claims a message that does not exist", func() {
			set(key2, pull.EncodeList(key2, append([]uint64{uint64(f.posts[len(f.posts)-1].ID) + 1000}, ids2()...), true, time.Now().Unix()))
		}},
	} {
		if tc.name == "claims another author's message" && f.posts[len(f.posts)-1].Author == 2 {
			f.post(t, 3) // the newest message must not be author 2's
			f.check(t, "before "+tc.name)
		}
		tc.damage()
		f.check(t, tc.name)
		f.check(t, tc.name+", read again")
		f.post(t, 2)
		f.check(t, tc.name+", then a post")
	}
	st := f.s.Stats()
	t.Logf("%+v", st)
	if st.Rebuilds < 8 || st.CacheErrors < 2 {
		t.Fatalf("want lists rebuilt and the forged ones counted as errors: %+v", st)
	}
	// The forged lists were caught although the bodies of their ids were
	// in the in-process message cache, not read from the database.
	if st.MessageHits == 0 {
		t.Fatalf("no page came from the message cache: %+v", st)
	}
	// Every damaged list was replaced by a good one.
	f.check(t, "at the end")
	if st2 := f.s.Stats(); st2.CacheMisses != st.CacheMisses {
		t.Fatalf("the last read still missed: %+v", st2)
	}
}

// TestRecentMemcachedDown cuts memcached off mid-run: reads fall back to
// the database and stay exact, posts still succeed, and once memcached is
// back the lists that missed posts are rebuilt before they are used.
func TestRecentMemcachedDown(t *testing.T) {
	p := testserver.StartProxy(t, "tcp", testserver.Memcache(t))
	f := newRecentFixture(t, p.Addr)
	f.check(t, "warm")
	p.Cut()
	f.post(t, 2)
	f.post(t, 3)
	f.check(t, "memcached down")
	down := f.s.Stats()
	if down.CacheErrors == 0 {
		t.Fatalf("no cache errors counted while memcached was down: %+v", down)
	}
	p.Restore(t)
	waitServersUp(t, f.s, func() { f.check(t, "memcached back") })
	f.post(t, 2)
	f.check(t, "memcached back, then a post")
	if st := f.s.Stats(); st.Rebuilds < down.Rebuilds+2 {
		t.Fatalf("the lists that missed posts were not rebuilt: %+v", st)
	}
}

// TestRecentDownServersWhileIdle: a pull-recent store that nobody calls
// still names its memcached within about a second of its death, and drops
// it within about as long once it is back.
func TestRecentDownServersWhileIdle(t *testing.T) {
	mc := testserver.StartRestartableMemcached(t)
	f := newRecentFixture(t, mc.Addr)
	mc.Kill()
	const within = 2*memcached.DefaultRetryAfter + 2*time.Second // the rest is slack for a loaded machine
	testserver.Poll(t, within, "the dead memcached in DownServers", func() bool { return slices.Equal(f.s.DownServers(), []string{mc.Addr}) })
	testserver.RestartMemcached(t, mc)
	testserver.Poll(t, within, "DownServers empty once memcached is back", func() bool { return len(f.s.DownServers()) == 0 })
	f.check(t, "memcached back")
}

// TestRecentOpenContext: opening a store whose memcached is silent ends
// with the caller's deadline, as the deadline's error (not
// timeline.ErrUnavailable), rather than after the memcached client's own
// wait for servers that answer late (memcached.OpenTimeout, a second).
func TestRecentOpenContext(t *testing.T) {
	cfg := config(t, pull.StrategyRecent, testserver.Database(t))
	openConfig(t, cfg) // the schema is in place: opening again is quick
	p := testserver.StartProxy(t, "tcp", testserver.Memcache(t))
	p.Freeze()
	cfg.Memcache = []string{p.Addr}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	s, err := pull.Open(ctx, cfg)
	if err == nil {
		s.Close()
		t.Fatal("opened on a silent memcached")
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, timeline.ErrUnavailable) {
		t.Fatalf("opening on a silent memcached, with a deadline: %v", err)
	}
}

// TestRecentRacingRebuilds posts from three goroutines while others read
// and keep destroying the lists, so that rebuilds race posts all the time.
// Every read must hold every post that had returned before the read began.
func TestRecentRacingRebuilds(t *testing.T) {
	f := newRecentFixture(t, "")
	ctx := context.Background()
	var acked [3]atomic.Int64 // newest returned post of authors 2, 3, 4
	var mu sync.Mutex
	ackedAll := map[timeline.MessageID]bool{}
	for _, m := range f.posts {
		ackedAll[m.ID] = true
	}
	var reads atomic.Int64
	end := newRaceEnd(func() bool { return reads.Load() > 0 && f.s.Stats().Rebuilds > 0 })
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 3 {
		wg.Go(func() {
			for i := 0; !end.over(); i++ {
				m, err := f.s.Post(ctx, timeline.UserID(2+w), fmt.Sprintf("race %d", i))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				ackedAll[m.ID] = true
				mu.Unlock()
				acked[w].Store(int64(m.ID))
			}
		})
	}
	wg.Go(func() {
		for i := 0; !end.over(); i++ {
			key := f.s.RecentKey(timeline.UserID(2 + i%3))
			if i%2 == 0 {
				f.mc.Delete(key)
			} else {
				f.mc.Set(&memcache.Item{Key: key, Value: []byte("x")})
			}
			time.Sleep(time.Duration(i%3) * time.Millisecond)
		}
	})
	for range 3 {
		wg.Go(func() {
			for !end.over() {
				var want [3]int64
				for i := range want {
					want[i] = acked[i].Load()
				}
				p, err := f.s.Timeline(ctx, 1, timeline.Query{Limit: timeline.MaxLimit})
				if err != nil {
					errs <- err
					return
				}
				reads.Add(1)
				have := map[timeline.MessageID]bool{}
				for _, m := range p.Messages {
					have[m.ID] = true
				}
				// A post acknowledged before the read began is on the
				// page unless the page is full of newer messages (a
				// slow writer's last post can be pushed off it by the
				// other two).
				below := len(p.Messages) == timeline.MaxLimit
				var last timeline.MessageID
				if len(p.Messages) > 0 {
					last = p.Messages[len(p.Messages)-1].ID
				}
				for i, id := range want {
					if id != 0 && !have[timeline.MessageID(id)] && !(below && timeline.MessageID(id) < last) {
						errs <- fmt.Errorf("post %d by %d had returned before the read began, and the read lacks it (%d messages down to id %d)", id, i+2, len(p.Messages), last)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := f.s.Stats()
	t.Logf("%d reads; %+v", reads.Load(), st)
	if st.Rebuilds == 0 {
		t.Fatal("no list was ever rebuilt: the test raced nothing")
	}
	// Quiet now: the walk holds every post exactly.
	var all []timeline.MessageID
	for id := range ackedAll {
		all = append(all, id)
	}
	slices.Sort(all)
	got := timelinetest.WalkIDs(t, f.s, 1, timeline.MaxLimit)
	slices.Reverse(got)
	if !slices.Equal(got, all) {
		t.Fatalf("after the race the timeline has %d messages, want %d", len(got), len(all))
	}
}

// waitServersUp reads (read) until s no longer reports a memcached server
// down: a server that failed is left alone for a while, then taken back by
// a call (with a new fence).
func waitServersUp(t *testing.T, s *pull.Store, read func()) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		read()
		if len(s.DownServers()) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("memcached still reported down: %v", s.DownServers())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// warmStore opens a store of strategy on the memcached at addr, in which
// user 1 follows users 2 to authors+1, who have posted once each, and has
// read once (lists and followees cached).
func warmStore(t *testing.T, strategy pull.Strategy, authors int, addr string) *pull.Store {
	t.Helper()
	cfg := config(t, strategy, testserver.Database(t))
	cfg.Memcache = []string{addr}
	s := openConfig(t, cfg)
	for a := timeline.UserID(2); a <= timeline.UserID(authors+1); a++ {
		timelinetest.Follow(t, s, 1, a)
		timelinetest.Post(t, s, a, "before")
	}
	timelinetest.Newest(t, s, 1)
	return s
}

// frozenStore is warmStore on a memcached of its own, which it then
// freezes (SIGSTOP) until the test ends.
func frozenStore(t *testing.T, strategy pull.Strategy, authors int) *pull.Store {
	t.Helper()
	mc := testserver.StartMemcached(t, 0)
	s := warmStore(t, strategy, authors, mc.Addr)
	if err := mc.Freeze(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.Thaw() })
	return s
}

// TestRecentFrozenMemcached: with memcached frozen (SIGSTOP), every call
// of pull-recent and pull-active with a 300 ms deadline returns soon after
// it, writes succeed, and reads fall back to the database within the
// deadline instead of failing.
func TestRecentFrozenMemcached(t *testing.T) {
	for _, strategy := range []pull.Strategy{pull.StrategyRecent, pull.StrategyActive} {
		t.Run(string(strategy), func(t *testing.T) {
			s := frozenStore(t, strategy, 5)
			const deadline = 300 * time.Millisecond
			bound := deadline + 2*recent.DefaultTimeout + 300*time.Millisecond // slack for a busy machine
			call := func(what string, f func(ctx context.Context) error) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				start := time.Now()
				err := f(ctx)
				took := time.Since(start)
				t.Logf("%s: %v after %v", what, err, took.Round(time.Millisecond))
				if err != nil {
					t.Errorf("%s: %v", what, err)
				}
				if took > bound {
					t.Errorf("%s returned after %v; deadline %v", what, took, deadline)
				}
			}
			for i := range 3 {
				call("post", func(ctx context.Context) error {
					_, err := s.Post(ctx, 2, fmt.Sprintf("frozen %d", i))
					return err
				})
				call("follow", func(ctx context.Context) error { return s.Follow(ctx, 1, 7) })
				call("unfollow", func(ctx context.Context) error { return s.Unfollow(ctx, 1, 7) })
				call("read", func(ctx context.Context) error {
					_, err := s.Timeline(ctx, 1, timeline.Query{})
					return err
				})
			}
		})
	}
}

// TestRecentCanceledIsNoCacheError: a read whose caller gives up while
// memcached is answering (its context canceled, as a benchmark does to the
// calls in flight when a phase ends) returns the cancellation, and
// memcached, which did nothing wrong, is not charged a cache error.
// memcached sits behind a proxy that the test freezes, and the read is
// canceled the moment the proxy holds its request, so it is always
// waiting on memcached then, well within the store's memcached timeout.
func TestRecentCanceledIsNoCacheError(t *testing.T) {
	for _, strategy := range []pull.Strategy{pull.StrategyRecent, pull.StrategyActive} {
		t.Run(string(strategy), func(t *testing.T) {
			p := testserver.StartProxy(t, "tcp", testserver.Memcache(t))
			s := warmStore(t, strategy, 3, p.Addr)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var held atomic.Int64
			p.OnHeld(func() { held.Add(1); cancel() })
			p.Freeze()
			_, err := s.Timeline(ctx, 1, timeline.Query{})
			if !errors.Is(err, context.Canceled) || held.Load() == 0 {
				t.Fatalf("read canceled while memcached answered: %v (requests held: %d), want context.Canceled", err, held.Load())
			}
			if st := s.Stats(); st.CacheErrors != 0 {
				t.Fatalf("a canceled read counted as a cache error: %+v", st)
			}
		})
	}
}
