package push_test

import (
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// TestReconcile: reconcile finds exactly the mailbox rows deleted, added
// for an author not followed and left of a deleted message, and repairs
// them, under concurrent posts and follows; for push and push-compressed.
func TestReconcile(t *testing.T) {
	for _, model := range []string{push.ModelName, push.CompressedModelName} {
		t.Run(model, func(t *testing.T) {
			s, c := reconciletest.Open(t, model, registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
			db := s.(timeline.DBHolder).DB()
			reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c,
				Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
					return reconciletest.MailboxDrift(t, s, db, w, push.MailboxView)
				}})
		})
	}
}
