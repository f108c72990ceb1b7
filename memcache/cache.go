package memcache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/pushpull/pushpull/internal/mckey"
	"github.com/pushpull/pushpull/internal/memcached"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
)

// Policy says how cached first pages are kept fresh.
type Policy string

// The policies.
const (
	// PolicyTTL serves a cached page for at most Options.TTL after the
	// read that filled it began. Writes do not touch the cache.
	PolicyTTL Policy = "ttl"
	// PolicyInvalidate bumps the generation of every follower of a post's
	// author, and of the follower of a follow or unfollow, before the
	// write returns, so no read that begins afterwards is served a page
	// without it. Options.Followers is required.
	PolicyInvalidate Policy = "invalidate"
)

// Defaults for zero Options fields.
const (
	DefaultTimeout      = 200 * time.Millisecond
	DefaultMaxIdleConns = 64
	DefaultTTL          = time.Second // under PolicyTTL
	// DefaultInvalidateTTL is the page lifetime under PolicyInvalidate,
	// where it only bounds staleness when an invalidation fails.
	DefaultInvalidateTTL = time.Minute
	// MaxTTL is memcached's limit for a relative expiration (30 days).
	MaxTTL = 30 * 24 * time.Hour
	// MaxNamespaceLen keeps every key within memcached's 250 bytes (the
	// rule of package mckey, which the pull store's namespaces follow too).
	MaxNamespaceLen = mckey.MaxNamespaceLen
)

// A write's invalidation (the follower lookup and the generation bumps)
// runs after the wrapped store's write returned, until the caller's
// deadline, or for Options.Timeout if that leaves less; if it cannot finish
// by then, one more Options.Timeout replaces the fences (see the package
// doc). So a write returns by its deadline plus at most twice the Timeout.

// ErrApplyLater means New was asked to wrap a store that applies part of
// its writes after they return (a timeline.Settler, such as push-async):
// a page read between a write's return and its application would be
// cached and stay, and no invalidation could keep it current.
var ErrApplyLater = errors.New("cache: the store applies writes after they return (asynchronous fan-out); its pages cannot be kept current")

// FollowersFunc lists the users who follow author.
type FollowersFunc func(ctx context.Context, author timeline.UserID) ([]timeline.UserID, error)

// FollowerLister is a store that lists all of an author's followers in
// one call (the stores on MariaDB read their follows index at once). Under
// PolicyInvalidate, when Options.Followers is nil, New uses it if the
// wrapped store is one, and otherwise reads the store's Followers page by
// page.
type FollowerLister interface {
	AllFollowers(ctx context.Context, author timeline.UserID) ([]timeline.UserID, error)
}

// pagedFollowers lists author's followers from s's Followers, a page of
// timeline.MaxLimit at a time.
func pagedFollowers(s timeline.Store) FollowersFunc {
	return func(ctx context.Context, author timeline.UserID) ([]timeline.UserID, error) {
		var all []timeline.UserID
		q := timeline.FollowQuery{Limit: timeline.MaxLimit}
		for {
			p, err := s.Followers(ctx, author, q)
			if err != nil {
				return nil, err
			}
			all = append(all, p.Users...)
			if p.Next == 0 {
				return all, nil
			}
			q.After = p.Next
		}
	}
}

// Options configure New.
type Options struct {
	// Servers are memcached addresses, "host:port" or a unix socket path
	// (containing a '/'). Keys are spread over them by a hash of the key
	// (gomemcache's ServerList), so every process sharing a namespace must
	// list the same servers in the same order.
	Servers []string

	// Namespace separates this store's keys from others' in the same
	// memcached: keys are "pushpull:<Namespace>:page:<user>" and
	// "pushpull:<Namespace>:gen:<user>". Use the model name, plus something
	// unique per data set. 1..MaxNamespaceLen printable ASCII bytes, no
	// spaces.
	Namespace string

	// Policy is PolicyTTL or PolicyInvalidate.
	Policy Policy

	// TTL is how long a cached page may be served after the read that
	// filled it began. 0 means DefaultTTL under PolicyTTL and
	// DefaultInvalidateTTL under PolicyInvalidate. At most MaxTTL.
	TTL time.Duration

	// Followers lists an author's followers, for PolicyInvalidate
	// (unused under PolicyTTL). nil means the wrapped store's own: in one
	// call from a FollowerLister, else page by page.
	Followers FollowersFunc

	// MaxIdleConns is how many idle connections are kept per server; size
	// it to the number of concurrent callers. 0 means DefaultMaxIdleConns.
	MaxIdleConns int

	// Timeout bounds each memcached request when the caller's context
	// allows longer (a read gives memcached at most half of what its
	// context has left, so that the wrapped store gets the rest), and a
	// server that stays silent this long is left alone for a second (see
	// package internal/memcached). 0 means DefaultTimeout.
	Timeout time.Duration
}

// Stats are the decorator's counters since New. Every first-page read is
// either a hit or a miss; Errors counts failed memcached operations (and
// failed follower lookups, and corrupt values), however many a call made;
// an operation cut short because its caller canceled the call is not one.
type Stats struct {
	Hits          uint64 // first pages served from memcached
	Misses        uint64 // first pages read from the wrapped store (absent, outdated, expired, or memcached failing)
	Coalesced     uint64 // misses that shared another caller's read of the wrapped store (singleflight)
	PassThrough   uint64 // reads that are not first pages, sent to the wrapped store untouched
	Errors        uint64 // memcached errors, corrupt values and follower-lookup failures; none fails a call
	Invalidations uint64 // generation bumps that reached memcached (PolicyInvalidate)
	Flushes       uint64 // writes whose invalidation could not finish in time, and replaced the fences instead
	ServersDown   int    // memcached servers failing now (calls for their keys go to the wrapped store)
}

type counters struct {
	hits, misses, coalesced, passThrough, errors, invalidations, flushes atomic.Uint64
}

// Store is a timeline.Store that serves first pages from memcached and
// everything else from the store it wraps. It is safe for concurrent use.
type Store struct {
	inner     timeline.Store
	mc        *memcached.Client
	policy    Policy
	ttl       time.Duration
	timeout   time.Duration
	expiry    int32 // memcached expiration of page items, seconds
	prefix    string
	followers FollowersFunc

	flights singleflight.Group
	stats   counters

	// now is the clock of the TTL: when a read begins and when a fill
	// read the wrapped store. time.Now but in tests (export_test.go).
	now func() time.Time

	// inFlight, when not nil, is called by every miss once it has
	// started the read of its page or joined one in flight, before it
	// waits for it. Tests set it (export_test.go) to know that a caller
	// shares a read they hold; nothing else does.
	inFlight func(user timeline.UserID)
}

var (
	_ timeline.Store    = (*Store)(nil)
	_ timeline.Degraded = (*Store)(nil)
)

// New wraps inner. It checks opts and asks every server for its fence,
// within ctx: an empty or malformed list fails with a plain error, a list
// none of whose servers answers with an error matching
// timeline.ErrUnavailable, and a ctx that ends first with its own error.
// Servers that do not answer while others do are left out until they come
// back (Stats.ServersDown, DownServers): an application restarting during
// a partial memcached outage comes up. On error inner is left open.
func New(ctx context.Context, inner timeline.Store, opts Options) (*Store, error) {
	if inner == nil {
		return nil, errors.New("cache: no store to wrap")
	}
	if _, ok := timeline.As[timeline.Settler](inner); ok {
		// Its writes land after they return, after the invalidation
		// that follows them: a page cached in between would stay.
		return nil, ErrApplyLater
	}
	if err := checkNamespace(opts.Namespace); err != nil {
		return nil, err
	}
	s := &Store{
		inner:     inner,
		now:       time.Now,
		policy:    opts.Policy,
		ttl:       opts.TTL,
		prefix:    "pushpull:" + opts.Namespace + ":",
		followers: opts.Followers,
	}
	switch opts.Policy {
	case PolicyTTL:
		if s.ttl == 0 {
			s.ttl = DefaultTTL
		}
	case PolicyInvalidate:
		if s.ttl == 0 {
			s.ttl = DefaultInvalidateTTL
		}
		if s.followers == nil {
			s.followers = pagedFollowers(inner)
			if lister, ok := inner.(FollowerLister); ok {
				s.followers = lister.AllFollowers
			}
		}
	default:
		return nil, fmt.Errorf("cache: policy %q: want %q or %q", opts.Policy, PolicyTTL, PolicyInvalidate)
	}
	if s.ttl < time.Millisecond || s.ttl > MaxTTL {
		return nil, fmt.Errorf("cache: TTL %v: want 1ms..%v", opts.TTL, MaxTTL)
	}
	// memcached expires items on whole seconds of its own clock; the
	// exact limit is enforced on reads (see fresh), the expiration only
	// frees the memory, a second late at worst.
	s.expiry = int32((s.ttl+time.Second-1)/time.Second) + 1
	idle := opts.MaxIdleConns
	if idle == 0 {
		idle = DefaultMaxIdleConns
	}
	if idle < 0 {
		return nil, fmt.Errorf("cache: MaxIdleConns %d is negative", opts.MaxIdleConns)
	}
	s.timeout = opts.Timeout
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	if s.timeout < 0 {
		return nil, fmt.Errorf("cache: Timeout %v is negative", opts.Timeout)
	}
	if err := CheckServers(opts.Servers); err != nil {
		return nil, err
	}
	mc, err := memcached.New(ctx, memcached.Options{
		Servers: opts.Servers, Prefix: s.prefix, Timeout: s.timeout, MaxIdle: idle,
		// A user's generation and page share a server: a read is one
		// request to one server, and a server that is down takes both
		// or neither.
		Route: func(key string) string { return key[strings.LastIndexByte(key, ':')+1:] },
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cache: memcached at %v: %w", opts.Servers, err)
		}
		return nil, fmt.Errorf("cache: memcached at %v: %w: %w", opts.Servers, timeline.ErrUnavailable, err)
	}
	s.mc = mc
	if err := s.recordHooks(ctx); err != nil {
		mc.Close()
		return nil, err
	}
	return s, nil
}

// recordHooks: under PolicyInvalidate every write through the store
// invalidates the pages it changes, so a write that bypasses it (a store
// of the same database in another process) would leave them stale. When
// the wrapped store's writes are guarded (schema.Guarded), the store says
// it runs schema.HookPages and records it in the database: such a write
// then fails with schema.ErrWriteHooks instead.
func (s *Store) recordHooks(ctx context.Context) error {
	if s.policy != PolicyInvalidate {
		return nil
	}
	g, ok := timeline.As[schema.Guarded](s.inner)
	if !ok || g.WriteGuard() == nil {
		return nil
	}
	if err := g.WriteGuard().Record(ctx, schema.HookPages); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// checkNamespace: the cache needs a namespace, and one that follows
// mckey's rule.
func checkNamespace(ns string) error {
	if ns == "" {
		return errors.New("cache: no namespace (Options.Namespace)")
	}
	if err := mckey.CheckNamespace(ns); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// CheckServers rejects an empty list and addresses that are not host:port
// with a numeric port (or a unix socket path), before any network traffic.
func CheckServers(servers []string) error {
	if len(servers) == 0 {
		return errors.New("cache: no memcached servers given")
	}
	seen := make(map[string]bool)
	for _, addr := range servers {
		if seen[addr] {
			return fmt.Errorf("cache: memcached server %q listed twice", addr)
		}
		seen[addr] = true
		if strings.Contains(addr, "/") {
			continue // a unix socket
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("cache: memcached server %q: want host:port: %v", addr, err)
		}
		if host == "" {
			return fmt.Errorf("cache: memcached server %q: no host", addr)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("cache: memcached server %q: port %q is not a number in 1..65535", addr, port)
		}
	}
	return nil
}

// Unwrap implements timeline.Wrapper: it returns the wrapped store, whose
// abilities timeline.As finds through the decorator (its pool, its
// primer); the decorator's own are Counting (its hits and misses) and
// Degraded (its servers and the wrapped store's).
func (s *Store) Unwrap() timeline.Store { return s.inner }

// Policy returns the store's policy.
func (s *Store) Policy() Policy { return s.policy }

// Stats returns the counters.
func (s *Store) Stats() Stats {
	return Stats{
		Hits:          s.stats.hits.Load(),
		Misses:        s.stats.misses.Load(),
		Coalesced:     s.stats.coalesced.Load(),
		PassThrough:   s.stats.passThrough.Load(),
		Errors:        s.stats.errors.Load(),
		Invalidations: s.stats.invalidations.Load(),
		Flushes:       s.stats.flushes.Load(),
		ServersDown:   len(s.mc.Down()),
	}
}

// DownServers implements timeline.Degraded: the memcached servers failing
// now, as given in Options.Servers, and those of the wrapped store.
func (s *Store) DownServers() []string {
	down := s.mc.Down()
	if d, ok := timeline.As[timeline.Degraded](s.inner); ok {
		for _, addr := range d.DownServers() {
			if !slices.Contains(down, addr) {
				down = append(down, addr)
			}
		}
	}
	return down
}

// Counters implements timeline.Counting with the first-page hits and misses
// and the memcached errors.
func (s *Store) Counters() map[string]int64 {
	st := s.Stats()
	return map[string]int64{
		counter.PageHits:    int64(st.Hits),
		counter.PageMisses:  int64(st.Misses),
		counter.CacheErrors: int64(st.Errors),
	}
}

// Close closes the memcached connections and the wrapped store, and returns
// the wrapped store's error. Calling it twice is harmless.
func (s *Store) Close() error {
	s.mc.Close()
	return s.inner.Close()
}

func (s *Store) pageKey(user timeline.UserID) string {
	return s.prefix + "page:" + strconv.FormatInt(int64(user), 10)
}

func (s *Store) genKey(user timeline.UserID) string {
	return s.prefix + "gen:" + strconv.FormatInt(int64(user), 10)
}

// isFirstPage reports whether q asks for the page the cache keeps: the
// newest one at the default size.
func isFirstPage(q timeline.Query) bool {
	return q.Before == "" && q.Since == "" && q.After == "" && (q.Limit == 0 || q.Limit == timeline.DefaultLimit)
}

// Timeline implements timeline.Store. The newest page at the default limit
// comes from memcached when a current copy is there; everything else, and
// every read memcached cannot serve, comes from the wrapped store.
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	if !isFirstPage(q) || user <= 0 {
		// The wrapped store validates the query and reports bad input.
		s.stats.passThrough.Add(1)
		return s.inner.Timeline(ctx, user, q)
	}
	if err := ctx.Err(); err != nil {
		return timeline.Page{}, err
	}
	start := s.now()
	var (
		gen    uint64
		hit    *timeline.Page
		usable bool
	)
	mctx, cancel := memcached.ReadContext(ctx, s.timeout)
	if s.policy == PolicyInvalidate {
		gen, hit, usable = s.lookupGen(mctx, user, start)
	} else {
		hit, usable = s.lookupTTL(mctx, user, start)
	}
	cancel()
	if hit != nil {
		s.stats.hits.Add(1)
		return *hit, nil
	}
	s.stats.misses.Add(1)
	if !usable {
		return s.inner.Timeline(ctx, user, timeline.Query{})
	}
	return s.fill(ctx, user, gen, start)
}

// fresh reports whether e may be served to a read that began at start.
func (s *Store) fresh(e *entry, start time.Time) bool {
	return start.Sub(e.fetchedAt) <= s.ttl
}

// decode decodes a page item; a corrupt one is counted as an error.
func (s *Store) decode(it *memcached.Item) (entry, bool) {
	e, err := decodeEntry(it.Value)
	if err != nil {
		if !errors.Is(err, errVersion) {
			s.stats.errors.Add(1)
		}
		return entry{}, false
	}
	return e, true
}

// lookupTTL is the ttl policy's read: one Get of the page key. usable is
// false when memcached failed, so the page should not be filled.
func (s *Store) lookupTTL(ctx context.Context, user timeline.UserID, start time.Time) (hit *timeline.Page, usable bool) {
	it, err := s.mc.GetOne(ctx, s.pageKey(user))
	switch {
	case errors.Is(err, memcached.ErrCacheMiss):
		return nil, true
	case err != nil:
		s.failed(ctx)
		return nil, false
	}
	if e, ok := s.decode(it); ok && s.fresh(&e, start) {
		return &e.page, true
	}
	return nil, true
}

// lookupGen is the invalidate policy's read: one Get of the user's
// generation and page, one round trip to the server both live on. The page is current when it was filled
// under the generation that is current now. A missing generation is
// created with a random value (one more round trip, the first time). gen is
// the generation a fill must be stored under.
func (s *Store) lookupGen(ctx context.Context, user timeline.UserID, start time.Time) (gen uint64, hit *timeline.Page, usable bool) {
	gk, pk := s.genKey(user), s.pageKey(user)
	items, err := s.mc.Get(ctx, []string{gk, pk})
	if err != nil {
		s.failed(ctx)
		return 0, nil, false
	}
	git := items[0]
	if git == nil {
		gen, ok := s.initGen(ctx, gk)
		return gen, nil, ok
	}
	gen, err = strconv.ParseUint(string(git.Value), 10, 64)
	if err != nil {
		// Not a number: incr would fail on it too. Remove it; the next
		// read starts a fresh generation.
		s.stats.errors.Add(1)
		if err := s.mc.Delete(ctx, gk); err != nil && !errors.Is(err, memcached.ErrCacheMiss) {
			s.failed(ctx)
		}
		return 0, nil, false
	}
	if pit := items[1]; pit != nil {
		if e, ok := s.decode(pit); ok && e.gen == gen && s.fresh(&e, start) {
			return gen, &e.page, true
		}
	}
	return gen, nil, true
}

// initGen creates a missing generation key with a random value, or reads
// the one a concurrent reader created first. The value must never be one a
// page in memcached was filled under, or that page would look current: a
// random 62-bit number repeats an old one with negligible probability,
// where restarting from 0 or 1 would revive pages filled under an evicted
// generation.
func (s *Store) initGen(ctx context.Context, gk string) (uint64, bool) {
	gen := rand.Uint64()>>2 + 1
	err := s.mc.Add(ctx, &memcached.Item{Key: gk, Value: strconv.AppendUint(nil, gen, 10)})
	if err == nil {
		return gen, true
	}
	if !errors.Is(err, memcached.ErrNotStored) {
		s.failed(ctx)
		return 0, false
	}
	it, err := s.mc.GetOne(ctx, gk) // lost the race to another reader
	if err != nil {
		if !errors.Is(err, memcached.ErrCacheMiss) {
			s.failed(ctx)
		}
		return 0, false
	}
	gen, err = strconv.ParseUint(string(it.Value), 10, 64)
	if err != nil {
		s.stats.errors.Add(1)
		return 0, false
	}
	return gen, true
}

// filled is the result of one read of the wrapped store, shared by the
// callers that missed at the same time.
type filled struct {
	page      timeline.Page
	fetchedAt time.Time
}

// leaderGone marks a fill that failed because the caller that ran it was
// canceled; callers that were merely waiting for it try again.
type leaderGone struct{ err error }

func (e leaderGone) Error() string { return e.err.Error() }

// fill reads the first page from the wrapped store and stores it under
// generation gen. Concurrent misses for the same page (and, under the
// invalidate policy, the same generation) share one read. Each caller waits
// only as long as its own context allows.
func (s *Store) fill(ctx context.Context, user timeline.UserID, gen uint64, start time.Time) (timeline.Page, error) {
	key := strconv.FormatInt(int64(user), 10)
	if s.policy == PolicyInvalidate {
		// A caller may only share a read that began after it saw gen,
		// never one begun under an older generation: see the package doc.
		key += "/" + strconv.FormatUint(gen, 10)
	}
	for {
		led := false
		ch := s.flights.DoChan(key, func() (any, error) {
			led = true
			return s.load(ctx, user, gen)
		})
		if s.inFlight != nil {
			s.inFlight(user)
		}
		var r singleflight.Result
		select {
		case <-ctx.Done():
			return timeline.Page{}, ctx.Err()
		case r = <-ch:
		}
		var gone leaderGone
		if errors.As(r.Err, &gone) {
			if led || ctx.Err() != nil {
				return timeline.Page{}, gone.err
			}
			continue // another caller's cancellation: read again
		}
		if r.Err != nil {
			return timeline.Page{}, r.Err
		}
		f := r.Val.(*filled)
		if led {
			return f.page, nil
		}
		s.stats.coalesced.Add(1)
		if start.Sub(f.fetchedAt) > s.ttl {
			// The shared read began longer than the TTL before this one
			// (a very slow store): too old for this caller.
			return s.inner.Timeline(ctx, user, timeline.Query{})
		}
		// Every caller gets its own slice; the messages' strings are
		// immutable.
		p := f.page
		p.Messages = slices.Clone(p.Messages)
		return p, nil
	}
}

// load runs in the flight's leader: read the wrapped store, then store the
// page. The read begins after gen was read from memcached, which is what
// makes the page current for gen.
func (s *Store) load(ctx context.Context, user timeline.UserID, gen uint64) (any, error) {
	fetchedAt := s.now()
	p, err := s.inner.Timeline(ctx, user, timeline.Query{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, leaderGone{err}
		}
		return nil, err
	}
	val, err := appendEntry(nil, &entry{gen: gen, fetchedAt: fetchedAt, page: p})
	if err == nil {
		mctx, cancel := memcached.ReadContext(ctx, s.timeout)
		err = s.mc.Set(mctx, &memcached.Item{Key: s.pageKey(user), Value: val, Expiration: s.expiry})
		cancel()
	}
	if err != nil {
		s.failed(ctx)
	}
	return &filled{page: p, fetchedAt: fetchedAt}, nil
}

// Post implements timeline.Store. Under PolicyInvalidate it bumps the
// generation of every follower of author after the wrapped store's Post
// returns, and before this one does.
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	m, err := s.inner.Post(ctx, author, body)
	if s.policy == PolicyInvalidate && !errors.Is(err, timeline.ErrInvalidInput) {
		// Even when Post failed: a commit whose acknowledgement was lost
		// (or whose context ended) may still have stored the message.
		s.invalidate(ctx, func(ictx context.Context) ([]timeline.UserID, error) { return s.followers(ictx, author) })
	}
	return m, err
}

// Delete implements timeline.Store. Under PolicyInvalidate it bumps the
// generation of every follower of author after the wrapped store's Delete
// returns, and before this one does, as Post does.
func (s *Store) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	err := s.inner.Delete(ctx, author, id)
	if s.policy == PolicyInvalidate && !errors.Is(err, timeline.ErrInvalidInput) && !errors.Is(err, timeline.ErrNotFound) {
		s.invalidate(ctx, func(ictx context.Context) ([]timeline.UserID, error) { return s.followers(ictx, author) })
	}
	return err
}

// AuthorTimeline implements timeline.Store: the wrapped store's, uncached.
func (s *Store) AuthorTimeline(ctx context.Context, author timeline.UserID, q timeline.Query) (timeline.Page, error) {
	return s.inner.AuthorTimeline(ctx, author, q)
}

// Message implements timeline.Store: the wrapped store's, uncached.
func (s *Store) Message(ctx context.Context, id timeline.MessageID) (timeline.Message, error) {
	return s.inner.Message(ctx, id)
}

// Followees implements timeline.Store: the wrapped store's, uncached.
func (s *Store) Followees(ctx context.Context, user timeline.UserID, q timeline.FollowQuery) (timeline.FollowPage, error) {
	return s.inner.Followees(ctx, user, q)
}

// Followers implements timeline.Store: the wrapped store's, uncached.
func (s *Store) Followers(ctx context.Context, user timeline.UserID, q timeline.FollowQuery) (timeline.FollowPage, error) {
	return s.inner.Followers(ctx, user, q)
}

// Follows implements timeline.Store: the wrapped store's, uncached.
func (s *Store) Follows(ctx context.Context, follower, followee timeline.UserID) (bool, error) {
	return s.inner.Follows(ctx, follower, followee)
}

// Follow implements timeline.Store. Under PolicyInvalidate it bumps the
// follower's generation after the wrapped store's Follow returns.
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	err := s.inner.Follow(ctx, follower, followee)
	if s.policy == PolicyInvalidate && !errors.Is(err, timeline.ErrInvalidInput) {
		s.invalidate(ctx, func(context.Context) ([]timeline.UserID, error) { return []timeline.UserID{follower}, nil })
	}
	return err
}

// Unfollow implements timeline.Store. Under PolicyInvalidate it bumps the
// follower's generation after the wrapped store's Unfollow returns.
func (s *Store) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	err := s.inner.Unfollow(ctx, follower, followee)
	if s.policy == PolicyInvalidate && !errors.Is(err, timeline.ErrInvalidInput) {
		s.invalidate(ctx, func(context.Context) ([]timeline.UserID, error) { return []timeline.UserID{follower}, nil })
	}
	return err
}

// invalidate bumps the generation of every user that users lists, in one
// pipelined round trip per server, after a write to the wrapped store. The
// write may have committed, so this runs even if ctx is canceled: until
// ctx's deadline, or for Options.Timeout if that is later. What it cannot
// finish by then (the follower lookup, a bump and the page delete that
// backs it) it makes up for by replacing the fences of every server
// (memcached.Client.Flush), within one more Timeout: every cached page then
// misses once, and none is stale. A server that fails even that replaces
// its fence before this process uses it again.
func (s *Store) invalidate(ctx context.Context, users func(context.Context) ([]timeline.UserID, error)) {
	ictx, cancel := memcached.WriteContext(ctx, s.timeout)
	defer cancel()
	if s.bumpAll(ictx, users) {
		return
	}
	s.stats.flushes.Add(1)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	if err := s.mc.Flush(fctx); err != nil {
		s.stats.errors.Add(1)
	}
}

// bumpAll looks users up and bumps their generations, deleting the page of
// each whose bump failed; it reports whether every one of them is done.
// A missing generation needs nothing: the next read creates a fresh random
// one.
func (s *Store) bumpAll(ctx context.Context, users func(context.Context) ([]timeline.UserID, error)) bool {
	us, err := users(ctx)
	if err != nil {
		s.failed(ctx)
		return false
	}
	if len(us) == 0 {
		return true
	}
	keys := make([]string, len(us))
	for i, u := range us {
		keys[i] = s.genKey(u)
	}
	var pages []string
	for i, err := range s.mc.Increment(ctx, keys, 1) {
		if err == nil || errors.Is(err, memcached.ErrCacheMiss) {
			s.stats.invalidations.Add(1)
			continue
		}
		s.failed(ctx)
		if errors.Is(err, memcached.ErrServerDown) {
			// The server failed: this process replaces its fence before
			// it reads or writes there again, and so does every process
			// that saw it fail (see package internal/memcached).
			continue
		}
		pages = append(pages, s.pageKey(us[i]))
	}
	if len(pages) == 0 {
		return true
	}
	ok := true
	for _, err := range s.mc.DeleteMulti(ctx, pages) {
		if err != nil && !errors.Is(err, memcached.ErrCacheMiss) && !errors.Is(err, memcached.ErrServerDown) {
			s.failed(ctx)
			ok = false
		}
	}
	return ok
}

// failed counts a memcached operation that failed, unless its caller
// gave up (memcached.CallerGaveUp).
func (s *Store) failed(ctx context.Context) {
	if !memcached.CallerGaveUp(ctx) {
		s.stats.errors.Add(1)
	}
}
