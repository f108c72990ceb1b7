package testserver

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	schema "github.com/pushpull/pushpull/sql"
)

// Vtgate is the DSN of the test Vitess cluster's vtgate (no keyspace).
func Vtgate(t testing.TB) string {
	if vtgate == "" {
		t.Fatal("testserver: no Vitess; pass Options{Vitess: true} to testserver.Main")
	}
	return vtgate
}

// VitessMysqld is the DSN of the one mysqld under every tablet of the
// test Vitess cluster, as root (sandbox.Sandbox.VitessMysqldDSN): a shard
// of keyspace K is its database vt_K_SHARD. A test may act there on a
// shard behind vtgate's back (kill a tablet's connection in the middle of
// a transaction); it must touch only the keyspaces it borrowed.
func VitessMysqld(t testing.TB) string {
	t.Helper()
	Vtgate(t)
	return cluster.VitessMysqldDSN
}

// vtgateStatus is the host:port of the test vtgate's status pages.
var vtgateStatus string

// VtgateStatus is the host:port of the test vtgate's status pages, where
// package vtstats reads its tablet calls.
func VtgateStatus(t testing.TB) string {
	Vtgate(t)
	return vtgateStatus
}

// Vtcombo returns the process of the test Vitess cluster's vtcombo
// (vtgate and the tablets of every keyspace; see sandbox.Vtcombo), for a
// fault test that freezes it (sandbox.FreezeProcess) and thaws it
// (SIGCONT) by its pid. The cluster serves the package's other tests too,
// which run one at a time (none of them calls t.Parallel): the test must
// thaw it before it ends, and its cleanup thaws it should the test end
// first.
func Vtcombo(t testing.TB) *os.Process {
	t.Helper()
	Vtgate(t)
	p, err := cluster.Vtcombo()
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("testserver: thaw vtcombo (pid %d): %v", p.Pid, err)
		}
	})
	return p
}

// Keyspace lends the test an empty keyspace of the test Vitess cluster,
// sharded by user into VitessShards shards, and empties it for the next
// test when this one ends. Keyspaces cannot be made as cheaply as
// databases (their shards are made with the cluster), so a test that
// needs more than VitessKeyspaces at once waits, and fails after five
// minutes.
func Keyspace(t testing.TB) string {
	t.Helper()
	Vtgate(t)
	var name string
	select {
	case name = <-keyspaces:
	case <-time.After(5 * time.Minute):
		t.Fatalf("testserver: no Vitess keyspace free after 5 minutes (%d in all)", VitessKeyspaces)
	}
	t.Cleanup(func() {
		if err := empty(name); err != nil {
			t.Errorf("testserver: empty keyspace %s: %v (not lent again)", name, err)
			return
		}
		keyspaces <- name
	})
	return name
}

// empty truncates keyspace's tables through vtgate, on every shard (a
// DELETE of more than 10,000 rows is beyond vtgate's row limit);
// so do the fan-out queue and pushpull_meta, so that the next store
// applies the schema afresh, with a new cursor key. Tables not made yet
// are skipped.
func empty(keyspace string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: vtgate, Database: keyspace, MaxConns: 1, Vitess: true})
	if err != nil {
		return err
	}
	defer db.Close()
	for _, tb := range append(schema.DataTables(schema.HybridVitess), schema.Table{Name: "fanout_jobs"}, schema.Table{Name: "pushpull_meta"}) {
		if _, err := db.ExecContext(ctx, "TRUNCATE TABLE `"+tb.Name+"`"); err != nil && !strings.Contains(err.Error(), "doesn't exist") {
			return err
		}
	}
	return nil
}
