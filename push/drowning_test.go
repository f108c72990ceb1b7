package push_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// openDrowning opens a push store with d in a fresh database.
func openDrowning(t testing.TB, d push.Drowning) *push.Store {
	t.Helper()
	s, err := push.Open(context.Background(), push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Drowning: d})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// drowningScene has reader 100 follow authors 1..5 and reader 101 follow
// authors 1 and 2, then each author post perAuthor messages, on s and on
// the memory store.
func drowningScene(t *testing.T, s timeline.Store, perAuthor int) *timeline.Memory {
	mem := timeline.NewMemory()
	t.Cleanup(func() { mem.Close() })
	for _, st := range []timeline.Store{s, mem} {
		for a := timeline.UserID(1); a <= 5; a++ {
			timelinetest.Follow(t, st, 100, a)
		}
		timelinetest.Follow(t, st, 101, 1)
		timelinetest.Follow(t, st, 101, 2)
		for i := range perAuthor {
			for a := timeline.UserID(1); a <= 5; a++ {
				timelinetest.Post(t, st, a, "post "+string(rune('a'+i%26)))
			}
		}
	}
	return mem
}

// TestDrowningPullFallsBackToMerge: when the newest messages within the
// scan's window hold less than a page of a drowning reader's, the page is
// the merge's, and still the memory store's.
func TestDrowningPullFallsBackToMerge(t *testing.T) {
	s := openDrowning(t, push.Drowning{Follows: 3, Mode: push.DrowningPull})
	mem := drowningScene(t, s, 8)
	for _, st := range []timeline.Store{s, mem} {
		for range 60 {
			timelinetest.Post(t, st, 50, "not followed")
		}
	}
	push.SetDrowningScan(s, 2)
	scanned := s.ScannedPages()
	for _, limit := range []int{5, 20} {
		got, want := timelinetest.WalkIDs(t, s, 100, limit), timelinetest.WalkIDs(t, mem, 100, limit)
		if !slices.Equal(got, want) {
			t.Errorf("pages of %d: got %v, want %v", limit, got, want)
		}
	}
	if s.PulledPages() == 0 {
		t.Error("no page fell back to the merge")
	}
	if s.ScannedPages() == scanned {
		t.Error("no page was served by the scan (the older pages' windows hold theirs)")
	}
}

// TestDrowningFollowMakesDrowning: a follow that takes a reader past the
// count makes them drowning at once, and the prime of a database whose
// follows were loaded behind the store's back finds the others.
func TestDrowningFollowMakesDrowning(t *testing.T) {
	s := openDrowning(t, push.Drowning{Follows: 2})
	ctx := context.Background()
	for a := timeline.UserID(1); a <= 3; a++ {
		timelinetest.Follow(t, s, 100, a)
	}
	if _, err := s.DB().Exec(`INSERT INTO follows (follower_id, followee_id) VALUES (200, 1), (200, 2), (200, 3), (201, 1)`); err != nil {
		t.Fatal(err)
	}
	if err := s.Prime(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var got []timeline.UserID
	rows, err := s.DB().Query(`SELECT user_id FROM drowning_readers ORDER BY user_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var u timeline.UserID
		rows.Scan(&u)
		got = append(got, u)
	}
	if want := []timeline.UserID{100, 200}; !slices.Equal(got, want) {
		t.Errorf("drowning readers %v, want %v", got, want)
	}
}

// TestDrowningBadOptions: a count or a mode the options do not take is a
// *registry.OptionError, and no database is created.
func TestDrowningBadOptions(t *testing.T) {
	for _, d := range []push.Drowning{{Follows: -1}, {Follows: 10, Mode: "sometimes"}} {
		name := testserver.Database(t)
		_, err := push.Open(context.Background(), push.Config{DSN: testserver.DSN(t), Database: name, Drowning: d})
		var oe *registry.OptionError
		if !errors.As(err, &oe) {
			t.Errorf("%+v: got %v, want a *registry.OptionError", d, err)
		}
		var n int
		if err := testserver.Admin(t).QueryRow(`SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ?`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%+v: %d tables created", d, n)
		}
	}
}
