package push_test

import (
	"database/sql"
	"maps"
	"strconv"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
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

// TestScanOwnedPages: reconcile.ScanOwned reads every row of its owners
// once, in (owner, key) order, across pages of reconcile.OwnedPage rows,
// one owner's rows spanning pages, and none of other owners.
func TestScanOwnedPages(t *testing.T) {
	s, _ := reconciletest.Open(t, push.ModelName, registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
	db := s.(timeline.DBHolder).DB()
	per := map[int64]int64{1: reconcile.OwnedPage + 1000, 2: 1, 3: reconcile.OwnedPage, 4: 7}
	for u, n := range per {
		reconciletest.Exec(t, db, `INSERT INTO mailbox (user_id, message_id) SELECT ?, seq FROM seq_1_to_`+strconv.FormatInt(n, 10), u)
	}
	got := map[int64]int64{}
	var last [2]int64
	rows, err := reconcile.ScanOwned(timelinetest.Context(t), db, "user_id, message_id", "mailbox", "", []timeline.UserID{3, 1, 2, 3}, func(r *sql.Rows) (int64, int64, error) {
		var u, id int64
		err := r.Scan(&u, &id)
		if u < last[0] || (u == last[0] && id <= last[1]) {
			t.Fatalf("row (%d, %d) after (%d, %d)", u, id, last[0], last[1])
		}
		last = [2]int64{u, id}
		got[u]++
		return u, id, err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{1: per[1], 2: per[2], 3: per[3]}
	if !maps.Equal(got, want) || rows != per[1]+per[2]+per[3] {
		t.Errorf("read %v (%d rows), want %v", got, rows, want)
	}
}
