package async

import (
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// TestReconcile: besides push's mailbox drift, reconcile finds the rows a
// fan-out job lost half applied left out, and the row a job's cursor
// passed without writing, but not the rows a queued job has still to
// write; and repairs them while the store's workers and concurrent posts
// and follows run.
func TestReconcile(t *testing.T) {
	s, c := reconciletest.Open(t, ModelName, registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
	db := s.(timeline.DBHolder).DB()
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
		drift := reconciletest.MailboxDrift(t, s, db, w, push.MailboxView)
		return append(drift, reconciletest.JobDrift(t, db, w, push.MailboxView)...)
	}})
}
