package async

import (
	"testing"
	"time"

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
		// User 10's followers are 6 to 9: a job of one of their messages
		// applied to 6 and 7, then lost.
		lost := w.Posts[10][1]
		if got := w.Followers(10); len(got) != 4 || got[0] != 6 || got[3] != 9 {
			t.Fatalf("the world changed: followers of 10 are %v", got)
		}
		reconciletest.Exec(t, db, `DELETE FROM mailbox WHERE message_id = ? AND user_id IN (8, 9)`, lost)
		drift = append(drift,
			reconcile.Drift{Kind: reconcile.Missing, View: push.MailboxView, User: 8, Item: int64(lost)},
			reconcile.Drift{Kind: reconcile.Missing, View: push.MailboxView, User: 9, Item: int64(lost)})
		// User 11's followers are 7 to 10: a job whose cursor passed 8
		// without writing its row; 10's row is the job's to write.
		queued := w.Posts[11][0]
		reconciletest.Exec(t, db, `DELETE FROM mailbox WHERE message_id = ? AND user_id IN (8, 10)`, queued)
		reconciletest.Exec(t, db, `INSERT INTO fanout_jobs (message_id, author_id, done_through, posted_at) VALUES (?, 11, 8, ?)`,
			queued, time.Now().UTC())
		return append(drift, reconcile.Drift{Kind: reconcile.Missing, View: push.MailboxView, User: 8, Item: int64(queued)})
	}})
}
