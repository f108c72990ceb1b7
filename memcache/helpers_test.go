package memcache_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Memcached: true}) }

var nsCounter atomic.Int64

// namespace returns a namespace no other store (in this run or an earlier
// one against the same memcached) has used.
func namespace(what string) string {
	return fmt.Sprintf("test-%s-%d-%d-%d", what, os.Getpid(), time.Now().UnixNano(), nsCounter.Add(1))
}

// tracked is the memory store plus the follower lists that the invalidate
// policy needs (timeline.Memory does not expose them).
type tracked struct {
	*timeline.Memory
	mu        sync.Mutex
	followers map[timeline.UserID]map[timeline.UserID]bool
}

func newTracked() *tracked {
	return &tracked{Memory: timeline.NewMemory(), followers: make(map[timeline.UserID]map[timeline.UserID]bool)}
}

func (m *tracked) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	err := m.Memory.Follow(ctx, follower, followee)
	if err == nil {
		m.mu.Lock()
		if m.followers[followee] == nil {
			m.followers[followee] = make(map[timeline.UserID]bool)
		}
		m.followers[followee][follower] = true
		m.mu.Unlock()
	}
	return err
}

func (m *tracked) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	err := m.Memory.Unfollow(ctx, follower, followee)
	if err == nil {
		m.mu.Lock()
		delete(m.followers[followee], follower)
		m.mu.Unlock()
	}
	return err
}

func (m *tracked) AllFollowers(ctx context.Context, author timeline.UserID) ([]timeline.UserID, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []timeline.UserID
	for u := range m.followers[author] {
		out = append(out, u)
	}
	return out, nil
}

// Models the cache is tested on.
const (
	modelMemory = "memory"
	modelPush   = "push"
	modelPullSP = "pull-sp"
)

// openInner opens a fresh, empty store of model (SQL ones in a database of
// their own) and its follower lister.
func openInner(t testing.TB, model string) (timeline.Store, memcache.FollowersFunc) {
	t.Helper()
	var (
		s         timeline.Store
		followers memcache.FollowersFunc
	)
	switch model {
	case modelMemory:
		m := newTracked()
		s, followers = m, m.AllFollowers
	case modelPush:
		p, err := push.Open(timelinetest.Context(t), push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
		if err != nil {
			t.Fatal(err)
		}
		s, followers = p, p.AllFollowers
	case modelPullSP:
		p, err := pull.Open(timelinetest.Context(t), pull.Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Read: sqlread.SP{}})
		if err != nil {
			t.Fatal(err)
		}
		s, followers = p, p.AllFollowers
	default:
		t.Fatalf("unknown model %q", model)
	}
	t.Cleanup(func() { s.Close() })
	return s, followers
}

// wrap wraps inner with opts, filling in the shared memcached and a fresh
// namespace when opts leaves them empty.
func wrap(t testing.TB, inner timeline.Store, opts memcache.Options) *memcache.Store {
	t.Helper()
	if opts.Servers == nil {
		opts.Servers = []string{testserver.Memcache(t)}
	}
	if opts.Namespace == "" {
		opts.Namespace = namespace(string(opts.Policy))
	}
	s, err := memcache.New(t.Context(), inner, opts)
	if err != nil {
		t.Fatalf("memcache.New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// open opens a cached store of model under policy.
func open(t testing.TB, model string, opts memcache.Options) (*memcache.Store, timeline.Store) {
	t.Helper()
	inner, followers := openInner(t, model)
	if opts.Followers == nil {
		opts.Followers = followers
	}
	return wrap(t, inner, opts), inner
}

// has reports whether p holds the message id.
func has(p timeline.Page, id timeline.MessageID) bool {
	return slices.Contains(timelinetest.IDs(p.Messages), id)
}

// samePage reports whether two pages hold the same messages (every field)
// and the same cursor.
func samePage(a, b timeline.Page) bool {
	if a.Next != b.Next || a.Prev != b.Prev || len(a.Messages) != len(b.Messages) {
		return false
	}
	return slices.EqualFunc(a.Messages, b.Messages, timelinetest.SameMessage)
}

// gate wraps a store and can hold its next Timeline calls after they have
// read, so that tests can order a fill against a write.
type gate struct {
	timeline.Store
	calls   atomic.Int64
	mu      sync.Mutex
	armed   int
	entered chan struct{}
	release chan struct{}
}

// gated returns a tracked memory store, a gate in front of it, and the
// cache (with opts, learning followers from the memory store) in front of
// the gate.
func gated(t testing.TB, opts memcache.Options) (*tracked, *gate, *memcache.Store) {
	t.Helper()
	mem := newTracked()
	g := newGate(mem)
	opts.Followers = mem.AllFollowers
	return mem, g, wrap(t, g, opts)
}

func newGate(s timeline.Store) *gate {
	return &gate{Store: s, entered: make(chan struct{}, 100), release: make(chan struct{})}
}

// arm makes the next n Timeline calls block after reading, until Release
// (or their context ends).
func (g *gate) arm(n int) {
	g.mu.Lock()
	g.armed = n
	g.mu.Unlock()
}

func (g *gate) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	g.calls.Add(1)
	p, err := g.Store.Timeline(ctx, user, q)
	g.mu.Lock()
	block := g.armed > 0
	if block {
		g.armed--
	}
	g.mu.Unlock()
	if block {
		g.entered <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return timeline.Page{}, ctx.Err()
		}
	}
	return p, err
}

func (g *gate) waitEntered(t testing.TB) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no Timeline call reached the gate")
	}
}

// clock is the clock of a store's TTL, moved by the test alone.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

// setClock makes s read the time of its TTL from the returned clock, which
// starts at the real time; call it before s is used.
func setClock(s *memcache.Store) *clock {
	c := &clock{t: time.Now()}
	memcache.SetClock(s, c.now)
	return c
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// flights reports the misses of a store: the user of each, once it has
// started the read of its page from the wrapped store or joined one in
// flight (memcache.SetInFlight).
type flights chan timeline.UserID

// watchFlights makes s report its misses to the returned flights; call it
// before s is used.
func watchFlights(s *memcache.Store) flights {
	f := make(flights, 100)
	memcache.SetInFlight(s, func(u timeline.UserID) { f <- u })
	return f
}

// wait waits until n more misses have started or joined a read.
func (f flights) wait(t testing.TB, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-f:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d misses reached the read of their page", i, n)
		}
	}
}

// rawCache reads and writes a cache namespace's keys directly, as the
// decorator stores them (fenced; see internal/memcached), so that tests
// can delete or garble them.
type rawCache struct{ c *memcached.Client }

func newRawCache(t testing.TB, ns string, servers ...string) rawCache {
	t.Helper()
	c, err := memcached.New(t.Context(), memcached.Options{Servers: servers, Prefix: "pushpull:" + ns + ":", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return rawCache{c}
}

func (r rawCache) Get(key string) (*gomemcache.Item, error) {
	return r.c.GetOne(context.Background(), key)
}
func (r rawCache) Set(it *gomemcache.Item) error { return r.c.Set(context.Background(), it) }
func (r rawCache) Delete(key string) error       { return r.c.Delete(context.Background(), key) }
