package sandbox

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func TestStartStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	ctx := context.Background()
	sb, err := Start(ctx, Options{MariaDB: true, Memcached: true, Settings: TestSettings(), BaseDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop()

	cfg, err := mysql.ParseDSN(sb.DSN)
	if err != nil {
		t.Fatalf("DSN %q: %v", sb.DSN, err)
	}
	conn, _ := mysql.NewConnector(cfg)
	db := sql.OpenDB(conn)
	defer db.Close()
	var version, pool, threads string
	if err := db.QueryRowContext(ctx, "SELECT VERSION(), @@innodb_buffer_pool_size, @@thread_handling").Scan(&version, &pool, &threads); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(version, "MariaDB") {
		t.Fatalf("server version %q", version)
	}
	if pool != "268435456" {
		t.Fatalf("innodb_buffer_pool_size = %s, want the 256M TestSettings asked for", pool)
	}
	if threads != "pool-of-threads" {
		t.Fatalf("thread_handling = %s, want the thread pool DefaultSettings ask for", threads)
	}
	if pid, err := MemcachedPid(sb.MemcacheAddr); err != nil || pid != sb.Memcached(0).Pid() {
		t.Fatalf("memcached at %s: pid %d, %v; want pid %d", sb.MemcacheAddr, pid, err, sb.Memcached(0).Pid())
	}
	if len(sb.MemcacheAddrs) != 1 || sb.MemcacheAddrs[0] != sb.MemcacheAddr {
		t.Fatalf("MemcacheAddrs %v, MemcacheAddr %s", sb.MemcacheAddrs, sb.MemcacheAddr)
	}
	if sb.MariaDB().Addr() != sb.Socket || !sb.MariaDB().Running() {
		t.Fatalf("MariaDB() at %s (running %v), socket %s", sb.MariaDB().Addr(), sb.MariaDB().Running(), sb.Socket)
	}

	pids := []int{}
	for _, p := range sb.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	if len(pids) != 2 {
		t.Fatalf("%d processes, want 2", len(pids))
	}
	if err := sb.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("pid %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	if _, err := os.Stat(sb.Dir); !os.IsNotExist(err) {
		t.Fatalf("sandbox directory left behind: %v", err)
	}
	if err := sb.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestStartFailureShowsLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	settings := TestSettings()
	settings["no_such_option_at_all"] = "1"
	start := time.Now()
	sb, err := Start(context.Background(), Options{MariaDB: true, Settings: settings, BaseDir: t.TempDir()})
	if err == nil {
		sb.Stop()
		t.Fatal("Start succeeded with an unknown server option")
	}
	if !strings.Contains(err.Error(), "no-such-option-at-all") && !strings.Contains(err.Error(), "no_such_option_at_all") {
		t.Fatalf("error does not show the server log: %v", err)
	}
	if time.Since(start) > time.Minute {
		t.Fatalf("took %v to notice the server died", time.Since(start))
	}
}

func TestMissingBinaryNamesMakeDeps(t *testing.T) {
	_, err := lookPath("pushpull-no-such-server")
	if !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), "make deps") {
		t.Fatalf("got %v", err)
	}
}
