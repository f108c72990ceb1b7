package memcache_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// readTwice reads every first page twice and returns the second copy, which
// (unless a write came in between) is a cache hit. The conformance suite
// rarely reads a first page twice without a write in between, so without
// this it would mostly check the wrapped store through cache misses.
type readTwice struct{ *memcache.Store }

func (r readTwice) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	if q.Before == "" && (q.Limit == 0 || q.Limit == timeline.DefaultLimit) {
		if _, err := r.Store.Timeline(ctx, user, q); err != nil {
			return timeline.Page{}, err
		}
	}
	return r.Store.Timeline(ctx, user, q)
}

// TestConformance runs the timeline.Store suite on the memory, push and
// pull-sp stores wrapped under the invalidate policy, each subtest with a
// fresh store and namespace, and once more on memory with keys spread over
// two memcached servers. The read-twice configurations check Follow,
// Unfollow and Post through first pages that are served from the cache
// (see readTwice), so a missed invalidation fails them. They must have hit
// the cache and invalidated, or they proved nothing.
func TestConformance(t *testing.T) {
	var configs []timelinetest.Config
	for _, model := range []string{modelMemory, modelPush, modelPullSP} {
		var mu sync.Mutex
		var total memcache.Stats
		configs = append(configs, timelinetest.Config{
			Name: model,
			Open: func(t *testing.T) timeline.Store {
				s, _ := open(t, model, memcache.Options{Policy: memcache.PolicyInvalidate})
				return s
			},
		}, timelinetest.Config{
			Name: model + "/read-twice",
			Open: func(t *testing.T) timeline.Store {
				s, _ := open(t, model, memcache.Options{Policy: memcache.PolicyInvalidate})
				t.Cleanup(func() {
					st := s.Stats()
					mu.Lock()
					total.Hits += st.Hits
					total.Misses += st.Misses
					total.Invalidations += st.Invalidations
					total.Errors += st.Errors
					mu.Unlock()
				})
				return readTwice{s}
			},
			After: func(t *testing.T) {
				t.Logf("%s: %+v", model, total)
				if total.Hits == 0 || total.Invalidations == 0 {
					t.Errorf("the suite never hit the cache or never invalidated: %+v", total)
				}
				if total.Errors != 0 {
					t.Errorf("%d cache errors against a healthy memcached", total.Errors)
				}
			},
		})
	}
	second := testserver.StartMemcached(t, 0)
	configs = append(configs, timelinetest.Config{
		Name: modelMemory + "/two-servers",
		Open: func(t *testing.T) timeline.Store {
			s, _ := open(t, modelMemory, memcache.Options{
				Policy:  memcache.PolicyInvalidate,
				Servers: []string{testserver.Memcache(t), second.Addr},
			})
			return s
		},
	})
	timelinetest.RunConfigs(t, configs)
}

// TestServersShareKeys checks that with two servers both get keys, and that
// every key lives where gomemcache's selector puts it.
func TestServersShareKeys(t *testing.T) {
	a, b := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	ns := namespace("shard")
	s, inner := open(t, modelMemory, memcache.Options{Policy: memcache.PolicyInvalidate, Servers: []string{a.Addr, b.Addr}, Namespace: ns})
	const users = 40
	for u := timeline.UserID(2); u <= users; u++ {
		timelinetest.Follow(t, s, u, 1)
	}
	timelinetest.Post(t, inner, 1, "hello")
	for u := timeline.UserID(2); u <= users; u++ {
		timelinetest.Newest(t, s, u)
	}
	count := func(addr string) int {
		c := newRawCache(t, ns, addr)
		n := 0
		for u := 2; u <= users; u++ {
			for _, kind := range []string{"page", "gen"} {
				if _, err := c.Get(fmt.Sprintf("pushpull:%s:%s:%d", ns, kind, u)); err == nil {
					n++
				}
			}
		}
		return n
	}
	na, nb := count(a.Addr), count(b.Addr)
	t.Logf("keys on server A: %d, on server B: %d", na, nb)
	if na == 0 || nb == 0 || na+nb != 2*(users-1) {
		t.Fatalf("keys on A %d, on B %d; want both nonzero, %d in all", na, nb, 2*(users-1))
	}
}

// TestHitServedFromCache: a second read of a first page does not reach the
// wrapped store, returns the same page field for field, and its cursor
// continues the walk.
func TestHitServedFromCache(t *testing.T) {
	for _, policy := range []memcache.Policy{memcache.PolicyTTL, memcache.PolicyInvalidate} {
		t.Run(string(policy), func(t *testing.T) {
			mem, g, s := gated(t, memcache.Options{Policy: policy, TTL: time.Minute})
			timelinetest.Follow(t, s, 1, 2)
			var posted []timeline.Message
			for i := range 25 {
				posted = append(posted, timelinetest.Post(t, s, 2, fmt.Sprintf("message %d ✓", i)))
			}
			want := timelinetest.Newest(t, mem, 1)
			first := timelinetest.Newest(t, s, 1)
			calls := g.calls.Load()
			for range 3 {
				got := timelinetest.Newest(t, s, 1)
				if !samePage(got, want) || !samePage(first, want) {
					t.Fatalf("cached page differs from the store's:\ngot  %+v\nwant %+v", got, want)
				}
				for _, m := range got.Messages {
					if m.CreatedAt.Location() != time.UTC {
						t.Fatalf("CreatedAt %v not in UTC", m.CreatedAt)
					}
				}
				// Limit 20 is the same page as limit 0.
				if p, err := s.Timeline(timelinetest.Context(t), 1, timeline.Query{Limit: timeline.DefaultLimit}); err != nil || !samePage(p, want) {
					t.Fatalf("limit %d: %v, %+v", timeline.DefaultLimit, err, p)
				}
			}
			if c := g.calls.Load(); c != calls {
				t.Fatalf("hits reached the wrapped store %d times", c-calls)
			}
			st := s.Stats()
			if st.Hits != 6 || st.Misses != 1 {
				t.Fatalf("stats %+v: want 6 hits and 1 miss", st)
			}
			rest := timelinetest.Page(t, s, 1, timeline.Query{Before: first.Next}) // from a cached cursor
			if len(rest.Messages) != 5 || rest.Messages[0].ID != posted[4].ID || rest.Next != "" {
				t.Fatalf("second page %v, want the 5 oldest", timelinetest.IDs(rest.Messages))
			}
		})
	}
}

// TestPassThrough: pages other than the newest at the default limit, and
// invalid queries, go to the wrapped store and are counted.
func TestPassThrough(t *testing.T) {
	s, inner := open(t, modelMemory, memcache.Options{Policy: memcache.PolicyInvalidate})
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.PostN(t, s, 2, 30)
	p0 := timelinetest.Newest(t, s, 1)
	for _, q := range []timeline.Query{{Limit: 5}, {Limit: timeline.MaxLimit}, {Before: p0.Next}, {Limit: 3, Before: p0.Next}} {
		got, want := timelinetest.Page(t, s, 1, q), timelinetest.Page(t, inner, 1, q)
		if !samePage(got, want) {
			t.Fatalf("query %+v: got %v, want %v", q, timelinetest.IDs(got.Messages), timelinetest.IDs(want.Messages))
		}
	}
	bad := 0
	for _, tc := range timelinetest.BadInputs() {
		if strings.HasPrefix(tc.Name, "timeline") {
			timelinetest.CheckInputError(t, tc.Name, tc.Call(timelinetest.Context(t), s), tc.Sentinel, tc.Field)
			bad++
		}
	}
	if st := s.Stats(); st.PassThrough != uint64(4+bad) || st.Hits+st.Misses != 1 {
		t.Fatalf("stats %+v: want %d pass-through reads and 1 first-page read", st, 4+bad)
	}
}

// TestReadAfterWriteConcurrent is the invalidate policy's guarantee under
// load: readers keep filling and reading first pages while one writer
// posts, follows and unfollows; after each write returns, every user's
// cached first page equals the wrapped store's (nothing else writes, so the
// store's page is the truth).
func TestReadAfterWriteConcurrent(t *testing.T) {
	for _, model := range []string{modelMemory, modelPush, modelPullSP} {
		t.Run(model, func(t *testing.T) {
			ops := 300
			if model != modelMemory {
				ops = 120
			}
			if testing.Short() {
				ops /= 4
			}
			// A memcached call that times out counts as an error; on a
			// busy machine (-race, other work) the default timeout is
			// short, and the test counts failures of the cache, not of
			// the machine.
			s, inner := open(t, model, memcache.Options{Policy: memcache.PolicyInvalidate, Timeout: 10 * time.Second})
			const users = 6
			rng := rand.New(rand.NewPCG(1, 2))
			for u := timeline.UserID(1); u <= users; u++ {
				for v := timeline.UserID(1); v <= users; v++ {
					if u != v && rng.IntN(2) == 0 {
						timelinetest.Follow(t, s, u, v)
					}
				}
			}
			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for r := range 4 {
				wg.Go(func() {
					rr := rand.New(rand.NewPCG(uint64(r), 9))
					for ctx.Err() == nil {
						u := timeline.UserID(rr.IntN(users) + 1)
						if _, err := s.Timeline(ctx, u, timeline.Query{}); err != nil && ctx.Err() == nil {
							errs <- err
							return
						}
					}
				})
			}
			defer func() { stop(); wg.Wait() }()
			for i := range ops {
				a := timeline.UserID(rng.IntN(users) + 1)
				b := timeline.UserID(rng.IntN(users-1) + 1)
				if b >= a {
					b++
				}
				var what string
				switch k := rng.IntN(10); {
				case k < 6:
					timelinetest.Post(t, s, a, fmt.Sprintf("post %d", i))
					what = fmt.Sprintf("post by %d", a)
				case k < 8:
					timelinetest.Follow(t, s, a, b)
					what = fmt.Sprintf("%d follows %d", a, b)
				default:
					timelinetest.Unfollow(t, s, a, b)
					what = fmt.Sprintf("%d unfollows %d", a, b)
				}
				select {
				case err := <-errs:
					t.Fatalf("reader: %v", err)
				default:
				}
				for u := timeline.UserID(1); u <= users; u++ {
					got := timelinetest.Newest(t, s, u)
					want := timelinetest.Newest(t, inner, u)
					if !samePage(got, want) {
						t.Fatalf("op %d (%s): user %d's cached first page %v, store has %v", i, what, u, timelinetest.IDs(got.Messages), timelinetest.IDs(want.Messages))
					}
				}
			}
			st := s.Stats()
			t.Logf("%+v", st)
			if st.Hits == 0 || st.Invalidations == 0 || st.Errors != 0 {
				t.Fatalf("stats %+v: want hits, invalidations, no errors", st)
			}
		})
	}
}

// TestRacingFill orders the classic race by hand: a reader misses and reads
// the store before a post commits, the post returns, and only then does the
// reader store its (now outdated) page. Under invalidate the next read must
// not be served that page; under ttl it is (within the TTL), which shows the
// scenario really produces a stale page.
func TestRacingFill(t *testing.T) {
	for _, policy := range []memcache.Policy{memcache.PolicyInvalidate, memcache.PolicyTTL} {
		t.Run(string(policy), func(t *testing.T) {
			_, g, s := gated(t, memcache.Options{Policy: policy, TTL: time.Minute})
			timelinetest.Follow(t, s, 1, 2)
			timelinetest.Post(t, s, 2, "a")
			g.arm(1)
			done := make(chan timeline.Page)
			go func() {
				p, _ := s.Timeline(context.Background(), 1, timeline.Query{})
				done <- p
			}()
			g.waitEntered(t) // the reader has read the store: it holds [a]
			c := timelinetest.Post(t, s, 2, "c")
			close(g.release) // now it stores [a]
			if p := <-done; len(p.Messages) != 1 {
				t.Fatalf("the racing reader got %v", timelinetest.IDs(p.Messages))
			}
			p := timelinetest.Newest(t, s, 1)
			switch policy {
			case memcache.PolicyInvalidate:
				if !has(p, c.ID) {
					t.Fatalf("read after Post returned lacks the post: %v (stats %+v)", timelinetest.IDs(p.Messages), s.Stats())
				}
			case memcache.PolicyTTL:
				if has(p, c.ID) || s.Stats().Hits != 1 {
					t.Fatalf("ttl: expected the racing reader's stale page as a hit, got %v, %+v", timelinetest.IDs(p.Messages), s.Stats())
				}
			}
		})
	}
}

// TestCoalescingRespectsGeneration: a read that begins after a Post
// returned must not share a store read that began before the post (one
// that another caller started under the previous generation), or it would
// be served a page without the post.
func TestCoalescingRespectsGeneration(t *testing.T) {
	_, g, s := gated(t, memcache.Options{Policy: memcache.PolicyInvalidate})
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.Post(t, s, 2, "a")
	g.arm(1)
	first := make(chan timeline.Page)
	go func() {
		p, _ := s.Timeline(context.Background(), 1, timeline.Query{})
		first <- p
	}()
	g.waitEntered(t) // a store read without the coming post is in flight
	c := timelinetest.Post(t, s, 2, "c")
	second := make(chan timeline.Page)
	go func() {
		p, _ := s.Timeline(context.Background(), 1, timeline.Query{})
		second <- p
	}()
	var p timeline.Page
	select {
	case p = <-second:
	case <-time.After(30 * time.Second):
		// It joined the old flight, which the gate holds until released:
		// let that finish to see what it got.
		close(g.release)
		p = <-second
		<-first
		t.Fatalf("a read begun after the post waited for a store read begun before it, and got %v", timelinetest.IDs(p.Messages))
	}
	if !has(p, c.ID) {
		t.Fatalf("read after Post returned lacks the post: %v", timelinetest.IDs(p.Messages))
	}
	close(g.release)
	<-first
}

// TestEvictedGeneration: when a user's generation key disappears (evicted,
// or memcached restarted), a page filled under the old generation must not
// come back, whatever was posted meanwhile.
func TestEvictedGeneration(t *testing.T) {
	ns := namespace("evict")
	s, inner := open(t, modelMemory, memcache.Options{Policy: memcache.PolicyInvalidate, Namespace: ns})
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.Post(t, s, 2, "a")
	timelinetest.Newest(t, s, 1) // page under generation g
	mc := newRawCache(t, ns, testserver.Memcache(t))
	genKey := fmt.Sprintf("pushpull:%s:gen:1", ns)
	if err := mc.Delete(genKey); err != nil {
		t.Fatal(err)
	}
	b := timelinetest.Post(t, inner, 2, "b") // behind the cache's back: no bump
	if p := timelinetest.Newest(t, s, 1); !has(p, b.ID) {
		t.Fatalf("page of an evicted generation served: %v", timelinetest.IDs(p.Messages))
	}
	it, err := mc.Get(genKey)
	if err != nil {
		t.Fatalf("generation not recreated: %v", err)
	}
	if string(it.Value) == "0" || string(it.Value) == "1" {
		t.Fatalf("generation restarted at %s", it.Value)
	}
	if p := timelinetest.Newest(t, s, 1); !has(p, b.ID) || s.Stats().Hits != 1 {
		t.Fatalf("after refill: %v, %+v", timelinetest.IDs(p.Messages), s.Stats())
	}
}

// TestCoalescing: concurrent misses for one page make one read of the
// wrapped store. The first read is held at the gate until every miss has
// reached the read of the page, so all the others are in its flight
// however late they were scheduled.
func TestCoalescing(t *testing.T) {
	for _, policy := range []memcache.Policy{memcache.PolicyTTL, memcache.PolicyInvalidate} {
		t.Run(string(policy), func(t *testing.T) {
			_, g, s := gated(t, memcache.Options{Policy: policy, TTL: time.Minute})
			inFlight := watchFlights(s)
			timelinetest.Follow(t, s, 1, 2)
			m := timelinetest.Post(t, s, 2, "hello")
			g.arm(1)
			const n = 8
			var wg sync.WaitGroup
			pages := make([]timeline.Page, n)
			for i := range n {
				wg.Go(func() {
					pages[i], _ = s.Timeline(context.Background(), 1, timeline.Query{})
				})
			}
			g.waitEntered(t)
			inFlight.wait(t, n) // the first holds the read: the others joined it
			close(g.release)
			wg.Wait()
			for i, p := range pages {
				if len(p.Messages) != 1 || p.Messages[0].ID != m.ID {
					t.Fatalf("reader %d got %v", i, timelinetest.IDs(p.Messages))
				}
			}
			pages[0].Messages[0].Body = "changed by a caller"
			if pages[1].Messages[0].Body != "hello" {
				t.Fatal("coalesced callers share one Messages slice")
			}
			st := s.Stats()
			if c := g.calls.Load(); c != 1 || st.Coalesced != n-1 || st.Misses != n {
				t.Fatalf("%d reads of the store for %d concurrent misses; stats %+v", c, n, st)
			}
		})
	}
}

// TestCanceledLeader: the caller whose miss is reading the store gives up;
// those waiting for it still get the page. The leader's read is held at
// the gate until the waiter has joined it, so the waiter is always in the
// flight its leader abandons, and gets its page from a read of its own.
func TestCanceledLeader(t *testing.T) {
	_, g, s := gated(t, memcache.Options{Policy: memcache.PolicyInvalidate})
	inFlight := watchFlights(s)
	timelinetest.Follow(t, s, 1, 2)
	m := timelinetest.Post(t, s, 2, "hello")
	g.arm(1)
	lctx, cancel := context.WithCancel(context.Background())
	leaderErr := make(chan error)
	go func() {
		_, err := s.Timeline(lctx, 1, timeline.Query{})
		leaderErr <- err
	}()
	g.waitEntered(t)
	inFlight.wait(t, 1) // the leader's
	waiter := make(chan timeline.Page)
	go func() {
		p, err := s.Timeline(context.Background(), 1, timeline.Query{})
		if err != nil {
			t.Errorf("waiting reader: %v", err)
		}
		waiter <- p
	}()
	inFlight.wait(t, 1) // the waiter joined the leader's read, held at the gate
	cancel()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled reader: got %v, want context.Canceled", err)
	}
	if p := <-waiter; len(p.Messages) != 1 || p.Messages[0].ID != m.ID {
		t.Fatalf("waiting reader got %v", timelinetest.IDs(p.Messages))
	}
	if c, st := g.calls.Load(), s.Stats(); c != 2 || st.Misses != 2 || st.Coalesced != 0 {
		t.Fatalf("%d reads of the store, stats %+v: want the leader's and the waiter's own after it", c, st)
	}
}

// TestTTLStalenessBounded: under the ttl policy a page may be stale, but
// never once the TTL has passed since the post returned. The bound is
// checked on the decorator's own clock (each value records when its read
// began), so it holds to the millisecond, not to memcached's whole seconds.
// The test sets that clock, so the reads fall where it says, before and
// after the TTL, however slowly they run; memcached's own expiry of the
// page, on its clock, is an hour and more away.
func TestTTLStalenessBounded(t *testing.T) {
	const ttl = time.Hour
	s, _ := open(t, modelMemory, memcache.Options{Policy: memcache.PolicyTTL, TTL: ttl})
	clock := setClock(s)
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.Post(t, s, 2, "a")
	timelinetest.Newest(t, s, 1) // fill
	clock.advance(time.Millisecond)
	b := timelinetest.Post(t, s, 2, "b")
	posted := clock.now()
	for _, at := range []time.Duration{0, ttl / 2, ttl - time.Millisecond, ttl, ttl + time.Millisecond, 2 * ttl} {
		clock.advance(posted.Add(at).Sub(clock.now()))
		hits := s.Stats().Hits
		p := timelinetest.Newest(t, s, 1)
		switch fresh := has(p, b.ID); {
		case at >= ttl && !fresh:
			t.Fatalf("read begun %v after the post returned lacks it (TTL %v)", at, ttl)
		case at < ttl-time.Millisecond && (fresh || s.Stats().Hits != hits+1):
			// The page was filled a millisecond before the post: it
			// is served until the TTL has passed since then.
			t.Fatalf("read begun %v after the post: fresh %v, %+v; want the cached page, stale", at, fresh, s.Stats())
		}
	}
	t.Logf("stats %+v", s.Stats())
}

// TestTTLFollowNotInvalidated: under ttl, writes leave the cache alone
// (the staleness the policy allows), and the TTL ends it. The test moves
// the decorator's clock past the TTL instead of waiting for it.
func TestTTLFollowNotInvalidated(t *testing.T) {
	const ttl = time.Hour
	s, _ := open(t, modelMemory, memcache.Options{Policy: memcache.PolicyTTL, TTL: ttl})
	clock := setClock(s)
	m := timelinetest.Post(t, s, 2, "a")
	timelinetest.Newest(t, s, 1)
	timelinetest.Follow(t, s, 1, 2)
	if p := timelinetest.Newest(t, s, 1); len(p.Messages) != 0 {
		t.Fatalf("ttl policy invalidated on follow: %v", timelinetest.IDs(p.Messages))
	}
	clock.advance(ttl + time.Millisecond)
	if p := timelinetest.Newest(t, s, 1); !has(p, m.ID) {
		t.Fatalf("after the TTL: %v", timelinetest.IDs(p.Messages))
	}
	if st := s.Stats(); st.Invalidations != 0 || st.Hits != 1 {
		t.Fatalf("ttl policy invalidated, or did not serve the page it kept: %+v", st)
	}
}

// TestMemcachedKilled kills memcached in the middle of a test: reads and
// writes keep working from the store, errors are counted; when memcached
// comes back, the cache is used again and invalidation still holds.
func TestMemcachedKilled(t *testing.T) {
	for _, policy := range []memcache.Policy{memcache.PolicyInvalidate, memcache.PolicyTTL} {
		t.Run(string(policy), func(t *testing.T) {
			mc := testserver.StartRestartableMemcached(t)
			s, inner := open(t, modelMemory, memcache.Options{Policy: policy, Servers: []string{mc.Addr}, TTL: time.Minute})
			timelinetest.Follow(t, s, 1, 2)
			timelinetest.Post(t, s, 2, "before")
			timelinetest.Newest(t, s, 1)
			timelinetest.Newest(t, s, 1)
			if st := s.Stats(); st.Hits != 1 || st.Errors != 0 {
				t.Fatalf("before the kill: %+v", st)
			}

			mc.Kill()
			for i := range 5 {
				m := timelinetest.Post(t, s, 2, fmt.Sprintf("while down %d", i))
				start := time.Now()
				p := timelinetest.Newest(t, s, 1)
				if d := time.Since(start); d > 5*time.Second {
					t.Fatalf("read took %v with memcached down", d)
				}
				if !has(p, m.ID) || !samePage(p, timelinetest.Newest(t, inner, 1)) {
					t.Fatalf("read with memcached down: %v", timelinetest.IDs(p.Messages))
				}
			}
			timelinetest.Follow(t, s, 1, 3)
			st := s.Stats()
			t.Logf("while down: %+v", st)
			if st.Errors < 5 {
				t.Fatalf("errors not counted: %+v", st)
			}

			testserver.RestartMemcached(t, mc)
			// gomemcache dropped the broken connections; the first
			// operations may still meet one.
			deadline := time.Now().Add(10 * time.Second)
			for s.Stats().Hits == st.Hits {
				if time.Now().After(deadline) {
					t.Fatalf("cache not used again after memcached came back: %+v", s.Stats())
				}
				timelinetest.Newest(t, s, 1)
			}
			if policy == memcache.PolicyInvalidate {
				m := timelinetest.Post(t, s, 2, "after")
				if p := timelinetest.Newest(t, s, 1); !has(p, m.ID) {
					t.Fatalf("after restart: post missing: %v", timelinetest.IDs(p.Messages))
				}
			}
		})
	}
}

// TestServerErrors: a memcached that answers with errors (here: items over
// its 1 KB limit are refused with SERVER_ERROR) costs hits, never reads.
func TestServerErrors(t *testing.T) {
	mc := testserver.StartMemcached(t, 0, "-I", "1k", "-o", "slab_chunk_max=512")
	s, _ := open(t, modelMemory, memcache.Options{Policy: memcache.PolicyInvalidate, Servers: []string{mc.Addr}})
	timelinetest.Follow(t, s, 1, 2)
	var last timeline.Message
	for i := range 10 {
		last = timelinetest.Post(t, s, 2, strings.Repeat("long body ", 20)+fmt.Sprint(i))
	}
	for range 3 {
		if p := timelinetest.Newest(t, s, 1); len(p.Messages) != 10 || p.Messages[0].ID != last.ID {
			t.Fatalf("got %v", timelinetest.IDs(p.Messages))
		}
	}
	if st := s.Stats(); st.Errors != 3 || st.Hits != 0 || st.Misses != 3 {
		t.Fatalf("stats %+v: want 3 failed stores, no hits", st)
	}
}

// TestCorruptValues: garbage under a page or generation key is counted as
// an error and never served; the cache recovers by itself.
func TestCorruptValues(t *testing.T) {
	ns := namespace("corrupt")
	s, inner := open(t, modelMemory, memcache.Options{Policy: memcache.PolicyInvalidate, Namespace: ns})
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.Post(t, s, 2, "a")
	mc := newRawCache(t, ns, testserver.Memcache(t))
	pageKey, genKey := fmt.Sprintf("pushpull:%s:page:1", ns), fmt.Sprintf("pushpull:%s:gen:1", ns)
	want := timelinetest.Newest(t, inner, 1)

	timelinetest.Newest(t, s, 1) // fills
	it, err := mc.Get(pageKey)
	if err != nil {
		t.Fatal(err)
	}
	it.Value = it.Value[:len(it.Value)-1] // truncated
	if err := mc.Set(it); err != nil {
		t.Fatal(err)
	}
	if p := timelinetest.Newest(t, s, 1); !samePage(p, want) {
		t.Fatalf("truncated page value: got %v", timelinetest.IDs(p.Messages))
	}
	if st := s.Stats(); st.Errors != 1 || st.Hits != 0 {
		t.Fatalf("truncated page value: stats %+v", st)
	}
	if p := timelinetest.Newest(t, s, 1); !samePage(p, want) || s.Stats().Hits != 1 {
		t.Fatalf("not refilled after a corrupt value: %v, %+v", timelinetest.IDs(p.Messages), s.Stats())
	}

	if err := mc.Set(&gomemcache.Item{Key: genKey, Value: []byte("not a number")}); err != nil {
		t.Fatal(err)
	}
	m := timelinetest.Post(t, s, 2, "b") // incr fails on a non-number: counted, page deleted
	want = timelinetest.Newest(t, inner, 1)
	for range 3 {
		if p := timelinetest.Newest(t, s, 1); !samePage(p, want) || !has(p, m.ID) {
			t.Fatalf("corrupt generation: got %v", timelinetest.IDs(p.Messages))
		}
	}
	st := s.Stats()
	t.Logf("%+v", st)
	if st.Errors < 3 || st.Hits < 2 {
		t.Fatalf("corrupt generation: stats %+v; want errors counted and the cache recovered", st)
	}
}

// TestNewContext: New asks the servers within its context: a caller's
// deadline that ends it before a silent server has had its time gives the
// deadline's error, which does not match timeline.ErrUnavailable (the
// caller gave up; the server may be fine).
func TestNewContext(t *testing.T) {
	p := testserver.StartProxy(t, "tcp", testserver.Memcache(t))
	p.Freeze()
	ctx, cancel := context.WithTimeout(t.Context(), memcached.OpenTimeout/10)
	defer cancel()
	s, err := memcache.New(ctx, timeline.NewMemory(), memcache.Options{Servers: []string{p.Addr}, Namespace: "ctx", Policy: memcache.PolicyTTL})
	if err == nil {
		s.Close()
		t.Fatal("New on a silent server opened")
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, timeline.ErrUnavailable) {
		t.Fatalf("New on a silent server, with a deadline before memcached.OpenTimeout: %v", err)
	}
}

// TestNewValidates: bad options fail in New with a clear error; servers
// that cannot be reached fail with timeline.ErrUnavailable.
func TestNewValidates(t *testing.T) {
	good := memcache.Options{Servers: []string{testserver.Memcache(t)}, Namespace: "ok", Policy: memcache.PolicyTTL}
	closed := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t)) // nothing listens there
	silent, err := net.Listen("tcp", "127.0.0.1:0")               // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var held []net.Conn
	var heldMu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			heldMu.Lock()
			held = append(held, c)
			heldMu.Unlock()
		}
	}()
	defer func() {
		heldMu.Lock()
		for _, c := range held {
			c.Close()
		}
		heldMu.Unlock()
	}()
	followers := func(context.Context, timeline.UserID) ([]timeline.UserID, error) { return nil, nil }
	for _, tc := range []struct {
		name        string
		edit        func(*memcache.Options)
		unavailable bool
		mention     string
	}{
		{"no servers", func(o *memcache.Options) { o.Servers = nil }, false, "no memcached servers"},
		{"empty address", func(o *memcache.Options) { o.Servers = []string{""} }, false, `""`},
		{"no port", func(o *memcache.Options) { o.Servers = []string{"localhost"} }, false, "localhost"},
		{"named port", func(o *memcache.Options) { o.Servers = []string{"localhost:memcache"} }, false, "port"},
		{"port out of range", func(o *memcache.Options) { o.Servers = []string{"127.0.0.1:70000"} }, false, "70000"},
		{"no host", func(o *memcache.Options) { o.Servers = []string{":11211"} }, false, "no host"},
		{"space", func(o *memcache.Options) { o.Servers = []string{"127.0.0.1:11211 127.0.0.1:11212"} }, false, "127.0.0.1:11211 127.0.0.1:11212"},
		{"twice", func(o *memcache.Options) { o.Servers = append(o.Servers, o.Servers[0]) }, false, "twice"},
		{"nothing listening", func(o *memcache.Options) { o.Servers = []string{closed} }, true, closed},
		{"silent server", func(o *memcache.Options) {
			o.Servers = []string{silent.Addr().String()}
			o.Timeout = 100 * time.Millisecond
		}, true, silent.Addr().String()},
		{"unknown host", func(o *memcache.Options) { o.Servers = []string{"no-such-host.invalid:11211"} }, true, "no-such-host.invalid"},
		{"no namespace", func(o *memcache.Options) { o.Namespace = "" }, false, "namespace"},
		{"namespace with space", func(o *memcache.Options) { o.Namespace = "a b" }, false, "namespace"},
		{"namespace with newline", func(o *memcache.Options) { o.Namespace = "a\nb" }, false, "namespace"},
		{"long namespace", func(o *memcache.Options) { o.Namespace = strings.Repeat("n", memcache.MaxNamespaceLen+1) }, false, "namespace"},
		{"no policy", func(o *memcache.Options) { o.Policy = "" }, false, "policy"},
		{"unknown policy", func(o *memcache.Options) { o.Policy = "lru" }, false, "lru"},
		{"negative TTL", func(o *memcache.Options) { o.TTL = -time.Second }, false, "TTL"},
		{"TTL over 30 days", func(o *memcache.Options) { o.TTL = 31 * 24 * time.Hour }, false, "TTL"},
		{"negative timeout", func(o *memcache.Options) { o.Timeout = -1 }, false, "Timeout"},
		{"negative idle conns", func(o *memcache.Options) { o.MaxIdleConns = -1 }, false, "MaxIdleConns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := good
			opts.Servers = slices.Clone(good.Servers)
			tc.edit(&opts)
			start := time.Now()
			s, err := memcache.New(t.Context(), timeline.NewMemory(), opts)
			if err == nil {
				s.Close()
				t.Fatal("New succeeded")
			}
			t.Logf("%v (in %v)", err, time.Since(start).Round(time.Millisecond))
			if got := errors.Is(err, timeline.ErrUnavailable); got != tc.unavailable {
				t.Fatalf("errors.Is(err, ErrUnavailable) = %v, want %v", got, tc.unavailable)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error does not mention %q", tc.mention)
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("New took %v", time.Since(start))
			}
		})
	}
	// And the good options, with every policy, work.
	for _, opts := range []memcache.Options{good, {Servers: good.Servers, Namespace: "ok", Policy: memcache.PolicyInvalidate, Followers: followers}} {
		s, err := memcache.New(t.Context(), timeline.NewMemory(), opts)
		if err != nil {
			t.Fatalf("New(%+v): %v", opts, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
}

// TestOpensWithOneServerDown: an application that restarts while one of
// its memcached servers is down comes up, reports that server, and serves
// every read (from the wrapped store where the dead server's keys live);
// once the server is back it is used again.
func TestOpensWithOneServerDown(t *testing.T) {
	up, down := testserver.StartMemcached(t, 0), testserver.StartRestartableMemcached(t)
	down.Kill()
	s, _ := open(t, modelMemory, memcache.Options{Policy: memcache.PolicyInvalidate, Servers: []string{up.Addr, down.Addr}})
	if got := s.DownServers(); len(got) != 1 || got[0] != down.Addr {
		t.Fatalf("DownServers = %v, want [%s]", got, down.Addr)
	}
	if st := s.Stats(); st.ServersDown != 1 {
		t.Fatalf("Stats.ServersDown = %d", st.ServersDown)
	}
	const users = 20
	for u := timeline.UserID(2); u <= users; u++ {
		timelinetest.Follow(t, s, u, 1)
	}
	m := timelinetest.Post(t, s, 1, "hello")
	for range 2 {
		for u := timeline.UserID(2); u <= users; u++ {
			if p := timelinetest.Newest(t, s, u); !has(p, m.ID) {
				t.Fatalf("user %d: %v", u, timelinetest.IDs(p.Messages))
			}
		}
	}
	if st := s.Stats(); st.Hits == 0 {
		t.Errorf("no hits from the live server: %+v", st)
	}
	testserver.RestartMemcached(t, down)
	deadline := time.Now().Add(5 * time.Second)
	for len(s.DownServers()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server that came back is still reported down")
		}
		timelinetest.Newest(t, s, 2)
		timelinetest.Newest(t, s, 3)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDownServersWhileIdle: a store that nobody calls still names a
// memcached server that died within about a second (memcached's
// DefaultRetryAfter), and drops it within about as long once it is back:
// its client checks its servers in the background.
func TestDownServersWhileIdle(t *testing.T) {
	up, dies := testserver.StartMemcached(t, 0), testserver.StartRestartableMemcached(t)
	s, _ := open(t, modelMemory, memcache.Options{Policy: memcache.PolicyTTL, Servers: []string{up.Addr, dies.Addr}})
	const within = 2*memcached.DefaultRetryAfter + 2*time.Second // the rest is slack for a loaded machine
	dies.Kill()
	took := testserver.Poll(t, within, "the dead server in DownServers", func() bool {
		return slices.Equal(s.DownServers(), []string{dies.Addr}) && s.Stats().ServersDown == 1
	})
	t.Logf("reported down after %v", took.Round(time.Millisecond))
	testserver.RestartMemcached(t, dies)
	took = testserver.Poll(t, within, "DownServers empty once the server is back", func() bool { return len(s.DownServers()) == 0 })
	t.Logf("reported up after %v", took.Round(time.Millisecond))
}

// TestLongKeys: the longest namespace and the largest user id still make
// legal memcached keys, and they are used (the page is a hit).
func TestLongKeys(t *testing.T) {
	ns := strings.Repeat("n", memcache.MaxNamespaceLen-20) + namespace("")[:20]
	s, _ := open(t, modelMemory, memcache.Options{Policy: memcache.PolicyInvalidate, Namespace: ns})
	const u, v = timeline.UserID(math.MaxInt64), timeline.UserID(math.MaxInt64 - 1)
	timelinetest.Follow(t, s, u, v)
	m := timelinetest.Post(t, s, v, "far away")
	timelinetest.Newest(t, s, u)
	if p := timelinetest.Newest(t, s, u); !has(p, m.ID) {
		t.Fatalf("got %v", timelinetest.IDs(p.Messages))
	}
	if st := s.Stats(); st.Hits != 1 || st.Errors != 0 {
		t.Fatalf("stats %+v: want one hit, no errors", st)
	}
	key := fmt.Sprintf("pushpull:%s:page:%d", ns, u)
	if len(key) > memcached.MaxKeyLen {
		t.Fatalf("key of %d bytes", len(key))
	}
}

// TestFollowersFailure: when the follower lookup fails, Post still
// succeeds, the failure is counted, and staleness is bounded by the TTL,
// on the decorator's clock, which the test moves past it.
func TestFollowersFailure(t *testing.T) {
	const ttl = time.Hour
	mem := newTracked()
	fail := func(context.Context, timeline.UserID) ([]timeline.UserID, error) {
		return nil, errors.New("follower lookup down")
	}
	s := wrap(t, mem, memcache.Options{Policy: memcache.PolicyInvalidate, TTL: ttl, Followers: fail})
	clock := setClock(s)
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.Newest(t, s, 1)
	m := timelinetest.Post(t, s, 2, "hello")
	if st := s.Stats(); st.Errors != 1 {
		t.Fatalf("follower lookup failure not counted: %+v", st)
	}
	clock.advance(ttl + time.Millisecond)
	if p := timelinetest.Newest(t, s, 1); !has(p, m.ID) {
		t.Fatalf("stale beyond the TTL: %v", timelinetest.IDs(p.Messages))
	}
}

// TestInvalidationOutOfTime: when the follower lookup cannot finish in the
// caller's time (the database frozen after the post committed), Post still
// returns after its deadline, and no follower is served a page without
// the post: the fences are replaced instead. The lookup hangs until its
// context ends, so a Post that did not give it up by the deadline would
// not return at all: the test waits for it for 30 s, not for a guess of
// how soon it returns.
func TestInvalidationOutOfTime(t *testing.T) {
	inner, followers := openInner(t, modelMemory)
	var frozen atomic.Bool
	s := wrap(t, inner, memcache.Options{
		Policy:  memcache.PolicyInvalidate,
		Timeout: 100 * time.Millisecond,
		Followers: func(ctx context.Context, author timeline.UserID) ([]timeline.UserID, error) {
			if frozen.Load() {
				<-ctx.Done() // a lookup that hangs until it is given up
				return nil, ctx.Err()
			}
			return followers(ctx, author)
		},
	})
	const users = 5
	for u := timeline.UserID(2); u <= users; u++ {
		timelinetest.Follow(t, s, u, 1)
	}
	timelinetest.Post(t, s, 1, "before")
	for u := timeline.UserID(2); u <= users; u++ {
		timelinetest.Newest(t, s, u) // cached
	}
	frozen.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	type posted struct {
		m   timeline.Message
		err error
	}
	done := make(chan posted, 1)
	go func() {
		m, err := s.Post(ctx, 1, "while the lookup hangs")
		done <- posted{m, err}
	}()
	var m timeline.Message
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		m = r.m
	case <-time.After(30 * time.Second):
		t.Fatal("Post did not return within 30 s of its 300 ms deadline: it waited for the hanging follower lookup")
	}
	for u := timeline.UserID(2); u <= users; u++ {
		if p := timelinetest.Newest(t, s, u); !has(p, m.ID) {
			t.Errorf("user %d: a page without the acknowledged post: %v", u, timelinetest.IDs(p.Messages))
		}
	}
	if st := s.Stats(); st.Flushes != 1 {
		t.Errorf("Flushes = %d, want 1", st.Flushes)
	}
}

// TestCanceledIsNoError: a read whose caller gives up while memcached is
// answering (its context canceled, as a benchmark does to the calls in
// flight when a phase ends) returns the cancellation and is not counted
// as a memcached error. memcached sits behind a proxy that the test
// freezes, and the read is canceled when the proxy holds its request, so
// it is always waiting on memcached then; its Timeout of a minute leaves
// the cancellation the only way out.
func TestCanceledIsNoError(t *testing.T) {
	for _, policy := range []memcache.Policy{memcache.PolicyTTL, memcache.PolicyInvalidate} {
		t.Run(string(policy), func(t *testing.T) {
			p := testserver.StartProxy(t, "tcp", testserver.Memcache(t))
			s, _ := open(t, modelMemory, memcache.Options{Policy: policy, Servers: []string{p.Addr}, Timeout: time.Minute})
			timelinetest.Follow(t, s, 1, 2)
			timelinetest.Post(t, s, 2, "a")
			timelinetest.Newest(t, s, 1) // fills
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var held atomic.Int64
			p.OnHeld(func() { held.Add(1); cancel() })
			p.Freeze()
			if _, err := s.Timeline(ctx, 1, timeline.Query{}); !errors.Is(err, context.Canceled) || held.Load() == 0 {
				t.Fatalf("read canceled while memcached answered: %v (requests held: %d), want context.Canceled", err, held.Load())
			}
			if st := s.Stats(); st.Errors != 0 || st.ServersDown != 0 {
				t.Fatalf("a canceled read counted as a memcached error: %+v", st)
			}
		})
	}
}

// settlingStore is a store that applies writes later, as push-async does.
type settlingStore struct{ *timeline.Memory }

func (settlingStore) Settle(context.Context) error { return nil }

// TestAbilitiesThroughTheCache: the decorator claims no ability of the
// store it wraps (a synchronous store does not pass for one that settles),
// timeline.As finds the wrapped store's (its pool) through it, and a store
// that applies writes later is refused, since no invalidation could keep
// its pages current.
func TestAbilitiesThroughTheCache(t *testing.T) {
	s, inner := open(t, modelPush, memcache.Options{Policy: memcache.PolicyInvalidate})
	if _, ok := timeline.Store(s).(timeline.Settler); ok {
		t.Error("the decorator of a synchronous store is a Settler")
	}
	if _, ok := timeline.As[timeline.Settler](s); ok {
		t.Error("As finds a Settler in front of a synchronous store")
	}
	holder, ok := timeline.As[timeline.DBHolder](s)
	if !ok || holder.DB() != inner.(timeline.DBHolder).DB() {
		t.Error("As does not find the wrapped store's pool through the decorator")
	}
	if _, ok := timeline.As[timeline.Counting](s); !ok {
		t.Error("the decorator's own counters are not found")
	}
	_, err := memcache.New(context.Background(), settlingStore{timeline.NewMemory()}, memcache.Options{
		Servers: []string{testserver.Memcache(t)}, Namespace: "later", Policy: memcache.PolicyInvalidate,
	})
	if !errors.Is(err, memcache.ErrApplyLater) {
		t.Fatalf("New over a store that settles: %v, want ErrApplyLater", err)
	}
}
