package push_test

import (
	"context"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// openChecked opens model in a fresh database through the registry, and
// its checker as the model declares it.
func openChecked(t *testing.T, model string) (timeline.Store, reconcile.Checker) {
	t.Helper()
	m, err := registry.Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Open(context.Background(), registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := m.Checker(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// TestReconcile: reconcile finds exactly the mailbox rows deleted, added
// for an author not followed and left of a deleted message, and repairs
// them, under concurrent posts and follows; for push and push-compressed.
func TestReconcile(t *testing.T) {
	for _, model := range []string{push.ModelName, push.CompressedModelName} {
		t.Run(model, func(t *testing.T) {
			s, c := openChecked(t, model)
			db := s.(timeline.DBHolder).DB()
			reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c,
				Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
					return reconciletest.MailboxDrift(t, s, db, w, push.MailboxView)
				}})
		})
	}
}
