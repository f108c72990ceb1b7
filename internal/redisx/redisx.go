// Package redisx is pushpull's Redis client: rueidis (chosen over
// go-redis by measurement, see internal/redisclient/clientbench), with
// every call bounded by a deadline, Lua scripts sent by their SHA-1, and a
// server that failed skipped by reads for a while.
//
// # Deadlines
//
// Every call takes a context, and ends by the earlier of its deadline and
// now + Options.Timeout (a read) or Options.WriteTimeout (a write, longer:
// a write whose outcome is unknown costs its caller a fence). A call to a
// server that stopped answering (frozen, or cut off) returns at that
// deadline with an error; rueidis keeps the connection until
// Options.Timeout has passed five times over without an answer, then
// closes it and dials again at the next call.
//
// # Servers that fail
//
// A call that fails for a reason of the server's own (refused, reset, or
// silent past the timeout, not the caller's own deadline) marks the server
// down for Options.RetryAfter: reads fail at once with ErrDown meanwhile,
// so that a dead server costs a reader nothing and a frozen one one
// timeout per RetryAfter. Writes are sent all the same. A call that timed
// out while the server answered other calls meanwhile marks nothing: the server is alive, only slow (on a machine short of CPU a
// redis-server may wait its turn for longer than the timeout), and
// failing every read for RetryAfter would cost far more than the one.
//
// Whether a failed write was applied is often unknown: a frozen server
// applies on its return what it had received. Applied reports the cases
// where it surely was not: the connection was refused, or the call failed
// before it was sent. A caller whose writes keep derived state current
// must treat every other failure as "perhaps applied, perhaps not" (see
// push/redis's fence).
package redisx

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// Defaults for zero Options fields.
const (
	DefaultTimeout = 200 * time.Millisecond
	// DefaultWriteTimeout is 2.5 times DefaultTimeout: a frozen server
	// holds a write for 500 ms, and a write and the fence it may owe
	// together for a second.
	DefaultWriteTimeout = 500 * time.Millisecond
	DefaultRetryAfter   = time.Second
)

// Options configure a Client.
type Options struct {
	// Addr is the server, "host:port".
	Addr string
	// Timeout bounds every read; 0 means DefaultTimeout.
	Timeout time.Duration
	// WriteTimeout bounds every write; 0 means 2.5 times Timeout.
	WriteTimeout time.Duration
	// RetryAfter is how long reads skip a server that failed; 0 means
	// DefaultRetryAfter.
	RetryAfter time.Duration
}

// ErrDown marks a read that failed at once because the server failed
// lately.
var ErrDown = errors.New("redis server down")

// Client is a connection to one redis-server, safe for concurrent use.
type Client struct {
	rc           rueidis.Client
	addr         string
	timeout      time.Duration
	writeTimeout time.Duration
	retryAfter   time.Duration
	downUntil    atomic.Int64 // unix ns; 0: up
	answered     atomic.Int64 // unix ns of the latest answer's arrival
	calls        atomic.Int64 // commands sent
}

// New connects to the server and checks that it answers within ctx and
// five times the timeout (at least a second).
func New(ctx context.Context, opts Options) (*Client, error) {
	if opts.Addr == "" {
		return nil, errors.New("redis: no server address")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = opts.Timeout * 5 / 2
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = DefaultRetryAfter
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{opts.Addr},
		DisableCache:      true,
		DisableRetry:      true,
		Dialer:            net.Dialer{Timeout: max(5*opts.Timeout, time.Second)},
		ConnWriteTimeout:  max(5*opts.Timeout, time.Second),
		PipelineMultiplex: pipelineMultiplex,
	})
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", opts.Addr, err)
	}
	c := &Client{rc: rc, addr: opts.Addr, timeout: opts.Timeout, writeTimeout: opts.WriteTimeout, retryAfter: opts.RetryAfter}
	// A server that is only slow at this moment is given the patience
	// of the connection's writes; one that is not running refuses at once.
	sp := c.begin(ctx, max(5*opts.Timeout, time.Second))
	defer sp.cancel()
	if err := rc.Do(sp.ctx, rc.B().Ping().Build()).Error(); err != nil {
		rc.Close()
		return nil, fmt.Errorf("redis %s: %w", opts.Addr, err)
	}
	return c, nil
}

// Addr is the server's address.
func (c *Client) Addr() string { return c.addr }

// Close closes the connections.
func (c *Client) Close() { c.rc.Close() }

// Calls returns how many commands the client has sent.
func (c *Client) Calls() int64 { return c.calls.Load() }

// Down reports whether the server failed within RetryAfter.
func (c *Client) Down() bool {
	until := c.downUntil.Load()
	return until != 0 && time.Now().UnixNano() < until
}

// DownServers is the server's address while it is Down, else nil: what a
// store keeping state in Redis reports as timeline.Degraded.
func (c *Client) DownServers() []string {
	if c.Down() {
		return []string{c.addr}
	}
	return nil
}

// span is one call: its context, bounded by the client's timeout, and
// what noted needs to judge its failure.
type span struct {
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelFunc
	callers bool  // the parent's deadline comes before the timeout
	start   int64 // unix ns
}

// begin starts a call under parent, bounded by d (c.timeout for a read,
// c.writeTimeout for a write).
func (c *Client) begin(parent context.Context, d time.Duration) span {
	dl, ok := parent.Deadline()
	ctx, cancel := context.WithTimeout(parent, d)
	return span{parent: parent, ctx: ctx, cancel: cancel, callers: ok && time.Until(dl) < d, start: time.Now().UnixNano()}
}

// answer records that the server answered (err is nil, or an error
// reply) and reports whether it did.
func (c *Client) answer(err error) bool {
	if _, ok := rueidis.IsRedisErr(err); err != nil && !ok && !rueidis.IsRedisNil(err) {
		return false
	}
	now := time.Now().UnixNano()
	for {
		cur := c.answered.Load()
		if cur >= now || c.answered.CompareAndSwap(cur, now) {
			return true
		}
	}
}

// noted marks the server down if err, from the call sp, is the server's
// fault, and returns err. A call that its parent cut short marks nothing:
// the server may be fine, the caller was in a hurry (a deadline error is
// the caller's when its deadline came first, even when the client saw it
// before the parent's own timer fired). Nor does a call that timed out
// while the server answered other calls meanwhile.
func (c *Client) noted(sp span, err error) error {
	if c.answer(err) || sp.parent.Err() != nil {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) && (sp.callers || c.answered.Load() > sp.start) {
		return err
	}
	c.downUntil.Store(time.Now().Add(c.retryAfter).UnixNano())
	return err
}

// pipelineMultiplex is rueidis's: the client keeps 1 << it connections.
const pipelineMultiplex = 1

// pipelines is how many connections a client keeps.
const pipelines = 1 << pipelineMultiplex

// broken reports whether err says the connection was closed under the
// call (the server died or dropped it): a call on another connection may
// tell more.
func broken(err error) bool {
	return err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}

// NotApplied reports whether err, from a write, says the write was surely
// not applied: the server refused the connection (no server is running,
// and the next one starts empty), or it answered with an error.
func NotApplied(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := rueidis.IsRedisErr(err); ok {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, ErrDown)
}

// Script is a Lua script, sent by its SHA-1 (EVALSHA), and whole (EVAL)
// only when the server does not have it yet.
type Script struct {
	src, sha string
}

// NewScript returns the script of src.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{src: src, sha: hex.EncodeToString(sum[:])}
}

// Call is one run of a script: its keys and arguments.
type Call struct {
	Keys, Args []string
}

// Run runs script once; read says it only reads (it fails at once with
// ErrDown while the server is down).
func (c *Client) Run(ctx context.Context, read bool, script *Script, call Call) rueidis.RedisResult {
	return c.RunAll(ctx, read, script, []Call{call})[0]
}

// RunAll runs script once per call, pipelined, and returns their results
// in order.
func (c *Client) RunAll(ctx context.Context, read bool, script *Script, calls []Call) []rueidis.RedisResult {
	out := make([]rueidis.RedisResult, len(calls))
	if len(calls) == 0 {
		return out
	}
	if read && c.Down() {
		for i := range out {
			out[i] = rueidis.NewErrorResult(ErrDown)
		}
		return out
	}
	bound := c.writeTimeout
	if read {
		bound = c.timeout
	}
	sp := c.begin(ctx, bound)
	defer sp.cancel()
	ctx = sp.ctx
	cmds := make(rueidis.Commands, len(calls))
	for i, call := range calls {
		cmds[i] = c.rc.B().Evalsha().Sha1(script.sha).Numkeys(int64(len(call.Keys))).Key(call.Keys...).Arg(call.Args...).Build()
	}
	c.calls.Add(int64(len(cmds)))
	res := c.rc.DoMulti(ctx, cmds...)
	var again []int
	for i, r := range res {
		if e, ok := rueidis.IsRedisErr(r.Error()); ok && e.IsNoScript() {
			again = append(again, i)
			continue
		}
		out[i] = r
	}
	if len(again) > 0 {
		cmds = cmds[:0]
		for _, i := range again {
			call := calls[i]
			cmds = append(cmds, c.rc.B().Eval().Script(script.src).Numkeys(int64(len(call.Keys))).Key(call.Keys...).Arg(call.Args...).Build())
		}
		c.calls.Add(int64(len(cmds)))
		for j, r := range c.rc.DoMulti(ctx, cmds...) {
			out[again[j]] = r
		}
	}
	for _, r := range out {
		if c.answer(r.Error()) {
			return out
		}
	}
	c.noted(sp, out[0].Error())
	return out
}

// Do sends one command built by build, bounded as a write is.
func (c *Client) Do(ctx context.Context, build func(b rueidis.Builder) rueidis.Completed) rueidis.RedisResult {
	sp := c.begin(ctx, c.writeTimeout)
	defer sp.cancel()
	c.calls.Add(1)
	r := c.rc.Do(sp.ctx, build(c.rc.B()))
	c.noted(sp, r.Error())
	return r
}

// ErrorPrefix reports whether err is an error reply of the server that
// begins with word (a script's own error, such as "EPOCH"), and the rest
// of its message.
func ErrorPrefix(err error, word string) (rest string, ok bool) {
	e, isRedis := rueidis.IsRedisErr(err)
	if !isRedis {
		return "", false
	}
	msg := e.Error()
	// A script's error reply may come wrapped by the server's location
	// of the error: find the word anywhere.
	i := strings.Index(msg, word)
	if i < 0 {
		return "", false
	}
	return strings.TrimSpace(strings.SplitN(msg[i+len(word):], " script:", 2)[0]), true
}

// Types of rueidis that callers handle, under this package's names, so
// that only this package imports rueidis.
type (
	// Builder builds a command (Client.Do).
	Builder = rueidis.Builder
	// Completed is a built command.
	Completed = rueidis.Completed
	// Result is a command's result.
	Result = rueidis.RedisResult
)

// IsNil reports whether err is Redis's nil reply (a missing key).
func IsNil(err error) bool { return rueidis.IsRedisNil(err) }

// Timeout returns the bound of every read.
func (c *Client) Timeout() time.Duration { return c.timeout }

// ReadContext bounds a read that has a fallback: it gets half of what ctx
// has left when that is less than timeout, so that the fallback gets the
// rest; otherwise the read's own timeout bounds it.
func ReadContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	left := time.Until(dl)
	if left/2 >= timeout {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, dl.Add(-left/2))
}
