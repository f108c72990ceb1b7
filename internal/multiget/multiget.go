// Package multiget is a lean memcached multi-get ("gets k1 k2 ...") for a
// hot read path that fetches dozens of small values per request, and
// pipelined appends and deletes for a write that touches dozens of keys.
//
// gomemcache's GetMulti does the same job, but per value it renews the
// connection's deadline, allocates an Item, a value buffer and a map
// entry, and it starts a goroutine per server even when there is one:
// fetching 44 author lists that way cost more client CPU than memcached
// spent serving them. Here a request sets one deadline, the values share
// one buffer, the items one array, and the result is a slice aligned with
// the keys, so no map is built.
//
// It complements a gomemcache Client rather than replacing it: both take
// the same *memcache.ServerList, so a key is read here from the server
// that client writes it to, and the items carry CAS ids that the client's
// CompareAndSwap accepts.
package multiget

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// Client fetches many keys at once. It is safe for concurrent use.
type Client struct {
	servers *memcache.ServerList
	timeout time.Duration
	maxIdle int

	mu     sync.Mutex
	idle   map[net.Addr][]*conn
	closed bool
}

type conn struct {
	nc   net.Conn
	addr net.Addr
	r    *bufio.Reader
	w    *bufio.Writer
}

// New returns a client for servers. timeout bounds each request (dialing,
// writing the keys and reading every value); maxIdle is how many idle
// connections it keeps per server.
func New(servers *memcache.ServerList, timeout time.Duration, maxIdle int) *Client {
	if maxIdle <= 0 {
		maxIdle = 2
	}
	return &Client{servers: servers, timeout: timeout, maxIdle: maxIdle, idle: make(map[net.Addr][]*conn)}
}

// ErrClosed is returned by Get, Append and Delete after Close.
var ErrClosed = errors.New("multiget: client closed")

// Get fetches keys with their CAS ids. items[i] is the value of keys[i],
// or nil if memcached has none; the values must not be appended to in
// place (they share a buffer, capped so that an append copies). Keys must
// be valid memcached keys: at most 250 bytes, no spaces or control
// characters. With several servers, their requests run concurrently, and
// an error from any of them fails the whole Get.
func (c *Client) Get(keys []string) ([]*memcache.Item, error) {
	items := make([]*memcache.Item, len(keys))
	if len(keys) == 0 {
		return items, nil
	}
	for _, k := range keys {
		if !legalKey(k) {
			return nil, fmt.Errorf("multiget: %w: %q", memcache.ErrMalformedKey, k)
		}
	}
	first, groups, err := c.split(keys)
	if err != nil {
		return nil, err
	}
	if groups == nil {
		return items, c.getFrom(first, keys, nil, items, nil, nil)
	}
	errs := make(chan error, len(groups))
	for _, g := range groups {
		go func() { errs <- c.getFrom(g.addr, keys, g.index, items, nil, nil) }()
	}
	for range groups {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		return nil, err
	}
	return items, nil
}

// Append appends each item's value to the value memcached holds under its
// key, pipelined: one write and one read per server however many items
// there are, where gomemcache's Append takes a round trip each. Only the
// keys and values are used (append keeps the stored flags and expiry).
//
// errs[i] is nil when items[i] was appended and memcache.ErrNotStored when
// memcached did not store it: its key holds nothing (append never creates
// a key), or the value would grow past memcached's item size limit;
// memcached gives the same answer for both. Other errors mean memcached
// refused it or the server failed; a server that fails fails all of its
// items. Keys must be valid memcached keys.
func (c *Client) Append(items []*memcache.Item) (errs []error) {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	return c.pipeline(keys, func(w *bufio.Writer, i int) { writeAppend(w, items[i]) }, func(line []byte) (error, bool) {
		err := appendReply(line)
		return err, err != errUnknownReply
	})
}

// AppendGet appends app and then fetches key (with its CAS id; nil when
// memcached has none), in one request when both keys live on one server,
// in two concurrent ones otherwise: a write that must also learn
// something costs one round trip. appErr is app's outcome as Append
// reports it; err is the failure of the whole request, which makes
// appErr unknown too.
func (c *Client) AppendGet(app *memcache.Item, key string) (appErr error, it *memcache.Item, err error) {
	if !legalKey(app.Key) || !legalKey(key) {
		err := fmt.Errorf("multiget: %w: %q or %q", memcache.ErrMalformedKey, app.Key, key)
		return err, nil, err
	}
	a, err := c.servers.PickServer(app.Key)
	if err != nil {
		return err, nil, err
	}
	b, err := c.servers.PickServer(key)
	if err != nil {
		return err, nil, err
	}
	items := make([]*memcache.Item, 1)
	keys := []string{key}
	if a == b {
		if err := c.getFrom(a, keys, nil, items, app, &appErr); err != nil {
			return err, nil, err
		}
		return appErr, items[0], nil
	}
	done := make(chan error, 1)
	go func() { done <- c.Append([]*memcache.Item{app})[0] }()
	err = c.getFrom(b, keys, nil, items, nil, nil)
	appErr = <-done
	if err != nil {
		return appErr, nil, err
	}
	return appErr, items[0], nil
}

// writeAppend writes the append command for it.
func writeAppend(w *bufio.Writer, it *memcache.Item) {
	w.WriteString("append ")
	w.WriteString(it.Key)
	w.WriteString(" 0 0 ")
	var num [20]byte // servers' goroutines write concurrently
	w.Write(strconv.AppendInt(num[:0], int64(len(it.Value)), 10))
	w.WriteString("\r\n")
	w.Write(it.Value)
	w.WriteString("\r\n")
}

var errUnknownReply = errors.New("multiget: unknown reply")

// appendReply turns the reply line to an append into its outcome:
// errUnknownReply when the line is none of memcached's answers to it
// (the stream is then out of step).
func appendReply(line []byte) error {
	switch {
	case bytes.Equal(line, storedLine):
		return nil
	case bytes.Equal(line, notStoredLine):
		return memcache.ErrNotStored
	case bytes.HasPrefix(line, serverErrorPrefix):
		return fmt.Errorf("multiget: %s", bytes.TrimSpace(line))
	}
	return errUnknownReply
}

// Delete deletes keys, pipelined like Append. errs[i] is nil when keys[i]
// was deleted, memcache.ErrCacheMiss when it held nothing, and another
// error when the server failed.
func (c *Client) Delete(keys []string) (errs []error) {
	return c.pipeline(keys, func(w *bufio.Writer, i int) {
		w.WriteString("delete ")
		w.WriteString(keys[i])
		w.WriteString("\r\n")
	}, func(line []byte) (error, bool) {
		switch {
		case bytes.Equal(line, deletedLine):
			return nil, true
		case bytes.Equal(line, notFoundLine):
			return memcache.ErrCacheMiss, true
		}
		return nil, false
	})
}

// pipeline sends one command per key (write writes the i-th) to each
// key's server, all of a server's in one write, then reads one reply line
// per command, in order, and turns it into the key's error with reply,
// which reports false for a line it does not know.
func (c *Client) pipeline(keys []string, write func(w *bufio.Writer, i int), reply func(line []byte) (error, bool)) []error {
	errs := make([]error, len(keys))
	failAll := func(err error) []error {
		for j := range errs {
			errs[j] = err
		}
		return errs
	}
	if len(keys) == 0 {
		return errs
	}
	for _, k := range keys {
		if !legalKey(k) {
			return failAll(fmt.Errorf("multiget: %w: %q", memcache.ErrMalformedKey, k))
		}
	}
	first, groups, err := c.split(keys)
	if err != nil {
		return failAll(err)
	}
	if groups == nil {
		c.pipelineTo(first, len(keys), nil, write, reply, errs)
		return errs
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() { c.pipelineTo(g.addr, len(g.index), g.index, write, reply, errs) })
	}
	wg.Wait()
	return errs
}

// pipelineTo runs pipeline's commands for the n keys at index (all of
// them if index is nil) on addr.
func (c *Client) pipelineTo(addr net.Addr, n int, index []int, write func(w *bufio.Writer, i int), reply func(line []byte) (error, bool), errs []error) {
	slot := func(j int) int {
		if index == nil {
			return j
		}
		return index[j]
	}
	fail := func(from int, err error) {
		for j := from; j < n; j++ {
			errs[slot(j)] = err
		}
	}
	cn, err := c.conn(addr)
	if err != nil {
		fail(0, err)
		return
	}
	if err := cn.nc.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		cn.nc.Close()
		fail(0, err)
		return
	}
	for j := range n {
		write(cn.w, slot(j))
	}
	if err := cn.w.Flush(); err != nil {
		cn.nc.Close()
		fail(0, fmt.Errorf("multiget: %v: %w", addr, err))
		return
	}
	for j := range n {
		line, err := cn.r.ReadSlice('\n')
		if err != nil {
			cn.nc.Close()
			fail(j, fmt.Errorf("multiget: %v: %w", addr, err))
			return
		}
		if e, ok := reply(line); ok {
			errs[slot(j)] = e
			continue
		}
		if bytes.HasPrefix(line, serverErrorPrefix) {
			// The server read the command and refused it (out of
			// memory, say): the stream is still in step.
			errs[slot(j)] = fmt.Errorf("multiget: %v: %s", addr, bytes.TrimSpace(line))
			continue
		}
		cn.nc.Close()
		fail(j, fmt.Errorf("multiget: %v: unexpected reply %q", addr, truncate(line)))
		return
	}
	c.release(cn)
}

var (
	storedLine        = []byte("STORED\r\n")
	notStoredLine     = []byte("NOT_STORED\r\n")
	deletedLine       = []byte("DELETED\r\n")
	notFoundLine      = []byte("NOT_FOUND\r\n")
	serverErrorPrefix = []byte("SERVER_ERROR ")
)

// split groups keys by server. With one server (the common case) it
// returns that server and no map, sparing the caller maps and goroutines;
// otherwise every key is in one of the groups.
func (c *Client) split(keys []string) (first net.Addr, groups map[net.Addr]*group, err error) {
	first, err = c.servers.PickServer(keys[0])
	if err != nil {
		return nil, nil, err
	}
	// A ServerList hands out the same net.Addr values every time, so
	// they compare (and hash) by identity.
	for i := 1; i < len(keys); i++ {
		addr, err := c.servers.PickServer(keys[i])
		if err != nil {
			return nil, nil, err
		}
		if groups == nil && addr == first {
			continue
		}
		if groups == nil {
			groups = map[net.Addr]*group{first: {addr: first, index: seq(i)}}
		}
		g := groups[addr]
		if g == nil {
			g = &group{addr: addr}
			groups[addr] = g
		}
		g.index = append(g.index, i)
	}
	return first, groups, nil
}

// group is the keys (their indexes) that live on one server.
type group struct {
	addr  net.Addr
	index []int
}

// seq returns 0, 1, ..., n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// getFrom fetches the keys at index (all of them if index is nil) from
// addr into items. If app is not nil, it first appends app in the same
// request, and sets *appErr as Append would.
func (c *Client) getFrom(addr net.Addr, keys []string, index []int, items []*memcache.Item, app *memcache.Item, appErr *error) error {
	cn, err := c.conn(addr)
	if err != nil {
		return err
	}
	n := len(keys)
	if index != nil {
		n = len(index)
	}
	key := func(j int) string {
		if index == nil {
			return keys[j]
		}
		return keys[index[j]]
	}
	slot := func(j int) int {
		if index == nil {
			return j
		}
		return index[j]
	}
	if err := cn.nc.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		cn.nc.Close()
		return err
	}
	if app != nil {
		writeAppend(cn.w, app)
	}
	cn.w.WriteString("gets")
	for j := range n {
		cn.w.WriteByte(' ')
		cn.w.WriteString(key(j))
	}
	cn.w.WriteString("\r\n")
	if err := cn.w.Flush(); err != nil {
		cn.nc.Close()
		return fmt.Errorf("multiget: %v: %w", addr, err)
	}

	if app != nil {
		line, err := cn.r.ReadSlice('\n')
		if err != nil {
			cn.nc.Close()
			return fmt.Errorf("multiget: %v: %w", addr, err)
		}
		if *appErr = appendReply(line); *appErr == errUnknownReply {
			cn.nc.Close()
			return fmt.Errorf("multiget: %v: unexpected reply %q to append", addr, truncate(line))
		}
	}
	// memcached answers the keys it has in the order they were asked
	// for, then END.
	store := make([]memcache.Item, n) // hits point into it
	var arena []byte
	j := 0
	for {
		line, err := cn.r.ReadSlice('\n')
		if err != nil {
			cn.nc.Close()
			return fmt.Errorf("multiget: %v: %w", addr, err)
		}
		if bytes.Equal(line, endLine) {
			break
		}
		k, flags, size, cas, ok := parseValueLine(line)
		if !ok {
			cn.nc.Close()
			return fmt.Errorf("multiget: %v: unexpected line %q", addr, truncate(line))
		}
		for j < n && key(j) != string(k) {
			j++
		}
		if j == n {
			cn.nc.Close()
			return fmt.Errorf("multiget: %v: a value for %q, which was not asked for (or out of order)", addr, truncate(k))
		}
		if size+2 > cap(arena)-len(arena) {
			// Room for this value and, guessing that the rest are of
			// its size, every value still to come.
			arena = make([]byte, 0, min(max(size+2, 64<<10), (size+2)*(n-j)))
		}
		start := len(arena)
		arena = arena[:start+size+2]
		if _, err := io.ReadFull(cn.r, arena[start:]); err != nil {
			cn.nc.Close()
			return fmt.Errorf("multiget: %v: %w", addr, err)
		}
		if arena[start+size] != '\r' || arena[start+size+1] != '\n' {
			cn.nc.Close()
			return fmt.Errorf("multiget: %v: a value of %q not followed by CRLF", addr, truncate(k))
		}
		it := &store[j]
		it.Key, it.Flags, it.CasID = key(j), flags, cas
		it.Value = arena[start : start+size : start+size]
		items[slot(j)] = it
		j++
	}
	c.release(cn)
	return nil
}

var endLine = []byte("END\r\n")

// parseValueLine parses "VALUE <key> <flags> <bytes> <cas>\r\n".
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
	if sz, rest, found = bytes.Cut(rest, []byte(" ")); !found {
		return
	}
	fl, err1 := strconv.ParseUint(string(f), 10, 32)
	s, err2 := strconv.ParseUint(string(sz), 10, 31)
	cs, err3 := strconv.ParseUint(string(rest), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || len(key) == 0 {
		return
	}
	return key, uint32(fl), int(s), cs, true
}

// truncate shortens what goes into an error message.
func truncate(b []byte) []byte {
	if len(b) > 100 {
		return b[:100]
	}
	return b
}

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

// conn returns an idle connection to addr, or dials one.
func (c *Client) conn(addr net.Addr) (*conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	k := addr
	if l := c.idle[k]; len(l) > 0 {
		cn := l[len(l)-1]
		c.idle[k] = l[:len(l)-1]
		c.mu.Unlock()
		return cn, nil
	}
	c.mu.Unlock()
	nc, err := net.DialTimeout(addr.Network(), addr.String(), c.timeout)
	if err != nil {
		return nil, fmt.Errorf("multiget: %w", err)
	}
	return &conn{nc: nc, addr: addr, r: bufio.NewReaderSize(nc, 16<<10), w: bufio.NewWriterSize(nc, 4<<10)}, nil
}

// release keeps a connection whose last request ended cleanly.
func (c *Client) release(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cn.addr
	if c.closed || len(c.idle[k]) >= c.maxIdle {
		cn.nc.Close()
		return
	}
	c.idle[k] = append(c.idle[k], cn)
}

// Close closes the idle connections; requests under way close theirs when
// they end, and later ones fail with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for k, l := range c.idle {
		for _, cn := range l {
			cn.nc.Close()
		}
		delete(c.idle, k)
	}
	return nil
}
