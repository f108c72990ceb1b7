package redistest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// CanceledCase is a store under CanceledWrites.
type CanceledCase struct {
	// Open opens the store on the test's MariaDB and the redis-server at
	// addr, in a fresh database; the test closes it.
	Open func(t *testing.T, addr string) Store
	// Rebuilds names the store's counter of its Redis state (a feed or
	// an index) rebuilt from MariaDB.
	Rebuilds string
}

// canceledWriteCases are the writes CanceledWrites cancels while their
// statement waits in MariaDB, the table it waits for, the start of its
// text, and how many readers' state it can change: a post's or a
// delete's of user 2, its 2 followers'; a follow's or an unfollow's of
// user 1, user 1's.
var canceledWriteCases = []struct {
	name, table, statement string
	op                     func(ctx context.Context, s Store, newest timeline.MessageID) error
	changes                int64
}{
	{"post", "messages", "INSERT INTO messages", func(ctx context.Context, s Store, _ timeline.MessageID) error {
		_, err := s.Post(ctx, 2, "canceled in flight")
		return err
	}, 2},
	{"delete", "messages", "DELETE FROM messages", func(ctx context.Context, s Store, newest timeline.MessageID) error {
		return s.Delete(ctx, 2, newest)
	}, 2},
	{"follow", "follows", "INSERT IGNORE INTO follows", func(ctx context.Context, s Store, _ timeline.MessageID) error {
		return s.Follow(ctx, 1, 5)
	}, 1},
	{"unfollow", "follows", "DELETE FROM follows", func(ctx context.Context, s Store, _ timeline.MessageID) error {
		return s.Unfollow(ctx, 1, 2)
	}, 1},
}

// CanceledWrites: a write that fails in MariaDB repairs only the Redis
// state it could have changed. Users 1 and 3 follow user 2, user 4
// follows user 5, each author has two posts, and the three readers' state
// is built.
//
//   - before: a post under a context that ended before it started fails
//     with the context's error, writes nothing, and changes no state: no
//     fence, no state dropped or rebuilt, each reader's next page exact.
//   - a post, a delete, a follow and an unfollow canceled while their
//     statement waits on a table lock (testserver.CancelInFlight), which
//     may commit after all: each reader's next page is exact (it shows
//     the write if it committed), the state of the readers the write
//     could change is dropped and rebuilt, no other, and no fence is
//     paid.
//   - redis frozen: a post canceled so while the redis-server is frozen
//     cannot drop the feeds: the fence is owed, reads come from MariaDB
//     meanwhile, exact, and once the server thaws the fence is paid.
func CanceledWrites(t *testing.T, c CanceledCase) {
	open := func(t *testing.T, addr string) (Store, timeline.MessageID) {
		s := c.Open(t, addr)
		t.Cleanup(func() { s.Close() })
		timelinetest.Follow(t, s, 1, 2)
		timelinetest.Follow(t, s, 3, 2)
		timelinetest.Follow(t, s, 4, 5)
		posted := timelinetest.PostN(t, s, 2, 2)
		timelinetest.PostN(t, s, 5, 2)
		for _, u := range []timeline.UserID{1, 3, 4} {
			timelinetest.Newest(t, s, u) // builds its state
		}
		return s, posted[1].ID
	}
	setup := func(t *testing.T) (Store, timeline.MessageID) { return open(t, testserver.Redis(t)) }
	// readAll checks each reader's next newest page against the record.
	readAll := func(t *testing.T, s Store) {
		t.Helper()
		db := s.(timeline.DBHolder).DB()
		for _, reader := range []timeline.UserID{1, 3, 4} {
			got := timelinetest.IDs(timelinetest.Newest(t, s, reader).Messages)
			if want := testserver.HomeIDs(t, db, reader); !slices.Equal(got, want) {
				t.Errorf("user %d's page %v, want %v", reader, got, want)
			}
		}
	}
	// changed checks what the store counted between c0 and c1.
	changed := func(t *testing.T, c0, c1 map[string]int64, dropped int64) {
		t.Helper()
		if c1[counter.Fences] != c0[counter.Fences] {
			t.Errorf("fences went from %d to %d, want none paid", c0[counter.Fences], c1[counter.Fences])
		}
		if got := c1[counter.DroppedFeeds] - c0[counter.DroppedFeeds]; got != dropped {
			t.Errorf("%d feeds or indexes dropped, want %d", got, dropped)
		}
		if got := c1[c.Rebuilds] - c0[c.Rebuilds]; got != dropped {
			t.Errorf("%d rebuilt, want the %d dropped", got, dropped)
		}
	}
	t.Run("before", func(t *testing.T) {
		s, _ := setup(t)
		before := timelinetest.WalkAuthor(t, s, 2, 10)
		c0 := s.Counters()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.Post(ctx, 2, "never sent"); !errors.Is(err, context.Canceled) {
			t.Fatalf("post under a canceled context: %v, want context.Canceled", err)
		}
		if got := timelinetest.WalkAuthor(t, s, 2, 10); !slices.Equal(got, before) {
			t.Fatalf("user 2's messages %v after the canceled post, want %v", got, before)
		}
		readAll(t, s)
		changed(t, c0, s.Counters(), 0)
	})
	t.Run("redis frozen", func(t *testing.T) {
		rd := testserver.StartFaultRedis(t)
		s, _ := open(t, rd.Addr())
		c0 := s.Counters()
		if err := rd.Freeze(); err != nil {
			t.Fatal(err)
		}
		w := canceledWriteCases[0] // a post
		testserver.CancelInFlight(t, s.(timeline.DBHolder).DB(), w.table, w.statement, func(ctx context.Context) error {
			return w.op(ctx, s, 0)
		})
		readAll(t, s)
		if err := rd.Thaw(); err != nil {
			t.Fatal(err)
		}
		testserver.Poll(t, 20*time.Second, "the fence paid", func() bool { return s.Counters()[counter.Fences] > c0[counter.Fences] })
		readAll(t, s)
		if c1 := s.Counters(); c1[counter.Fences]-c0[counter.Fences] != 1 {
			t.Errorf("fences went from %d to %d, want the one owed", c0[counter.Fences], c1[counter.Fences])
		}
	})
	for _, w := range canceledWriteCases {
		t.Run(w.name, func(t *testing.T) {
			s, newest := setup(t)
			c0 := s.Counters()
			testserver.CancelInFlight(t, s.(timeline.DBHolder).DB(), w.table, w.statement, func(ctx context.Context) error {
				return w.op(ctx, s, newest)
			})
			readAll(t, s)
			changed(t, c0, s.Counters(), w.changes)
		})
	}
}
