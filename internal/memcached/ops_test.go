package memcached_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/internal/testserver"
)

// TestGetTwoServers: hits and misses come back aligned with the keys, each
// read from the server its key's hash picks, and both servers are used.
func TestGetTwoServers(t *testing.T) {
	ctx := context.Background()
	a, b := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	addrs := []string{a.Addr, b.Addr}
	c := newClient(t, "t:", time.Second, addrs...)
	var keys []string
	for i := range 200 {
		k := fmt.Sprintf("k%d", i)
		keys = append(keys, k)
		if i%3 != 0 {
			if err := c.Set(ctx, &memcache.Item{Key: k, Value: []byte("value of " + k), Flags: uint32(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	items, err := c.Get(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != len(keys) {
		t.Fatalf("%d items for %d keys", len(items), len(keys))
	}
	for i, k := range keys {
		switch it := items[i]; {
		case i%3 == 0 && it != nil:
			t.Errorf("%s: got %q, want a miss", k, it.Value)
		case i%3 != 0 && (it == nil || it.Key != k || string(it.Value) != "value of "+k || it.Flags != uint32(i) || it.CasID == 0):
			t.Errorf("%s: got %+v, want %q with flags %d", k, it, "value of "+k, i)
		}
	}

	// Each server, read alone (same prefix, so the same fence), holds
	// exactly the keys the hash gives it.
	var ss memcache.ServerList
	if err := ss.SetServers(addrs...); err != nil {
		t.Fatal(err)
	}
	hits := 0
	for _, addr := range addrs {
		one := newClient(t, "t:", time.Second, addr)
		got, err := one.Get(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, k := range keys {
			picked, _ := ss.PickServer(k)
			if want := i%3 != 0 && picked.String() == addr; want != (got[i] != nil) {
				t.Errorf("%s on %s: got %v, want a hit: %v", k, addr, got[i], want)
			}
			if got[i] != nil {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no key on %s: the test needs both servers used", addr)
		}
		hits += n
	}
	if hits != 133 {
		t.Errorf("%d hits over both servers, want 133", hits)
	}

	if items, err := c.Get(ctx, nil); err != nil || len(items) != 0 {
		t.Errorf("Get(nil) = %v, %v", items, err)
	}
}

// TestGetConcurrent: Gets, Appends and Increments from many goroutines over
// two servers and few idle connections (run with -race).
func TestGetConcurrent(t *testing.T) {
	ctx := context.Background()
	a, b := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	c, err := memcached.New(t.Context(), memcached.Options{Servers: []string{a.Addr, b.Addr}, Prefix: "t:", Timeout: 2 * time.Second, MaxIdle: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var keys []string
	for i := range 50 {
		k := fmt.Sprintf("c%d", i)
		keys = append(keys, k)
		if err := c.Set(ctx, item(k, strings.Repeat(k, i))); err != nil {
			t.Fatal(err)
		}
	}
	const workers, rounds = 16, 100
	for w := range workers {
		if err := c.Set(ctx, item(fmt.Sprintf("log%d", w), "")); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(ctx, item(fmt.Sprintf("n%d", w), "0")); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			logKey, nKey := fmt.Sprintf("log%d", w), fmt.Sprintf("n%d", w)
			for n := range rounds {
				ks := keys[(w+n)%10:]
				items, err := c.Get(ctx, ks)
				if err != nil {
					errs <- err
					return
				}
				for i, k := range ks {
					if items[i] == nil || items[i].Key != k || string(items[i].Value) != strings.Repeat(k, (w+n)%10+i) {
						errs <- fmt.Errorf("%s: got %+v", k, items[i])
						return
					}
				}
				for i, err := range c.Append(ctx, []*memcache.Item{item(logKey, "."), item(keys[0], "")}) {
					if err != nil {
						errs <- fmt.Errorf("append %d: %w", i, err)
						return
					}
				}
				if err := c.Increment(ctx, []string{nKey}, 1)[0]; err != nil {
					errs <- fmt.Errorf("incr: %w", err)
					return
				}
			}
			got, err := c.Get(ctx, []string{logKey, nKey})
			switch {
			case err != nil:
				errs <- err
			case got[0] == nil || len(got[0].Value) != rounds || got[1] == nil || string(got[1].Value) != strconv.Itoa(rounds):
				errs <- fmt.Errorf("worker %d after %d rounds: %+v %+v", w, rounds, got[0], got[1])
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestAppend: one pipelined request per server appends to the keys that
// exist on both servers, reports missing ones and a value grown past the
// item limit as ErrNotStored, and keeps the flags.
func TestAppend(t *testing.T) {
	ctx := context.Background()
	a, b := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	c := newClient(t, "t:", 2*time.Second, a.Addr, b.Addr)
	var items []*memcache.Item
	for i := range 60 {
		k := fmt.Sprintf("ap%d", i)
		if i%4 != 0 {
			if err := c.Set(ctx, &memcache.Item{Key: k, Value: []byte("base:"), Flags: uint32(i)}); err != nil {
				t.Fatal(err)
			}
		}
		items = append(items, item(k, fmt.Sprintf("+%d\r\n", i)))
	}
	// Over memcached's 1 MB item limit once appended.
	if err := c.Set(ctx, &memcache.Item{Key: "ap-huge", Value: bytes.Repeat([]byte("x"), 1000_000)}); err != nil {
		t.Fatal(err)
	}
	items = append(items, &memcache.Item{Key: "ap-huge", Value: bytes.Repeat([]byte("y"), 100_000)})
	for round := range 2 {
		errs := c.Append(ctx, items)
		for i, it := range items {
			err := errs[i]
			if it.Key == "ap-huge" {
				if !errors.Is(err, memcache.ErrNotStored) {
					t.Errorf("round %d: appending past the item limit: %v, want ErrNotStored", round, err)
				}
				continue
			}
			got, gerr := c.GetOne(ctx, it.Key)
			switch {
			case i%4 == 0:
				if !errors.Is(err, memcache.ErrNotStored) || !errors.Is(gerr, memcache.ErrCacheMiss) {
					t.Errorf("%s: %v, then get %v; want ErrNotStored and still missing", it.Key, err, gerr)
				}
			case err != nil || gerr != nil:
				t.Errorf("%s: %v, get %v", it.Key, err, gerr)
			default:
				want := "base:" + strings.Repeat(fmt.Sprintf("+%d\r\n", i), round+1)
				if string(got.Value) != want || got.Flags != uint32(i) {
					t.Errorf("%s: %q flags %d, want %q flags %d", it.Key, got.Value, got.Flags, want, i)
				}
			}
		}
	}
	if errs := c.Append(ctx, nil); len(errs) != 0 {
		t.Errorf("Append(nil) = %v", errs)
	}
}

// TestDelete: pipelined deletes over two servers tell deleted keys from
// missing ones.
func TestDelete(t *testing.T) {
	ctx := context.Background()
	a, b := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	c := newClient(t, "t:", 2*time.Second, a.Addr, b.Addr)
	var keys []string
	for i := range 40 {
		k := fmt.Sprintf("del%d", i)
		keys = append(keys, k)
		if i%3 != 0 {
			if err := c.Set(ctx, item(k, "x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, err := range c.DeleteMulti(ctx, keys) {
		if i%3 == 0 {
			if !errors.Is(err, memcache.ErrCacheMiss) {
				t.Errorf("%s: %v, want ErrCacheMiss", keys[i], err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", keys[i], err)
		}
	}
	items, err := c.Get(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if it != nil {
			t.Errorf("%s: still there after DeleteMulti", keys[i])
		}
	}
}

// TestAppendGet: the append lands before the get, on one server or two,
// and each outcome is reported.
func TestAppendGet(t *testing.T) {
	ctx := context.Background()
	a, b := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	for _, addrs := range [][]string{{a.Addr}, {a.Addr, b.Addr}} {
		c := newClient(t, "t:", 2*time.Second, addrs...)
		for i := range 20 {
			ak, gk := fmt.Sprintf("ag-a%d-%d", len(addrs), i), fmt.Sprintf("ag-g%d-%d", len(addrs), i)
			if i%2 == 0 {
				if err := c.Set(ctx, item(ak, "x")); err != nil {
					t.Fatal(err)
				}
			}
			if i%3 != 0 {
				if err := c.Set(ctx, &memcache.Item{Key: gk, Value: []byte("value"), Flags: 7}); err != nil {
					t.Fatal(err)
				}
			}
			appErr, it, err := c.AppendGet(ctx, item(ak, "y"), gk)
			if err != nil {
				t.Fatal(err)
			}
			if i%2 != 0 {
				if !errors.Is(appErr, memcache.ErrNotStored) {
					t.Errorf("%s missing: append %v, want ErrNotStored", ak, appErr)
				}
			} else if appErr != nil {
				t.Errorf("%s: append %v", ak, appErr)
			}
			switch {
			case i%3 == 0 && it != nil:
				t.Errorf("%s: got %q, want a miss", gk, it.Value)
			case i%3 != 0 && (it == nil || string(it.Value) != "value" || it.Flags != 7 || it.CasID == 0):
				t.Errorf("%s: got %+v", gk, it)
			}
			// The same key: the get sees the append.
			appErr, it, err = c.AppendGet(ctx, item(gk, "+"), gk)
			if i%3 != 0 && (err != nil || appErr != nil || it == nil || string(it.Value) != "value+") {
				t.Errorf("%s appended then read: %v, %v, %+v", gk, appErr, err, it)
			}
		}
	}
}

// TestLongPipeline: calls with more than MaxPipeline keys, over two
// servers, keep every outcome in its place.
func TestLongPipeline(t *testing.T) {
	ctx := context.Background()
	a, b := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	c := newClient(t, "t:", 5*time.Second, a.Addr, b.Addr)
	const n = 3000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("long-counter-%d", i)
		if i%7 != 0 {
			if err := c.Set(ctx, item(keys[i], strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(what string, errs []error, hit error) {
		t.Helper()
		if len(errs) != n {
			t.Fatalf("%s: %d outcomes for %d keys", what, len(errs), n)
		}
		for i, err := range errs {
			if want := hit; i%7 == 0 {
				if !errors.Is(err, memcache.ErrCacheMiss) && !errors.Is(err, memcache.ErrNotStored) {
					t.Fatalf("%s %s (missing): %v", what, keys[i], err)
				}
			} else if err != want {
				t.Fatalf("%s %s: %v", what, keys[i], err)
			}
		}
	}
	check("incr", c.Increment(ctx, keys, 1), nil)
	check("incr", c.Increment(ctx, keys, 2), nil)
	items, err := c.Get(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if want := strconv.Itoa(i + 3); i%7 == 0 && it != nil || i%7 != 0 && (it == nil || string(it.Value) != want) {
			t.Fatalf("%s: got %+v, want %q", keys[i], it, want)
		}
	}
	apps := make([]*memcache.Item, n)
	for i, k := range keys {
		apps[i] = item(k, "x")
	}
	check("append", c.Append(ctx, apps), nil)
	check("delete", c.DeleteMulti(ctx, keys), nil)
	items, err = c.Get(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if it != nil {
			t.Fatalf("%s: still there after DeleteMulti", keys[i])
		}
	}
}

// TestRoute: keys that share a route live on one server, the one the
// route's hash picks, and the routes spread over the servers.
func TestRoute(t *testing.T) {
	ctx := context.Background()
	ms := []*testserver.MemcachedProc{testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)}
	var addrs []string
	for _, m := range ms {
		addrs = append(addrs, m.Addr)
	}
	route := func(k string) string { r, _, _ := strings.Cut(k, "/"); return r }
	c, err := memcached.New(t.Context(), memcached.Options{Servers: addrs, Prefix: "t:", Timeout: 2 * time.Second, Route: route})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var keys []string
	for u := range 30 {
		keys = append(keys, fmt.Sprintf("user%d/gen", u))
		for p := range 5 {
			keys = append(keys, fmt.Sprintf("user%d/page%d", u, p))
		}
	}
	for _, k := range keys {
		if err := c.Set(ctx, item(k, k)); err != nil {
			t.Fatal(err)
		}
	}
	var ss memcache.ServerList
	if err := ss.SetServers(addrs...); err != nil {
		t.Fatal(err)
	}
	where := make(map[string]string) // route -> server
	for _, addr := range addrs {
		got, err := newClient(t, "t:", time.Second, addr).Get(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			if got[i] == nil {
				continue
			}
			r := route(k)
			if prev, ok := where[r]; ok && prev != addr {
				t.Errorf("route %s on %s and %s", r, prev, addr)
			}
			where[r] = addr
			if picked, _ := ss.PickServer(r); picked.String() != addr {
				t.Errorf("%s on %s, but its route's hash picks %s", k, addr, picked)
			}
		}
	}
	used := make(map[string]bool)
	for _, addr := range where {
		used[addr] = true
	}
	if len(where) != 30 || len(used) < 2 {
		t.Errorf("%d routes found on %d servers; want 30 on more than one", len(where), len(used))
	}
	items, err := c.Get(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if it == nil || string(it.Value) != keys[i] {
			t.Errorf("%s: got %+v", keys[i], it)
		}
	}
}

// The fake server's special answers.
const (
	hangUp = "\x00hang up" // write what precedes, then close the connection
	stall  = "\x00stall"   // answer nothing until the client closes
)

// fake is a memcached stand-in with just enough of the text protocol: it
// keeps the fence of prefix "t:" as memcached would, and passes every
// other command to answer, whose reply it writes as given, in or out of
// step. It counts the connections it accepted and the fences set.
type fake struct {
	addr      string
	answer    func(verb string, args []string) string
	accepted  atomic.Int64
	fenceSets atomic.Int64
	delay     atomic.Int64 // before each reply, in nanoseconds

	mu    sync.Mutex
	fence string
}

func startFake(t *testing.T, answer func(verb string, args []string) string) *fake {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{addr: ln.Addr().String(), answer: answer}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := make(map[net.Conn]bool)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.accepted.Add(1)
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				f.serve(c)
			})
		}
	})
	return f
}

func (f *fake) serve(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			c.Write([]byte("ERROR\r\n"))
			continue
		}
		verb, args := fields[0], fields[1:]
		var data []byte
		switch verb {
		case "set", "add", "cas", "append":
			n, _ := strconv.Atoi(args[3])
			data = make([]byte, n+2)
			if _, err := io.ReadFull(r, data); err != nil {
				return
			}
			data = data[:n]
		}
		time.Sleep(time.Duration(f.delay.Load()))
		var reply string
		if args[0] == "t:fence" {
			reply = f.fenced(verb, data)
		} else {
			reply = f.answer(verb, args)
		}
		switch {
		case reply == stall:
			io.Copy(io.Discard, r)
			return
		case strings.HasSuffix(reply, hangUp):
			c.Write([]byte(strings.TrimSuffix(reply, hangUp)))
			return
		}
		if _, err := c.Write([]byte(reply)); err != nil {
			return
		}
	}
}

// fenced answers the commands on the fence key.
func (f *fake) fenced(verb string, data []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch verb {
	case "get":
		if f.fence == "" {
			return "END\r\n"
		}
		return fmt.Sprintf("VALUE t:fence 0 %d\r\n%s\r\nEND\r\n", len(f.fence), f.fence)
	case "add":
		if f.fence != "" {
			return "NOT_STORED\r\n"
		}
		f.fence = string(data)
		return "STORED\r\n"
	case "set":
		f.fence = string(data)
		f.fenceSets.Add(1)
		return "STORED\r\n"
	}
	return "ERROR\r\n"
}

// name is the caller's key of a key on the wire.
func name(wire string) string {
	k, _, _ := strings.Cut(wire, "~")
	return k
}

// normal answers like a memcached that holds "v:"+k under every key k
// that starts with "k", and takes every write.
func normal(verb string, args []string) string {
	switch verb {
	case "gets":
		var b strings.Builder
		for _, w := range args {
			if k := name(w); strings.HasPrefix(k, "k") {
				fmt.Fprintf(&b, "VALUE %s 0 %d 1\r\nv:%s\r\n", w, len(k)+2, k)
			}
		}
		return b.String() + "END\r\n"
	case "delete":
		return "DELETED\r\n"
	case "incr":
		return "1\r\n"
	}
	return "STORED\r\n"
}

// badWith answers commands on keys named "bad..." with reply (built from
// their wire keys), and others as normal does.
func badWith(reply func(wire []string) string) func(string, []string) string {
	return func(verb string, args []string) string {
		for _, w := range args {
			if strings.HasPrefix(name(w), "bad") {
				return reply(args)
			}
		}
		return normal(verb, args)
	}
}

func fakeClient(t *testing.T, f *fake, timeout time.Duration) *memcached.Client {
	t.Helper()
	return newClient(t, "t:", timeout, f.addr)
}

// TestGetErrors: bad keys fail a Get before any traffic; a reply out of
// step fails it and closes its connection, a SERVER_ERROR fails it and
// keeps the connection, and in both cases the next call works; a server
// that hangs up or stalls is marked down, and is fenced anew when it is
// used again. Failed Gets return no items.
func TestGetErrors(t *testing.T) {
	ctx := context.Background()
	good := fakeClient(t, startFake(t, normal), time.Second)
	for _, k := range []string{"", "has space", "ctl\x01", strings.Repeat("k", memcached.MaxKeyLen+1)} {
		if items, err := good.Get(ctx, []string{"k1", k}); !errors.Is(err, memcache.ErrMalformedKey) || items != nil {
			t.Errorf("key %q: %v, %v; want ErrMalformedKey", k, items, err)
		}
	}

	value := func(w string) string { return fmt.Sprintf("VALUE %s 0 %d 1\r\nv:%s\r\n", w, len(name(w))+2, name(w)) }
	for _, tc := range []struct {
		name    string
		inStep  bool // the connection is kept
		reply   func(wire []string) string
		wantErr string
	}{
		{"garbage", false, func([]string) string { return "WHAT\r\n" }, "WHAT"},
		{"values out of order", false, func(w []string) string { return value(w[1]) + value(w[0]) + "END\r\n" }, "not asked for"},
		{"a value not asked for", false, func([]string) string { return value("other~0123456789") + "END\r\n" }, "not asked for"},
		{"a value under another fence", false, func(w []string) string { return value(name(w[0])+"~0000000000") + "END\r\n" }, "not asked for"},
		{"a truncated value", false, func(w []string) string { return "VALUE " + w[0] + " 0 10 1\r\nabc\r\nEND\r\n" }, "CRLF"},
		{"no CRLF after a value", false, func(w []string) string { return "VALUE " + w[0] + " 0 3 1\r\nabcXYEND\r\n" }, "CRLF"},
		{"a bad length", false, func(w []string) string { return "VALUE " + w[0] + " 0 x 1\r\nabc\r\nEND\r\n" }, "unexpected"},
		{"a line too long", false, func([]string) string { return "VALUE " + strings.Repeat("x", 20_000) + " 0 1 1\r\nx\r\nEND\r\n" }, "longer than"},
		{"no END", false, func(w []string) string { return value(w[0]) }, "not asked for"},
		{"a SERVER_ERROR", true, func([]string) string { return "SERVER_ERROR out of memory writing get response\r\n" }, "SERVER_ERROR"},
		{"a SERVER_ERROR after a value", true, func(w []string) string {
			return value(w[0]) + "SERVER_ERROR out of memory writing get response\r\n"
		}, "SERVER_ERROR"},
	} {
		f := startFake(t, badWith(tc.reply))
		c := fakeClient(t, f, time.Second)
		before := f.accepted.Load()
		items, err := c.Get(ctx, []string{"k1", "bad"})
		if err == nil || items != nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, memcached.ErrServerDown) {
			t.Errorf("%s: %v, %v; want an error saying %q, not ErrServerDown", tc.name, items, err, tc.wantErr)
		}
		if it, err := c.GetOne(ctx, "k1"); err != nil || string(it.Value) != "v:k1" {
			t.Errorf("%s: the next call: %+v, %v", tc.name, it, err)
		}
		if kept := f.accepted.Load() == before; kept != tc.inStep {
			t.Errorf("%s: connection kept %v, want %v", tc.name, kept, tc.inStep)
		}
		if d := c.Down(); len(d) != 0 {
			t.Errorf("%s: servers down: %v", tc.name, d)
		}
	}

	// A server that hangs up mid-reply is marked down, then fenced anew.
	var fences sync.Map
	f := startFake(t, func(verb string, args []string) string {
		_, fence, _ := strings.Cut(args[0], "~")
		fences.Store(fence, true)
		return badWith(func(w []string) string { return value(w[0])[:20] + hangUp })(verb, args)
	})
	const retryAfter = 500 * time.Millisecond
	c, err := memcached.New(t.Context(), memcached.Options{Servers: []string{f.addr}, Prefix: "t:", Timeout: time.Second, RetryAfter: retryAfter})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Get(ctx, []string{"k1", "bad"}); !errors.Is(err, memcached.ErrServerDown) {
		t.Errorf("a server that hangs up: %v, want ErrServerDown", err)
	}
	failed := time.Now()
	if _, err := c.Get(ctx, []string{"k1"}); !errors.Is(err, memcached.ErrServerDown) && time.Since(failed) < retryAfter {
		t.Errorf("the next call: %v, want ErrServerDown until RetryAfter", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		it, err := c.GetOne(ctx, "k1")
		if err == nil && string(it.Value) == "v:k1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server is not used again: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	n := 0
	fences.Range(func(any, any) bool { n++; return true })
	if f.fenceSets.Load() != 1 || n != 2 {
		t.Errorf("after the server came back: %d fences set, %d fences used; want 1 and 2", f.fenceSets.Load(), n)
	}

	// A server that stalls costs one Timeout, then fails at once.
	stalled := fakeClient(t, startFake(t, badWith(func([]string) string { return stall })), 200*time.Millisecond)
	start := time.Now()
	if _, err := stalled.Get(ctx, []string{"bad"}); !errors.Is(err, memcached.ErrServerDown) {
		t.Errorf("a server that stalls: %v, want ErrServerDown", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a Timeout of 200ms took %v", took)
	}

	good.Close()
	if _, err := good.Get(ctx, []string{"k1"}); !errors.Is(err, memcached.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// TestAppendErrors: in a pipeline, a SERVER_ERROR or a CLIENT_ERROR that
// keeps the stream in step fails only its command; a reply out of step
// fails every command to that server (their outcome is unknown) and closes
// the connection; the next call works either way.
func TestAppendErrors(t *testing.T) {
	ctx := context.Background()
	good := fakeClient(t, startFake(t, normal), time.Second)
	errs := good.Append(ctx, []*memcache.Item{item("k1", "v"), item("has space", "v")})
	if !errors.Is(errs[0], memcache.ErrMalformedKey) || !errors.Is(errs[1], memcache.ErrMalformedKey) {
		t.Errorf("a bad key: %v, want ErrMalformedKey for all", errs)
	}

	type call struct {
		name string
		run  func(c *memcached.Client) []error
	}
	appendCall := call{"Append", func(c *memcached.Client) []error {
		return c.Append(ctx, []*memcache.Item{item("k1", "v"), item("bad", "v"), item("k3", "v")})
	}}
	deleteCall := call{"DeleteMulti", func(c *memcached.Client) []error { return c.DeleteMulti(ctx, []string{"k1", "bad", "k3"}) }}
	incrCall := call{"Increment", func(c *memcached.Client) []error { return c.Increment(ctx, []string{"k1", "bad", "k3"}, 1) }}
	appendGet := call{"AppendGet", func(c *memcached.Client) []error {
		appErr, it, err := c.AppendGet(ctx, item("bad", "v"), "k1")
		if err == nil && (it == nil || string(it.Value) != "v:k1") {
			err = fmt.Errorf("got %+v", it)
		}
		return []error{err, appErr, err}
	}}
	for _, tc := range []struct {
		reply  string
		inStep bool
		calls  []call
	}{
		{"SERVER_ERROR out of memory storing object\r\n", true, []call{appendCall, appendGet}},
		{"SERVER_ERROR busy\r\n", true, []call{deleteCall, incrCall}},
		{"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n", true, []call{incrCall}},
		{"WHAT\r\n", false, []call{appendCall, deleteCall, incrCall, appendGet}},
		{"CLIENT_ERROR bad data chunk\r\n", false, []call{appendCall, appendGet}},
		{"", false, []call{appendCall, deleteCall, incrCall}},                              // a reply missing
		{"STORED\r\nSTORED\r\n", false, []call{appendCall}},                                // one too many
		{"DELETED\r\nDELETED\r\n", false, []call{deleteCall}},                              // one too many
		{"VALUE bad 0 1\r\nx\r\nEND\r\n", false, []call{appendCall, deleteCall, incrCall}}, // a get's reply
	} {
		for _, cl := range tc.calls {
			name := fmt.Sprintf("%s answered %q", cl.name, tc.reply)
			f := startFake(t, badWith(func([]string) string { return tc.reply }))
			c := fakeClient(t, f, time.Second)
			before := f.accepted.Load()
			errs := cl.run(c)
			if tc.inStep {
				if errs[0] != nil || errs[1] == nil || errors.Is(errs[1], memcache.ErrNotStored) || errs[2] != nil {
					t.Errorf("%s: %v; want only the second to fail", name, errs)
				}
			} else {
				for i, err := range errs {
					if err == nil || errors.Is(err, memcached.ErrServerDown) {
						t.Errorf("%s: outcome %d is %v; want an error, not ErrServerDown", name, i, err)
					}
				}
			}
			if err := c.Append(ctx, []*memcache.Item{item("k1", "v")})[0]; err != nil {
				t.Errorf("%s: the next call: %v", name, err)
			}
			if kept := f.accepted.Load() == before; kept != tc.inStep {
				t.Errorf("%s: connection kept %v, want %v", name, kept, tc.inStep)
			}
		}
	}

	good.Close()
	if errs := good.Append(ctx, []*memcache.Item{item("k1", "v")}); !errors.Is(errs[0], memcached.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", errs)
	}
}

// TestDistrustFrozen: when the fence of a distrusted server cannot be
// replaced (it is frozen), one caller waits out Timeout and marks it down;
// the reads queued behind it fail at once then, and a hurried one returns
// by its own deadline, instead of each waiting out a Timeout in turn.
//
// The replacement is held (a hook of the client's) until every reader
// waits for it and the hurried read has returned, so the test orders the
// calls by what they report, not by how soon they are scheduled; that
// each queued read failed at once is told by the server's failures, one
// per Timeout waited out.
func TestDistrustFrozen(t *testing.T) {
	ctx := context.Background()
	m := testserver.StartMemcached(t, 0)
	const timeout = time.Second
	c, err := memcached.New(t.Context(), memcached.Options{Servers: []string{m.Addr}, Prefix: "t:", Timeout: timeout, RetryAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var replacements atomic.Int64
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseAll()
	replacing := make(chan struct{}, 100)
	waiting := make(chan struct{}, 100)
	memcached.SetRecoveryHooks(c,
		func() { replacements.Add(1); replacing <- struct{}{}; <-release },
		func() { waiting <- struct{}{} })
	await := func(ch chan struct{}, n int, what string) {
		t.Helper()
		for i := range n {
			select {
			case <-ch:
			case <-time.After(30 * time.Second):
				releaseAll()
				t.Fatalf("%s: %d of %d", what, i, n)
			}
		}
	}
	if err := c.Set(ctx, item("page", "v")); err != nil {
		t.Fatal(err)
	}
	if err := m.Freeze(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Thaw(); err != nil {
			t.Error(err)
		}
	}()
	c.Distrust("page")
	const readers = 6
	var wg sync.WaitGroup
	errs := make([]error, readers)
	for i := range readers {
		wg.Go(func() { _, errs[i] = c.Get(ctx, []string{"page"}) })
	}
	await(replacing, 1, "readers replacing the fence")
	await(waiting, readers-1, "readers waiting for the replacement")

	// A read with a short deadline behind the replacement. If its
	// deadline passed before it began to wait (a late scheduler), it
	// tested nothing: it is tried again.
	for attempt := 1; ; attempt++ {
		hurried, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		done := make(chan error, 1)
		go func() { _, err := c.Get(hurried, []string{"page"}); done <- err }()
		var herr error
		select {
		case herr = <-done:
		case <-time.After(30 * time.Second):
			releaseAll()
			t.Fatal("a read with a 100ms deadline behind a fence replacement did not return by it")
		}
		cancel()
		select {
		case <-waiting:
		default:
			if attempt == 10 {
				t.Fatalf("a read with a 100ms deadline never waited for the replacement: %v", herr)
			}
			continue
		}
		if !errors.Is(herr, context.DeadlineExceeded) || errors.Is(herr, memcached.ErrServerDown) {
			t.Errorf("a read with a 100ms deadline behind a fence replacement: %v, want its deadline's error", herr)
		}
		break
	}

	releaseAll()
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, memcached.ErrServerDown) {
			t.Errorf("read %d: %v, want ErrServerDown", i, err)
		}
	}
	if n, st := replacements.Load(), c.Status()[0]; n != 1 || st.Failures != 1 || st.Up {
		t.Errorf("%d reads of a frozen distrusted server: %d fence replacements, %d Timeouts waited out, up %v; want one, one, down",
			readers, n, st.Failures, st.Up)
	}
}

// hangingListener returns the address of a listener whose accept queue is
// full, so that dialing it waits until the dialer gives up.
func hangingListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.DialTimeout("tcp", addr, time.Second) // never accepted
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		c.Close()
		t.Skip("a full accept queue does not hold back dialing here")
	}
	return addr
}

// TestOpenSlow: New waits OpenTimeout for a server that answers late, even
// when Timeout is shorter.
func TestOpenSlow(t *testing.T) {
	f := startFake(t, normal)
	f.delay.Store(int64(memcached.OpenTimeout / 4))
	c, err := memcached.New(t.Context(), memcached.Options{Servers: []string{f.addr}, Prefix: "t:", Timeout: memcached.OpenTimeout / 20})
	if err != nil {
		t.Fatalf("a server answering in OpenTimeout/4: %v", err)
	}
	defer c.Close()
	f.delay.Store(0)
	if it, err := c.GetOne(context.Background(), "k1"); err != nil || string(it.Value) != "v:k1" {
		t.Errorf("then: %+v, %v", it, err)
	}
}

// TestCancelWhileDialing: a cancellation ends a call that waits to connect.
// The call is canceled as it begins to dial (a hook of the client's), so
// it always reaches the dial; a client that dialed without the context
// would wait out the dial's deadline, Timeout, and the call returns well
// before that.
func TestCancelWhileDialing(t *testing.T) {
	m := testserver.StartMemcached(t, 0)
	hung := hangingListener(t)
	addrs := []string{m.Addr, hung}
	const timeout = 2 * time.Second
	// No health checks during the test: only the call dials.
	c, err := memcached.New(t.Context(), memcached.Options{Servers: addrs, Prefix: "t:", Timeout: timeout, RetryAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if d := c.Down(); len(d) != 1 || d[0] != hung {
		t.Fatalf("Down = %v, want [%s]", d, hung)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var dials atomic.Int64
	memcached.SetDialingHook(c, func() { dials.Add(1); cancel() })
	start := time.Now()
	// A write tries a server marked down (see the package doc).
	err = c.Set(ctx, item(keyOn(t, addrs, hung, 0), "v"))
	if took := time.Since(start); !errors.Is(err, context.Canceled) || dials.Load() != 1 || took >= timeout {
		t.Errorf("canceled while dialing: %v after %v, %d dials; want context.Canceled before the dial's deadline (%v)", err, took, dials.Load(), timeout)
	}
}
