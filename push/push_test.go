package push_test

import (
	"context"
	"golang.org/x/sync/errgroup"
	"math/rand/v2"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{}) }

// open opens a push store in a fresh database and closes it when t ends.
func open(t testing.TB) (*push.Store, string) {
	t.Helper()
	db := testserver.Database(t)
	s, err := push.Open(context.Background(), push.Config{DSN: testserver.DSN(t), Database: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, db
}

func TestConformance(t *testing.T) {
	timelinetest.Run(t, func(t *testing.T) timeline.Store {
		s, _ := open(t)
		return s
	})
}

// TestConcurrentWritesKeepMailboxExact races posts against follows and
// unfollows of the same authors. Afterwards the mailbox must hold exactly
// one row per (follower, message of a followee): no fan-out lost to a
// follow that committed in between, no backfill duplicated, no stale row.
func TestConcurrentWritesKeepMailboxExact(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	const authors, readers = 4, 12
	var g errgroup.Group
	for w := range 4 {
		g.Go(func() error {
			for i := range 60 {
				if _, err := s.Post(ctx, timeline.UserID(1+(w+i)%authors), "race"); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for w := range 4 {
		g.Go(func() error {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 80 {
				follower := timeline.UserID(authors + 1 + rng.IntN(readers))
				followee := timeline.UserID(1 + rng.IntN(authors))
				var err error
				if rng.IntN(3) == 0 {
					err = s.Unfollow(ctx, follower, followee)
				} else {
					err = s.Follow(ctx, follower, followee)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	var missing, extra, rows int
	db := s.DB()
	if err := db.QueryRow(`
		SELECT COUNT(*) FROM follows f JOIN messages m ON m.author_id = f.followee_id
		LEFT JOIN mailbox b ON b.user_id = f.follower_id AND b.message_id = m.id
		WHERE b.user_id IS NULL`).Scan(&missing); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`
		SELECT COUNT(*) FROM mailbox b JOIN messages m ON m.id = b.message_id
		LEFT JOIN follows f ON f.follower_id = b.user_id AND f.followee_id = m.author_id
		WHERE f.follower_id IS NULL`).Scan(&extra); err != nil {
		t.Fatal(err)
	}
	db.QueryRow(`SELECT COUNT(*) FROM mailbox`).Scan(&rows)
	if missing != 0 || extra != 0 {
		t.Fatalf("mailbox out of step with follows: %d rows missing, %d stale (of %d)", missing, extra, rows)
	}
	if rows == 0 {
		t.Fatal("no mailbox rows: the race exercised nothing")
	}
	t.Logf("%d mailbox rows, all exact", rows)
}
