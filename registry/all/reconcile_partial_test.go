package all_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestReconcilePushVitessPartialCommit makes vtgate commit part of a
// push@vitess post for real. vtgate commits a transaction's shards one by
// one, without two-phase commit. The post's fan-out (one follower a
// statement) writes the row of a follower on another shard than its
// author's, then waits for a lock on the row of a follower on the
// author's shard; meanwhile the post's connection on the first follower's
// shard is killed in mysqld. Once the lock is let go, the commit succeeds
// on the author's shard (the message and the second follower's row) and
// fails on the other: the post returns an error, and its message stays,
// without the first follower's row. Reconcile finds exactly that row
// missing, the repair writes it, and the follower's timeline then shows
// the message.
func TestReconcilePushVitessPartialCommit(t *testing.T) {
	ctx := t.Context()
	keyspace := testserver.Keyspace(t)
	s, err := push.OpenVitess(ctx, push.Config{DSN: testserver.Vtgate(t), Database: keyspace, FanoutChunk: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	my, err := sql.Open("mysql", testserver.VitessMysqld(t))
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	shardOf := func(u timeline.UserID) string {
		t.Helper()
		var shard string
		if err := db.QueryRowContext(ctx, `SELECT shard FROM hash WHERE id = ?`, u).Scan(&shard); err != nil {
			t.Fatal(err)
		}
		return shard
	}
	// away, on another shard than the author's, is fanned out to first;
	// near, on the author's, second.
	const author = timeline.UserID(1)
	home := shardOf(author)
	var away, near timeline.UserID
	for u := author + 1; near == 0 && u < 100; u++ {
		switch sh := shardOf(u); {
		case away == 0 && sh != home:
			away = u
		case away != 0 && sh == home:
			near = u
		}
	}
	if near == 0 {
		t.Fatalf("no users on the shards the test needs (author %d on %s, away %d)", author, home, away)
	}
	timelinetest.Follow(t, s, away, author)
	timelinetest.Follow(t, s, near, author)

	// A transaction that holds the fan-out before near's row: a locking
	// read of near's mailbox locks the gap a new row of theirs goes in.
	hold, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if _, err := hold.ExecContext(ctx, `SELECT message_id FROM mailbox WHERE user_id = ? FOR UPDATE`, near); err != nil {
		t.Fatal(err)
	}
	posted := make(chan error, 1)
	go func() {
		_, err := s.Post(ctx, author, "cut between two commits")
		posted <- err
	}()
	// Once the post waits for that lock, its transaction on away's shard
	// has written away's row: kill that connection, the one transaction
	// of away's shard that has written a row.
	awayDB := "vt_" + keyspace + "_" + shardOf(away)
	var victim int64
	testserver.Poll(t, 2*time.Minute, "the post waiting for near's row", func() bool {
		err := my.QueryRowContext(ctx, `SELECT t.trx_mysql_thread_id FROM information_schema.innodb_trx t
			JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id
			WHERE p.db = ? AND t.trx_rows_modified > 0
			AND EXISTS (SELECT 1 FROM information_schema.innodb_trx w WHERE w.trx_state = 'LOCK WAIT')`, awayDB).Scan(&victim)
		return err == nil
	})
	if _, err := my.ExecContext(ctx, `KILL CONNECTION ?`, victim); err != nil {
		t.Fatal(err)
	}
	if err := hold.Rollback(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-posted:
		if err == nil {
			t.Fatal("the post succeeded with its connection on the follower's shard killed")
		}
		t.Logf("the post: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the post did not return within a minute of the lock's release")
	}

	// The author's shard committed, the other did not.
	var id timeline.MessageID
	if err := db.QueryRowContext(ctx, `SELECT id FROM messages WHERE author_id = ?`, author).Scan(&id); err != nil {
		t.Fatalf("the post's message on its author's shard: %v", err)
	}
	has := func(u timeline.UserID) bool {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM mailbox WHERE user_id = ? AND message_id = ?`, u, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	if has(away) || !has(near) {
		t.Fatalf("after the cut: away's row there %v, near's %v; want the commit of near's shard alone", has(away), has(near))
	}

	c, err := push.VitessChecker(s)
	if err != nil {
		t.Fatal(err)
	}
	run := func(repair bool) reconcile.Report { return reconcileAll(t, c, repair) }
	want := []reconcile.Drift{{Kind: reconcile.Missing, View: push.MailboxView, User: away, Item: int64(id)}}
	if r := run(false); !sameDrift(r.Drift, want) {
		t.Fatalf("check after the partial commit: %v, want %v", r.Drift, want)
	}
	if r := run(true); !sameDrift(r.Drift, want) || r.Repaired != 1 {
		t.Errorf("repair: %v, %d repaired; want %v, 1", r.Drift, r.Repaired, want)
	}
	if r := run(false); len(r.Drift) != 0 {
		t.Errorf("drift after the repair: %v", r.Drift)
	}
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	p, err := s.Timeline(tctx, away, timeline.Query{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Messages) != 1 || p.Messages[0].ID != id {
		t.Errorf("away's timeline after the repair: %v, want message %d", p.Messages, id)
	}
}
