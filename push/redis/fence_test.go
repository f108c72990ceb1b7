package redis_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push/redis"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// recorded returns author's message ids in MariaDB, newest first: the
// record, read past the store.
func recorded(t *testing.T, db *sql.DB, author timeline.UserID) []timeline.MessageID {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT id FROM messages WHERE author_id = ? ORDER BY id DESC`, author)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []timeline.MessageID
	for rows.Next() {
		var id timeline.MessageID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// twoAudiences makes users 1 and 3 follow 2 and user 4 follow 5, gives 2
// and 5 two posts each, and builds the feeds of 1, 3 and 4.
func twoAudiences(t *testing.T, s *redis.Store) {
	t.Helper()
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.Follow(t, s, 3, 2)
	timelinetest.Follow(t, s, 4, 5)
	timelinetest.PostN(t, s, 2, 2)
	timelinetest.PostN(t, s, 5, 2)
	for _, u := range []timeline.UserID{1, 3, 4} {
		timelinetest.Newest(t, s, u)
	}
}

// home returns user's home timeline in MariaDB, newest first: the
// messages of the authors user follows, read past the store.
func home(t *testing.T, db *sql.DB, user timeline.UserID) []timeline.MessageID {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT m.id FROM messages m
		JOIN follows f ON f.followee_id = m.author_id WHERE f.follower_id = ? ORDER BY m.id DESC`, user)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []timeline.MessageID
	for rows.Next() {
		var id timeline.MessageID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// readAll reads the newest page of users 1, 3 and 4 and checks each
// against the record.
func readAll(t *testing.T, s *redis.Store) {
	t.Helper()
	for _, reader := range []timeline.UserID{1, 3, 4} {
		got := timelinetest.IDs(timelinetest.Newest(t, s, reader).Messages)
		if want := home(t, s.DB(), reader); !slices.Equal(got, want) {
			t.Errorf("user %d's page %v, want %v", reader, got, want)
		}
	}
}

// TestCanceledPostOwesNothing: a post whose context ended before its
// INSERT was sent writes nothing, fails with the context's error, and
// leaves every feed readable: no fence, no rebuild, every page from its
// feed and still exact.
func TestCanceledPostOwesNothing(t *testing.T) {
	s := open(t, redis.Config{})
	twoAudiences(t, s)
	before := recorded(t, s.DB(), 2)
	c0 := s.Counters()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Post(ctx, 2, "never sent"); !errors.Is(err, context.Canceled) {
		t.Fatalf("post under a canceled context: %v, want context.Canceled", err)
	}
	if got := recorded(t, s.DB(), 2); !slices.Equal(got, before) {
		t.Fatalf("user 2's messages %v after the canceled post, want %v", got, before)
	}
	readAll(t, s)
	c1 := s.Counters()
	for _, name := range []string{counter.Fences, counter.Rebuilds, counter.CacheErrors, counter.DroppedFeeds} {
		if c1[name] != c0[name] {
			t.Errorf("%s went from %d to %d, want no change", name, c0[name], c1[name])
		}
	}
	if c1[counter.FeedPages]-c0[counter.FeedPages] != 3 {
		t.Errorf("feed pages went from %d to %d, want the 3 pages from their feeds", c0[counter.FeedPages], c1[counter.FeedPages])
	}
}

// TestCanceledInFlight: a write canceled while its statement waits in
// MariaDB (on a lock of its table that another connection holds) may
// commit after all. The next pages of the readers it could change are
// exact, showing it if it committed; only their feeds are dropped and
// rebuilt, and no fence is paid.
func TestCanceledInFlight(t *testing.T) {
	for _, c := range []struct {
		name, table, statement string
		op                     func(ctx context.Context, s *redis.Store, newest timeline.MessageID) error
		changes                int // feeds the write can change
	}{
		{"post", "messages", "INSERT INTO messages", func(ctx context.Context, s *redis.Store, newest timeline.MessageID) error {
			_, err := s.Post(ctx, 2, "canceled in flight")
			return err
		}, 2},
		{"delete", "messages", "DELETE FROM messages", func(ctx context.Context, s *redis.Store, newest timeline.MessageID) error {
			return s.Delete(ctx, 2, newest)
		}, 2},
		{"follow", "follows", "INSERT IGNORE INTO follows", func(ctx context.Context, s *redis.Store, newest timeline.MessageID) error {
			return s.Follow(ctx, 1, 5)
		}, 1},
		{"unfollow", "follows", "DELETE FROM follows", func(ctx context.Context, s *redis.Store, newest timeline.MessageID) error {
			return s.Unfollow(ctx, 1, 2)
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t, redis.Config{})
			twoAudiences(t, s)
			newest := recorded(t, s.DB(), 2)[0] // user 2's
			c0 := s.Counters()
			testserver.CancelInFlight(t, s.DB(), c.table, c.statement, func(ctx context.Context) error { return c.op(ctx, s, newest) })
			readAll(t, s)
			c1 := s.Counters()
			if c1[counter.Fences] != c0[counter.Fences] {
				t.Errorf("fences went from %d to %d, want none paid", c0[counter.Fences], c1[counter.Fences])
			}
			if got := c1[counter.DroppedFeeds] - c0[counter.DroppedFeeds]; got != int64(c.changes) {
				t.Errorf("%d feeds dropped, want %d", got, c.changes)
			}
			if got := c1[counter.Rebuilds] - c0[counter.Rebuilds]; got != int64(c.changes) {
				t.Errorf("%d feeds rebuilt, want the %d the %s could change", got, c.changes, c.name)
			}
		})
	}
}
