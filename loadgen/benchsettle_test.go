package loadgen

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
)

// busyDatabase starts queries that keep the test's MariaDB server busy
// until cancel is called, and returns a sampler of that server's
// CPU a second (its process, read through the server's pid file).
func busyDatabase(t *testing.T) (sample func(context.Context, time.Duration) (float64, error), cancel func()) {
	t.Helper()
	admin := testserver.Admin(t)
	t.Cleanup(func() { admin.Close() })
	var pidFile string
	if err := admin.QueryRow("SELECT @@pid_file").Scan(&pidFile); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Skipf("the database server's pid file is not readable here (%v): it runs elsewhere", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	sample = meterSample(cost.NewMeter(nil, nil).WithDatabaseProcess(pid))
	// Four queries, far longer than any test waits (they end when
	// killed): busy enough to show on a loaded machine too.
	const queries = 4
	var ids []int64
	done := make(chan struct{}, queries)
	for range queries {
		conn, err := admin.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := conn.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		go func() {
			defer func() { conn.Close(); done <- struct{}{} }()
			conn.ExecContext(context.Background(), "SELECT BENCHMARK(100000000000, MD5('pushpull'))")
		}()
	}
	var once sync1
	cancel = func() {
		once.do(func() {
			for _, id := range ids {
				if _, err := admin.Exec("KILL QUERY " + strconv.FormatInt(id, 10)); err != nil {
					t.Error(err)
				}
			}
			for range queries {
				<-done
			}
		})
	}
	t.Cleanup(cancel)
	// Wait until the query shows on the server's CPU.
	testserver.Poll(t, 30*time.Second, "the busy query to use the database's CPU", func() bool {
		us, err := sample(context.Background(), SettleWindow)
		return err == nil && us > 300_000
	})
	return sample, cancel
}

// sync1 runs a function once.
type sync1 struct{ done atomic.Bool }

func (o *sync1) do(f func()) {
	if o.done.CompareAndSwap(false, true) {
		f()
	}
}

// TestWaitQuietWaitsForBusyServer: a box whose database runs work of an
// earlier step is not settled until that work ends; the wait returns
// settled after it, never before.
func TestWaitQuietWaitsForBusyServer(t *testing.T) {
	sample, cancel := busyDatabase(t)
	var busySeen, windows atomic.Int64
	var killed atomic.Bool
	counting := func(ctx context.Context, w time.Duration) (float64, error) {
		us, err := sample(ctx, w)
		if us > SettleMarginUs && !killed.Load() {
			busySeen.Add(1)
		}
		windows.Add(1)
		return us, err
	}
	type out struct {
		ok  bool
		err error
	}
	res := make(chan out, 1)
	go func() {
		_, ok, err := waitQuiet(context.Background(), counting, SettleMarginUs, SettleWindow, 2*time.Minute)
		res <- out{ok, err}
	}()
	testserver.Poll(t, 30*time.Second, "two busy windows", func() bool { return busySeen.Load() >= 2 })
	select {
	case r := <-res:
		t.Fatalf("settled (%v, %v) while the server was still busy", r.ok, r.err)
	default:
	}
	killed.Store(true)
	cancel()
	r := <-res
	if r.err != nil || !r.ok {
		t.Fatalf("after the busy query ended: settled %v, err %v", r.ok, r.err)
	}
}

// TestWaitQuietIsBounded: a box that never settles is waited for at most
// the bound, and reported unsettled.
func TestWaitQuietIsBounded(t *testing.T) {
	sample, _ := busyDatabase(t)
	const bound = time.Second
	waited, ok, err := waitQuiet(context.Background(), sample, SettleMarginUs, SettleWindow, bound)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatal("settled while the server was busy")
	}
	if waited < bound {
		t.Fatalf("gave up after %v, before the bound %v", waited, bound)
	}
}

// TestWaitQuietEndsWithContext: a cancelled wait returns the context's
// error.
func TestWaitQuietEndsWithContext(t *testing.T) {
	sample, _ := busyDatabase(t)
	ctx, stop := context.WithCancel(context.Background())
	stop()
	if _, ok, err := waitQuiet(ctx, sample, SettleMarginUs, SettleWindow, time.Minute); err == nil || ok {
		t.Fatalf("cancelled wait: settled %v, err %v", ok, err)
	}
}
