package selective_test

import (
	"testing"

	"github.com/pushpull/pushpull/hybrid/selective"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// TestReconcile: with every edge pushed (no flush re-decides them during
// the test), reconcile finds push's mailbox drift, a follow in neither
// edge table, one in both, an edge of either table without its follow,
// and the rows of an edge made pulled; and repairs them under concurrent
// posts and follows.
func TestReconcile(t *testing.T) {
	s, c := reconciletest.Open(t, selective.ModelName, registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t),
		Options: map[string]string{selective.OptionFlushEvery: "1000000000"}})
	db := s.(timeline.DBHolder).DB()
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
		drift := reconciletest.MailboxDrift(t, s, db, w, push.MailboxView)
		if !w.Followed(7, 8) || !w.Followed(7, 9) || !w.Followed(8, 10) || w.Followed(9, 2) || w.Followed(9, 4) {
			t.Fatal("the world changed")
		}
		// 7 → 8 in neither table, 7 → 9 in both.
		reconciletest.Exec(t, db, `DELETE FROM push_edges WHERE author_id = 8 AND user_id = 7`)
		reconciletest.Exec(t, db, `INSERT INTO pull_edges (user_id, author_id) VALUES (7, 9)`)
		// 8 → 10 made pulled, its rows left behind.
		reconciletest.Exec(t, db, `DELETE FROM push_edges WHERE author_id = 10 AND user_id = 8`)
		reconciletest.Exec(t, db, `INSERT INTO pull_edges (user_id, author_id) VALUES (8, 10)`)
		for _, id := range w.Posts[10] {
			drift = append(drift, reconcile.Drift{Kind: reconcile.Extra, View: push.MailboxView, User: 8, Item: int64(id)})
		}
		// Edges of follows that are not there: 9 → 4 pulled, 9 → 2 pushed
		// (2 is not among the authors the traffic posts as, so the edge
		// fans out nothing meanwhile).
		reconciletest.Exec(t, db, `INSERT INTO pull_edges (user_id, author_id) VALUES (9, 4)`)
		reconciletest.Exec(t, db, `INSERT INTO push_edges (author_id, user_id) VALUES (2, 9)`)
		return append(drift,
			reconcile.Drift{Kind: reconcile.Missing, View: selective.EdgesView, User: 7, Item: 8},
			reconcile.Drift{Kind: reconcile.Extra, View: selective.EdgesView, User: 7, Item: 9},
			reconcile.Drift{Kind: reconcile.Unfollowed, View: selective.PullEdgesView, User: 9, Item: 4},
			reconcile.Drift{Kind: reconcile.Unfollowed, View: selective.PushEdgesView, User: 9, Item: 2})
	}})
}
