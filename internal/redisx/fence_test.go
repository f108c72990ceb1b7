package redisx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/internal/testserver"
)

// The fenced scripts of the tests keep a set KEYS[2] of derived state:
// add adds ARGV[2], starting the set afresh (marked with the current
// epoch's sentinel S) when it lacks the sentinel; size reports how many
// members it holds, or -1 when it lacks the sentinel (state of another
// epoch: missing).
var (
	add = redisx.FencedScript("", `
if not redis.call('ZSCORE', KEYS[2], S) then
	redis.call('DEL', KEYS[2])
	redis.call('ZADD', KEYS[2], 0, S)
end
redis.call('ZADD', KEYS[2], 1, ARGV[2])
return redis.call('ZCARD', KEYS[2]) - 1
`)
	size = redisx.FencedScript("", `
if not redis.call('ZSCORE', KEYS[2], S) then return -1 end
return redis.call('ZCARD', KEYS[2]) - 1
`)
)

const (
	epochKey = "test:epoch"
	stateKey = "test:state"
)

// newFence returns a fence on epochKey of a client of its own (one
// process's), closed when t ends.
func newFence(t *testing.T, addr string, timeout time.Duration) (*redisx.Fence, *redisx.Client) {
	t.Helper()
	c := connect(t, addr, timeout)
	f, err := redisx.NewFence(context.Background(), c, epochKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f, c
}

func addCall(member string) []redisx.Call {
	return []redisx.Call{{Keys: []string{"", stateKey}, Args: []string{"", member}}}
}

// sizeOf runs size under f: the state's members, or -1 when it is missing.
func sizeOf(t *testing.T, f *redisx.Fence) int64 {
	t.Helper()
	n, err := trySize(f)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func trySize(f *redisx.Fence) (int64, error) {
	res, err := f.Run(context.Background(), true, size, []redisx.Call{{Keys: []string{"", stateKey}, Args: []string{""}}})
	if err != nil {
		return 0, err
	}
	return res[0].AsInt64()
}

// sizeOnceUp waits until a read under f succeeds (a server that failed is
// skipped by reads for a while, and a connection broken by a restart
// fails once) and returns what it read.
func sizeOnceUp(t *testing.T, f *redisx.Fence) int64 {
	t.Helper()
	var n int64
	testserver.Poll(t, time.Minute, "a read succeeds", func() bool {
		var err error
		n, err = trySize(f)
		return err == nil
	})
	return n
}

// TestFenceFencesEveryProcess: two processes share the epoch; a fence one
// of them pays makes the state written under the old epoch missing for
// both, and the other learns the new epoch from its next script, which
// then runs under it.
func TestFenceFencesEveryProcess(t *testing.T) {
	rd := testserver.StartFaultRedis(t)
	a, _ := newFence(t, rd.Addr(), 200*time.Millisecond)
	b, _ := newFence(t, rd.Addr(), 200*time.Millisecond)
	for _, m := range []string{"x", "y"} {
		if _, err := a.Mutate(context.Background(), add, addCall(m)); err != nil {
			t.Fatal(err)
		}
	}
	if n := sizeOf(t, b); n != 2 {
		t.Fatalf("the other process reads %d members, want 2", n)
	}
	if err := a.Owe(context.Background(), errors.New("a write of unknown outcome")); err != nil {
		t.Fatal(err)
	}
	if a.Owed() || a.Paid() != 1 {
		t.Fatalf("with Redis up the fence is paid at once: owed %v, paid %d", a.Owed(), a.Paid())
	}
	for name, f := range map[string]*redisx.Fence{"paying": a, "other": b} {
		if n := sizeOf(t, f); n != -1 {
			t.Fatalf("%s process: the state of the old epoch reads as %d members, want missing", name, n)
		}
	}
	if _, err := b.Mutate(context.Background(), add, addCall("z")); err != nil {
		t.Fatal(err)
	}
	if n := sizeOf(t, a); n != 1 {
		t.Fatalf("after a write under the new epoch the paying process reads %d members, want 1", n)
	}
}

// TestFenceOwedWhileFrozen: a write to a frozen server may be applied when
// it thaws, so the fence is owed and Mutate says it could not pay it; the
// store reads elsewhere meanwhile (Owed). Once the server answers, the
// fence's goroutine pays it, and whatever the frozen server applied on
// its return is missing under the new epoch.
func TestFenceOwedWhileFrozen(t *testing.T) {
	rd := testserver.StartFaultRedis(t)
	f, _ := newFence(t, rd.Addr(), 100*time.Millisecond)
	if _, err := f.Mutate(context.Background(), add, addCall("before")); err != nil {
		t.Fatal(err)
	}
	if err := rd.Freeze(); err != nil {
		t.Fatal(err)
	}
	// A canceled caller does not cut the write's Redis part short: it
	// runs to the client's own deadline and fails by it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.Mutate(ctx, add, addCall("frozen"))
	if !errors.Is(err, redisx.ErrFenceOwed) || !f.Owed() {
		t.Fatalf("a write to a frozen server: %v, owed %v; want ErrFenceOwed, owed", err, f.Owed())
	}
	if err := rd.Thaw(); err != nil {
		t.Fatal(err)
	}
	testserver.Poll(t, time.Minute, "the fence paid once the server answers", func() bool { return !f.Owed() })
	if f.Paid() != 1 {
		t.Fatalf("%d fences paid, want 1", f.Paid())
	}
	if n := sizeOnceUp(t, f); n != -1 {
		t.Fatalf("after the fence the state reads as %d members, want missing", n)
	}
}

// TestFenceAfterRestart: a write refused by a server that is not running
// owes no fence (the next server starts empty); a restarted server has no
// epoch, and the first script under the old one makes and adopts a new
// one.
func TestFenceAfterRestart(t *testing.T) {
	rd := testserver.StartFaultRedis(t)
	f, _ := newFence(t, rd.Addr(), 100*time.Millisecond)
	if _, err := f.Mutate(context.Background(), add, addCall("before")); err != nil {
		t.Fatal(err)
	}
	if err := rd.Kill(); err != nil {
		t.Fatal(err)
	}
	// The first write may fail on the broken connection (outcome
	// unknown: a fence owed, and paid at once as refused), later ones are
	// refused: none is an error, and none leaves a fence owed.
	for range 3 {
		if _, err := f.Mutate(context.Background(), add, addCall("while dead")); err != nil || f.Owed() {
			t.Fatalf("a write to a dead server: %v, owed %v", err, f.Owed())
		}
	}
	if err := rd.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := sizeOnceUp(t, f); n != -1 {
		t.Fatalf("the restarted server's state reads as %d members, want missing", n)
	}
	if _, err := f.Mutate(context.Background(), add, addCall("after")); err != nil {
		t.Fatal(err)
	}
	if n := sizeOf(t, f); n != 1 {
		t.Fatalf("after a write to the restarted server: %d members, want 1", n)
	}
}
