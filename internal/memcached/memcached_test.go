package memcached_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/internal/testserver"
)

func newClient(t *testing.T, prefix string, timeout time.Duration, addrs ...string) *memcached.Client {
	t.Helper()
	c, err := memcached.New(t.Context(), memcached.Options{Servers: addrs, Prefix: prefix, Timeout: timeout, RetryAfter: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func item(k, v string) *memcache.Item { return &memcache.Item{Key: k, Value: []byte(v)} }

// TestCalls: every call against a real memcached, with the outcomes a
// caller tells apart.
func TestCalls(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, "t:", time.Second, testserver.StartMemcached(t, 0).Addr)
	big := bytes.Repeat([]byte("0123456789"), 10_000)
	for k, v := range map[string][]byte{"a": []byte("alpha"), "b": []byte("beta\r\nwith a break"), "big": big, "empty": nil} {
		if err := c.Set(ctx, &memcache.Item{Key: k, Value: v, Flags: 7}); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"a", "x", "b", "big", "y", "empty"}
	items, err := c.Get(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "alpha", "b": "beta\r\nwith a break", "big": string(big), "empty": ""}
	for i, k := range keys {
		w, ok := want[k]
		switch {
		case !ok && items[i] != nil:
			t.Errorf("%s: got %q, want a miss", k, items[i].Value)
		case ok && items[i] == nil:
			t.Errorf("%s: a miss", k)
		case ok && (items[i].Key != k || string(items[i].Value) != w || items[i].Flags != 7 || items[i].CasID == 0):
			t.Errorf("%s: got key %q, %d bytes, flags %d, cas %d", k, items[i].Key, len(items[i].Value), items[i].Flags, items[i].CasID)
		}
	}
	_ = append(items[0].Value, "XXXX"...) // must not reach the next value
	if string(items[2].Value) != want["b"] {
		t.Fatal("an append to one value overwrote the next")
	}

	if err := c.Add(ctx, item("a", "again")); !errors.Is(err, memcache.ErrNotStored) {
		t.Errorf("Add of a present key: %v, want ErrNotStored", err)
	}
	if err := c.Add(ctx, item("n", "5")); err != nil {
		t.Fatal(err)
	}
	a, err := c.GetOne(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, item("a", "changed")); err != nil {
		t.Fatal(err)
	}
	a.Value = []byte("cas")
	if err := c.CompareAndSwap(ctx, a); !errors.Is(err, memcache.ErrCASConflict) {
		t.Errorf("CAS after a change: %v, want ErrCASConflict", err)
	}
	a, _ = c.GetOne(ctx, "a")
	a.Value = []byte("cas")
	if err := c.CompareAndSwap(ctx, a); err != nil {
		t.Errorf("CAS: %v", err)
	}
	errs := c.Increment(ctx, []string{"n", "nothing", "a"}, 3)
	if errs[0] != nil || !errors.Is(errs[1], memcache.ErrCacheMiss) || errs[2] == nil {
		t.Errorf("Increment: %v", errs)
	}
	if n, _ := c.GetOne(ctx, "n"); n == nil || string(n.Value) != "8" {
		t.Errorf("after incr: %v", n)
	}
	errs = c.Append(ctx, []*memcache.Item{item("a", "+1"), item("nothing", "+1")})
	if errs[0] != nil || !errors.Is(errs[1], memcache.ErrNotStored) {
		t.Errorf("Append: %v", errs)
	}
	appErr, got, err := c.AppendGet(ctx, item("a", "+2"), "n")
	if err != nil || appErr != nil || got == nil || string(got.Value) != "8" {
		t.Errorf("AppendGet: %v %v %v", appErr, got, err)
	}
	if a, _ := c.GetOne(ctx, "a"); a == nil || string(a.Value) != "cas+1+2" {
		t.Errorf("after appends: %v", a)
	}
	errs = c.DeleteMulti(ctx, []string{"a", "nothing"})
	if errs[0] != nil || !errors.Is(errs[1], memcache.ErrCacheMiss) {
		t.Errorf("DeleteMulti: %v", errs)
	}
	if _, err := c.GetOne(ctx, "a"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("deleted key: %v", err)
	}
	if _, err := c.Get(ctx, []string{"has space"}); !errors.Is(err, memcache.ErrMalformedKey) {
		t.Errorf("bad key: %v", err)
	}
	long := string(bytes.Repeat([]byte("k"), memcached.MaxKeyLen+1))
	if err := c.Set(ctx, item(long, "v")); !errors.Is(err, memcache.ErrMalformedKey) {
		t.Errorf("key longer than MaxKeyLen: %v", err)
	}
}

// keyOn returns a key that the client places on server addr among addrs.
func keyOn(t *testing.T, addrs []string, addr string, n int) string {
	t.Helper()
	var ss memcache.ServerList
	ss.SetServers(addrs...)
	for i := n; ; i++ {
		k := "k" + strconv.Itoa(i)
		a, _ := ss.PickServer(k)
		if a.String() == addr {
			return k
		}
	}
}

// TestOneOfTwoDown: with one of two servers dead, New still opens, reports
// it, and calls for its keys fail at once while the other's work; when it
// comes back it is used again.
func TestOneOfTwoDown(t *testing.T) {
	ctx := context.Background()
	m1, m2 := testserver.StartMemcached(t, 0), testserver.StartRestartableMemcached(t)
	addrs := []string{m1.Addr, m2.Addr}
	k1, k2 := keyOn(t, addrs, m1.Addr, 0), keyOn(t, addrs, m2.Addr, 0)
	m2.Kill()
	c := newClient(t, "t:", time.Second, addrs...)
	if d := c.Down(); len(d) != 1 || d[0] != m2.Addr {
		t.Fatalf("Down = %v, want [%s]", d, m2.Addr)
	}
	if err := c.Set(ctx, item(k1, "one")); err != nil {
		t.Fatalf("key on the live server: %v", err)
	}
	// A dead server refuses at once: had each call waited out the
	// Timeout (a second), they would take 100 s; a quarter of that is
	// past anything a busy machine adds to 100 refusals.
	start := time.Now()
	for range 100 {
		if err := c.Set(ctx, item(k2, "two")); !errors.Is(err, memcached.ErrServerDown) {
			t.Fatalf("key on the dead server: %v, want ErrServerDown", err)
		}
	}
	if d := time.Since(start); d > 25*time.Second {
		t.Errorf("100 calls to a dead server took %v; they should fail at once, not wait out their Timeout", d)
	}
	if _, err := c.Get(ctx, []string{k1, k2}); !errors.Is(err, memcached.ErrServerDown) {
		t.Errorf("a Get spanning both: %v", err)
	}
	testserver.RestartMemcached(t, m2)
	deadline := time.Now().Add(5 * time.Second)
	for c.Set(ctx, item(k2, "two")) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the restarted server is not used again")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(c.Down()) != 0 {
		t.Errorf("Down = %v after the server came back", c.Down())
	}
}

// TestNoServer: New fails, naming every server, when none answers.
func TestNoServer(t *testing.T) {
	port := testserver.FreePort(t)
	_, err := memcached.New(t.Context(), memcached.Options{Servers: []string{fmt.Sprintf("127.0.0.1:%d", port)}, Prefix: "t:", Timeout: 100 * time.Millisecond})
	if !errors.Is(err, memcached.ErrNoServers) {
		t.Fatalf("New with no live server: %v", err)
	}
}

// TestDeadlines: with the server silent, a call returns by the caller's
// deadline (and does not mark the server down), or by Timeout (and does);
// a canceled context fails at once, and a cancellation ends a call whose
// request waits; a read of a server marked down fails without a request.
//
// The server is silent behind a frozen proxy, which reports each request
// it holds: a call is canceled when its request waits, a deadline that
// passed before the request was sent is tried again, and the calls that
// sent nothing are told by the proxy, not by how soon they returned. What
// ended a call is told by its error, and, for a client whose Timeout is a
// minute, by its ending within half of that: nothing but its caller can
// end it so soon.
func TestDeadlines(t *testing.T) {
	m := testserver.StartMemcached(t, 0)
	p := testserver.StartProxy(t, "tcp", m.Addr)
	open := func(timeout time.Duration) *memcached.Client {
		c, err := memcached.New(t.Context(), memcached.Options{Servers: []string{p.Addr}, Prefix: "t:", Timeout: timeout, RetryAfter: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	patient, hasty := open(time.Minute), open(300*time.Millisecond)
	// soon runs a call of patient's, and fails the test unless it returns
	// in half of patient's Timeout.
	soon := func(what string, call func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still waiting after 30 s, its Timeout a minute", what)
			return nil
		}
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := patient.Get(cctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: %v", err)
	}
	var held atomic.Int64
	p.OnHeld(func() { held.Add(1) })
	p.Freeze()
	defer p.Thaw()

	for attempt := 1; ; attempt++ {
		before := held.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := soon("silent server, 100ms deadline", func() error { _, err := patient.Get(ctx, []string{"a"}); return err })
		cancel()
		if held.Load() == before && attempt < 10 {
			continue // the deadline passed before the request went out
		}
		if held.Load() == before || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, memcached.ErrServerDown) {
			t.Errorf("silent server, 100ms deadline: %v (request held: %v)", err, held.Load() > before)
		}
		break
	}
	if len(patient.Down()) != 0 {
		t.Errorf("a call cut short by its caller marked the server down")
	}

	// A cancellation (no deadline) ends a waiting call too.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	before := held.Load()
	p.OnHeld(func() { held.Add(1); cancel2() })
	if err := soon("canceled while waiting", func() error { return patient.Set(ctx2, item("a", "v")) }); !errors.Is(err, context.Canceled) || held.Load() == before {
		t.Errorf("canceled while waiting: %v (request held: %v)", err, held.Load() > before)
	}
	p.OnHeld(func() { held.Add(1) })
	if len(patient.Down()) != 0 {
		t.Errorf("a canceled call marked the server down")
	}

	// No deadline: Timeout ends the call, and marks the server down.
	if _, err := hasty.Get(context.Background(), []string{"a"}); !errors.Is(err, memcached.ErrServerDown) {
		t.Errorf("silent server, no deadline: %v; want ErrServerDown after Timeout", err)
	}
	if d := hasty.Down(); len(d) != 1 || d[0] != p.Addr || hasty.Status()[0].Failures != 1 {
		t.Errorf("after Timeout: Down = %v, %d failures; want the server, once", d, hasty.Status()[0].Failures)
	}
	before = held.Load()
	if _, err := hasty.Get(context.Background(), []string{"a"}); !errors.Is(err, memcached.ErrServerDown) || held.Load() != before {
		t.Errorf("second call to a server marked down: %v, request sent: %v; want ErrServerDown without one", err, held.Load() != before)
	}
	if f := hasty.Status()[0].Failures; f != 1 {
		t.Errorf("the second call was charged to the server: %d failures", f)
	}
}

// TestFences: a server that failed is fenced before it is used again, so
// the values a frozen server kept are unreachable for every client; Flush
// does the same for every server, and only for clients of its prefix.
func TestFences(t *testing.T) {
	ctx := context.Background()
	m := testserver.StartRestartableMemcached(t)
	a := newClient(t, "t:", 200*time.Millisecond, m.Addr)
	b := newClient(t, "t:", 200*time.Millisecond, m.Addr)
	other := newClient(t, "u:", 200*time.Millisecond, m.Addr)
	if err := a.Set(ctx, item("page", "old")); err != nil {
		t.Fatal(err)
	}
	if err := other.Set(ctx, item("page", "other")); err != nil {
		t.Fatal(err)
	}
	if it, err := b.GetOne(ctx, "page"); err != nil || string(it.Value) != "old" {
		t.Fatalf("b reads a's value: %v %v", it, err)
	}

	// a's delete is lost while the server is frozen.
	if err := m.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, "page"); err == nil {
		t.Fatal("a delete on a frozen server succeeded") // the cleanup kills it, frozen or not
	}
	if err := m.Thaw(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond) // RetryAfter
	if _, err := a.GetOne(ctx, "page"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("a, after the server it failed on came back: %v, want a miss", err)
	}
	// b never saw the failure but adopts the new fence in its next request.
	if _, err := b.GetOne(ctx, "page"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("b, after a fenced the server: %v, want a miss", err)
	}
	if it, err := other.GetOne(ctx, "page"); err != nil || string(it.Value) != "other" {
		t.Errorf("another prefix's value: %v %v, want it untouched", it, err)
	}

	if err := b.Set(ctx, item("page", "new")); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetOne(ctx, "page"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("after Flush: %v, want a miss", err)
	}

	// Distrust fences the key's server before the next call.
	if err := b.Set(ctx, item("page", "newer")); err != nil {
		t.Fatal(err)
	}
	a.Distrust("page")
	if _, err := a.GetOne(ctx, "page"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("after Distrust: %v, want a miss", err)
	}

	// A restarted (empty) server: a fresh fence, values written again work.
	// A client that saw the server down (a health check of a's may have
	// run while it was) fails its reads for RetryAfter, then fences the
	// server anew, retiring what was written before: b writes again until
	// a reads it.
	m.Kill()
	testserver.RestartMemcached(t, m)
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("the last try after the restart: %s", last)
		}
	}()
	testserver.Poll(t, 10*time.Second, "a reading what b wrote after the restart", func() bool {
		berr := b.Set(ctx, item("page", "after restart"))
		it, err := a.GetOne(ctx, "page")
		last = fmt.Sprintf("b: %v; a: %+v, %v", berr, it, err)
		return berr == nil && err == nil && string(it.Value) == "after restart"
	})
}

// TestCallerGaveUp: only a canceled call is the caller's doing; a passed
// deadline and a live call are not.
func TestCallerGaveUp(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"canceled", canceled, true},
		{"deadline passed", expired, false},
		{"live", context.Background(), false},
	} {
		if got := memcached.CallerGaveUp(tc.ctx); got != tc.want {
			t.Errorf("%s: CallerGaveUp = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOpenContext: New's requests end with its context: a canceled one
// fails New at once, and a deadline that comes before a silent server
// has had OpenTimeout fails it with the deadline's error, not
// ErrNoServers (the caller gave up; the server may be fine).
func TestOpenContext(t *testing.T) {
	m := testserver.StartMemcached(t, 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := memcached.New(ctx, memcached.Options{Servers: []string{m.Addr}, Prefix: "t:"}); !errors.Is(err, context.Canceled) || errors.Is(err, memcached.ErrNoServers) {
		t.Errorf("New under a canceled context: %v", err)
	}
	p := testserver.StartProxy(t, "tcp", m.Addr)
	p.Freeze()
	ctx, cancel = context.WithTimeout(t.Context(), memcached.OpenTimeout/10)
	defer cancel()
	_, err := memcached.New(ctx, memcached.Options{Servers: []string{p.Addr}, Prefix: "t:"})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, memcached.ErrNoServers) {
		t.Errorf("New on a silent server, with a deadline before OpenTimeout: %v", err)
	}
}

// waitDown waits, at most within, until c.Down() is want.
func waitDown(t *testing.T, c *memcached.Client, within time.Duration, what string, want ...string) {
	t.Helper()
	took := testserver.Poll(t, within, fmt.Sprintf("%s: Down = %v", what, want), func() bool { return slices.Equal(c.Down(), want) })
	t.Logf("%s: Down = %v after %v", what, want, took.Round(time.Millisecond))
}

// TestHealthCheck: with no call made, Down names a server within about
// RetryAfter of its death, and drops it within about RetryAfter of its
// return; likewise for a server that stops answering (frozen), within
// RetryAfter and Timeout. The client is as the stores make it: the
// default RetryAfter.
func TestHealthCheck(t *testing.T) {
	m1, m2 := testserver.StartMemcached(t, 0), testserver.StartRestartableMemcached(t)
	c, err := memcached.New(t.Context(), memcached.Options{Servers: []string{m1.Addr, m2.Addr}, Prefix: "t:"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// About RetryAfter each way; the rest is slack for a loaded machine.
	const within = 2*memcached.DefaultRetryAfter + 2*time.Second
	m2.Kill()
	waitDown(t, c, within, "killed", m2.Addr)
	testserver.RestartMemcached(t, m2)
	waitDown(t, c, within, "restarted")
	if err := m1.Freeze(); err != nil {
		t.Fatal(err)
	}
	defer m1.Thaw()
	waitDown(t, c, within+memcached.DefaultTimeout, "frozen", m1.Addr)
	if err := m1.Thaw(); err != nil {
		t.Fatal(err)
	}
	waitDown(t, c, within, "thawed")
	// The server came back under a new fence, and serves again.
	ctx := context.Background()
	for _, k := range []string{keyOn(t, []string{m1.Addr, m2.Addr}, m1.Addr, 0), keyOn(t, []string{m1.Addr, m2.Addr}, m2.Addr, 0)} {
		if err := c.Set(ctx, item(k, "v")); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
		if it, err := c.GetOne(ctx, k); err != nil || string(it.Value) != "v" {
			t.Fatalf("get %s: %+v, %v", k, it, err)
		}
	}
}

// TestCloseStopsHealthCheck: once Close returns, the client's goroutines
// are gone, even with a health check waiting on a frozen server.
func TestCloseStopsHealthCheck(t *testing.T) {
	m1, m2 := testserver.StartMemcached(t, 0), testserver.StartMemcached(t, 0)
	p := testserver.StartProxy(t, "tcp", m2.Addr)
	before := runtime.NumGoroutine()
	c, err := memcached.New(t.Context(), memcached.Options{Servers: []string{m1.Addr, p.Addr}, Prefix: "t:", Timeout: time.Second, RetryAfter: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	// Found down: from now on a health check waits on it most of the time.
	waitDown(t, c, 10*time.Second, "frozen", p.Addr)
	c.Close()
	p.Thaw() // the proxy's own goroutines end once the client's connections are closed
	var stacks bytes.Buffer
	defer func() {
		if t.Failed() {
			pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Logf("%d goroutines after Close, %d before New:\n%s", runtime.NumGoroutine(), before, stacks.String())
		}
	}()
	testserver.Poll(t, 10*time.Second, "goroutines back to their number before New", func() bool { return runtime.NumGoroutine() <= before })
	if _, err := c.GetOne(context.Background(), "k"); !errors.Is(err, memcached.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}
