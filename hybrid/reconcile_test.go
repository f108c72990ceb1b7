package hybrid_test

import (
	"testing"

	"github.com/pushpull/pushpull/hybrid"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// TestReconcile: with the world's celebrity pulled (11 followers, the
// threshold 6, which the concurrent traffic never brings anyone else to),
// reconcile finds push's mailbox drift and a pulled follow deleted, one
// of an author not listed and one of an author not followed, but not a
// row of the pulled author's message in a mailbox (fanned out before a
// listing, such a row is allowed); and repairs them under concurrent posts
// and follows.
func TestReconcile(t *testing.T) {
	s, c := reconciletest.Open(t, hybrid.ModelName, registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t),
		Options: map[string]string{hybrid.OptionThreshold: "6"}})
	db := s.(timeline.DBHolder).DB()
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
		drift := reconciletest.MailboxDrift(t, s, db, w, push.MailboxView)
		reconciletest.Exec(t, db, `INSERT INTO mailbox (user_id, message_id) VALUES (6, ?)`, w.Posts[reconciletest.Celebrity][1])
		reconciletest.Exec(t, db, `DELETE FROM pull_follows WHERE user_id = 4 AND author_id = ?`, reconciletest.Celebrity)
		if !w.Followed(5, 9) || w.Followed(5, 2) {
			t.Fatal("the world changed: user 5 follows 2, or not 9")
		}
		reconciletest.Exec(t, db, `INSERT INTO pull_follows (user_id, author_id) VALUES (5, 9), (5, 2)`)
		return append(drift,
			reconcile.Drift{Kind: reconcile.Missing, View: hybrid.PullFollowsView, User: 4, Item: int64(reconciletest.Celebrity)},
			reconcile.Drift{Kind: reconcile.Extra, View: hybrid.PullFollowsView, User: 5, Item: 9},
			reconcile.Drift{Kind: reconcile.Unfollowed, View: hybrid.PullFollowsView, User: 5, Item: 2})
	}})
}
