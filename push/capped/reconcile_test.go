package capped_test

import (
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/push/capped"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// TestReconcile: besides push's mailbox drift (and the counts it leaves
// wrong), reconcile finds a count set wrong and the rows left below a
// floor raised, and repairs them under concurrent posts and follows.
func TestReconcile(t *testing.T) {
	s, c := reconciletest.Open(t, capped.ModelName, registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
	db := s.(timeline.DBHolder).DB()
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
		drift := reconciletest.MailboxDrift(t, s, db, w, push.MailboxView)
		// Each row added or taken leaves its user's count wrong.
		for _, u := range []timeline.UserID{1, 3, 5} {
			drift = append(drift, reconcile.Drift{Kind: reconcile.WrongState, View: capped.EntriesView, User: u})
		}
		reconciletest.Exec(t, db, `UPDATE mailbox_state SET entries = entries + 5 WHERE user_id = 8`)
		drift = append(drift, reconcile.Drift{Kind: reconcile.WrongState, View: capped.EntriesView, User: 8})
		// User 7's floor raised over rows that stay.
		drift = append(drift, reconciletest.RaiseFloor(t, db, w, "mailbox_state", 7, push.MailboxView)...)
		return drift
	}})
}
