// Package multiget is a lean memcached multi-get ("gets k1 k2 ...") for a
// hot read path that fetches dozens of small values per request.
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

// ErrClosed is returned by Get after Close.
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
	// Group the keys by server, keeping the common case of one server
	// free of maps and goroutines.
	first, err := c.servers.PickServer(keys[0])
	if err != nil {
		return nil, err
	}
	// A ServerList hands out the same net.Addr values every time, so
	// they compare (and hash) by identity.
	var groups map[net.Addr]*group
	for i := 1; i < len(keys); i++ {
		addr, err := c.servers.PickServer(keys[i])
		if err != nil {
			return nil, err
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
	if groups == nil {
		return items, c.getFrom(first, keys, nil, items)
	}
	errs := make(chan error, len(groups))
	for _, g := range groups {
		go func() { errs <- c.getFrom(g.addr, keys, g.index, items) }()
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
// addr into items.
func (c *Client) getFrom(addr net.Addr, keys []string, index []int, items []*memcache.Item) error {
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
