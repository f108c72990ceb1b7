package sandbox

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The bounds below are generous on purpose: the tests check that nothing
// hangs, not how fast a shared machine is.

func startForTest(t *testing.T, opts Options) *Sandbox {
	t.Helper()
	if testing.Short() {
		t.Skip("starts servers")
	}
	opts.BaseDir = t.TempDir()
	sb, err := Start(context.Background(), opts)
	if errors.Is(err, ErrMissingBinary) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sb.Stop(); err != nil {
			t.Error(err)
		}
	})
	return sb
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

// gone reports whether no process has the id pid.
func gone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// mcDo sends one command to the memcached at addr and returns its answer,
// up to the line that ends it, waiting at most timeout in all.
func mcDo(addr, cmd string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	var out strings.Builder
	for {
		line, err := r.ReadString('\n')
		out.WriteString(line)
		if err != nil {
			return out.String(), err
		}
		switch strings.TrimSpace(line) {
		case "END", "STORED", "NOT_STORED", "ERROR":
			return out.String(), nil
		}
	}
}

func mcSet(t *testing.T, addr, key, value string) {
	t.Helper()
	cmd := fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", key, len(value), value)
	if got, err := mcDo(addr, cmd, 5*time.Second); err != nil || got != "STORED\r\n" {
		t.Fatalf("set %s on %s: %q, %v", key, addr, got, err)
	}
}

// mcGet returns the value of key, or "" for a miss.
func mcGet(t *testing.T, addr, key string) string {
	t.Helper()
	got, err := mcDo(addr, "get "+key+"\r\n", 5*time.Second)
	if err != nil {
		t.Fatalf("get %s on %s: %q, %v", key, addr, got, err)
	}
	if got == "END\r\n" {
		return ""
	}
	lines := strings.Split(got, "\r\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "VALUE "+key+" ") {
		t.Fatalf("get %s on %s: %q", key, addr, got)
	}
	return lines[1]
}

// TestMariaDBFaults freezes and thaws a durable MariaDB, kills it under a
// stream of commits and restarts it on the same socket (every commit
// acknowledged before the kill is there after the restart), restarts it
// while it runs, and stops the sandbox with the server frozen.
func TestMariaDBFaults(t *testing.T) {
	sb := startForTest(t, Options{MariaDB: true, Settings: DurableTestSettings()})
	ctx := context.Background()
	db := openDB(t, sb.DSN)
	var flush string
	if err := db.QueryRowContext(ctx, "SELECT @@innodb_flush_log_at_trx_commit").Scan(&flush); err != nil || flush != "1" {
		t.Fatalf("innodb_flush_log_at_trx_commit = %q (%v), want the 1 of DurableTestSettings", flush, err)
	}
	for _, q := range []string{"CREATE DATABASE fault", "CREATE TABLE fault.t (id INT PRIMARY KEY) ENGINE=InnoDB"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	p := sb.MariaDB()

	t.Run("freeze", func(t *testing.T) {
		defer p.Thaw()
		if err := p.Freeze(); err != nil {
			t.Fatal(err)
		}
		if !p.Running() {
			t.Fatal("a frozen server is not Running")
		}
		qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		var one int
		err := db.QueryRowContext(qctx, "SELECT 1").Scan(&one)
		if err == nil {
			t.Fatal("a query to a frozen server succeeded")
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("the query's 300ms deadline ended it only after %v", d)
		}
		t.Logf("query to the frozen server: %v", err)
		if err := p.Thaw(); err != nil {
			t.Fatal(err)
		}
		qctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := db.QueryRowContext(qctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatalf("first query after the thaw: %v", err)
		}
	})

	t.Run("kill-restart", func(t *testing.T) {
		// One writer commits id 1, 2, 3, ... until the kill breaks its
		// connection; acked is the last id it saw committed.
		var acked atomic.Int64
		done := make(chan error, 1)
		go func() {
			for id := int64(1); ; id++ {
				if _, err := db.ExecContext(ctx, "INSERT INTO fault.t VALUES (?)", id); err != nil {
					done <- err
					return
				}
				acked.Store(id)
			}
		}()
		deadline := time.Now().Add(30 * time.Second)
		for acked.Load() < 50 {
			if time.Now().After(deadline) {
				t.Fatalf("only %d commits in 30s", acked.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
		old := p.Pid()
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		if p.Running() || !gone(old) {
			t.Fatalf("pid %d still there after Kill", old)
		}
		select {
		case err := <-done:
			t.Logf("writer stopped by the kill: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("writer still running 30s after the kill")
		}
		n := acked.Load()

		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		start := time.Now()
		if err := p.Restart(rctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("restart with crash recovery took %v", time.Since(start).Round(time.Millisecond))
		if p.Pid() == old || !p.Running() || p.Addr() != sb.Socket {
			t.Fatalf("after Restart: pid %d (was %d), running %v, at %s", p.Pid(), old, p.Running(), p.Addr())
		}
		db := openDB(t, sb.DSN) // the same DSN: the same socket
		var have, extra int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(id > ?), 0) FROM fault.t", n).Scan(&have, &extra); err != nil {
			t.Fatal(err)
		}
		// The insert in flight at the kill may have committed unacknowledged.
		if have-extra != n || extra > 1 {
			t.Fatalf("after kill -9 and restart: %d of the %d acknowledged rows, and %d rows past them", have-extra, n, extra)
		}
		t.Logf("%d acknowledged commits survived", n)
	})

	t.Run("restart-running", func(t *testing.T) {
		old := p.Pid()
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := p.Restart(rctx); err != nil {
			t.Fatal(err)
		}
		if p.Pid() == old || !gone(old) {
			t.Fatalf("Restart of a running server: pid %d, old pid %d gone: %v", p.Pid(), old, gone(old))
		}
		var n int
		if err := openDB(t, sb.DSN).QueryRowContext(ctx, "SELECT COUNT(*) FROM fault.t").Scan(&n); err != nil || n == 0 {
			t.Fatalf("after restart: %d rows, %v", n, err)
		}
	})

	t.Run("stop-frozen", func(t *testing.T) { stopFrozen(t, sb, []*Proc{p}) })
}

// TestMemcachedFaults kills, restarts, freezes and thaws memcached servers,
// restarts one on a port taken meanwhile, and stops the sandbox with both
// frozen.
func TestMemcachedFaults(t *testing.T) {
	sb := startForTest(t, Options{Memcached: true, MemcachedCount: 2, MemcachedMB: 16})
	if len(sb.MemcacheAddrs) != 2 || sb.MemcacheAddrs[0] == sb.MemcacheAddrs[1] || sb.MemcacheAddr != sb.MemcacheAddrs[0] {
		t.Fatalf("MemcacheAddrs %v, MemcacheAddr %s", sb.MemcacheAddrs, sb.MemcacheAddr)
	}
	if sb.MariaDB() != nil {
		t.Fatal("MariaDB() is not nil in a sandbox without MariaDB")
	}
	a, b := sb.Memcached(0), sb.Memcached(1)
	first := []int{a.Pid(), b.Pid()} // replaced by restarts below; Stop must leave none
	for i, addr := range sb.MemcacheAddrs {
		if pid, err := MemcachedPid(addr); err != nil || pid != sb.Memcached(i).Pid() {
			t.Fatalf("memcached %d: pid %d, %v; want %d", i, pid, err, sb.Memcached(i).Pid())
		}
		mcSet(t, addr, "k", "v")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("kill-restart", func(t *testing.T) {
		old := b.Pid()
		if err := b.Kill(); err != nil {
			t.Fatal(err)
		}
		if b.Running() || !gone(old) {
			t.Fatalf("pid %d still there after Kill", old)
		}
		if _, err := MemcachedPid(b.Addr()); err == nil {
			t.Fatal("a killed memcached answers")
		}
		if err := b.Kill(); err != nil {
			t.Fatalf("second Kill: %v", err)
		}
		if err := b.Freeze(); !errors.Is(err, ErrNotRunning) {
			t.Fatalf("Freeze of a killed server: %v", err)
		}
		if err := b.Thaw(); err != nil {
			t.Fatalf("Thaw of a killed server: %v", err)
		}
		if err := b.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if pid, err := MemcachedPid(sb.MemcacheAddrs[1]); err != nil || pid != b.Pid() || pid == old {
			t.Fatalf("after Restart, %s answers as pid %d (%v); Pid() %d, old pid %d", sb.MemcacheAddrs[1], pid, err, b.Pid(), old)
		}
		if v := mcGet(t, b.Addr(), "k"); v != "" {
			t.Fatalf("restarted memcached has k=%q, want it empty", v)
		}
		if v := mcGet(t, a.Addr(), "k"); v != "v" {
			t.Fatalf("the other memcached lost k: %q", v)
		}
	})

	t.Run("freeze-thaw", func(t *testing.T) {
		defer a.Thaw()
		if err := a.Freeze(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got, err := mcDo(a.Addr(), "get k\r\n", 300*time.Millisecond)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("get from a frozen memcached: %q, %v; want a timeout", got, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("a 300ms deadline took %v", d)
		}
		if err := a.Thaw(); err != nil {
			t.Fatal(err)
		}
		if v := mcGet(t, a.Addr(), "k"); v != "v" {
			t.Fatalf("after the thaw k=%q, want the value from before the freeze", v)
		}
	})

	t.Run("restart-frozen", func(t *testing.T) {
		old := a.Pid()
		if err := a.Freeze(); err != nil {
			t.Fatal(err)
		}
		if err := a.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if a.Pid() == old || !gone(old) || mcGet(t, a.Addr(), "k") != "" {
			t.Fatalf("Restart of a frozen memcached: pid %d (old %d, gone %v)", a.Pid(), old, gone(old))
		}
	})

	t.Run("port-taken", func(t *testing.T) {
		if err := b.Kill(); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		err = b.Restart(ctx)
		l.Close()
		if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), b.Addr()) {
			t.Fatalf("Restart on a taken port: %v", err)
		}
		if err := b.Restart(ctx); err != nil {
			t.Fatalf("Restart once the port is free again: %v", err)
		}
	})

	t.Run("stop-frozen", func(t *testing.T) { stopFrozen(t, sb, []*Proc{a, b}, first...) })
}

// stopFrozen freezes procs, stops the sandbox, and checks that Stop
// returns, that neither their processes nor those in oldPids (earlier
// processes of restarted servers) are left, and that the directory is
// gone.
func stopFrozen(t *testing.T, sb *Sandbox, procs []*Proc, oldPids ...int) {
	t.Helper()
	pids := oldPids
	for _, p := range procs {
		if err := p.Freeze(); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, p.Pid())
	}
	stopped := make(chan error, 1)
	go func() { stopped <- sb.Stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Stop with frozen servers has not returned after a minute")
	}
	for _, pid := range pids {
		if !gone(pid) {
			t.Errorf("pid %d still exists after Stop", pid)
		}
	}
	for _, p := range procs {
		if p.Running() {
			t.Errorf("%s Running after Stop", p.Name())
		}
	}
	if _, err := os.Stat(sb.Dir); !os.IsNotExist(err) {
		t.Errorf("sandbox directory left behind: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := procs[0].Restart(ctx); !errors.Is(err, ErrStopped) {
		t.Errorf("Restart after Stop: %v", err)
	}
}

func TestMemcachedCountNegative(t *testing.T) {
	if _, err := Start(context.Background(), Options{Memcached: true, MemcachedCount: -1, BaseDir: t.TempDir()}); err == nil {
		t.Fatal("Start accepted MemcachedCount -1")
	}
}
