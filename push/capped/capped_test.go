package capped_test

import (
	"context"
	"fmt"
	"golang.org/x/sync/errgroup"
	"math/rand/v2"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/push/capped"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{}) }

// open opens a store with the given cap and slack in a fresh database and
// closes it when t ends.
func open(t testing.TB, limit, slack int) *capped.Store {
	t.Helper()
	s, err := capped.Open(context.Background(), capped.Config{
		Config: push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)},
		Cap:    limit, Slack: slack,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the suite at the default cap, where nothing is
// trimmed, and at a cap of 3, where almost every page crosses the floor.
func TestConformance(t *testing.T) {
	timelinetest.RunConfigs(t, []timelinetest.Config{
		{Name: "cap 800", Open: func(t *testing.T) timeline.Store { return open(t, 0, 0) }},
		{Name: "cap 3", Open: func(t *testing.T) timeline.Store { return open(t, 3, 1) }},
	})
}

func TestBadConfig(t *testing.T) {
	for _, c := range [][2]int{{-1, 0}, {3, -2}, {capped.MaxCap + 1, 0}} {
		_, err := capped.Open(context.Background(), capped.Config{
			Config: push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)},
			Cap:    c[0], Slack: c[1],
		})
		if err == nil {
			t.Fatalf("cap %d, slack %d: opened", c[0], c[1])
		}
	}
}

// TestMailboxShape: a bulk load keeps each user's newest Cap entries.
func TestMailboxShape(t *testing.T) {
	shape := open(t, 5, 2).MailboxShape()
	if shape.Cap != 5 || shape.PullAuthor != nil || shape.PushEdge != nil || shape.ActiveReads != 0 || shape.Whole() {
		t.Fatalf("shape with cap %d: want the cap of 5 alone", shape.Cap)
	}
}

// mailboxRows returns the mailbox rows per user.
func mailboxRows(t *testing.T, s *capped.Store) map[timeline.UserID]int {
	t.Helper()
	rows, err := s.DB().Query(`SELECT user_id, COUNT(*) FROM mailbox GROUP BY user_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[timeline.UserID]int{}
	for rows.Next() {
		var u timeline.UserID
		var n int
		if err := rows.Scan(&u, &n); err != nil {
			t.Fatal(err)
		}
		out[u] = n
	}
	return out
}

// checkSame requires the timelines of users 1..users in s to equal
// want's at page lengths that put the floor inside pages and on their
// edges.
func checkSame(t *testing.T, s, want timeline.Store, users int, ids map[timeline.MessageID]timeline.MessageID) {
	t.Helper()
	var us []timeline.UserID
	for u := range users {
		us = append(us, timeline.UserID(u+1))
	}
	timelinetest.SameTimelines(t, s, want, us, []int{1, 4, 7, 50}, ids)
}

// TestTrimming posts far more than the cap into every mailbox, with
// follows and unfollows between, and requires every mailbox to stay within
// cap+slack rows while every timeline, walked to its end across the floor,
// equals the in-memory store's.
func TestTrimming(t *testing.T) {
	const limit, slack, users = 12, 4, 10
	s := open(t, limit, slack)
	mem := timeline.NewMemory()
	ctx := context.Background()
	ids := map[timeline.MessageID]timeline.MessageID{} // s's ids -> mem's
	both := func(f func(timeline.Store) error) {
		t.Helper()
		if err := f(s); err != nil {
			t.Fatal(err)
		}
		if err := f(mem); err != nil {
			t.Fatal(err)
		}
	}
	for u := 1; u <= users; u++ {
		for v := 1; v <= users; v++ {
			if u != v && (u+v)%3 != 0 {
				both(func(st timeline.Store) error { return st.Follow(ctx, timeline.UserID(u), timeline.UserID(v)) })
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	most := 0
	for i := range 400 {
		author := timeline.UserID(1 + rng.IntN(users))
		body := fmt.Sprintf("post %d", i)
		got, err := s.Post(ctx, author, body)
		if err != nil {
			t.Fatal(err)
		}
		want, err := mem.Post(ctx, author, body)
		if err != nil {
			t.Fatal(err)
		}
		ids[got.ID] = want.ID
		if i%50 == 49 { // a follow backfills, an unfollow removes
			a, b := timeline.UserID(1+rng.IntN(users)), timeline.UserID(1+rng.IntN(users))
			if a != b {
				both(func(st timeline.Store) error { return st.Unfollow(ctx, a, b) })
				both(func(st timeline.Store) error { return st.Follow(ctx, b, a) })
			}
		}
		for u, n := range mailboxRows(t, s) {
			if n > limit+slack {
				t.Fatalf("after post %d: user %d has %d mailbox rows, cap %d + slack %d", i, u, n, limit, slack)
			}
			most = max(most, n)
		}
	}
	if most <= limit {
		t.Fatalf("no mailbox passed the cap (most %d rows): the test trimmed nothing", most)
	}
	var entries, rows int
	if err := s.DB().QueryRow(`SELECT SUM(entries) FROM mailbox_state`).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM mailbox`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if entries != rows {
		t.Fatalf("mailbox_state counts %d entries, the mailbox holds %d rows", entries, rows)
	}
	checkSame(t, s, mem, users, ids)
}

// TestPagingAcrossFloor pages one timeline with a floor in the middle of
// a page, and checks that a follow of an author with more than the cap
// backfills only the newest and still reads whole.
func TestPagingAcrossFloor(t *testing.T) {
	const limit = 5
	s := open(t, limit, 1)
	mem := timeline.NewMemory()
	ids := map[timeline.MessageID]timeline.MessageID{}
	post := func(author timeline.UserID, n int) {
		for i := range n {
			body := fmt.Sprintf("%d says %d", author, i)
			a := timelinetest.Post(t, s, author, body)
			b := timelinetest.Post(t, mem, author, body)
			ids[a.ID] = b.ID
		}
	}
	for _, st := range []timeline.Store{s, mem} {
		timelinetest.Follow(t, st, 1, 2)
		timelinetest.Follow(t, st, 1, 3)
	}
	post(2, 9)
	post(3, 8)
	post(4, 30) // user 1 does not follow 4 yet
	if n := mailboxRows(t, s)[1]; n > limit+1 {
		t.Fatalf("user 1 has %d mailbox rows", n)
	}
	// Page lengths that put the floor inside a page, on its edge, and
	// pages entirely below it.
	checkSame(t, s, mem, 1, ids)
	for _, st := range []timeline.Store{s, mem} {
		timelinetest.Follow(t, st, 1, 4)
	}
	if n := mailboxRows(t, s)[1]; n > 2*limit+1 {
		t.Fatalf("the follow of an author of 30 left %d mailbox rows", n)
	}
	checkSame(t, s, mem, 1, ids)
	post(2, 3)
	for _, st := range []timeline.Store{s, mem} {
		timelinetest.Unfollow(t, st, 1, 3)
	}
	checkSame(t, s, mem, 1, ids)

	// A follow that raises the floor above a row too few to be trimmed:
	// user 6 has one entry, by 7, below 4's newest five, which the
	// follow deletes (the pull merge reads it).
	post(7, 1)
	for _, st := range []timeline.Store{s, mem} {
		timelinetest.Follow(t, st, 6, 7)
	}
	post(4, 6)
	for _, st := range []timeline.Store{s, mem} {
		timelinetest.Follow(t, st, 6, 4)
	}
	if n := mailboxRows(t, s)[6]; n != limit {
		t.Fatalf("user 6 has %d mailbox rows, want %d", n, limit)
	}
	checkSame(t, s, mem, 6, ids)
	if s.PullPages() == 0 {
		t.Fatal("no page came from the pull merge: the floor was never crossed")
	}
}

// TestConcurrentPostsStayAboveFloor races posts of several authors into
// the same small mailboxes, so that trims run between other posts' ids and
// fan-outs, and requires no mailbox row below its user's floor and every
// timeline whole. Each mailbox receives 160 entries against a cap of 5,
// so the posts' trims must have raised every floor, and, once the last
// post has returned, cut every mailbox to at most cap + slack rows: the
// last write to a mailbox commits before its trim looks, and a trim it
// finds holding the mailbox sees that write. Without trimming the floors
// stay at 0, which would make the first check hold vacuously.
func TestConcurrentPostsStayAboveFloor(t *testing.T) {
	const authors, readers, limit, slack = 4, 6, 5, 1
	s := open(t, limit, slack)
	ctx := context.Background()
	for r := authors + 1; r <= authors+readers; r++ {
		for a := 1; a <= authors; a++ {
			timelinetest.Follow(t, s, timeline.UserID(r), timeline.UserID(a))
		}
	}
	var g errgroup.Group
	for a := 1; a <= authors; a++ {
		g.Go(func() error {
			for i := range 40 {
				if _, err := s.Post(ctx, timeline.UserID(a), fmt.Sprintf("race %d", i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	var below int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM mailbox b JOIN mailbox_state m ON m.user_id = b.user_id
		WHERE b.message_id < m.floor_id`).Scan(&below); err != nil {
		t.Fatal(err)
	}
	if below != 0 {
		t.Fatalf("%d mailbox rows below their user's floor", below)
	}
	rows := mailboxRows(t, s)
	for r := authors + 1; r <= authors+readers; r++ {
		var floor timeline.MessageID
		var entries int
		if err := s.DB().QueryRow(`SELECT floor_id, entries FROM mailbox_state WHERE user_id = ?`, r).Scan(&floor, &entries); err != nil {
			t.Fatalf("reader %d: %v", r, err)
		}
		n := rows[timeline.UserID(r)]
		if floor == 0 || n > limit+slack || entries != n {
			t.Fatalf("reader %d: floor %d, %d mailbox rows, %d entries counted; want a floor above 0 and at most %d rows, all counted: the posts did not trim",
				r, floor, n, entries, limit+slack)
		}
	}
	want := authors * 40
	for r := authors + 1; r <= authors+readers; r++ {
		if got := timelinetest.WalkIDs(t, s, timeline.UserID(r), 7); len(got) != want {
			t.Fatalf("reader %d: %d messages, want %d", r, len(got), want)
		}
	}
}
