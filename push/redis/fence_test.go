package redis_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"
	"time"

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

// readAll reads the newest page of each of users and checks it against
// the record: the messages MariaDB holds of the one author each follows.
func readAll(t *testing.T, s *redis.Store, followees map[timeline.UserID]timeline.UserID) {
	t.Helper()
	for reader, author := range followees {
		got := timelinetest.IDs(timelinetest.Newest(t, s, reader).Messages)
		if want := recorded(t, s.DB(), author); !slices.Equal(got, want) {
			t.Errorf("user %d's page %v, want user %d's messages %v", reader, got, author, want)
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
	readAll(t, s, map[timeline.UserID]timeline.UserID{1: 2, 3: 2, 4: 5})
	c1 := s.Counters()
	for _, name := range []string{counter.Fences, counter.Rebuilds, counter.CacheErrors} {
		if c1[name] != c0[name] {
			t.Errorf("%s went from %d to %d, want no change", name, c0[name], c1[name])
		}
	}
	if c1[counter.FeedPages]-c0[counter.FeedPages] != 3 {
		t.Errorf("feed pages went from %d to %d, want the 3 pages from their feeds", c0[counter.FeedPages], c1[counter.FeedPages])
	}
}

// TestPostCanceledInFlight: a post canceled while its INSERT waits in
// MariaDB (on a table lock another connection holds) may commit after
// all; its author's followers' next pages are exact, showing it if it
// did, and no other feed is rebuilt, nor is a fence paid.
func TestPostCanceledInFlight(t *testing.T) {
	s := open(t, redis.Config{})
	twoAudiences(t, s)
	db := s.DB()
	bg := context.Background()
	lock, err := db.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(bg, `LOCK TABLES messages WRITE`); err != nil {
		t.Fatal(err)
	}
	// inserts counts the INSERTs into messages that the database's
	// sessions run (or wait to run).
	inserts := func() int {
		var n int
		if err := db.QueryRowContext(bg, `SELECT COUNT(*) FROM information_schema.processlist
			WHERE db = DATABASE() AND info LIKE 'INSERT INTO messages%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// until waits for cond, polling; the deadline only ends a test that
	// would hang.
	until := func(what string, cond func() bool) {
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("gave up waiting until %s", what)
			}
		}
	}
	c0 := s.Counters()
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := s.Post(ctx, 2, "canceled in flight")
		done <- err
	}()
	until("the INSERT waits on the lock", func() bool { return inserts() == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the post canceled in flight succeeded")
	}
	if _, err := lock.ExecContext(bg, `UNLOCK TABLES`); err != nil {
		t.Fatal(err)
	}
	until("the INSERT is over", func() bool { return inserts() == 0 })
	readAll(t, s, map[timeline.UserID]timeline.UserID{1: 2, 3: 2, 4: 5})
	c1 := s.Counters()
	if c1[counter.Fences] != c0[counter.Fences] {
		t.Errorf("fences went from %d to %d, want none paid", c0[counter.Fences], c1[counter.Fences])
	}
	if got := c1[counter.Rebuilds] - c0[counter.Rebuilds]; got != 2 {
		t.Errorf("%d feeds rebuilt, want the 2 of user 2's followers", got)
	}
	t.Logf("user 2's messages after the canceled post: %d (3 if it committed)", len(recorded(t, db, 2)))
}
