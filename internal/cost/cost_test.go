package cost_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/hostcpu"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Memcached: true, Redis: true}) }

// measure runs op n times between two snapshots and returns the cost of
// one.
func measure(t *testing.T, meter *cost.Meter, n int, op func(i int) error) cost.Cost {
	t.Helper()
	ctx := context.Background()
	before, err := meter.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := op(i); err != nil {
			t.Fatal(err)
		}
	}
	after, err := meter.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cost.PerOp(before, after, int64(n))
}

// TestPushPostWritesARowPerFollower: a post on push writes its message and
// one mailbox row per follower of its author, and InnoDB's counters say so.
func TestPushPostWritesARowPerFollower(t *testing.T) {
	ctx := context.Background()
	s, err := push.Open(ctx, push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	meter := cost.NewMeter(s.DB(), nil)
	for _, followers := range []int{3, 25} {
		author := timeline.UserID(1000 + followers)
		for f := range followers {
			if err := s.Follow(ctx, timeline.UserID(2+f), author); err != nil {
				t.Fatal(err)
			}
		}
		c := measure(t, meter, 40, func(i int) error {
			_, err := s.Post(ctx, author, fmt.Sprintf("post %d", i))
			return err
		})
		t.Logf("%d followers: %v", followers, c)
		want := float64(followers + 1)
		if w := c[cost.RowsWritten]; w < want-0.5 || w > want+0.5 {
			t.Errorf("%d followers: %.2f rows written per post, want %.0f (the message and a mailbox row each)", followers, w, want)
		}
		if c[cost.RowsInserted] != c[cost.RowsWritten] || c[cost.RowsDeleted] != 0 {
			t.Errorf("%d followers: %v: a post only inserts", followers, c)
		}
		if !(c[cost.LogBytesWritten] > 0) || !(c[cost.CPU] > 0) {
			t.Errorf("%d followers: no redo bytes or CPU: %v", followers, c)
		}
		if _, ok := c[cost.MCGets]; ok {
			t.Errorf("memcached figures without memcached: %v", c)
		}
	}
}

// TestPullReadProbesEveryFollowee: a pull read examines more rows the more
// authors its reader follows: at least one probe per followee.
func TestPullReadProbesEveryFollowee(t *testing.T) {
	ctx := context.Background()
	s, err := pull.Open(ctx, pull.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const authors = 60
	for a := range authors {
		for i := range 5 {
			if _, err := s.Post(ctx, timeline.UserID(100+a), fmt.Sprintf("by %d, %d", a, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	meter := cost.NewMeter(s.DB(), nil)
	rows := map[int]float64{}
	for _, followees := range []int{5, 50} {
		reader := timeline.UserID(followees)
		for a := range followees {
			if err := s.Follow(ctx, reader, timeline.UserID(100+a)); err != nil {
				t.Fatal(err)
			}
		}
		c := measure(t, meter, 30, func(int) error {
			_, err := s.Timeline(ctx, reader, timeline.Query{})
			return err
		})
		rows[followees] = c[cost.RowsRead]
		t.Logf("%d followees: %v", followees, c)
		if rows[followees] < float64(followees) {
			t.Errorf("%d followees: %.1f rows read per page, fewer than one probe each", followees, rows[followees])
		}
	}
	if rows[50] < 2*rows[5] {
		t.Errorf("rows read per page: %.1f for 5 followees, %.1f for 50: no growth with followees", rows[5], rows[50])
	}
}

// TestMemcachedCounters: gets and sets through a memcached client show in
// the figures, one each per operation.
func TestMemcachedCounters(t *testing.T) {
	addr := testserver.Memcache(t)
	mc := memcache.New(addr)
	meter := cost.NewMeter(nil, []string{addr})
	c := measure(t, meter, 50, func(i int) error {
		key := fmt.Sprintf("cost-test-%d", i)
		if err := mc.Set(&memcache.Item{Key: key, Value: make([]byte, 100)}); err != nil {
			return err
		}
		_, err := mc.Get(key)
		return err
	})
	t.Logf("%v", c)
	if g, s := c[cost.MCGets], c[cost.MCSets]; g < 1 || g > 1.1 || s < 1 || s > 1.1 {
		t.Errorf("%.2f gets and %.2f sets per operation, want 1 each", g, s)
	}
	if b := c[cost.MCBytes]; b < 200 {
		t.Errorf("%.0f bytes per set and get of 100 bytes", b)
	}
	// memcached's own CPU, from its rusage stats (seconds with six
	// decimals): a set and a get take it microseconds, not none and not
	// a millisecond.
	if cpu, ok := c[cost.MCCPU]; !ok || cpu <= 0 || cpu > 1000 {
		t.Errorf("memcached CPU %.2f µs per set and get (present %v)", cpu, ok)
	}
	if _, ok := c[cost.DBCPU]; ok {
		t.Errorf("database CPU without a database: %v", c)
	}
	if _, ok := c[cost.RowsRead]; ok {
		t.Errorf("database figures without a database: %v", c)
	}
	if _, err := cost.MemcachedStats([]string{"127.0.0.1:1"}, "cmd_get"); err == nil {
		t.Error("stats from a closed port")
	}
}

// TestDatabaseServerCPU: with the database server's process named, a
// query that keeps the server busy shows in the server's CPU and not in
// the client's; a process that is gone gives no figure.
func TestDatabaseServerCPU(t *testing.T) {
	ctx := context.Background()
	admin := testserver.Admin(t)
	var pidFile string
	if err := admin.QueryRowContext(ctx, "SELECT @@pid_file").Scan(&pidFile); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		if os.Getenv("PUSHPULL_TEST_DSN") != "" {
			t.Skipf("the server given by PUSHPULL_TEST_DSN is not on this machine: %v", err)
		}
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	meter := cost.NewMeter(admin, nil).WithDatabaseProcess(pid)
	start := time.Now()
	c := measure(t, meter, 2, func(int) error {
		_, err := admin.ExecContext(ctx, "DO BENCHMARK(1000000, MD5('pushpull'))")
		return err
	})
	wall := time.Since(start)
	t.Logf("%v in %v", c, wall)
	db, ok := c[cost.DBCPU]
	// /proc counts in 10 ms ticks; the server may have done a little
	// background work too.
	if !ok || db <= 0 || db*2 > float64((wall+50*time.Millisecond).Microseconds()) {
		t.Errorf("database server CPU %.0f µs per query, %v for both (present %v)", db, wall, ok)
	}
	if cpu := c[cost.CPU]; cpu*10 > db {
		t.Errorf("client CPU %.0f µs per query against the server's %.0f: the server's work counted as the client's?", cpu, db)
	}
	if all, ok := c.AllCPU(); !ok || all != db+c[cost.CPU] {
		t.Errorf("all CPU %.0f (%v), want the server's and the client's", all, ok)
	}

	// The same server named as another process (as the benchmark names
	// the Vitess cluster's): its CPU under that key too, and in AllCPU.
	named := cost.NewMeter(nil, nil).WithDatabaseProcess(pid).WithProcess(cost.VitessDBCPU, pid)
	c = measure(t, named, 2, func(int) error {
		_, err := admin.ExecContext(ctx, "DO BENCHMARK(1000000, MD5('pushpull'))")
		return err
	})
	// Read a moment apart, the two may differ by a /proc tick (10 ms)
	// at each end, shared by the 2 queries.
	if v, ok := c[cost.VitessDBCPU]; !ok || v <= 0 || math.Abs(v-c[cost.DBCPU]) > 10_000 {
		t.Errorf("the process's CPU %.0f µs (present %v), want the server's %.0f", v, ok, c[cost.DBCPU])
	}
	if all, _ := c.AllCPU(); all != c[cost.DBCPU]+c[cost.VitessDBCPU]+c[cost.CPU] {
		t.Errorf("all CPU %.0f leaves out the named process", all)
	}

	// A pid no process has.
	gone := cost.NewMeter(nil, nil).WithDatabaseProcess(1 << 30)
	if c := measure(t, gone, 1, func(int) error { return nil }); len(c) == 0 {
		t.Fatal("no cost at all")
	} else if _, ok := c[cost.DBCPU]; ok {
		t.Errorf("a CPU figure for a process that is not there: %v", c)
	}
	goneNamed := cost.NewMeter(nil, nil).WithProcess(cost.VtcomboCPU, 1<<30)
	if c := measure(t, goneNamed, 1, func(int) error { return nil }); len(c) == 0 {
		t.Fatal("no cost at all")
	} else if _, ok := c[cost.VtcomboCPU]; ok {
		t.Errorf("a CPU figure for a named process that is not there: %v", c)
	}
}

// TestRowLockWaits: a statement that waits for a row another open
// transaction holds is one row lock wait; the same statement with the row
// free is none. Concurrent posts that update the same followers' rows (a
// capped mailbox's counts) wait so, and the waits are a count a run keeps
// beside its CPU.
func TestRowLockWaits(t *testing.T) {
	ctx := t.Context()
	admin := testserver.Admin(t)
	defer admin.Close()
	name := testserver.Database(t)
	for _, q := range []string{"CREATE DATABASE `" + name + "`",
		"CREATE TABLE `" + name + "`.counts (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO `" + name + "`.counts VALUES (1, 0), (2, 0)"} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	update := "UPDATE `" + name + "`.counts SET n = n + 1 WHERE id = 1"
	meter := cost.NewMeter(admin, nil)

	free := measure(t, meter, 3, func(int) error { _, err := admin.ExecContext(ctx, update); return err })
	if v, ok := free[cost.RowLockWaits]; !ok || v != 0 {
		t.Errorf("updates of a free row: %v row lock waits a statement (present %v), want 0", v, ok)
	}

	held := measure(t, meter, 1, func(int) error {
		tx, err := admin.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, update); err != nil {
			return err
		}
		// The waiter has a connection of its own before it starts, so the
		// poll below never takes the one it would wait for.
		waiter, err := admin.Conn(ctx)
		if err != nil {
			return err
		}
		defer waiter.Close()
		done := make(chan error, 1)
		go func() { _, err := waiter.ExecContext(ctx, update); done <- err }()
		// The second update waits for the row: InnoDB counts it among the
		// row lock waits going on.
		testserver.Poll(t, 30*time.Second, "the second update waiting for the row", func() bool {
			var name string
			var n int
			err := admin.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_row_lock_current_waits'").Scan(&name, &n)
			return err == nil && n > 0
		})
		if err := tx.Commit(); err != nil {
			return err
		}
		return <-done
	})
	if v := held[cost.RowLockWaits]; v != 1 {
		t.Errorf("an update that waited for a held row: %v row lock waits, want 1 (%v)", v, held)
	}
}

// TestCountersThatWentBackward: the servers' counters only grow, so one
// that is lower after than before (memcached restarted, or MariaDB's sum
// over its connections came out short) says nothing about the operations
// in between. Its figures are left out, never given as negative. A
// database row counter that went backward says the sum was short on one
// side, so all the database's rows are left out and the cost is marked
// unreliable; InnoDB's byte counters and the other servers' figures stay.
func TestCountersThatWentBackward(t *testing.T) {
	server := func(read, write int64) map[string]int64 {
		return map[string]int64{"Rows_read": read, "Handler_read_key": 10, "Handler_write": write,
			"Handler_update": 0, "Handler_delete": 0, "Innodb_data_written": 100, "Innodb_os_log_written": 50}
	}
	mc := func(gets int64) map[string]int64 {
		return map[string]int64{"cmd_get": gets, "cmd_set": 5, "incr_hits": 0, "incr_misses": 0, "decr_hits": 0,
			"decr_misses": 0, "bytes_read": 10, "bytes_written": 20, "rusage_user": 7, "rusage_system": 1}
	}
	before := cost.Snapshot{Server: server(1_000_000, 40), Memcached: mc(500), CPU: time.Second}
	after := cost.Snapshot{Server: server(400_000, 60), Memcached: mc(100), CPU: 2 * time.Second}
	after.Server["Innodb_data_written"] = 300
	c := cost.PerOp(before, after, 10)
	for _, k := range []string{cost.RowsRead, cost.IndexLookups, cost.RowsInserted, cost.RowsWritten, cost.MCGets} {
		if v, ok := c[k]; ok {
			t.Errorf("%s = %v beside a counter that went backward; want it left out", k, v)
		}
	}
	if !c.CountersUnreliable() {
		t.Errorf("%v: not marked unreliable", c)
	}
	want := map[string]float64{cost.BytesWritten: 20, cost.MCSets: 0, cost.CPU: 100_000}
	for k, v := range want {
		if got, ok := c[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}

	// Counters that all grew give every figure, unmarked.
	c = cost.PerOp(before, cost.Snapshot{Server: server(1_000_500, 60), CPU: 2 * time.Second}, 10)
	if c.CountersUnreliable() || c[cost.RowsRead] != 50 || c[cost.RowsWritten] != 2 {
		t.Errorf("%v: want 50 rows read and 2 written, not marked", c)
	}
	// So do they when a snapshot's reads never came clean, but then the
	// rows may be short: they are left out and the cost marked.
	unsteady := cost.Snapshot{Server: server(1_000_500, 60), ServerUnsteady: true, CPU: 2 * time.Second}
	c = cost.PerOp(before, unsteady, 10)
	if _, ok := c[cost.RowsRead]; ok || !c.CountersUnreliable() {
		t.Errorf("%v: an unsteady snapshot's rows given, or not marked", c)
	}
}

// TestCountsOfConnectionsClosingDuringASnapshot: MariaDB's global row
// counters are the sum of what closed connections did and what each open
// one has done, added up when asked; a connection that is closing while
// the sum is made is in neither part, so a snapshot taken then comes out
// short by everything that connection ever counted. Each round here
// counts a known amount of work (10 reads of 100 rows on a connection that
// stays open) between two snapshots, and closes 32 connections that had
// worked before (a pool closed, as a load's is after loading) just as the
// second snapshot is taken. Every round must count its 1,000 rows exactly,
// or say that its database counters are unreliable: never a short figure.
func TestCountsOfConnectionsClosingDuringASnapshot(t *testing.T) {
	ctx := t.Context()
	admin := testserver.Admin(t)
	defer admin.Close()
	database := testserver.Database(t)
	for _, q := range []string{"CREATE DATABASE " + database, "CREATE TABLE " + database + ".t (id INT PRIMARY KEY)",
		"INSERT INTO " + database + ".t SELECT seq FROM " + database + ".seq_1_to_100"} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// A scan of all 100 rows: Rows_read counts 100 for each.
	scan := "SELECT COUNT(*) FROM " + database + ".t WHERE id + 0 > 0"
	work, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer work.Close()
	meter := cost.NewMeter(admin, nil)
	const rounds, ops, closing = 400, 10, 32
	exact := 0
	for round := range rounds {
		pool, err := sql.Open("mysql", testserver.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		pool.SetMaxIdleConns(closing)
		var wg sync.WaitGroup
		errs := make([]error, closing)
		for i := range closing {
			wg.Go(func() {
				c, err := pool.Conn(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				defer c.Close()
				for range 3 {
					if _, err := c.ExecContext(ctx, scan); err != nil {
						errs[i] = err
						return
					}
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		before, err := meter.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for range ops {
			if _, err := work.ExecContext(ctx, scan); err != nil {
				t.Fatal(err)
			}
		}
		closed := make(chan error, 1)
		go func() { closed <- pool.Close() }()
		after, err := meter.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		c := cost.PerOp(before, after, ops)
		rows, ok := c[cost.RowsRead]
		switch {
		case ok && rows == 100:
			exact++
		case !ok && c.CountersUnreliable():
			t.Logf("round %d: the database's counters are reported unreliable", round)
		default:
			t.Fatalf("round %d: %v rows read per scan (counted: %v), want 100 or the counters reported unreliable", round, rows, ok)
		}
	}
	if exact < rounds*9/10 {
		t.Errorf("%d of %d rounds counted exactly; want at least 90%%", exact, rounds)
	}
}

// TestStealShare: a cost carries the share of the machine's CPU time the
// hypervisor took between its snapshots (cost.StealShare, a share of the
// window, not a figure per operation, and in no CPU sum), and none when
// either snapshot lacks the machine's times or they went backward. A
// snapshot of this machine takes them where /proc/stat can be read.
func TestStealShare(t *testing.T) {
	times := func(busy, idle, steal time.Duration) hostcpu.Times {
		return hostcpu.Times{Busy: busy, Idle: idle, Steal: steal}
	}
	before := cost.Snapshot{Server: map[string]int64{}, CPU: time.Second, ServerCPU: time.Second, HasServerCPU: true,
		Host: times(10*time.Second, 10*time.Second, time.Second), HasHost: true}
	after := before
	after.CPU, after.ServerCPU = 2*time.Second, 3*time.Second
	after.Host = times(16*time.Second, 12*time.Second, 3*time.Second) // 10 s passed, 2 s stolen
	c := cost.PerOp(before, after, 1000)
	if got, ok := c[cost.StealShare]; !ok || math.Abs(got-0.2) > 1e-9 {
		t.Errorf("steal share %v (present %v), want 0.2", got, ok)
	}
	if all, _ := c.AllCPU(); all != 3000 {
		t.Errorf("all CPU %v µs an operation, want 3000: the steal share is not CPU", all)
	}
	for name, b := range map[string]cost.Snapshot{
		"no machine times":    {Server: map[string]int64{}, CPU: time.Second},
		"times gone backward": {Server: map[string]int64{}, CPU: time.Second, Host: times(20*time.Second, 10*time.Second, time.Second), HasHost: true},
	} {
		if v, ok := cost.PerOp(b, after, 1000)[cost.StealShare]; ok {
			t.Errorf("%s: steal share %v, want none", name, v)
		}
	}

	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skipf("no /proc/stat here: %v", err)
	}
	m := cost.NewMeter(nil, nil)
	c, err := m.Measure(t.Context(), 1, func() {
		for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); { // a few ticks
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := c[cost.StealShare]; !ok || v < 0 || v > 1 {
		t.Errorf("a measured window's steal share %v (present %v), want one from 0 to 1", v, ok)
	}
}
