package all_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/go-sql-driver/mysql"

	"github.com/pushpull/pushpull/hybrid"
	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/internal/sandbox"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/internal/vtstats"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/push/async"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestReconcilePushVitess corrupts push@vitess's views through vtgate
// (vitessDrift); reconcile finds exactly that drift and the repair
// removes it, under concurrent posts and follows, and every timeline is
// then the record's.
func TestReconcilePushVitess(t *testing.T) {
	m, err := registry.Lookup(push.VitessModelName)
	if err != nil {
		t.Fatal(err)
	}
	s, c := reconciletest.Open(t, m.Name, config(t, m, testserver.Keyspace(t)))
	db := s.(timeline.DBHolder).DB()
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, QuietWorld: true,
		Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift { return vitessDrift(t, s, db, w) }})
}

// TestReconcilePushAsyncVitess: push-async@vitess's views corrupted as
// push@vitess's are (vitessDrift), and besides, the rows a fan-out job
// lost half applied left out and the row a job's cursor passed without
// writing; reconcile finds exactly that drift, not the rows a queued job
// has still to write, and the repair removes it while the store's
// workers, posts and follows run.
func TestReconcilePushAsyncVitess(t *testing.T) {
	m, err := registry.Lookup(async.VitessModelName)
	if err != nil {
		t.Fatal(err)
	}
	s, c := reconciletest.Open(t, m.Name, config(t, m, testserver.Keyspace(t)))
	db := s.(timeline.DBHolder).DB()
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, QuietWorld: true,
		Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
			drift := vitessDrift(t, s, db, w)
			return append(drift, reconciletest.JobDrift(t, db, w, push.MailboxView)...)
		}})
}

// TestReconcileHybridVitess: hybrid@vitess with the world's celebrity
// pulled (11 followers, the threshold 6, which the concurrent traffic
// brings nobody else to), its views corrupted as push@vitess's are
// (vitessDrift), and besides, a pulled follow deleted, one added of an
// author not listed and one of an author not followed, and author 10
// listed by a stray pull_authors row (their four followers' pulled
// follows then missing); a row of the pulled author's message, with its
// copies, put in a mailbox is not drift. Reconcile finds exactly that
// drift and the repair removes it under concurrent posts and follows.
func TestReconcileHybridVitess(t *testing.T) {
	s, c := openHybridVitess(t)
	db := s.(timeline.DBHolder).DB()
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, QuietWorld: true,
		Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
			drift := vitessDrift(t, s, db, w)
			// A row of the pulled author's message, fanned out before
			// a listing: allowed.
			pulled := w.Posts[reconciletest.Celebrity][1]
			var body string
			var at time.Time
			if err := db.QueryRowContext(t.Context(), `SELECT body, created_at FROM messages WHERE author_id = ? AND id = ?`,
				reconciletest.Celebrity, pulled).Scan(&body, &at); err != nil {
				t.Fatal(err)
			}
			reconciletest.Exec(t, db, `INSERT INTO mailbox (user_id, message_id, author_id, body, created_at) VALUES (6, ?, ?, ?, ?)`,
				pulled, reconciletest.Celebrity, body, at)
			reconciletest.Exec(t, db, `DELETE FROM pull_follows WHERE user_id = 4 AND author_id = ?`, reconciletest.Celebrity)
			if !w.Followed(5, 9) || w.Followed(5, 2) {
				t.Fatal("the world changed: user 5 follows 2, or not 9")
			}
			reconciletest.Exec(t, db, `INSERT INTO pull_follows (user_id, author_id) VALUES (5, 9), (5, 2)`)
			drift = append(drift,
				reconcile.Drift{Kind: reconcile.Missing, View: hybrid.PullFollowsView, User: 4, Item: int64(reconciletest.Celebrity)},
				reconcile.Drift{Kind: reconcile.Extra, View: hybrid.PullFollowsView, User: 5, Item: 9},
				reconcile.Drift{Kind: reconcile.Unfollowed, View: hybrid.PullFollowsView, User: 5, Item: 2})
			// Author 10 listed: their followers' pulled follows are due.
			reconciletest.Exec(t, db, `INSERT INTO pull_authors (author_id) VALUES (10)`)
			for _, f := range w.Followers(10) {
				drift = append(drift, reconcile.Drift{Kind: reconcile.Missing, View: hybrid.PullFollowsView, User: f, Item: 10})
			}
			return drift
		}})
}

// TestReconcileHybridVitessUnlisted: the listing of hybrid@vitess's
// pulled celebrity lost (its pull_authors row deleted). The views then
// disagree with the listing as it is: every follower's pulled follow of
// the celebrity is Extra, and the celebrity's posts, fanned out to no
// mailbox, are Missing from every follower's; reconcile finds exactly
// that, and the repair, under concurrent posts and follows, leaves the
// celebrity an author pushed like any other.
func TestReconcileHybridVitessUnlisted(t *testing.T) {
	s, c := openHybridVitess(t)
	db := s.(timeline.DBHolder).DB()
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, QuietWorld: true,
		Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
			reconciletest.Exec(t, db, `DELETE FROM pull_authors WHERE author_id = ?`, reconciletest.Celebrity)
			var drift []reconcile.Drift
			for _, f := range w.Followers(reconciletest.Celebrity) {
				drift = append(drift, reconcile.Drift{Kind: reconcile.Extra, View: hybrid.PullFollowsView, User: f, Item: int64(reconciletest.Celebrity)})
				for _, id := range w.Posts[reconciletest.Celebrity] {
					drift = append(drift, reconcile.Drift{Kind: reconcile.Missing, View: push.MailboxView, User: f, Item: int64(id)})
				}
			}
			return drift
		}})
}

// openHybridVitess opens hybrid@vitess on a borrowed keyspace with the
// threshold 6, and its checker: the reconcile tests' world then pulls its
// celebrity (11 followers) and nobody else.
func openHybridVitess(t *testing.T) (timeline.Store, reconcile.Checker) {
	m, err := registry.Lookup(hybrid.VitessModelName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(t, m, testserver.Keyspace(t))
	cfg.Options = map[string]string{hybrid.OptionThreshold: "6"}
	return reconciletest.Open(t, m.Name, cfg)
}

// vitessDrift corrupts the views of push@vitess's schema through vtgate:
// a mailbox row deleted, one added of an author the reader does not
// follow, one left of a deleted message, two rows whose copies differ
// from their message (a body, an author), a followers row deleted and one
// added without its follow. It returns that drift.
func vitessDrift(t *testing.T, s timeline.Store, db *sql.DB, w reconciletest.World) []reconcile.Drift {
	t.Helper()
	gone := w.Posts[2][0]
	reconciletest.Exec(t, db, `DELETE FROM mailbox WHERE user_id = 1 AND message_id = ?`, gone)
	if w.Followed(3, 9) {
		t.Fatal("the world changed: user 3 follows user 9")
	}
	stray := w.Posts[9][1]
	reconciletest.Exec(t, db, `INSERT INTO mailbox (user_id, message_id, author_id, body, created_at)
		VALUES (3, ?, 9, 'from 9', NOW(6))`, stray)
	dead := w.Posts[6][2]
	timelinetest.Delete(t, s, 6, dead)
	reconciletest.Exec(t, db, `INSERT INTO mailbox (user_id, message_id, author_id, body, created_at)
		VALUES (5, ?, 6, 'from 6', NOW(6))`, dead)
	// Copies that differ from their messages: user 4 follows 5, user 7
	// follows 8.
	body, author := w.Posts[5][0], w.Posts[8][0]
	reconciletest.Exec(t, db, `UPDATE mailbox SET body = 'forged' WHERE user_id = 4 AND message_id = ?`, body)
	reconciletest.Exec(t, db, `UPDATE mailbox SET author_id = 2 WHERE user_id = 7 AND message_id = ?`, author)
	// User 1 follows 3; user 8 does not follow 2.
	reconciletest.Exec(t, db, `DELETE FROM followers WHERE followee_id = 3 AND follower_id = 1`)
	if w.Followed(8, 2) {
		t.Fatal("the world changed: user 8 follows user 2")
	}
	reconciletest.Exec(t, db, `INSERT INTO followers (followee_id, follower_id) VALUES (2, 8)`)
	return []reconcile.Drift{
		{Kind: reconcile.Missing, View: push.MailboxView, User: 1, Item: int64(gone)},
		{Kind: reconcile.Unfollowed, View: push.MailboxView, User: 3, Item: int64(stray)},
		{Kind: reconcile.Deleted, View: push.MailboxView, User: 5, Item: int64(dead)},
		{Kind: reconcile.Stale, View: push.MailboxView, User: 4, Item: int64(body)},
		{Kind: reconcile.Stale, View: push.MailboxView, User: 7, Item: int64(author)},
		{Kind: reconcile.Missing, View: push.FollowersView, User: 1, Item: 3},
		{Kind: reconcile.Extra, View: push.FollowersView, User: 2, Item: 8},
	}
}

// TestReconcilePullRecentVitess forges author lists of pull-recent@vitess
// in memcached that pass their checksum (one without an id, one with
// another author's, one with a deleted message's); reconcile, reading the
// record through vtgate, finds exactly that drift and the repair removes
// it under concurrent posts and follows.
func TestReconcilePullRecentVitess(t *testing.T) {
	m, err := registry.Lookup(pull.VitessModelName(pull.StrategyRecent))
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(t, m, testserver.Keyspace(t))
	s, c := reconciletest.Open(t, m.Name, cfg)
	ctx := t.Context()
	keys, err := recent.Open(ctx, sqlread.Env{DB: s.(timeline.DBHolder).DB(), Pages: new(sqlread.PageCount)}, recent.Options{
		Servers: cfg.Memcache, Namespace: cfg.Namespace, Tables: sqlread.VitessTables{},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	mc, err := memcached.New(ctx, memcached.Options{Servers: cfg.Memcache, Prefix: keys.KeyPrefix(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	forge := func(author timeline.UserID, ids []timeline.MessageID) {
		t.Helper()
		var list []uint64
		for _, id := range slices.Backward(slices.Sorted(slices.Values(ids))) {
			list = append(list, uint64(id))
		}
		key := keys.ListKey(author)
		if err := mc.Set(ctx, &memcache.Item{Key: key, Value: recent.EncodeList(key, list, true, time.Now().Unix())}); err != nil {
			t.Fatal(err)
		}
	}
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, QuietWorld: true,
		Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
			forge(2, w.Posts[2][1:])
			forge(9, append(slices.Clone(w.Posts[9]), w.Posts[4][0]))
			dead := w.Posts[6][2]
			timelinetest.Delete(t, s, 6, dead)
			forge(6, w.Posts[6])
			return []reconcile.Drift{
				{Kind: reconcile.Missing, View: recent.ListView, User: 2, Item: int64(w.Posts[2][0])},
				{Kind: reconcile.Extra, View: recent.ListView, User: 9, Item: int64(w.Posts[4][0])},
				{Kind: reconcile.Deleted, View: recent.ListView, User: 6, Item: int64(dead)},
			}
		}})
}

// TestReconcilePushVitessRoutes: a check of push@vitess sends each read to
// the shards of the users it names, never to every shard: a reader whose
// followees all live on its own shard is checked with calls to that shard
// alone, one per read, where reads asking every shard would make two each.
func TestReconcilePushVitessRoutes(t *testing.T) {
	ctx := t.Context()
	keyspace := testserver.Keyspace(t)
	status := testserver.VtgateStatus(t)
	s, err := push.OpenVitess(ctx, push.Config{DSN: testserver.Vtgate(t), Database: keyspace, VtgateStatus: status})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	calls := func() int64 {
		t.Helper()
		c, err := vtstats.Calls(ctx, status, keyspace)
		if err != nil {
			t.Fatal(err)
		}
		return c[vtstats.TabletCalls]
	}
	db := s.DB()
	// The users on reader 1's shard: a read naming 1 and a is one call.
	var mates []timeline.UserID
	for a := timeline.UserID(2); len(mates) < 4 && a < 100; a++ {
		before := calls()
		if _, err := db.ExecContext(ctx, `SELECT follower_id FROM follows WHERE follower_id IN (1, ?)`, a); err != nil {
			t.Fatal(err)
		}
		if calls()-before == 1 {
			mates = append(mates, a)
		}
	}
	if len(mates) < 4 {
		t.Fatalf("only %v share a shard with user 1", mates)
	}
	for _, a := range mates {
		timelinetest.Follow(t, s, 1, a)
		timelinetest.Post(t, s, a, "hello")
	}
	c, err := push.VitessChecker(s)
	if err != nil {
		t.Fatal(err)
	}
	before := calls()
	b, err := c.Check(ctx, []timeline.UserID{1})
	if err != nil {
		t.Fatal(err)
	}
	// follows, messages, mailbox, followers of the follows, followers
	// of user 1: five reads.
	if n := calls() - before; len(b.Drift) != 0 || n != 5 {
		t.Errorf("check of user 1: drift %v, %d tablet calls; want none, 5 (one per read)", b.Drift, n)
	}
}

// TestReconcileFaultsVitess makes push@vitess's vtgate fail in the middle
// of a repair transaction, while posts and follows go on: after the
// repair of user 7 has written a followers row (on the author's shard)
// and one of two mailbox rows (on the reader's), uncommitted, just before
// the second. Once vtcombo
// (vtgate and every tablet, one process) is frozen by SIGSTOP and thawed
// by SIGCONT after the run stopped; once vtgate goes away (every
// connection closed, new ones refused; behind a proxy, for the cluster
// serves the package's other tests) and comes back. The run must stop
// with an error naming the vtgate (frozen: reconcile.ErrTimeout, after
// its timeout), and nothing of the failed repair may be written: user 7's
// rows and followers row are still missing once vtgate is back. Then, as
// in TestReconcileFaults, a resumed run repairs the rest (runFault).
func TestReconcileFaultsVitess(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test: -short")
	}
	m, err := registry.Lookup(push.VitessModelName)
	if err != nil {
		t.Fatal(err)
	}
	vtgate, err := mysql.ParseDSN(testserver.Vtgate(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, frozen := range []bool{true, false} {
		t.Run(map[bool]string{true: "vtgate frozen", false: "vtgate gone"}[frozen], func(t *testing.T) {
			keyspace := testserver.Keyspace(t)
			p := testserver.StartProxy(t, vtgate.Net, vtgate.Addr)
			dsn := *vtgate
			dsn.Net, dsn.Addr = "tcp", p.Addr
			cfg := config(t, m, keyspace)
			cfg.Vtgate, cfg.MaxConns = dsn.FormatDSN(), 8
			vtcombo := testserver.Vtcombo(t)
			s, c := reconciletest.Open(t, m.Name, cfg)
			db := s.(timeline.DBHolder).DB()
			w := faultWorld(t, s)

			// Repaired in the first batch, before the fault.
			gone := w.Posts[2][0]
			reconciletest.Exec(t, db, `DELETE FROM mailbox WHERE user_id = 1 AND message_id = ?`, gone)
			// User 7's repair: a followers row, then two mailbox rows.
			if !w.Followed(7, 8) || !w.Followed(7, 9) {
				t.Fatal("the world changed: user 7 follows neither 8 nor 9")
			}
			a, b := w.Posts[8][0], w.Posts[9][0]
			reconciletest.Exec(t, db, `DELETE FROM mailbox WHERE user_id = 7 AND message_id IN (?, ?)`, a, b)
			reconciletest.Exec(t, db, `DELETE FROM followers WHERE followee_id = 8 AND follower_id = 7`)
			want := []reconcile.Drift{
				{Kind: reconcile.Missing, View: push.MailboxView, User: 1, Item: int64(gone)},
				{Kind: reconcile.Missing, View: push.MailboxView, User: 7, Item: int64(a)},
				{Kind: reconcile.Missing, View: push.MailboxView, User: 7, Item: int64(b)},
				{Kind: reconcile.Missing, View: push.FollowersView, User: 7, Item: 8},
			}

			f := fault{at: "repair", stmt: "INSERT IGNORE INTO mailbox", nth: 2, wait: 10 * time.Second,
				names: "vtgate at tcp " + p.Addr,
				stopped: func(t *testing.T) {
					var rows, followers int
					testserver.Poll(t, time.Minute, "vtgate back", func() bool {
						ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
						defer cancel()
						return db.QueryRowContext(ctx, `SELECT COUNT(*) FROM mailbox WHERE user_id = 7 AND message_id IN (?, ?)`, a, b).Scan(&rows) == nil &&
							db.QueryRowContext(ctx, `SELECT COUNT(*) FROM followers WHERE followee_id = 8 AND follower_id = 7`).Scan(&followers) == nil
					})
					if rows != 0 || followers != 0 {
						t.Errorf("the failed repair of user 7 left %d of its 2 mailbox rows and %d of its followers row written", rows, followers)
					}
				}}
			if frozen {
				f.timeout = true
				f.fault = func() error { return sandbox.FreezeProcess(vtcombo) }
				f.heal = func() error { return vtcombo.Signal(syscall.SIGCONT) }
			} else {
				var cut atomic.Bool
				f.fault = func() error { p.Cut(); cut.Store(true); return nil }
				f.heal = func() error {
					if cut.Load() {
						p.Restore(t)
					}
					return nil
				}
			}
			runFault(t, s, c, w, want, f)
		})
	}
}

// TestReconcilePushAsyncVitessQueued: with no worker running, a
// push-async@vitess post's mailbox rows are all still queued, and a
// check finds no drift; once the job's cursor has passed two followers
// whose rows were never written, a check finds exactly those two
// Missing, a repair writes them, and a worker then applies the rest of
// the job without writing any row twice.
func TestReconcilePushAsyncVitessQueued(t *testing.T) {
	const author = timeline.UserID(1)
	s, _, shards := celebrityStore(t, 1000, 4, author) // followers 1000 to 1003
	c, err := async.VitessChecker(s)
	if err != nil {
		t.Fatal(err)
	}
	msg := timelinetest.Post(t, s, author, "queued")
	check := func(repair bool) reconcile.Report { return reconcileAll(t, c, repair) }
	if r := check(false); len(r.Drift) != 0 {
		t.Fatalf("a queued job's rows reported as drift: %v", r.Drift)
	}
	reconciletest.Exec(t, s.DB(), `UPDATE fanout_jobs SET done_through = 1001 WHERE author_id = ? AND message_id = ?`, author, msg.ID)
	want := []reconcile.Drift{
		{Kind: reconcile.Missing, View: push.MailboxView, User: 1000, Item: int64(msg.ID)},
		{Kind: reconcile.Missing, View: push.MailboxView, User: 1001, Item: int64(msg.ID)},
	}
	if r := check(false); !sameDrift(r.Drift, want) {
		t.Fatalf("after the cursor passed 1000 and 1001: %v, want %v", r.Drift, want)
	}
	if r := check(true); r.Repaired != 2 {
		t.Errorf("the repair changed %d rows, want 2", r.Repaired)
	}
	if got := mailboxCount(t, s.DB(), msg.ID); got != 2 {
		t.Errorf("%d mailboxes hold the post after the repair, want 2", got)
	}
	stats := async.NewStats()
	drainVitess(t, &async.VitessWorker{DB: s.DB(), Shards: shards, Stats: stats})
	if got, rows := mailboxCount(t, s.DB(), msg.ID), stats.Counters()[counter.FanoutRows]; got != 4 || rows != 2 {
		t.Errorf("after the job: %d mailboxes hold the post, the worker wrote %d rows; want 4 and 2", got, rows)
	}
	if r := check(false); len(r.Drift) != 0 {
		t.Errorf("after the job: %v", r.Drift)
	}
}

// reconcileAll runs reconcile over every user of c with the default
// options, repairing or not, and fails t on error.
func reconcileAll(t *testing.T, c reconcile.Checker, repair bool) reconcile.Report {
	t.Helper()
	r, err := reconcile.Run(t.Context(), c, reconcile.Options{Repair: repair})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sameDrift reports whether got and want hold the same items, in any
// order.
func sameDrift(got, want []reconcile.Drift) bool {
	key := func(d reconcile.Drift) string { return fmt.Sprint(d.Kind, d.View, d.User, d.Item) }
	a, b := make([]string, len(got)), make([]string, len(want))
	for i, d := range got {
		a[i] = key(d)
	}
	for i, d := range want {
		b[i] = key(d)
	}
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
