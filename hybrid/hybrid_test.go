package hybrid_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pushpull/pushpull/hybrid"
	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{}) }

func open(t testing.TB, threshold int) *hybrid.Store {
	t.Helper()
	s, err := hybrid.Open(context.Background(), hybrid.Config{
		Config:    push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)},
		Threshold: threshold,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the suite at the default threshold, where every
// post is fanned out, and at a threshold of 1, where none is.
func TestConformance(t *testing.T) {
	timelinetest.RunConfigs(t, []timelinetest.Config{
		{Name: "threshold 1000", Open: func(t *testing.T) timeline.Store { return open(t, 0) }},
		{Name: "threshold 1", Open: func(t *testing.T) timeline.Store { return open(t, 1) }},
	})
}

func TestBadConfig(t *testing.T) {
	_, err := hybrid.Open(context.Background(), hybrid.Config{
		Config:    push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)},
		Threshold: -3,
	})
	if err == nil {
		t.Fatal("threshold -3: opened")
	}
}

// TestMailboxShape: a bulk load pulls the authors Post pulls, by the
// store's own rule.
func TestMailboxShape(t *testing.T) {
	s := open(t, 3)
	shape := s.MailboxShape()
	if shape.PullAuthor == nil || shape.PushEdge != nil || shape.Cap != 0 || shape.ActiveReads != 0 || shape.Whole() {
		t.Fatal("the shape is not the author rule alone")
	}
	for followers, want := range map[int]bool{0: false, 2: false, 3: true, 1000: true} {
		if got := shape.PullAuthor(followers); got != want || s.PullsAuthor(followers) != want {
			t.Errorf("an author of %d followers: the shape pulls %v, the store %v; want %v", followers, got, s.PullsAuthor(followers), want)
		}
	}
}

// TestThresholdCrossing takes one author over the threshold and back
// under it, with follows and unfollows on the way, and requires every
// timeline to equal the in-memory store's at each step, posts to be
// fanned out exactly while the author is under the threshold, and a
// follow of a pulled author to backfill nothing.
func TestThresholdCrossing(t *testing.T) {
	const threshold, users = 3, 7
	s := open(t, threshold)
	mem := timeline.NewMemory()
	ctx := context.Background()
	ids := map[timeline.MessageID]timeline.MessageID{}
	var all []timeline.UserID
	for u := range users {
		all = append(all, timeline.UserID(u+1))
	}
	check := func(step string) {
		t.Helper()
		t.Logf("%s", step)
		timelinetest.SameTimelines(t, s, mem, all, []int{1, 2, 3, 10}, ids)
	}
	both := func(f func(timeline.Store) error) {
		t.Helper()
		for _, st := range []timeline.Store{s, mem} {
			if err := f(st); err != nil {
				t.Fatal(err)
			}
		}
	}
	follow := func(a, b timeline.UserID) { both(func(st timeline.Store) error { return st.Follow(ctx, a, b) }) }
	unfollow := func(a, b timeline.UserID) { both(func(st timeline.Store) error { return st.Unfollow(ctx, a, b) }) }
	seq := 0
	// post posts n messages by author and returns how many mailbox rows
	// they wrote.
	post := func(author timeline.UserID, n int) int {
		t.Helper()
		var before, after int
		if err := s.DB().QueryRow(`SELECT COUNT(*) FROM mailbox`).Scan(&before); err != nil {
			t.Fatal(err)
		}
		for range n {
			seq++
			body := fmt.Sprintf("%d: %d", author, seq)
			ids[timelinetest.Post(t, s, author, body).ID] = timelinetest.Post(t, mem, author, body).ID
		}
		if err := s.DB().QueryRow(`SELECT COUNT(*) FROM mailbox`).Scan(&after); err != nil {
			t.Fatal(err)
		}
		return after - before
	}
	mailboxOf := func(u timeline.UserID) (n int) {
		if err := s.DB().QueryRow(`SELECT COUNT(*) FROM mailbox WHERE user_id = ?`, u).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	follow(2, 1)
	follow(3, 1)
	follow(2, 5) // an ordinary author, to interleave with
	post(5, 3)
	if got := post(1, 4); got != 4*2 {
		t.Fatalf("under the threshold: 4 posts to 2 followers wrote %d mailbox rows", got)
	}
	check("two followers: pushed")

	follow(4, 1) // 3 followers: at the threshold
	if got := post(1, 4); got != 0 {
		t.Fatalf("at the threshold: 4 posts wrote %d mailbox rows", got)
	}
	post(5, 2)
	check("three followers: pulled")

	follow(6, 1) // a pulled author: no backfill
	if n := mailboxOf(6); n != 0 {
		t.Fatalf("following a pulled author backfilled %d rows", n)
	}
	post(1, 2)
	follow(6, 5) // an ordinary author: backfilled
	check("a fourth follower")

	unfollow(3, 1)
	unfollow(6, 1) // 2 followers: under the threshold again
	if got := post(1, 5); got != 5*2 {
		t.Fatalf("back under the threshold: 5 posts to 2 followers wrote %d mailbox rows", got)
	}
	follow(7, 1) // 1 stays listed: 7 pulls all of its posts, pushed or not
	post(5, 1)
	check("back under: pushed and pulled posts merged")

	post(1, 2)
	unfollow(2, 1)
	follow(3, 1)
	check("over and under again")
}

// TestReadStopsAtTheMailbox: when the mailbox alone fills a page, a read
// of a user who follows many pulled authors reads each of them only above
// the page's oldest mailbox entry, and fetches the bodies of the page
// only: its rows read grow by about one probe per pulled author, not by a
// page per author.
func TestReadStopsAtTheMailbox(t *testing.T) {
	const threshold, pulled, limit = 2, 30, 10
	s := open(t, threshold)
	ctx := context.Background()
	const reader, ordinary = timeline.UserID(1), timeline.UserID(2)
	for a := range pulled {
		celebrity := timeline.UserID(100 + a)
		for _, f := range []timeline.UserID{reader, 3, 4} {
			if err := s.Follow(ctx, f, celebrity); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 2 * limit {
			timelinetest.Post(t, s, celebrity, fmt.Sprintf("%d: %d", celebrity, i))
		}
	}
	if err := s.Follow(ctx, reader, ordinary); err != nil {
		t.Fatal(err)
	}
	for i := range 3 * limit {
		timelinetest.Post(t, s, ordinary, fmt.Sprintf("newer %d", i))
	}
	meter := cost.NewMeter(s.DB(), nil)
	before, err := meter.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const reads = 20
	for range reads {
		page, err := s.Timeline(ctx, reader, timeline.Query{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Messages) != limit || page.Messages[0].Author != ordinary || page.Messages[limit-1].Author != ordinary {
			t.Fatalf("newest page: %d messages, want %d by the ordinary author", len(page.Messages), limit)
		}
	}
	after, err := meter.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := cost.PerOp(before, after, reads)
	t.Logf("a read over %d pulled authors: %v", pulled, c)
	// The mailbox range and the page's bodies (limit+1 each), the
	// pull_follows range (a row per pulled author), and a probe per
	// pulled author, which reads its newest message to find it is below
	// the mailbox's oldest entry.
	if want := float64(2*(limit+1) + 2*pulled + 10); c[cost.RowsRead] > want {
		t.Errorf("%.1f rows read per newest page, want at most %.0f: the pulled authors were read below the mailbox's page", c[cost.RowsRead], want)
	}

	// A reader with no mailbox at all: the pulled authors are merged
	// with pull-merge's early stop, not read a page each.
	const puller = timeline.UserID(3)
	before, err = meter.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range reads {
		page, err := s.Timeline(ctx, puller, timeline.Query{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Messages) != limit {
			t.Fatalf("newest page of the puller: %d messages, want %d", len(page.Messages), limit)
		}
	}
	after, err = meter.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c = cost.PerOp(before, after, reads)
	t.Logf("a read of %d pulled authors alone: %v", pulled, c)
	// The pull_follows range and a probe per pulled author (a row or
	// two each), and the merge's few pages of ids and bodies; reading
	// each author a page deep took 361.
	if want := float64(3*pulled + 4*(limit+1)); c[cost.RowsRead] > want {
		t.Errorf("%.1f rows read per newest page without a mailbox, want at most %.0f: each pulled author was read a page deep", c[cost.RowsRead], want)
	}
}
