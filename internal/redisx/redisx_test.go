package redisx_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/internal/testserver"
)

// connect returns a client of the server at addr, closed when t ends.
func connect(t *testing.T, addr string, timeout time.Duration) *redisx.Client {
	t.Helper()
	c, err := redisx.New(context.Background(), redisx.Options{Addr: addr, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestDeadlines: against a frozen server every call ends by the earlier
// of its caller's deadline and the client's timeout; only the timeout
// marks the server down, and a read of a server marked down fails at once
// without sending anything.
func TestDeadlines(t *testing.T) {
	rd := testserver.StartFaultRedis(t)
	short := connect(t, rd.Addr(), 100*time.Millisecond)
	long := connect(t, rd.Addr(), time.Minute)
	script := redisx.NewScript("return 1")
	// Both clients know the script before the freeze.
	for _, c := range []*redisx.Client{short, long} {
		if err := c.Run(context.Background(), false, script, redisx.Call{}).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rd.Freeze(); err != nil {
		t.Fatal(err)
	}

	// The caller's deadline, well inside the client's minute.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	start := time.Now()
	err := long.Do(ctx, func(b redisx.Builder) redisx.Completed { return b.Get().Key("k").Build() }).Error()
	cancel()
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 30*time.Second {
		t.Fatalf("GET with a 100 ms deadline on a frozen server: %v after %v", err, took)
	}
	if long.Down() {
		t.Fatal("the caller's own deadline marked the server down")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	start = time.Now()
	res := long.RunAll(ctx, false, script, []redisx.Call{{}, {}})
	cancel()
	if took := time.Since(start); !errors.Is(res[0].Error(), context.DeadlineExceeded) || !errors.Is(res[1].Error(), context.DeadlineExceeded) || took > 30*time.Second {
		t.Fatalf("scripts with a 100 ms deadline on a frozen server: %v, %v after %v", res[0].Error(), res[1].Error(), took)
	}

	// The client's timeout, with no deadline of the caller's.
	for i, call := range []func() error{
		func() error {
			return short.Do(context.Background(), func(b redisx.Builder) redisx.Completed { return b.Get().Key("k").Build() }).Error()
		},
		func() error { return short.Run(context.Background(), false, script, redisx.Call{}).Error() },
	} {
		if err := call(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call %d without a deadline on a frozen server: %v", i, err)
		}
		if !short.Down() {
			t.Fatalf("call %d: the client's timeout did not mark the server down", i)
		}
	}
	sent := short.Calls()
	if err := short.Run(context.Background(), true, script, redisx.Call{}).Error(); !errors.Is(err, redisx.ErrDown) {
		t.Fatalf("a read of a server marked down: %v, want ErrDown", err)
	}
	if short.Calls() != sent || !redisx.NotApplied(redisx.ErrDown) {
		t.Fatal("a read of a server marked down sent a command, or counts as perhaps applied")
	}

	// Connecting to a frozen server fails by the timeout too.
	if _, err := redisx.New(context.Background(), redisx.Options{Addr: rd.Addr(), Timeout: 100 * time.Millisecond}); err == nil {
		t.Fatal("New connected to a frozen server")
	}

	if err := rd.Thaw(); err != nil {
		t.Fatal(err)
	}
	testserver.Poll(t, time.Minute, "the thawed server answers a read again", func() bool {
		return short.Run(context.Background(), true, script, redisx.Call{}).Error() == nil
	})
}

// TestSlowCallOfALiveServer: a call that times out while the server
// answers other calls (here a BLPOP the server holds) does not mark the
// server down.
func TestSlowCallOfALiveServer(t *testing.T) {
	rd := testserver.StartFaultRedis(t)
	c := connect(t, rd.Addr(), time.Second) // a BLPOP is a write: 2.5 s
	blocking := func() bool {
		info, err := c.Do(context.Background(), func(b redisx.Builder) redisx.Completed {
			return b.Info().Section("clients").Build()
		}).ToString()
		return err == nil && strings.Contains(info, "blocked_clients:1")
	}
	// Until the server is seen holding the BLPOP (and answering the INFO
	// that sees it) before the BLPOP's timeout: a loaded machine may let
	// the timeout pass first.
	for attempt := 1; ; attempt++ {
		blocked := make(chan error, 1)
		go func() {
			blocked <- c.Do(context.Background(), func(b redisx.Builder) redisx.Completed {
				return b.Blpop().Key("empty").Timeout(60).Build()
			}).Error()
		}()
		var err error
		seen, done := false, false
		testserver.Poll(t, time.Minute, "the BLPOP held or ended", func() bool {
			select {
			case err = <-blocked:
				done = true
				return true
			default:
			}
			seen = seen || blocking()
			return seen
		})
		if !done {
			err = <-blocked
		}
		if !seen {
			if attempt == 10 {
				t.Fatal("never saw the server hold the BLPOP")
			}
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("BLPOP past the timeout: %v", err)
		}
		if c.Down() {
			t.Fatal("a call that timed out while the server answered others marked it down")
		}
		return
	}
}

// TestScriptsAfterRestart: a script is sent by its SHA-1, and whole again
// when a restarted server does not have it; a write refused by a server
// that is not running counts as not applied.
func TestScriptsAfterRestart(t *testing.T) {
	rd := testserver.StartFaultRedis(t)
	c := connect(t, rd.Addr(), 200*time.Millisecond)
	script := redisx.NewScript("return redis.call('INCR', KEYS[1])")
	call := redisx.Call{Keys: []string{"n"}}
	if res := c.RunAll(context.Background(), false, script, nil); len(res) != 0 || c.Calls() != 0 {
		t.Fatalf("no calls: %d results, %d commands sent", len(res), c.Calls())
	}
	for want := int64(1); want <= 2; want++ {
		if n, err := c.Run(context.Background(), false, script, call).AsInt64(); err != nil || n != want {
			t.Fatalf("run %d: %d, %v", want, n, err)
		}
	}
	if got := c.Calls(); got != 3 {
		t.Fatalf("two runs sent %d commands, want 3: EVALSHA, EVAL, EVALSHA", got)
	}
	if err := rd.Kill(); err != nil {
		t.Fatal(err)
	}
	testserver.Poll(t, time.Minute, "a write to the killed server is refused", func() bool {
		return redisx.NotApplied(c.Run(context.Background(), false, script, call).Error())
	})
	if err := rd.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	testserver.Poll(t, time.Minute, "the restarted server runs the script, starting empty", func() bool {
		n, err := c.Run(context.Background(), false, script, call).AsInt64()
		return err == nil && n == 1
	})
}

// TestErrorPrefix finds a script's own error word in the server's reply.
func TestErrorPrefix(t *testing.T) {
	rd := testserver.StartFaultRedis(t)
	c := connect(t, rd.Addr(), 200*time.Millisecond)
	err := c.Run(context.Background(), false, redisx.NewScript("return redis.error_reply('EPOCH abc')"), redisx.Call{}).Error()
	if rest, ok := redisx.ErrorPrefix(err, "EPOCH"); !ok || rest != "abc" {
		t.Fatalf("ErrorPrefix(%v) = %q, %v; want abc", err, rest, ok)
	}
	if _, ok := redisx.ErrorPrefix(err, "OTHER"); ok {
		t.Fatal("found a word the error lacks")
	}
	if _, ok := redisx.ErrorPrefix(context.DeadlineExceeded, "EPOCH"); ok {
		t.Fatal("found a word in an error that is not the server's")
	}
	if !redisx.NotApplied(err) || redisx.NotApplied(context.DeadlineExceeded) || redisx.NotApplied(nil) {
		t.Fatal("NotApplied: an error reply is not applied; a timeout may be; nil is no error")
	}
}
