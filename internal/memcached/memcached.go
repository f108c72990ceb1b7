// Package memcached is the memcached client of pushpull's pull lists and
// cache decorator: the text protocol, with every call bounded by the
// caller's context, several servers of which some may fail, and fences
// that keep a server that failed from serving what it missed.
//
// # Deadlines
//
// Every call takes a context. A request to a server ends by the earlier of
// the context's deadline and now + Options.Timeout, and a context canceled
// while the request waits ends it at once (the connection is then closed:
// its stream is out of step). A canceled context fails a call before any
// traffic.
//
// # Servers that fail
//
// Keys are spread over the servers by gomemcache's ServerList hash (of the
// whole key, or of the part Options.Route picks), so every process listing
// the same servers in the same order finds a key in the same place. A key is never moved to another server when its own
// fails: two processes that disagreed on whether it failed would read and
// write different copies.
//
// A server whose request fails for a reason of its own (refused, reset,
// closed, or silent past Options.Timeout) is marked down: for
// Options.RetryAfter, reads of its keys fail at once with an error
// matching ErrServerDown, without traffic, so a dead server costs a reader
// nothing and a frozen one costs one timeout per RetryAfter, not one per
// read. Writes try it all the same, within their deadline: a write is an
// invalidation more often than not (an append of a new post, a generation
// bump), and one skipped while the server was already back for other
// processes would leave them reading what it should have changed. A
// request cut short by the caller's own deadline marks nothing: the
// server may be fine, the caller was in a hurry. New needs one server that
// answers; the others start down and are tried again later.
//
// Down (what the stores report as timeline.Degraded) stays current while
// nobody calls: a goroutine of the client's asks every server that no
// request went to lately for its fence, once per RetryAfter, so a server
// that died is named within about RetryAfter (a frozen one within
// RetryAfter and Timeout), and one that came back is brought back (its
// fence replaced first, as below) within about as long. Close stops it.
//
// A reply memcached would not send puts the stream out of step: the
// request fails, every outcome in it unknown, and its connection is
// closed, but the server answers, so it is not marked down. A
// SERVER_ERROR (memcached out of memory, say) fails only the command it
// answers, and the connection is kept.
//
// # Fences
//
// A server that failed may come back with what it held before (it was
// frozen, or cut off by the network), having missed writes that were meant
// to change or delete those values: an append of a new post to a list, a
// generation bump. Serving those values again would serve stale pages. So
// each server holds a fence, a random token under a key of its own
// (Options.Prefix + "fence"), and every key is stored on the wire as the
// caller's key + "~" + the fence of its server. Every request ends by
// reading the fence, in the same round trip; when it changed, the client
// adopts the new one and sends the request again. Replacing a server's
// fence therefore makes everything stored under the old one unreachable for
// every process at once, and the old items age out of memcached's LRU.
//
// A client replaces the fence of a server it marked down before it reads
// from that server again, so whatever a write of this process failed to
// deliver there can no longer be read, by this process or any other. Flush
// replaces every server's fence at once (the cache decorator's last resort
// when it cannot tell whose pages a write made stale), and Distrust marks
// one key's server for that treatment. One caller at a time replaces a
// server's fence; meanwhile reads of that server wait for it, within their
// context (or fail at once with ErrServerDown if the server is marked
// down), and writes go ahead: under the old fence, which retires them, or
// sent again under the new one when the fence read at their end finds it.
// A server restarted empty needs nothing: a missing fence is created
// afresh, and nothing was stored under it.
//
// What fences cannot cover: a process that never saw a server fail, reading
// from it in the moment between its return and the first request of a
// process that did see it (which replaces the fence first); and a read that
// was already waiting on a frozen server when it resumed. The first needs
// a process to miss a whole outage while another wrote through it (the
// health checks make every process see an outage longer than about
// RetryAfter, idle or not, and bring the server back within about
// RetryAfter of its return); the second is shorter than Options.Timeout.
package memcached

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// Defaults for zero Options fields.
const (
	DefaultTimeout    = 200 * time.Millisecond
	DefaultMaxIdle    = 64
	DefaultRetryAfter = time.Second
)

// FenceLen is how many bytes the fence adds to every key ("~" and ten hex
// digits): callers keep their keys within 250 - FenceLen bytes.
const FenceLen = 11

// MaxKeyLen is the longest key a caller may use.
const MaxKeyLen = 250 - FenceLen

// Item is a key with its value, flags, expiry and CAS id: gomemcache's
// type, which this client's calls take and return, so that only this
// package imports gomemcache.
type Item = memcache.Item

// What a call reports beside ErrServerDown: gomemcache's errors, under
// this package's names.
var (
	// ErrCacheMiss: the key is not there.
	ErrCacheMiss = memcache.ErrCacheMiss
	// ErrNotStored: a conditional store (add, append) found its
	// condition false.
	ErrNotStored = memcache.ErrNotStored
	// ErrCASConflict: a compare-and-swap lost to another writer.
	ErrCASConflict = memcache.ErrCASConflict
)

// ErrServerDown marks calls that failed at once because the key's server
// failed lately (see the package doc).
var ErrServerDown = errors.New("memcached server down")

// ErrNoServers means New found no server that answered.
var ErrNoServers = errors.New("no memcached server answered")

// ErrClosed is returned by calls after Close.
var ErrClosed = errors.New("memcached: client closed")

// Options configure New.
type Options struct {
	// Servers are "host:port" addresses or unix socket paths.
	Servers []string
	// Prefix names this client's fences: Prefix + "fence" on every server.
	// Clients whose keys must be fenced together share it; one whose keys
	// are separate (another namespace) uses its own, so that flushing one
	// leaves the other alone.
	Prefix string
	// Timeout bounds each request to a server when the caller's context
	// allows longer. 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxIdle is how many idle connections are kept per server. 0 means
	// DefaultMaxIdle.
	MaxIdle int
	// RetryAfter is how long a server that failed is left alone, and how
	// often a server no request went to lately is checked (see the
	// package doc). 0 means DefaultRetryAfter.
	RetryAfter time.Duration
	// Route, if not nil, gives the part of a key that chooses its server,
	// so that keys read together can share one (the cache keeps a user's
	// generation and page together). nil means the whole key.
	Route func(key string) string
}

// Client is a memcached client. It is safe for concurrent use.
type Client struct {
	list     *memcache.ServerList
	servers  []*server
	byAddr   map[net.Addr]*server
	fenceKey string
	timeout  time.Duration
	maxIdle  int
	retry    time.Duration
	route    func(string) string
	closed   atomic.Bool

	stopHealth context.CancelFunc // ends checkHealth
	healthDone chan struct{}      // closed when checkHealth has returned

	hooks hooks // for tests (export_test.go); none otherwise
}

// hooks are called, when set, where tests synchronise with a call.
type hooks struct {
	recovering       func() // by the caller that holds a server's recovery token, before it replaces the fence (recover)
	awaitingRecovery func() // by a caller about to wait for another's replacement (ready)
	dialing          func() // before a new connection is dialed (conn)
}

// server is one memcached and what this client knows of it.
type server struct {
	addr net.Addr
	name string

	mu    sync.Mutex
	idle  []*conn
	fence string // "" until known

	// downUntil (Unix nanoseconds) is when calls may try the server
	// again; 0 when it is up. suspect, when not 0, says its fence must be
	// replaced before it is read again, and counts the requests for that
	// (failures, Distrust, Flush) since the last replacement began.
	downUntil atomic.Int64
	suspect   atomic.Int64
	recovery  chan struct{} // holds a token while a caller brings it back
	failures  atomic.Int64
	lastSent  atomic.Int64 // when a request last went to it, Unix nanoseconds
}

// tryRecovery takes s's recovery token if no other caller holds it.
func (s *server) tryRecovery() bool {
	select {
	case s.recovery <- struct{}{}:
		return true
	default:
		return false
	}
}

// waitRecovery takes s's recovery token, waiting within ctx.
func (s *server) waitRecovery(ctx context.Context) error {
	select {
	case s.recovery <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *server) endRecovery() { <-s.recovery }

type conn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

// OpenTimeout is how long New waits for the servers at least: opening is
// rare, and a busy server that answers a little late is not down.
const OpenTimeout = time.Second

// New returns a client for opts.Servers. It asks every server for its
// fence (creating one where there is none), concurrently, each request
// within opts.Timeout or OpenTimeout, whichever is longer, and within ctx;
// servers that do not answer start down and are counted in Status. It
// fails when the options are bad, when no server answers (ErrNoServers,
// with each server's error), or when ctx ends first (ctx's error: the
// caller gave up, whatever the servers would have said).
func New(ctx context.Context, opts Options) (*Client, error) {
	if len(opts.Servers) == 0 {
		return nil, errors.New("memcached: no servers given")
	}
	if opts.Prefix == "" || !legalKey(opts.Prefix+"fence") {
		return nil, fmt.Errorf("memcached: fence prefix %q is not a valid key part", opts.Prefix)
	}
	c := &Client{
		list:     new(memcache.ServerList),
		byAddr:   make(map[net.Addr]*server),
		fenceKey: opts.Prefix + "fence",
		timeout:  opts.Timeout,
		maxIdle:  opts.MaxIdle,
		retry:    opts.RetryAfter,
		route:    opts.Route,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxIdle <= 0 {
		c.maxIdle = DefaultMaxIdle
	}
	if c.retry <= 0 {
		c.retry = DefaultRetryAfter
	}
	if err := c.list.SetServers(opts.Servers...); err != nil {
		return nil, fmt.Errorf("memcached: servers %v: %w", opts.Servers, err)
	}
	i := 0
	c.list.Each(func(a net.Addr) error {
		s := &server{addr: a, name: opts.Servers[i], recovery: make(chan struct{}, 1)}
		c.servers = append(c.servers, s)
		c.byAddr[a] = s
		i++
		return nil
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memcached: open: %w", err)
	}
	// The opening requests get the longer timeout as Timeout (no other
	// caller has c yet), not as a context deadline: a server silent past
	// a deadline of the caller's would not be marked down.
	timeout := c.timeout
	c.timeout = max(timeout, OpenTimeout)
	errs := make([]error, len(c.servers))
	var wg sync.WaitGroup
	for i, s := range c.servers {
		wg.Go(func() { errs[i] = c.do(ctx, s, nil, true) })
	}
	wg.Wait()
	c.timeout = timeout
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		// A request cut by the deadline can return before ctx's own
		// timer fires: wait for it, so that a caller who finds ctx.Err()
		// nil knows that the servers, not its deadline, failed New.
		<-ctx.Done()
	}
	if err := ctx.Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("memcached: open: %w", err)
	}
	up := 0
	for _, e := range errs {
		if e == nil {
			up++
		}
	}
	if up == 0 {
		return nil, fmt.Errorf("%w: %w", ErrNoServers, errors.Join(errs...))
	}
	hctx, stop := context.WithCancel(context.Background())
	c.stopHealth, c.healthDone = stop, make(chan struct{})
	go c.checkHealth(hctx)
	return c, nil
}

// checkHealth keeps Down current while the client is idle: every
// RetryAfter it asks each server that no request went to in the last half
// of that for its fence, one server after the other, each within Timeout,
// until ctx ends (Close). A server that does not answer is marked down, as
// after any failed request; one marked down that answers is brought back
// (its fence replaced, see ready), as the next call would. A server in use
// needs no asking: its calls find out.
func (c *Client) checkHealth(ctx context.Context) {
	defer close(c.healthDone)
	tick := time.NewTicker(c.retry)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, s := range c.servers {
			if ctx.Err() != nil {
				return
			}
			if time.Since(time.Unix(0, s.lastSent.Load())) < c.retry/2 {
				continue // in use: its calls find out
			}
			c.do(ctx, s, nil, true)
		}
	}
}

// ServerStatus is what Status reports of one server.
type ServerStatus struct {
	Addr     string
	Up       bool
	Failures int64 // requests that failed for a reason of the server's own, since New
}

// Status reports every server, in the order given to New.
func (c *Client) Status() []ServerStatus {
	out := make([]ServerStatus, len(c.servers))
	for i, s := range c.servers {
		out[i] = ServerStatus{Addr: s.name, Up: s.downUntil.Load() == 0, Failures: s.failures.Load()}
	}
	return out
}

// Down returns the addresses of the servers that are down now.
func (c *Client) Down() []string {
	var out []string
	for _, s := range c.servers {
		if s.downUntil.Load() != 0 {
			out = append(out, s.name)
		}
	}
	return out
}

// Close stops the health checks, closes the idle connections, and returns
// once no goroutine of the client's runs; later calls fail with ErrClosed.
func (c *Client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	if c.stopHealth != nil {
		c.stopHealth()
		<-c.healthDone
	}
	for _, s := range c.servers {
		s.mu.Lock()
		for _, cn := range s.idle {
			cn.nc.Close()
		}
		s.idle = nil
		s.mu.Unlock()
	}
	return nil
}

// request is what one round trip to one server sends and reads, apart
// from the fence that do adds. write may be called again when the fence
// changed; read must then start its results over.
type request interface {
	write(w *bufio.Writer, fence string)
	read(r *bufio.Reader) error
}

// errProtocol wraps replies that put the stream out of step.
type errProtocol struct{ msg string }

func (e errProtocol) Error() string { return e.msg }

// do runs req (nil: only the fence) on s: it waits for nothing but the
// network, within the deadline the context and Timeout give. A read of a
// server that is down fails at once; a write tries it all the same (see
// the package doc), and so does a call with no request.
func (c *Client) do(ctx context.Context, s *server, req request, write bool) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.downUntil.Load() != 0 || s.suspect.Load() != 0 {
		if err := c.ready(ctx, s, req, write); err != nil {
			return err
		}
	}
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		fence := s.fence
		s.mu.Unlock()
		if fence == "" {
			// Not known yet (New, or a server that lost it): add one
			// unless another process did, and adopt what the server holds.
			fr := fenceRead{key: c.fenceKey}
			if err := c.roundTrip(ctx, s, pair{fenceSetup{key: c.fenceKey}, &fr, ""}); err != nil {
				return err
			}
			s.mu.Lock()
			if s.fence == "" {
				s.fence = fr.got
			}
			s.mu.Unlock()
			if attempt == 2 {
				return fmt.Errorf("memcached %s: no fence could be set up", s.name)
			}
			continue
		}
		got, known, err := c.fenced(ctx, s, req, fence)
		if !known || got == fence {
			return err
		}
		s.mu.Lock()
		if s.fence == fence {
			s.fence = got // "" when the server lost it
		}
		s.mu.Unlock()
		if attempt == 2 {
			return fmt.Errorf("memcached %s: the fence keeps changing", s.name)
		}
	}
}

// fenced sends req under fence, then reads the fence, in one round trip,
// and returns the fence the server holds ("" if none) when known, and
// req's error. The fence is known after req was refused in step too.
func (c *Client) fenced(ctx context.Context, s *server, req request, fence string) (got string, known bool, err error) {
	fr := fenceRead{key: c.fenceKey}
	if req == nil {
		err = c.roundTrip(ctx, s, &fr)
	} else {
		err = c.roundTrip(ctx, s, pair{req, &fr, fence})
	}
	return fr.got, fr.done && (err == nil || inStep(err)), err
}

// pair sends a request under a fence followed by the fence read.
type pair struct {
	req   request
	fr    *fenceRead
	fence string
}

func (p pair) write(w *bufio.Writer, _ string) {
	p.req.write(w, p.fence)
	p.fr.write(w, "")
}

func (p pair) read(r *bufio.Reader) error {
	err := p.req.read(r)
	if err != nil && !inStep(err) {
		return err
	}
	if ferr := p.fr.read(r); ferr != nil {
		return ferr
	}
	return err
}

// ready brings s back into use, if it is down or suspect, before do sends
// it req: one caller at a time replaces its fence (recover) while the
// others
//   - read a server marked down: fail at once;
//   - write (req not nil): go ahead under the fence known so far. If the
//     fence is replaced first, the fence read at the end of the request
//     sends it again under the new one; if after, it went to what the new
//     fence retires;
//   - read a server up but suspect, or Flush: wait for the new fence,
//     within their context, as one read may not see what the fence is
//     there to retire.
//
// A read of a server down for less than RetryAfter fails at once.
func (c *Client) ready(ctx context.Context, s *server, req request, write bool) error {
	down := func() error { return fmt.Errorf("memcached %s: %w", s.name, ErrServerDown) }
	until := s.downUntil.Load()
	if until != 0 && !write && time.Now().UnixNano() < until {
		return down()
	}
	if !s.tryRecovery() {
		switch {
		case write && req != nil:
			return nil
		case until != 0 && !write:
			return down()
		}
		if c.hooks.awaitingRecovery != nil {
			c.hooks.awaitingRecovery()
		}
		if err := s.waitRecovery(ctx); err != nil {
			return fmt.Errorf("memcached %s: %w", s.name, err)
		}
	}
	defer s.endRecovery()
	// Another caller may have brought it back, or found it down, meanwhile.
	until = s.downUntil.Load()
	switch {
	case until == 0 && s.suspect.Load() == 0:
		return nil
	case until != 0 && !write && time.Now().UnixNano() < until:
		return down()
	}
	return c.recover(ctx, s)
}

// recover replaces s's fence, so nothing it held before can be read, and
// marks it up. The caller holds s's recovery token.
func (c *Client) recover(ctx context.Context, s *server) error {
	if c.hooks.recovering != nil {
		c.hooks.recovering()
	}
	asked := s.suspect.Load()
	fence := newFence()
	if err := c.roundTrip(ctx, s, fenceSet{key: c.fenceKey, value: fence}); err != nil {
		if s.downUntil.Load() != 0 {
			s.downUntil.Store(time.Now().Add(c.retry).UnixNano())
		}
		return err
	}
	s.mu.Lock()
	s.fence = fence
	s.mu.Unlock()
	// A Distrust or Flush since the new fence was chosen asks for another.
	s.suspect.CompareAndSwap(asked, 0)
	s.downUntil.Store(0)
	return nil
}

// roundTrip writes req, flushes, and reads its replies on one connection,
// within the deadline. A refusal that leaves the stream in step (errServer)
// keeps the connection; a reply out of step (errProtocol) closes it and
// marks nothing. Another failure that is not the caller's (its deadline or
// cancellation) marks the server down and suspect. An idle connection that
// turns out closed by the server (it restarted since) is not a failure of
// the server: the request is sent again on a new connection, once.
func (c *Client) roundTrip(ctx context.Context, s *server, req request) error {
	deadline := time.Now().Add(c.timeout)
	callerLimited := false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, callerLimited = d, true
	}
	s.lastSent.Store(time.Now().UnixNano())
	for fresh := false; ; fresh = true {
		cn, reused, err := c.conn(ctx, s, deadline, fresh)
		if err != nil {
			return c.failed(ctx, s, callerLimited, err)
		}
		err = c.exchange(ctx, cn, deadline, req)
		if err == nil || inStep(err) {
			c.release(s, cn)
			return err
		}
		cn.nc.Close()
		if reused && !fresh && ctx.Err() == nil && isClosedConn(err) {
			c.dropIdle(s)
			continue
		}
		if pe := (errProtocol{}); errors.As(err, &pe) && ctx.Err() == nil {
			// The server answers, just not as memcached does: nothing
			// to wait out, and nothing it missed that the caller does
			// not know of (every outcome of the request is an error).
			s.failures.Add(1)
			return fmt.Errorf("memcached %s: %w", s.name, err)
		}
		return c.failed(ctx, s, callerLimited, err)
	}
}

// exchange sends req on cn and reads its replies.
func (c *Client) exchange(ctx context.Context, cn *conn, deadline time.Time, req request) error {
	if err := cn.nc.SetDeadline(deadline); err != nil {
		return err
	}
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { cn.nc.SetDeadline(time.Unix(1, 0)) })
	}
	err := func() error {
		req.write(cn.w, "")
		if err := cn.w.Flush(); err != nil {
			return err
		}
		return req.read(cn.r)
	}()
	if !stop() {
		// The context ended and moved the deadline, or is about to: the
		// connection must not go back to the pool, where the move could
		// land on the next request's deadline.
		return ctx.Err()
	}
	return err
}

// isClosedConn reports whether err says the peer had closed the connection.
func isClosedConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// dropIdle closes s's idle connections: they outlived the server.
func (c *Client) dropIdle(s *server) {
	s.mu.Lock()
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	for _, cn := range idle {
		cn.nc.Close()
	}
}

// failed turns a failed request into its error, marking the server down
// unless the caller's context was what ended it.
func (c *Client) failed(ctx context.Context, s *server, callerLimited bool, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("memcached %s: %w", s.name, ctx.Err())
	}
	var ne net.Error
	if callerLimited && errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("memcached %s: %w", s.name, context.DeadlineExceeded)
	}
	s.failures.Add(1)
	s.suspect.Add(1)
	s.downUntil.Store(time.Now().Add(c.retry).UnixNano())
	return fmt.Errorf("memcached %s: %w (%w)", s.name, err, ErrServerDown)
}

// Distrust marks the server of key so that its fence is replaced before
// this client reads from it again: call it after a write whose outcome
// is unknown could not be repaired either (see the package doc). It does
// not wait.
func (c *Client) Distrust(key string) {
	if s, err := c.pick(key); err == nil {
		s.suspect.Add(1)
	}
}

// Flush replaces the fence of every server now, concurrently, so that
// nothing any process stored before can be read again. A server that
// fails is marked down, and replaces its fence when it comes back; the
// error joins those failures.
func (c *Client) Flush(ctx context.Context) error {
	errs := make([]error, len(c.servers))
	var wg sync.WaitGroup
	for i, s := range c.servers {
		s.suspect.Add(1)
		wg.Go(func() { errs[i] = c.do(ctx, s, nil, true) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Client) pick(key string) (*server, error) {
	if c.route != nil {
		key = c.route(key)
	}
	a, err := c.list.PickServer(key)
	if err != nil {
		return nil, err
	}
	return c.byAddr[a], nil
}

// conn returns an idle connection to s (reused), unless fresh, or dials
// one by the deadline, or until ctx ends.
func (c *Client) conn(ctx context.Context, s *server, deadline time.Time, fresh bool) (cn *conn, reused bool, err error) {
	if !fresh {
		s.mu.Lock()
		if n := len(s.idle); n > 0 {
			cn := s.idle[n-1]
			s.idle = s.idle[:n-1]
			s.mu.Unlock()
			return cn, true, nil
		}
		s.mu.Unlock()
	}
	if c.hooks.dialing != nil {
		c.hooks.dialing()
	}
	d := net.Dialer{Deadline: deadline}
	nc, err := d.DialContext(ctx, s.addr.Network(), s.addr.String())
	if err != nil {
		return nil, false, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 16<<10), w: bufio.NewWriterSize(nc, 4<<10)}, false, nil
}

// release keeps a connection whose last request ended cleanly.
func (c *Client) release(s *server, cn *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.closed.Load() || len(s.idle) >= c.maxIdle {
		cn.nc.Close()
		return
	}
	s.idle = append(s.idle, cn)
}

// newFence returns ten random hex digits.
func newFence() string {
	var b [5]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// The fence's own requests.

type fenceRead struct {
	key  string
	got  string
	done bool // read to the end
}

func (f *fenceRead) write(w *bufio.Writer, _ string) {
	w.WriteString("get ")
	w.WriteString(f.key)
	w.WriteString("\r\n")
}

func (f *fenceRead) read(r *bufio.Reader) error {
	f.got, f.done = "", false
	var buf []byte
	err := readValues(r, func(key []byte, _ uint32, _ uint64, size int) ([]byte, error) {
		if string(key) != f.key || buf != nil || size == 0 || size > FenceLen-1 {
			return nil, errProtocol{fmt.Sprintf("memcached: a value for %q (%d bytes) where the fence was due", truncate(key), size)}
		}
		buf = make([]byte, size)
		return buf, nil
	})
	if err != nil {
		return err
	}
	f.got, f.done = string(buf), true
	return nil
}

// fenceSetup adds a fence where there is none; the read that follows
// adopts whichever one the server holds.
type fenceSetup struct{ key string }

func (f fenceSetup) write(w *bufio.Writer, _ string) {
	v := newFence()
	fmt.Fprintf(w, "add %s 0 0 %d\r\n%s\r\n", f.key, len(v), v)
}

func (f fenceSetup) read(r *bufio.Reader) error {
	line, err := readLine(r)
	if err != nil {
		return err
	}
	if e := storeReply(line); e != nil && !errors.Is(e, memcache.ErrNotStored) {
		return e
	}
	return nil
}

type fenceSet struct{ key, value string }

func (f fenceSet) write(w *bufio.Writer, _ string) {
	fmt.Fprintf(w, "set %s 0 0 %d\r\n%s\r\n", f.key, len(f.value), f.value)
}

func (f fenceSet) read(r *bufio.Reader) error {
	line, err := readLine(r)
	if err != nil {
		return err
	}
	return storeReply(line)
}

// Reply parsing.

var (
	storedLine        = []byte("STORED\r\n")
	notStoredLine     = []byte("NOT_STORED\r\n")
	existsLine        = []byte("EXISTS\r\n")
	deletedLine       = []byte("DELETED\r\n")
	notFoundLine      = []byte("NOT_FOUND\r\n")
	endLine           = []byte("END\r\n")
	serverErrorPrefix = []byte("SERVER_ERROR ")
)

// errServer is memcached refusing one command (out of memory, a value too
// large): the stream stays in step.
type errServer struct{ line string }

func (e errServer) Error() string { return "memcached: " + e.line }

// inStep reports whether err is a refusal after which the stream is still
// in step.
func inStep(err error) bool {
	var se errServer
	return errors.As(err, &se)
}

// storeReply turns the reply to a storage command into its outcome.
func storeReply(line []byte) error {
	switch {
	case bytes.Equal(line, storedLine):
		return nil
	case bytes.Equal(line, notStoredLine):
		return memcache.ErrNotStored
	case bytes.Equal(line, existsLine):
		return memcache.ErrCASConflict
	case bytes.Equal(line, notFoundLine):
		return memcache.ErrCacheMiss
	case bytes.HasPrefix(line, serverErrorPrefix):
		return errServer{string(bytes.TrimSpace(line))}
	}
	return errProtocol{fmt.Sprintf("memcached: unexpected reply %q", truncate(line))}
}

// readValues reads VALUE lines and their data up to END. For each value,
// place is called with its line's fields (key is only valid during the
// call) and returns where its data goes: a slice of exactly size bytes, or
// nil to skip it.
// A SERVER_ERROR line ends the reply (memcached sends it instead of the
// next value or END when it cannot go on): it is returned as an errServer.
func readValues(r *bufio.Reader, place func(key []byte, flags uint32, cas uint64, size int) ([]byte, error)) error {
	for {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		if bytes.Equal(line, endLine) {
			return nil
		}
		if bytes.HasPrefix(line, serverErrorPrefix) {
			return errServer{string(bytes.TrimSpace(line))}
		}
		key, flags, size, cas, ok := parseValueLine(line)
		if !ok {
			return errProtocol{fmt.Sprintf("memcached: unexpected line %q", truncate(line))}
		}
		dst, err := place(key, flags, cas, size)
		if err != nil {
			return err
		}
		if dst == nil {
			_, err = r.Discard(size)
		} else {
			_, err = io.ReadFull(r, dst)
		}
		if err != nil {
			return err
		}
		a, err1 := r.ReadByte()
		b, err2 := r.ReadByte()
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if a != '\r' || b != '\n' {
			return errProtocol{"memcached: a value not followed by CRLF"}
		}
	}
}

// readLine reads a reply line; one longer than the reader's buffer is
// none of memcached's.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, errProtocol{fmt.Sprintf("memcached: a reply line longer than %d bytes: %q...", len(line), truncate(line))}
	}
	return line, err
}

// parseValueLine parses "VALUE <key> <flags> <bytes> [<cas>]\r\n".
func parseValueLine(line []byte) (key []byte, flags uint32, size int, cas uint64, ok bool) {
	rest, found := bytes.CutPrefix(line, []byte("VALUE "))
	if !found {
		return
	}
	rest, found = bytes.CutSuffix(rest, []byte("\r\n"))
	if !found {
		return
	}
	var f, sz []byte
	if key, rest, found = bytes.Cut(rest, []byte(" ")); !found {
		return
	}
	if f, rest, found = bytes.Cut(rest, []byte(" ")); !found {
		return
	}
	sz, cs, hasCAS := bytes.Cut(rest, []byte(" "))
	fl, err1 := strconv.ParseUint(string(f), 10, 32)
	s, err2 := strconv.ParseUint(string(sz), 10, 31)
	var err3 error
	if hasCAS {
		cas, err3 = strconv.ParseUint(string(cs), 10, 64)
	}
	if err1 != nil || err2 != nil || err3 != nil || len(key) == 0 {
		return
	}
	return key, uint32(fl), int(s), cas, true
}

// truncate shortens what goes into an error message.
func truncate(b []byte) []byte {
	if len(b) > 100 {
		return b[:100]
	}
	return b
}

// legalKey: memcached's text protocol takes keys of 1..250 bytes with no
// spaces or control characters.
func legalKey(k string) bool {
	if len(k) == 0 || len(k) > 250 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] == 0x7f {
			return false
		}
	}
	return true
}

// checkKeys rejects keys that would not be valid once fenced.
func checkKeys(keys []string) error {
	for _, k := range keys {
		if len(k) > MaxKeyLen || !legalKey(k) {
			return fmt.Errorf("memcached: %w: %q", memcache.ErrMalformedKey, k)
		}
	}
	return nil
}

// writeKey writes key under fence.
func writeKey(w *bufio.Writer, key, fence string) {
	w.WriteString(key)
	w.WriteByte('~')
	w.WriteString(fence)
}

// CallerGaveUp reports whether an operation that failed under ctx failed
// because its caller canceled the call (a benchmark cancels the calls in
// flight when a phase ends), which says nothing about memcached: such a
// failure is not one to count. A deadline that passed is memcached's: it
// used up its share of the call (ReadContext).
func CallerGaveUp(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

// ReadContext bounds the memcached part of a read that can fall back to a
// database: to half of what ctx has left when that is under timeout, so
// that a memcached that does not answer leaves the fallback the other
// half. Otherwise ctx is returned as it is (the client's own timeout
// bounds each request).
func ReadContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		if half := time.Until(d) / 2; half < timeout {
			return context.WithTimeout(ctx, half)
		}
	}
	return ctx, func() {}
}

// WriteContext bounds the memcached work that follows a database write
// that may have committed (an invalidation): it runs even if ctx is
// canceled, until ctx's deadline or for timeout, whichever is later.
func WriteContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.After(deadline) {
		deadline = d
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}
