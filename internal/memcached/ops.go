package memcached

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/bradfitz/gomemcache/memcache"
)

// The calls. Items are gomemcache's, and so are the outcomes a caller
// tells apart: memcache.ErrCacheMiss (no such key), memcache.ErrNotStored
// (add found one; append found none, or the value would outgrow the item
// size limit), memcache.ErrCASConflict (the value changed since it was
// read). Keys are the caller's; the fence never shows.

// Get fetches keys with their CAS ids in one round trip per server
// (concurrently when they are spread over several). items[i] is keys[i]'s,
// or nil when memcached has none. Values share buffers, capped so that an
// append copies. A server's failure fails the whole call (items is then
// nil).
func (c *Client) Get(ctx context.Context, keys []string) ([]*memcache.Item, error) {
	items := make([]*memcache.Item, len(keys))
	if len(keys) == 0 {
		return items, nil
	}
	if err := checkKeys(keys); err != nil {
		return nil, err
	}
	groups, err := c.group(keys)
	if err != nil {
		return nil, err
	}
	if len(groups) == 1 {
		g := groups[0]
		if err := c.do(ctx, g.s, &getReq{keys: keys, index: g.index, items: items}, false); err != nil {
			return nil, err
		}
		return items, nil
	}
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Go(func() { errs[i] = c.do(ctx, g.s, &getReq{keys: keys, index: g.index, items: items}, false) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return items, nil
}

// GetOne fetches one key; memcache.ErrCacheMiss when there is none.
func (c *Client) GetOne(ctx context.Context, key string) (*memcache.Item, error) {
	items, err := c.Get(ctx, []string{key})
	if err != nil {
		return nil, err
	}
	if items[0] == nil {
		return nil, memcache.ErrCacheMiss
	}
	return items[0], nil
}

// Set stores it.
func (c *Client) Set(ctx context.Context, it *memcache.Item) error {
	return c.store(ctx, "set", it)
}

// Add stores it only if its key holds nothing (else memcache.ErrNotStored).
func (c *Client) Add(ctx context.Context, it *memcache.Item) error {
	return c.store(ctx, "add", it)
}

// CompareAndSwap stores it only if its key still holds the value read with
// it.CasID (else memcache.ErrCASConflict, or memcache.ErrCacheMiss when the
// key is gone).
func (c *Client) CompareAndSwap(ctx context.Context, it *memcache.Item) error {
	return c.store(ctx, "cas", it)
}

func (c *Client) store(ctx context.Context, verb string, it *memcache.Item) error {
	errs := c.pipeline(ctx, []string{it.Key}, func(w *bufio.Writer, _ int, fence string) {
		writeStore(w, verb, it, fence)
	}, storeOutcome)
	return errs[0]
}

// Delete deletes key (memcache.ErrCacheMiss if it held nothing).
func (c *Client) Delete(ctx context.Context, key string) error {
	return c.DeleteMulti(ctx, []string{key})[0]
}

// Append appends each item's value to what its key holds, pipelined: one
// round trip per server however many items. Only keys and values are used.
// errs[i] is items[i]'s outcome; a server that fails fails all of its
// items.
func (c *Client) Append(ctx context.Context, items []*memcache.Item) (errs []error) {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	return c.pipeline(ctx, keys, func(w *bufio.Writer, i int, fence string) {
		writeStore(w, "append", items[i], fence)
	}, storeOutcome)
}

// DeleteMulti deletes keys, pipelined like Append.
func (c *Client) DeleteMulti(ctx context.Context, keys []string) (errs []error) {
	return c.pipeline(ctx, keys, func(w *bufio.Writer, i int, fence string) {
		w.WriteString("delete ")
		writeKey(w, keys[i], fence)
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

// Increment adds delta to each key's decimal value, pipelined like Append.
// errs[i] is memcache.ErrCacheMiss when keys[i] holds nothing.
func (c *Client) Increment(ctx context.Context, keys []string, delta uint64) (errs []error) {
	d := strconv.FormatUint(delta, 10)
	return c.pipeline(ctx, keys, func(w *bufio.Writer, i int, fence string) {
		w.WriteString("incr ")
		writeKey(w, keys[i], fence)
		w.WriteByte(' ')
		w.WriteString(d)
		w.WriteString("\r\n")
	}, func(line []byte) (error, bool) {
		if bytes.Equal(line, notFoundLine) {
			return memcache.ErrCacheMiss, true
		}
		if n := bytes.TrimSuffix(line, []byte("\r\n")); len(n) > 0 && len(n) < len(line) {
			if _, err := strconv.ParseUint(string(n), 10, 64); err == nil {
				return nil, true
			}
		}
		if bytes.HasPrefix(line, []byte("CLIENT_ERROR ")) {
			// Not a number: the stream is still in step.
			return errServer{string(bytes.TrimSpace(line))}, true
		}
		return nil, false
	})
}

// AppendGet appends app and fetches key (with its CAS id; nil when there is
// none) in one round trip when both live on one server, in two concurrent
// ones otherwise. appErr is app's outcome as Append reports it; err is a
// failure of the fetch.
func (c *Client) AppendGet(ctx context.Context, app *memcache.Item, key string) (appErr error, it *memcache.Item, err error) {
	if err := checkKeys([]string{app.Key, key}); err != nil {
		return err, nil, err
	}
	a, err := c.pick(app.Key)
	if err != nil {
		return err, nil, err
	}
	b, err := c.pick(key)
	if err != nil {
		return err, nil, err
	}
	items := make([]*memcache.Item, 1)
	get := &getReq{keys: []string{key}, items: items}
	if a == b {
		req := &appendThenGet{app: app, get: get}
		if err := c.do(ctx, a, req, true); err != nil {
			return err, nil, err
		}
		return req.appErr, items[0], nil
	}
	done := make(chan error, 1)
	go func() { done <- c.Append(ctx, []*memcache.Item{app})[0] }()
	err = c.do(ctx, b, get, false)
	appErr = <-done
	if err != nil {
		return appErr, nil, err
	}
	return appErr, items[0], nil
}

// group is the keys (their indexes) that live on one server.
type group struct {
	s     *server
	index []int // nil: all the keys
}

// group splits keys by server; with one server there is one group and no
// index.
func (c *Client) group(keys []string) ([]group, error) {
	first, err := c.pick(keys[0])
	if err != nil {
		return nil, err
	}
	var groups []group
	for i := 1; i < len(keys); i++ {
		s, err := c.pick(keys[i])
		if err != nil {
			return nil, err
		}
		if groups == nil && s == first {
			continue
		}
		if groups == nil {
			groups = []group{{s: first, index: seq(i)}}
		}
		j := 0
		for j < len(groups) && groups[j].s != s {
			j++
		}
		if j == len(groups) {
			groups = append(groups, group{s: s})
		}
		groups[j].index = append(groups[j].index, i)
	}
	if groups == nil {
		return []group{{s: first}}, nil
	}
	return groups, nil
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// getReq is a "gets" of keys[index...] (all keys if index is nil) into
// items at the same positions.
type getReq struct {
	keys  []string
	index []int
	items []*memcache.Item
	fence string
}

func (g *getReq) n() int {
	if g.index == nil {
		return len(g.keys)
	}
	return len(g.index)
}

func (g *getReq) slot(j int) int {
	if g.index == nil {
		return j
	}
	return g.index[j]
}

func (g *getReq) write(w *bufio.Writer, fence string) {
	g.fence = fence
	w.WriteString("gets")
	for j := range g.n() {
		w.WriteByte(' ')
		writeKey(w, g.keys[g.slot(j)], fence)
	}
	w.WriteString("\r\n")
}

func (g *getReq) read(r *bufio.Reader) error {
	n := g.n()
	for j := range n {
		g.items[g.slot(j)] = nil
	}
	store := make([]memcache.Item, n) // hits point into it
	var arena []byte
	j := 0
	// memcached answers the keys it has in the order they were asked for.
	return readValues(r, func(wire []byte, flags uint32, cas uint64, size int) ([]byte, error) {
		for j < n && !isWire(wire, g.keys[g.slot(j)], g.fence) {
			j++
		}
		if j == n {
			return nil, errProtocol{fmt.Sprintf("memcached: a value for %q, which was not asked for (or out of order)", truncate(wire))}
		}
		if size > cap(arena)-len(arena) {
			// Room for this value and, guessing that the rest are of
			// its size, every value still to come.
			arena = make([]byte, 0, min(max(size, 64<<10), size*(n-j)))
		}
		start := len(arena)
		arena = arena[:start+size]
		it := &store[j]
		it.Key, it.Flags, it.CasID = g.keys[g.slot(j)], flags, cas
		it.Value = arena[start : start+size : start+size]
		g.items[g.slot(j)] = it
		j++
		return it.Value, nil
	})
}

// isWire reports whether wire is key under fence.
func isWire(wire []byte, key, fence string) bool {
	return len(wire) == len(key)+1+len(fence) &&
		string(wire[:len(key)]) == key && wire[len(key)] == '~' && string(wire[len(key)+1:]) == fence
}

// appendThenGet is AppendGet's request when both keys share a server.
type appendThenGet struct {
	app    *memcache.Item
	get    *getReq
	appErr error
}

func (a *appendThenGet) write(w *bufio.Writer, fence string) {
	writeStore(w, "append", a.app, fence)
	a.get.write(w, fence)
}

func (a *appendThenGet) read(r *bufio.Reader) error {
	line, err := readLine(r)
	if err != nil {
		return err
	}
	e, ok := storeOutcome(line)
	if !ok {
		return errProtocol{fmt.Sprintf("memcached: unexpected reply %q to append", truncate(line))}
	}
	a.appErr = e
	return a.get.read(r)
}

// writeStore writes a storage command (set, add, cas, append).
func writeStore(w *bufio.Writer, verb string, it *memcache.Item, fence string) {
	var num [20]byte
	w.WriteString(verb)
	w.WriteByte(' ')
	writeKey(w, it.Key, fence)
	w.WriteByte(' ')
	w.Write(strconv.AppendUint(num[:0], uint64(it.Flags), 10))
	w.WriteByte(' ')
	w.Write(strconv.AppendInt(num[:0], int64(it.Expiration), 10))
	w.WriteByte(' ')
	w.Write(strconv.AppendInt(num[:0], int64(len(it.Value)), 10))
	if verb == "cas" {
		w.WriteByte(' ')
		w.Write(strconv.AppendUint(num[:0], it.CasID, 10))
	}
	w.WriteString("\r\n")
	w.Write(it.Value)
	w.WriteString("\r\n")
}

// storeOutcome is storeReply for pipeline: false for a line that is none
// of memcached's answers.
func storeOutcome(line []byte) (error, bool) {
	err := storeReply(line)
	var pe errProtocol
	if errors.As(err, &pe) {
		return nil, false
	}
	return err, true
}

// pipelineReq sends one command per key of a group and reads one reply
// line per command.
type pipelineReq struct {
	n     int
	slot  func(j int) int
	cmd   func(w *bufio.Writer, i int, fence string)
	reply func(line []byte) (error, bool)
	errs  []error
}

func (p *pipelineReq) write(w *bufio.Writer, fence string) {
	for j := range p.n {
		p.cmd(w, p.slot(j), fence)
	}
}

func (p *pipelineReq) read(r *bufio.Reader) error {
	for j := range p.n {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		e, ok := p.reply(line)
		if !ok {
			if bytes.HasPrefix(line, serverErrorPrefix) {
				e = errServer{string(bytes.TrimSpace(line))}
			} else {
				return errProtocol{fmt.Sprintf("memcached: unexpected reply %q", truncate(line))}
			}
		}
		p.errs[p.slot(j)] = e
	}
	return nil
}

// MaxPipeline is how many commands one request sends at most; calls with
// more keys take a round trip per MaxPipeline.
const MaxPipeline = 512

// pipeline runs one command per key, each server's in one round trip, the
// servers concurrently. A server that fails fails all its keys.
func (c *Client) pipeline(ctx context.Context, keys []string, cmd func(w *bufio.Writer, i int, fence string), reply func(line []byte) (error, bool)) []error {
	errs := make([]error, len(keys))
	if len(keys) == 0 {
		return errs
	}
	failAll := func(index []int, err error) {
		if index == nil {
			for j := range errs {
				errs[j] = err
			}
			return
		}
		for _, i := range index {
			errs[i] = err
		}
	}
	if err := checkKeys(keys); err != nil {
		failAll(nil, err)
		return errs
	}
	if len(keys) > MaxPipeline {
		// In chunks: a request writes all its commands before it reads a
		// reply, and replies that filled the socket buffers would stall
		// memcached, then the writer.
		for off := 0; off < len(keys); off += MaxPipeline {
			end := min(off+MaxPipeline, len(keys))
			chunk := c.pipeline(ctx, keys[off:end], func(w *bufio.Writer, i int, fence string) { cmd(w, off+i, fence) }, reply)
			copy(errs[off:end], chunk)
		}
		return errs
	}
	groups, err := c.group(keys)
	if err != nil {
		failAll(nil, err)
		return errs
	}
	run := func(g group) {
		p := &pipelineReq{n: len(keys), slot: func(j int) int { return j }, cmd: cmd, reply: reply, errs: errs}
		if g.index != nil {
			p.n, p.slot = len(g.index), func(j int) int { return g.index[j] }
		}
		if err := c.do(ctx, g.s, p, true); err != nil {
			failAll(g.index, err)
		}
	}
	if len(groups) == 1 {
		run(groups[0])
		return errs
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() { run(g) })
	}
	wg.Wait()
	return errs
}
