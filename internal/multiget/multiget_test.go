package multiget_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/multiget"
	"github.com/pushpull/pushpull/internal/testserver"
)

// newClients returns a gomemcache client and a multiget client sharing one
// server list.
func newClients(t *testing.T, addrs ...string) (*memcache.Client, *multiget.Client) {
	t.Helper()
	ss := new(memcache.ServerList)
	if err := ss.SetServers(addrs...); err != nil {
		t.Fatal(err)
	}
	mc := memcache.NewFromSelector(ss)
	g := multiget.New(ss, 2*time.Second, 4)
	t.Cleanup(func() { g.Close(); mc.Close() })
	return mc, g
}

func set(t *testing.T, mc *memcache.Client, key string, value []byte, flags uint32) {
	t.Helper()
	if err := mc.Set(&memcache.Item{Key: key, Value: value, Flags: flags}); err != nil {
		t.Fatal(err)
	}
}

// TestGetAligned: hits and misses come back in the keys' order, with the
// values, flags and CAS ids that gomemcache sees.
func TestGetAligned(t *testing.T) {
	mc, g := newClients(t, testserver.StartMemcached(t, 0).Addr)
	keys := []string{"a", "missing1", "b", "c", "missing2", "big", "empty"}
	big := bytes.Repeat([]byte("0123456789"), 10_000) // beyond every buffer
	set(t, mc, "a", []byte("alpha"), 1)
	set(t, mc, "b", []byte("beta\r\nwith a line break"), 2)
	set(t, mc, "c", []byte("gamma"), 0)
	set(t, mc, "big", big, 3)
	set(t, mc, "empty", nil, 4)
	items, err := g.Get(keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != len(keys) {
		t.Fatalf("%d items for %d keys", len(items), len(keys))
	}
	for i, k := range keys {
		want, err := mc.Get(k)
		if errors.Is(err, memcache.ErrCacheMiss) {
			if items[i] != nil {
				t.Errorf("%s: got %q, want a miss", k, items[i].Value)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got := items[i]
		if got == nil {
			t.Errorf("%s: a miss, want %q", k, want.Value)
			continue
		}
		if got.Key != k || !bytes.Equal(got.Value, want.Value) || got.Flags != want.Flags || got.CasID != want.CasID {
			t.Errorf("%s: got key %q, %d bytes, flags %d, cas %d; want %d bytes, flags %d, cas %d",
				k, got.Key, len(got.Value), got.Flags, got.CasID, len(want.Value), want.Flags, want.CasID)
		}
	}
	// Values share a buffer, but an append must not reach the next one.
	_ = append(items[0].Value, "XXXXXXXX"...)
	if string(items[2].Value) != "beta\r\nwith a line break" {
		t.Fatalf("appending to one value changed the next: %q", items[2].Value)
	}

	// The CAS ids work with gomemcache's CompareAndSwap: once, and not
	// after the value changed.
	a := items[0]
	a.Value = []byte("alpha 2")
	if err := mc.CompareAndSwap(a); err != nil {
		t.Fatalf("CompareAndSwap with the fetched CAS id: %v", err)
	}
	c := items[3]
	set(t, mc, "c", []byte("changed"), 0)
	if err := mc.CompareAndSwap(c); !errors.Is(err, memcache.ErrCASConflict) {
		t.Fatalf("CompareAndSwap after a change: %v, want ErrCASConflict", err)
	}

	// No keys, no request.
	if items, err := g.Get(nil); err != nil || len(items) != 0 {
		t.Fatalf("Get(nil) = %v, %v", items, err)
	}
}

// TestGetTwoServers: every key is read from the server gomemcache wrote it
// to, and both servers are asked.
func TestGetTwoServers(t *testing.T) {
	a, b := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	mc, g := newClients(t, a.Addr, b.Addr)
	var keys []string
	for i := range 200 {
		k := fmt.Sprintf("k%d", i)
		keys = append(keys, k)
		if i%3 != 0 {
			set(t, mc, k, []byte("value of "+k), 0)
		}
	}
	items, err := g.Get(keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		switch it := items[i]; {
		case i%3 == 0 && it != nil:
			t.Errorf("%s: got %q, want a miss", k, it.Value)
		case i%3 != 0 && (it == nil || string(it.Value) != "value of "+k):
			t.Errorf("%s: got %v, want %q", k, it, "value of "+k)
		}
	}
	onA := 0
	ca := memcache.New(a.Addr)
	defer ca.Close()
	for _, k := range keys {
		if _, err := ca.Get(k); err == nil {
			onA++
		}
	}
	if onA == 0 || onA == 133 {
		t.Fatalf("%d of 133 keys on server A: the test needs both servers used", onA)
	}
}

// TestGetConcurrent runs Gets from many goroutines on a few connections
// (run with -race).
func TestGetConcurrent(t *testing.T) {
	mc, g := newClients(t, testserver.StartMemcached(t, 0).Addr)
	var keys []string
	for i := range 50 {
		k := fmt.Sprintf("c%d", i)
		keys = append(keys, k)
		set(t, mc, k, []byte(strings.Repeat(k, i)), 0)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for n := range 200 {
				ks := keys[(w+n)%10:]
				items, err := g.Get(ks)
				if err != nil {
					errs <- err
					return
				}
				for i, k := range ks {
					if items[i] == nil || items[i].Key != k {
						errs <- fmt.Errorf("%s: got %v", k, items[i])
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
}

// fakeServer accepts connections and answers every request with reply
// (nothing at all if reply is empty: a server that hangs).
func fakeServer(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 4096)
				if _, err := c.Read(buf); err != nil {
					return
				}
				if reply == "" {
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					c.Read(buf) // until the client gives up
					return
				}
				c.Write([]byte(reply))
			})
		}
	})
	return ln.Addr().String()
}

// TestGetErrors: bad keys, servers that are absent, hang or answer
// nonsense, and a closed client all give errors, never items.
func TestGetErrors(t *testing.T) {
	_, good := newClients(t, testserver.StartMemcached(t, 0).Addr)
	for _, k := range []string{"", "has space", "ctl\x01", strings.Repeat("k", 251)} {
		if _, err := good.Get([]string{"ok", k}); !errors.Is(err, memcache.ErrMalformedKey) {
			t.Errorf("key %q: err %v, want ErrMalformedKey", k, err)
		}
	}

	for name, reply := range map[string]string{
		"an error line":           "SERVER_ERROR out of memory\r\n",
		"a key not asked for":     "VALUE other 0 1 1\r\nx\r\nEND\r\n",
		"a short value":           "VALUE k1 0 10 1\r\nabc\r\nEND\r\n",
		"no CRLF after the value": "VALUE k1 0 3 1\r\nabcXYEND\r\n",
		"a bad number":            "VALUE k1 0 x 1\r\nabc\r\nEND\r\n",
		"a closed connection":     "VALUE k1 0 3 1\r\nab",
	} {
		_, g := newClients(t, fakeServer(t, reply))
		if items, err := g.Get([]string{"k1", "k2"}); err == nil {
			t.Errorf("%s: no error, items %v", name, items)
		}
	}

	ss := new(memcache.ServerList)
	ss.SetServers(fakeServer(t, ""))
	hung := multiget.New(ss, 200*time.Millisecond, 1)
	defer hung.Close()
	start := time.Now()
	_, err := hung.Get([]string{"k1"})
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("a server that never answers: err %v, want a timeout", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the timeout of 200ms took %v", took)
	}

	_, absent := newClients(t, fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t)))
	if _, err := absent.Get([]string{"k1"}); err == nil {
		t.Error("no server listening: no error")
	}

	good.Close()
	if _, err := good.Get([]string{"k1"}); !errors.Is(err, multiget.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// TestAppend: one pipelined request appends to the keys that exist, in
// both servers, reports the missing ones as ErrNotStored, and so a value
// grown too large, and the connection stays usable after that refusal.
func TestAppend(t *testing.T) {
	a, b := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	mc, g := newClients(t, a.Addr, b.Addr)
	var items []*memcache.Item
	for i := range 60 {
		k := fmt.Sprintf("ap%d", i)
		if i%4 != 0 {
			set(t, mc, k, []byte("base:"), uint32(i))
		}
		items = append(items, &memcache.Item{Key: k, Value: []byte(fmt.Sprintf("+%d\r\n", i))})
	}
	// Over memcached's 1 MB item limit once appended.
	set(t, mc, "ap-huge", bytes.Repeat([]byte("x"), 1000_000), 0)
	items = append(items, &memcache.Item{Key: "ap-huge", Value: bytes.Repeat([]byte("y"), 100_000)})
	for round := range 2 {
		errs := g.Append(items)
		for i, it := range items {
			err := errs[i]
			if it.Key == "ap-huge" {
				// memcached answers NOT_STORED, as for a missing key.
				if !errors.Is(err, memcache.ErrNotStored) {
					t.Errorf("round %d: appending past the item limit: err %v, want ErrNotStored", round, err)
				}
				continue
			}
			got, gerr := mc.Get(it.Key)
			switch {
			case i%4 == 0:
				if !errors.Is(err, memcache.ErrNotStored) || !errors.Is(gerr, memcache.ErrCacheMiss) {
					t.Errorf("%s: err %v, then get %v; want ErrNotStored and still missing", it.Key, err, gerr)
				}
			case err != nil || gerr != nil:
				t.Errorf("%s: err %v, get %v", it.Key, err, gerr)
			default:
				want := "base:" + strings.Repeat(fmt.Sprintf("+%d\r\n", i), round+1)
				if string(got.Value) != want || got.Flags != uint32(i) {
					t.Errorf("%s: value %q flags %d, want %q flags %d", it.Key, got.Value, got.Flags, want, i)
				}
			}
		}
	}
	if errs := g.Append(nil); len(errs) != 0 {
		t.Errorf("Append(nil) = %v", errs)
	}
}

// TestAppendErrors: bad keys, servers that are absent, hang or answer
// nonsense fail every item they hold.
func TestAppendErrors(t *testing.T) {
	_, good := newClients(t, testserver.StartMemcached(t, 0).Addr)
	errs := good.Append([]*memcache.Item{{Key: "ok"}, {Key: "has space"}})
	if !errors.Is(errs[0], memcache.ErrMalformedKey) || !errors.Is(errs[1], memcache.ErrMalformedKey) {
		t.Errorf("a bad key: %v, want ErrMalformedKey for all", errs)
	}
	two := []*memcache.Item{{Key: "k1", Value: []byte("v")}, {Key: "k2", Value: []byte("v")}}
	for name, reply := range map[string]string{
		"an unknown reply":      "WHAT\r\nWHAT\r\n",
		"one reply of two":      "STORED\r\n",
		"a client error":        "STORED\r\nCLIENT_ERROR bad data chunk\r\n",
		"no answer but a close": "",
	} {
		addr := fakeServer(t, reply)
		if reply == "" {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				if c, err := ln.Accept(); err == nil {
					c.Close()
				}
			}()
			t.Cleanup(func() { ln.Close() })
			addr = ln.Addr().String()
		}
		ss := new(memcache.ServerList)
		ss.SetServers(addr)
		g := multiget.New(ss, 300*time.Millisecond, 1)
		errs := g.Append(two)
		g.Close()
		if errs[1] == nil {
			t.Errorf("%s: the second append reported stored", name)
		}
		if name == "a client error" && errs[0] != nil {
			t.Errorf("%s: the first append, answered STORED, got %v", name, errs[0])
		}
	}
	_, absent := newClients(t, fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t)))
	for i, err := range absent.Append(two) {
		if err == nil {
			t.Errorf("no server listening: item %d reported stored", i)
		}
	}
	good.Close()
	if errs := good.Append(two); !errors.Is(errs[0], multiget.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", errs)
	}
}

// TestDelete: pipelined deletes across two servers tell deleted keys from
// missing ones.
func TestDelete(t *testing.T) {
	a, b := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	mc, g := newClients(t, a.Addr, b.Addr)
	var keys []string
	for i := range 40 {
		k := fmt.Sprintf("del%d", i)
		keys = append(keys, k)
		if i%3 != 0 {
			set(t, mc, k, []byte("x"), 0)
		}
	}
	for i, err := range g.Delete(keys) {
		if want := error(nil); i%3 == 0 {
			if !errors.Is(err, memcache.ErrCacheMiss) {
				t.Errorf("%s: err %v, want ErrCacheMiss", keys[i], err)
			}
		} else if err != want {
			t.Errorf("%s: err %v", keys[i], err)
		}
		if _, err := mc.Get(keys[i]); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Errorf("%s: still there after Delete (%v)", keys[i], err)
		}
	}
	_, absent := newClients(t, fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t)))
	if errs := absent.Delete(keys[:2]); errs[0] == nil || errs[1] == nil {
		t.Errorf("no server listening: %v", errs)
	}
}

// TestAppendGet: the append lands before the get, on one server or two,
// and each outcome is reported.
func TestAppendGet(t *testing.T) {
	a, b := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	for _, addrs := range [][]string{{a.Addr}, {a.Addr, b.Addr}} {
		mc, g := newClients(t, addrs...)
		for i := range 20 {
			ak, gk := fmt.Sprintf("ag-a%d-%d", len(addrs), i), fmt.Sprintf("ag-g%d-%d", len(addrs), i)
			if i%2 == 0 {
				set(t, mc, ak, []byte("x"), 0)
			}
			if i%3 != 0 {
				set(t, mc, gk, []byte("value"), 7)
			}
			appErr, it, err := g.AppendGet(&memcache.Item{Key: ak, Value: []byte("y")}, gk)
			if err != nil {
				t.Fatal(err)
			}
			if want := error(nil); i%2 != 0 {
				if !errors.Is(appErr, memcache.ErrNotStored) {
					t.Errorf("%s missing: append err %v, want ErrNotStored", ak, appErr)
				}
			} else if appErr != want {
				t.Errorf("%s: append err %v", ak, appErr)
			}
			switch {
			case i%3 == 0 && it != nil:
				t.Errorf("%s: got %q, want a miss", gk, it.Value)
			case i%3 != 0 && (it == nil || string(it.Value) != "value" || it.Flags != 7 || it.CasID == 0):
				t.Errorf("%s: got %+v", gk, it)
			}
			// The same key: the get sees the append.
			appErr, it, err = g.AppendGet(&memcache.Item{Key: gk, Value: []byte("+")}, gk)
			if i%3 != 0 && (err != nil || appErr != nil || it == nil || string(it.Value) != "value+") {
				t.Errorf("%s appended then read: %v, %v, %+v", gk, appErr, err, it)
			}
		}
	}
	_, absent := newClients(t, fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t)))
	if appErr, _, err := absent.AppendGet(&memcache.Item{Key: "k", Value: []byte("v")}, "k2"); err == nil || appErr == nil {
		t.Errorf("no server listening: %v, %v", appErr, err)
	}
	_, bad := newClients(t, fakeServer(t, "WHAT\r\n"))
	if _, _, err := bad.AppendGet(&memcache.Item{Key: "k", Value: []byte("v")}, "k"); err == nil {
		t.Error("a nonsense reply to the append: no error")
	}
}
