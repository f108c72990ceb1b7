package active_test

import (
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/push/active"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// TestReconcile: besides push's mailbox drift, reconcile finds the rows
// left below an active reader's raised floor, and a row of an author an
// inactive reader does not follow, but not the rows an inactive mailbox
// lacks; and repairs it under concurrent posts and follows.
func TestReconcile(t *testing.T) {
	s, c := reconciletest.Open(t, active.ModelName, registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
	db := s.(timeline.DBHolder).DB()
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
		drift := reconciletest.MailboxDrift(t, s, db, w, push.MailboxView)
		drift = append(drift, reconciletest.RaiseFloor(t, db, w, "reader_state", 7, push.MailboxView)...)
		// User 8 inactive: a row missing is allowed, one of an author
		// they do not follow is not.
		reconciletest.Exec(t, db, `UPDATE reader_state SET active = 0 WHERE user_id = 8`)
		reconciletest.Exec(t, db, `DELETE FROM mailbox WHERE user_id = 8 AND message_id = ?`, w.Posts[9][0])
		if w.Followed(8, 2) {
			t.Fatal("the world changed: user 8 follows user 2")
		}
		reconciletest.Exec(t, db, `INSERT INTO mailbox (user_id, message_id) VALUES (8, ?)`, w.Posts[2][2])
		return append(drift, reconcile.Drift{Kind: reconcile.Unfollowed, View: push.MailboxView, User: 8, Item: int64(w.Posts[2][2])})
	}})
}
