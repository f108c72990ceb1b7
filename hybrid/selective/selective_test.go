package selective_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pushpull/pushpull/hybrid/selective"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{}) }

// clock is a controllable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func open(t testing.TB, cfg selective.Config) *selective.Store {
	t.Helper()
	cfg.Config = push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)}
	s, err := selective.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the suite with the defaults (measured costs, a
// flush every 500 events) and with a flush after every read and post at
// H = L, where edges flip under the suite's own traffic.
func TestConformance(t *testing.T) {
	timelinetest.RunConfigs(t, []timelinetest.Config{
		{Name: "defaults", Open: func(t *testing.T) timeline.Store { return open(t, selective.Config{}) }},
		{Name: "flush every event", Open: func(t *testing.T) timeline.Store {
			return open(t, selective.Config{H: 1, L: 1, FlushEvery: 1})
		}},
	})
}

func TestRule(t *testing.T) {
	for _, c := range []struct {
		reads, posts, ratio float64
		want                bool
	}{
		{0, 0, 2, true}, {0, 1, 2, false}, {2, 1, 2, true}, {1.99, 1, 2, false}, {5, 0, 100, true},
	} {
		if got := selective.Pushed(c.reads, c.posts, c.ratio); got != c.want {
			t.Errorf("Pushed(%g, %g, %g) = %v", c.reads, c.posts, c.ratio, got)
		}
	}
}

// TestMailboxShape: a bulk load decides every edge by Pushed at the
// store's ratio, from counts of ReadsPerPost reads per post.
func TestMailboxShape(t *testing.T) {
	s := open(t, selective.Config{H: 1, L: 4, ReadsPerPost: 10})
	shape := s.MailboxShape()
	if shape.PushEdge == nil || shape.PullAuthor != nil || shape.Cap != 0 || shape.ActiveReads != 0 || shape.Whole() {
		t.Fatal("the shape is not the edge rule alone")
	}
	if shape.ReadsPerPost != 10 {
		t.Errorf("ReadsPerPost %g, want 10", shape.ReadsPerPost)
	}
	for _, c := range []struct{ reads, posts float64 }{{0, 0}, {0, 1}, {1, 4}, {0.99, 4}, {1, 3.9}, {5, 0}} {
		if got, want := shape.PushEdge(c.reads, c.posts), selective.Pushed(c.reads, c.posts, s.Ratio()); got != want {
			t.Errorf("reads %g, posts %g: the shape pushes %v, Pushed at H/L %g says %v", c.reads, c.posts, got, s.Ratio(), want)
		}
	}
}

// edgeState says whether follower → author is pushed, and how many of the
// author's messages follower's mailbox holds.
func edgeState(t *testing.T, s *selective.Store, follower, author timeline.UserID) (pushed bool, rows int) {
	t.Helper()
	var inPush, inPull int
	db := s.DB()
	if err := db.QueryRow(`SELECT COUNT(*) FROM push_edges WHERE author_id = ? AND user_id = ?`, author, follower).Scan(&inPush); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM pull_edges WHERE user_id = ? AND author_id = ?`, follower, author).Scan(&inPull); err != nil {
		t.Fatal(err)
	}
	if inPush+inPull != 1 {
		t.Fatalf("edge %d → %d is in push_edges %d times and in pull_edges %d times", follower, author, inPush, inPull)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM mailbox b JOIN messages m ON m.id = b.message_id
		WHERE b.user_id = ? AND m.author_id = ?`, follower, author).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	return inPush == 1, rows
}

// TestDecisionFlips drives one edge across H/L and back with reads and
// posts on a controlled clock, flushing explicitly, and checks that it
// flips exactly when the rule says, with the mailbox following.
func TestDecisionFlips(t *testing.T) {
	clk := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	// H/L = 2: pushed while the reader reads twice as often as the
	// author posts. No flush but the explicit ones.
	s := open(t, selective.Config{H: 2, L: 1, FlushEvery: 1 << 30, HalfLife: time.Hour, Now: clk.now})
	ctx := context.Background()
	const reader, author = timeline.UserID(1), timeline.UserID(2)
	flush := func() {
		t.Helper()
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := func(step string, pushed bool, rows int) {
		t.Helper()
		p, n := edgeState(t, s, reader, author)
		if p != pushed || n != rows {
			t.Fatalf("%s: pushed %v with %d mailbox rows, want %v with %d", step, p, n, pushed, rows)
		}
	}
	read := func(n int) {
		for range n {
			timelinetest.Newest(t, s, reader)
		}
	}
	timelinetest.Follow(t, s, reader, author)
	want("no traffic: 0 reads ≥ 2 × 0 posts", true, 0)

	timelinetest.PostN(t, s, author, 3) // pushed until the flush
	want("before the flush", true, 3)
	flush()
	want("3 posts, 0 reads", false, 0)

	read(5)
	flush()
	want("5 reads < 2 × 3 posts", false, 0)
	read(1)
	flush()
	want("6 reads ≥ 2 × 3 posts: backfilled", true, 3)

	// One half-life: both counts halve (3 reads, 1.5 posts), so the
	// edge stays; one more post makes 2.5 posts against 3 reads.
	clk.advance(time.Hour)
	read(1) // 4 reads
	flush()
	want("a half-life later, 4 reads ≥ 2 × 1.5 posts", true, 3)
	timelinetest.PostN(t, s, author, 1)
	flush()
	want("4 reads < 2 × 2.5 posts: removed", false, 0)

	// A follow is decided at once, pending counts included: user 3 has
	// read 10 times (not flushed) and follows the author (2.5 posts).
	for range 10 {
		timelinetest.Newest(t, s, 3)
	}
	timelinetest.Follow(t, s, 3, author)
	if p, n := edgeState(t, s, 3, author); !p || n != 4 {
		t.Fatalf("follow by a frequent reader: pushed %v with %d rows, want pushed with 4", p, n)
	}
	timelinetest.Follow(t, s, 4, author) // never read
	if p, n := edgeState(t, s, 4, author); p || n != 0 {
		t.Fatalf("follow by a user who never read: pushed %v with %d rows", p, n)
	}
	c := s.Counters()
	if c["edge_flips_push"] != 1 || c["edge_flips_pull"] != 2 || c["edges_pushed"] != 1 || c["edges_pulled"] != 2 {
		t.Fatalf("counters %v", c)
	}
}

// TestFlipPaging flips edges both ways between the pages of a walk and
// requires every walk, and every walk continued from a cursor taken
// before the flips, to equal the in-memory store's.
func TestFlipPaging(t *testing.T) {
	clk := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := open(t, selective.Config{H: 1, L: 1, FlushEvery: 1 << 30, Now: clk.now})
	mem := timeline.NewMemory()
	ctx := context.Background()
	ids := map[timeline.MessageID]timeline.MessageID{}
	both := func(f func(timeline.Store)) { f(s); f(mem) }
	const reader = timeline.UserID(1)
	authors := []timeline.UserID{2, 3, 4, 5}
	for _, a := range authors {
		both(func(st timeline.Store) { timelinetest.Follow(t, st, reader, a) })
	}
	seq := 0
	post := func(a timeline.UserID, n int) {
		for range n {
			seq++
			body := fmt.Sprintf("%d: %d", a, seq)
			ids[timelinetest.Post(t, s, a, body).ID] = timelinetest.Post(t, mem, a, body).ID
		}
	}
	// Interleaved posts; authors 2 and 3 post far more than user 1
	// reads, so the flush pulls their edges.
	for round := range 6 {
		post(2, 3)
		post(3, 2)
		post(4, 1)
		if round%2 == 0 {
			post(5, 1)
		}
	}
	users := []timeline.UserID{reader}
	limits := []int{1, 2, 3, 5, 7, 40}
	timelinetest.SameTimelines(t, s, mem, users, limits, ids)

	// A walk started with every edge pushed ...
	first := timelinetest.Page(t, s, reader, timeline.Query{Limit: 4})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range []timeline.UserID{2, 3} {
		if p, _ := edgeState(t, s, reader, a); p {
			t.Fatalf("edge to %d still pushed", a)
		}
	}
	for _, a := range []timeline.UserID{4, 5} {
		if p, _ := edgeState(t, s, reader, a); !p {
			t.Fatalf("edge to %d pulled", a)
		}
	}
	// ... continues across the flip to pull exactly.
	continued := func(first timeline.Page) {
		t.Helper()
		got := timelinetest.IDs(first.Messages)
		q := timeline.Query{Limit: 4, Before: first.Next}
		for q.Before != "" {
			p := timelinetest.Page(t, s, reader, q)
			got = append(got, timelinetest.IDs(p.Messages)...)
			q.Before = p.Next
		}
		for i, id := range got {
			got[i] = ids[id]
		}
		if want := timelinetest.WalkIDs(t, mem, reader, 4); !slices.Equal(got, want) {
			t.Fatalf("walk across a flip: got %v\nwant %v", got, want)
		}
	}
	continued(first)
	timelinetest.SameTimelines(t, s, mem, users, limits, ids)

	// New posts while pulled, then enough reads to push everything
	// back: a walk started while pulled continues across the backfill.
	post(2, 2)
	post(3, 1)
	first = timelinetest.Page(t, s, reader, timeline.Query{Limit: 4})
	for range 100 {
		timelinetest.Newest(t, s, reader)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range authors {
		if p, n := edgeState(t, s, reader, a); !p || n == 0 {
			t.Fatalf("edge to %d: pushed %v with %d rows after 100 reads", a, p, n)
		}
	}
	continued(first)
	timelinetest.SameTimelines(t, s, mem, users, limits, ids)
}

// TestConcurrentPostsAndFlips posts from one author while the edges of
// its followers flip back and forth under reads and posts flushed after
// every event, then requires each follower's timeline to hold every post
// exactly once, and every edge's mailbox rows to match its side.
func TestConcurrentPostsAndFlips(t *testing.T) {
	s := open(t, selective.Config{H: 1, L: 1, FlushEvery: 1})
	ctx := context.Background()
	const author, followers, posts = timeline.UserID(100), 6, 60
	for u := timeline.UserID(1); u <= followers; u++ {
		timelinetest.Follow(t, s, u, author)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	var mu sync.Mutex
	var posted []timeline.MessageID
	for w := range 2 {
		wg.Go(func() {
			for i := range posts / 2 {
				m, err := s.Post(ctx, author, fmt.Sprintf("w%d %d", w, i))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				posted = append(posted, m.ID)
				mu.Unlock()
			}
		})
	}
	// Readers read in bursts, so that their edges cross the author's
	// rate both ways while the posts go on.
	for u := timeline.UserID(1); u <= followers; u++ {
		wg.Go(func() {
			for i := range 40 {
				if _, err := s.Timeline(ctx, u, timeline.Query{}); err != nil {
					errs <- err
					return
				}
				if i%10 == 9 {
					time.Sleep(time.Duration(u) * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(posted)
	slices.Reverse(posted)
	for u := timeline.UserID(1); u <= followers; u++ {
		if got := timelinetest.WalkIDs(t, s, u, 7); !slices.Equal(got, posted) {
			t.Fatalf("follower %d: %d messages, want the %d posted", u, len(got), len(posted))
		}
		pushed, rows := edgeState(t, s, u, author)
		if pushed && rows != posts || !pushed && rows != 0 {
			t.Fatalf("follower %d: pushed %v with %d of %d rows", u, pushed, rows, posts)
		}
	}
	c := s.Counters()
	if c["edge_flips_push"]+c["edge_flips_pull"] == 0 {
		t.Fatalf("no edge flipped: the test exercised nothing (%v)", c)
	}
	t.Logf("flips: %d to push, %d to pull", c["edge_flips_push"], c["edge_flips_pull"])
}

// TestBadOptions: each bad option is a *registry.OptionError matching
// registry.ErrBadOption, and the database is never created.
func TestBadOptions(t *testing.T) {
	m, err := registry.Lookup(selective.ModelName)
	if err != nil {
		t.Fatal(err)
	}
	admin := testserver.Admin(t)
	defer admin.Close()
	for _, opts := range []map[string]string{
		{"h": "-1", "l": "1"},
		{"h": "2"},
		{"l": "x"},
		{"flush": "0"},
		{"flush": "many"},
		{"halflife": "NaN"},
		{"halflife": "3600"}, // seconds, as it once took: a Go duration now
		{"halflife": "0s"},
		{"reads_per_post": "-3"},
	} {
		db := testserver.Database(t)
		s, err := m.Open(context.Background(), registry.Config{DSN: testserver.DSN(t), Database: db, Options: opts})
		if err == nil {
			s.Close()
			t.Fatalf("options %v: opened", opts)
		}
		var oe *registry.OptionError
		if !errors.As(err, &oe) || !errors.Is(err, registry.ErrBadOption) {
			t.Fatalf("options %v: %v (%T), want a *registry.OptionError matching ErrBadOption", opts, err, err)
		}
		var n int
		if err := admin.QueryRow(`SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?`, db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("options %v: database %s was created", opts, db)
		}
	}
}

// TestFlushOffTheRequest holds a lock on user_rates so that a flush
// cannot write, and requires that the reads and posts that make flushes
// due still return: the flush is the flusher's, not theirs. Released, the
// flush goes through, and Close waits for it and flushes the rest.
func TestFlushOffTheRequest(t *testing.T) {
	ctx := context.Background()
	s, other := openWithOther(t, 1)
	timelinetest.Follow(t, s, 1, 2)
	lock := lockRates(t, other)
	defer lock.Rollback()
	done := make(chan error, 1)
	go func() {
		for i := range 5 {
			if _, err := s.Post(ctx, 2, fmt.Sprintf("while locked %d", i)); err != nil {
				done <- err
				return
			}
			if _, err := s.Timeline(ctx, 1, timeline.Query{}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("posts and reads waited for a flush held up by a lock on user_rates")
	}
	if c := s.Counters(); c["flushes"] == 0 {
		t.Fatalf("no flush started: the test held nothing up (%v)", c)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var posts, reads float64
	if err := other.QueryRow(`SELECT (SELECT post_rate FROM user_rates WHERE user_id = 2), (SELECT read_rate FROM user_rates WHERE user_id = 1)`).Scan(&posts, &reads); err != nil {
		t.Fatal(err)
	}
	if posts < 4.9 || reads < 4.9 {
		t.Fatalf("after Close: post rate %.2f, read rate %.2f; want the 5 of each counted", posts, reads)
	}
}

// TestQuiesce: Quiesce leaves counts below the flush count pending, waits
// (within its ctx) for a flush the flusher is running, and returns once
// the flushes due are written.
func TestQuiesce(t *testing.T) {
	ctx := context.Background()
	s, other := openWithOther(t, 4)
	postRate := func() (rate float64, rows int) {
		t.Helper()
		if err := other.QueryRow(`SELECT COALESCE(SUM(post_rate), 0), COUNT(*) FROM user_rates WHERE user_id = 2`).Scan(&rate, &rows); err != nil {
			t.Fatal(err)
		}
		return rate, rows
	}
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.Post(t, s, 2, "one")
	timelinetest.Post(t, s, 2, "two")
	if err := s.Quiesce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, rows := postRate(); rows != 0 || s.Counters()["flushes"] != 0 {
		t.Fatalf("two events of four quiesced into %d rows of rates, %d flushes: nothing was due", rows, s.Counters()["flushes"])
	}

	// The fourth event makes a flush due; the flusher starts it and waits
	// for the lock.
	lock := lockRates(t, other)
	defer lock.Rollback()
	timelinetest.Post(t, s, 2, "three")
	timelinetest.Post(t, s, 2, "four")
	for deadline := time.Now().Add(time.Minute); s.Counters()["flushes"] == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the flusher started no flush after four events")
		}
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := s.Quiesce(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Quiesce while the flusher's flush waits for a lock: %v, want the ctx's deadline", err)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := s.Quiesce(ctx); err != nil {
		t.Fatal(err)
	}
	if rate, rows := postRate(); rows != 1 || rate < 3.9 {
		t.Fatalf("after Quiesce: %d rows, post rate %.2f; want the 4 posts counted", rows, rate)
	}
}

// openWithOther opens a store with H = L = 1 that flushes every
// flushEvery counted events, and another connection to its database, for
// tests that hold locks beside it; both close with the test.
func openWithOther(t *testing.T, flushEvery int) (*selective.Store, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	db := testserver.Database(t)
	s, err := selective.Open(ctx, selective.Config{Config: push.Config{DSN: testserver.DSN(t), Database: db}, H: 1, L: 1, FlushEvery: flushEvery})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	other, err := mysqlx.Open(ctx, mysqlx.Options{DSN: testserver.DSN(t), Database: db, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return s, other
}

// lockRates locks every row of user_rates on other, so that no flush can
// write, until the returned transaction ends.
func lockRates(t *testing.T, other *sql.DB) *sql.Tx {
	t.Helper()
	ctx := context.Background()
	lock, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, `SELECT * FROM user_rates FOR UPDATE`); err != nil {
		lock.Rollback()
		t.Fatal(err)
	}
	return lock
}
