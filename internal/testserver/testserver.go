// Package testserver gives each test package one real MariaDB (and, when
// asked, memcached and Redis) for the whole package run, and a fresh database per
// test. Tests never mock the database.
//
// By default the servers come from a sandbox started in TestMain, which also
// exports them as PUSHPULL_DSN, PUSHPULL_MEMCACHE and PUSHPULL_REDIS for
// the package's Example functions. Set PUSHPULL_TEST_DSN (and
// PUSHPULL_TEST_MEMCACHE, PUSHPULL_TEST_REDIS) to run against existing
// servers instead; each test then works in its own pp_test_* database and
// drops it afterwards.
package testserver

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/sandbox"
)

var (
	dsn       string
	memcache  string
	redis     string
	vtgate    string
	keyspaces chan string      // the Vitess keyspaces no test has borrowed
	cluster   *sandbox.Sandbox // the sandbox of the test Vitess cluster
	counter   atomic.Int64
)

// Options says which servers a test package needs.
type Options struct {
	Memcached bool
	// Redis starts a redis-server (no persistence) on a loopback port.
	Redis bool
	// Vitess starts a Vitess cluster with VitessKeyspaces keyspaces of
	// VitessShards shards each, which tests borrow with Keyspace.
	Vitess bool
}

// VitessShards is the number of shards of each test keyspace.
const VitessShards = 2

// VitessKeyspaces is how many keyspaces a test package can borrow at once
// (Keyspace): one per model on Vitess, which TestEquivalence opens side
// by side, one for hybrid@vitess again at a small threshold, and a spare.
const VitessKeyspaces = 8

// Main starts the servers, runs the package's tests, stops the servers, and
// exits. Call it from TestMain.
func Main(m *testing.M, opts Options) {
	os.Exit(run(m, opts))
}

func run(m *testing.M, opts Options) int {
	flag.Parse()
	dsn = os.Getenv("PUSHPULL_TEST_DSN")
	memcache = os.Getenv("PUSHPULL_TEST_MEMCACHE")
	needDB := dsn == ""
	needMC := opts.Memcached && memcache == ""
	redis = os.Getenv("PUSHPULL_TEST_REDIS")
	needRedis := opts.Redis && redis == ""
	if needDB || needMC || needRedis || opts.Vitess {
		start := time.Now()
		var names []string
		if opts.Vitess {
			for i := range VitessKeyspaces {
				names = append(names, fmt.Sprintf("pp_test_ks%d", i+1))
			}
		}
		sb, err := sandbox.Start(context.Background(), sandbox.Options{
			MariaDB:   needDB,
			Memcached: needMC,
			Redis:     needRedis,
			Settings:  sandbox.TestSettings(),
			BaseDir:   baseDir(),
			Vitess:    opts.Vitess,
			Shards:    VitessShards,
			Keyspaces: names,
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "testserver: %v\n", err)
			return 1
		}
		defer sb.Stop()
		if needDB {
			dsn = sb.DSN
		}
		if needMC {
			memcache = sb.MemcacheAddr
		}
		if needRedis {
			redis = sb.RedisAddr
		}
		if opts.Vitess {
			vtgate, vtgateStatus = sb.VtgateDSN, sb.VtgateStatus
			cluster = sb
			keyspaces = make(chan string, len(names))
			for _, n := range names {
				keyspaces <- n
			}
		}
		if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "testserver: sandbox in %s started in %v\n", sb.Dir, time.Since(start).Round(time.Millisecond))
		}
	}
	// The package's Example functions find the servers where a program
	// run next to `pushpull sandbox` would: in the environment.
	os.Setenv("PUSHPULL_DSN", dsn)
	if memcache != "" {
		os.Setenv("PUSHPULL_MEMCACHE", memcache)
	}
	if redis != "" {
		os.Setenv("PUSHPULL_REDIS", redis)
	}
	return m.Run()
}

// baseDir puts sandboxes on tmpfs when there is one: the tests create and
// drop hundreds of small databases, and fsyncs on a disk make that slow.
func baseDir() string {
	if d := os.Getenv("PUSHPULL_SANDBOX_DIR"); d != "" {
		return d
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return ""
}

// DSN is the server's DSN (no database).
func DSN(t testing.TB) string {
	if dsn == "" {
		t.Fatal("testserver: no server; call testserver.Main from TestMain")
	}
	return dsn
}

// Memcache is the memcached address.
func Memcache(t testing.TB) string {
	if memcache == "" {
		t.Fatal("testserver: no memcached; pass Options{Memcached: true} to testserver.Main")
	}
	return memcache
}

// Redis is the redis-server's address (host:port).
func Redis(t testing.TB) string {
	if redis == "" {
		t.Fatal("testserver: no redis-server; pass Options{Redis: true} to testserver.Main")
	}
	return redis
}

// Database returns the name of a fresh, empty database for this test and
// drops it when the test ends.
func Database(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("pp_test_%d_%d", os.Getpid(), counter.Add(1))
	t.Cleanup(func() {
		db := Admin(t)
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return name
}

// Admin returns a connection pool to the server with no database selected.
func Admin(t testing.TB) *sql.DB {
	t.Helper()
	return adminAt(t, DSN(t))
}

func adminAt(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	cfg, err := mysqlx.Config(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = ""
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// CountRows returns the number of rows of each table in database.
func CountRows(t testing.TB, database string, tables ...string) map[string]int64 {
	t.Helper()
	return CountRowsAt(t, DSN(t), database, tables...)
}

// CountRowsAt is CountRows on the server at dsn (a vtgate, say: database
// is then a keyspace, and each count is summed over its shards).
func CountRowsAt(t testing.TB, dsn, database string, tables ...string) map[string]int64 {
	t.Helper()
	db := adminAt(t, dsn)
	defer db.Close()
	out := make(map[string]int64)
	for _, table := range tables {
		var n int64
		q := fmt.Sprintf("SELECT COUNT(*) FROM `%s`.`%s`", database, strings.ReplaceAll(table, "`", ""))
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("count %s.%s: %v", database, table, err)
		}
		out[table] = n
	}
	return out
}
