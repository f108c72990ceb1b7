package active_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/push/active"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{}) }

// clock is a test clock that moves only when told.
type clock struct{ us atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.us.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	return c
}

func (c *clock) Now() time.Time          { return time.UnixMicro(c.us.Load()) }
func (c *clock) Advance(d time.Duration) { c.us.Add(d.Microseconds()) }

// open opens a store in a fresh database and closes it when t ends; a
// nil clock is time.Now.
func open(t testing.TB, window time.Duration, rebuild int, c *clock) *active.Store {
	t.Helper()
	cfg := active.Config{
		Config: push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)},
		Window: window, Rebuild: rebuild,
	}
	if c != nil {
		cfg.Now = c.Now
	}
	s, err := active.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the suite at the defaults, where every reader is
// rebuilt once and then active; with a rebuild of 3, where almost every
// page crosses the floor; and with a window of a microsecond, where every
// post finds its followers expired and every read rebuilds.
func TestConformance(t *testing.T) {
	timelinetest.RunConfigs(t, []timelinetest.Config{
		{Name: "defaults", Open: func(t *testing.T) timeline.Store { return open(t, 0, 0, nil) }},
		{Name: "rebuild 3", Open: func(t *testing.T) timeline.Store { return open(t, 0, 3, nil) }},
		{Name: "window 1µs", Open: func(t *testing.T) timeline.Store { return open(t, time.Microsecond, 3, nil) }},
	})
}

// counters returns s's counts.
func counters(s *active.Store) map[string]int64 { return s.Counters() }

// delta is after minus before for the push-active counters.
func delta(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func wantDelta(t *testing.T, what string, before map[string]int64, s *active.Store, want map[string]int64) {
	t.Helper()
	if got := delta(before, counters(s)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: counters changed by %v, want %v", what, got, want)
	}
}

// state returns user's flag and floor.
func state(t *testing.T, s *active.Store, user timeline.UserID) (bool, timeline.MessageID) {
	t.Helper()
	var active bool
	var floor timeline.MessageID
	if err := s.DB().QueryRow(`SELECT active, floor_id FROM reader_state WHERE user_id = ?`, user).Scan(&active, &floor); err != nil {
		t.Fatal(err)
	}
	return active, floor
}

// mailbox returns user's mailbox ids, ascending.
func mailbox(t *testing.T, s *active.Store, user timeline.UserID) []timeline.MessageID {
	t.Helper()
	rows, err := s.DB().Query(`SELECT message_id FROM mailbox WHERE user_id = ? ORDER BY message_id`, user)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []timeline.MessageID
	for rows.Next() {
		var id timeline.MessageID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// pair applies every call to a store and to the in-memory reference.
type pair struct {
	t   *testing.T
	s   *active.Store
	mem timeline.Store
	ids map[timeline.MessageID]timeline.MessageID // s's ids -> mem's
}

func newPair(t *testing.T, s *active.Store) *pair {
	return &pair{t: t, s: s, mem: timeline.NewMemory(), ids: map[timeline.MessageID]timeline.MessageID{}}
}

func (p *pair) post(author timeline.UserID, n int) []timeline.Message {
	p.t.Helper()
	var out []timeline.Message
	for i := range n {
		body := fmt.Sprintf("%d says %d", author, len(p.ids)+i)
		a := timelinetest.Post(p.t, p.s, author, body)
		b := timelinetest.Post(p.t, p.mem, author, body)
		p.ids[a.ID] = b.ID
		out = append(out, a)
	}
	return out
}

func (p *pair) follow(follower, followee timeline.UserID) {
	p.t.Helper()
	timelinetest.Follow(p.t, p.s, follower, followee)
	timelinetest.Follow(p.t, p.mem, follower, followee)
}

func (p *pair) unfollow(follower, followee timeline.UserID) {
	p.t.Helper()
	timelinetest.Unfollow(p.t, p.s, follower, followee)
	timelinetest.Unfollow(p.t, p.mem, follower, followee)
}

// check requires users' timelines to equal the reference's, walked to
// their ends at page lengths that put the floor inside pages and on their
// edges.
func (p *pair) check(users ...timeline.UserID) {
	p.t.Helper()
	timelinetest.SameTimelines(p.t, p.s, p.mem, users, []int{1, 4, 7, 50}, p.ids)
}

// TestRebuild: posts to a reader who never read skip them and count the
// rows skipped; their first read rebuilds the newest Rebuild entries,
// pages below them come from the merge, and later posts fan out to them.
func TestRebuild(t *testing.T) {
	const rebuild = 5
	s := open(t, 0, rebuild, newClock())
	p := newPair(t, s)
	p.follow(1, 2)
	p.follow(1, 3)
	p.follow(4, 2)
	before := counters(s)
	p.post(2, 7)
	p.post(3, 6)
	wantDelta(t, "posts to readers who never read", before, s, map[string]int64{
		counter.SkippedRows: 7*2 + 6,
	})
	if got := mailbox(t, s, 1); len(got) != 0 {
		t.Fatalf("an inactive reader's mailbox holds %v", got)
	}

	before = counters(s)
	p.check(1)
	wantDelta(t, "the first read", before, s, map[string]int64{
		counter.Rebuilds: 1, counter.RebuildRows: rebuild,
	})
	active, floor := state(t, s, 1)
	box := mailbox(t, s, 1)
	if !active || len(box) != rebuild || floor != box[0] {
		t.Fatalf("after the rebuild: active %v, floor %d, mailbox %v; want active, %d rows from the floor", active, floor, box, rebuild)
	}
	if s.PullPages() == 0 {
		t.Fatal("no page came from the merge below the floor")
	}

	// User 1 is active now: posts fan out to them, not to user 4.
	before = counters(s)
	p.post(2, 2)
	wantDelta(t, "posts to one active reader", before, s, map[string]int64{
		counter.PushedRows: 2, counter.SkippedRows: 2,
	})
	if got := len(mailbox(t, s, 1)); got != rebuild+2 {
		t.Fatalf("the active reader's mailbox holds %d rows, want %d", got, rebuild+2)
	}
	p.check(1, 4)
}

// TestWindowExpiry moves the store's clock: a reader stays active while
// they read within the window, posts skip them once it has passed, and
// their next read rebuilds; follows and unfollows while inactive show on
// that read.
func TestWindowExpiry(t *testing.T) {
	const window = time.Hour
	c := newClock()
	s := open(t, window, 0, c)
	p := newPair(t, s)
	p.follow(1, 2)
	p.follow(1, 3)
	p.post(2, 1)
	p.check(1) // rebuild: user 1 is active

	// Reads within the window keep the user active.
	for range 4 {
		c.Advance(window / 2)
		p.check(1)
		before := counters(s)
		p.post(2, 1)
		wantDelta(t, "a post within the window", before, s, map[string]int64{counter.PushedRows: 1})
	}

	// A window without a read: the next post expires the user and
	// passes them over.
	c.Advance(window + time.Second)
	before := counters(s)
	p.post(3, 1)
	wantDelta(t, "a post after the window", before, s, map[string]int64{
		counter.Expired: 1, counter.SkippedRows: 1,
	})
	if active, _ := state(t, s, 1); active {
		t.Fatal("user 1 is still active after the window")
	}
	// While inactive: a follow backfills nothing, an unfollow removes
	// the followee's rows.
	p.post(4, 3)
	rows := len(mailbox(t, s, 1))
	p.follow(1, 4)
	if got := len(mailbox(t, s, 1)); got != rows {
		t.Fatalf("a follow by an inactive user wrote %d mailbox rows", got-rows)
	}
	p.unfollow(1, 2)
	if got := mailbox(t, s, 1); len(got) != 0 {
		t.Fatalf("after the unfollow of 2 the inactive mailbox holds %v, want nothing (3's post was skipped)", got)
	}
	before = counters(s)
	p.check(1)
	wantDelta(t, "the read after the window", before, s, map[string]int64{
		counter.Rebuilds: 1, counter.RebuildRows: 4, // 3's skipped post and 4's three
	})
	// Active again: a follow backfills.
	p.post(5, 2)
	p.follow(1, 5)
	if got := len(mailbox(t, s, 1)); got != 6 {
		t.Fatalf("after an active follow of 5 the mailbox holds %d rows, want 6", got)
	}
	p.check(1)
}

// TestRandomAgainstMemory applies a random stream of posts, follows,
// unfollows, reads and clock moves to a store with a small rebuild and
// to the in-memory reference, and compares every timeline throughout.
func TestRandomAgainstMemory(t *testing.T) {
	const users, window = 8, time.Hour
	c := newClock()
	s := open(t, window, 4, c)
	p := newPair(t, s)
	rng := rand.New(rand.NewPCG(7, 11))
	user := func() timeline.UserID { return timeline.UserID(1 + rng.IntN(users)) }
	for i := range 600 {
		switch k := rng.IntN(20); {
		case k < 10:
			p.post(user(), 1)
		case k < 13:
			if a, b := user(), user(); a != b {
				p.follow(a, b)
			}
		case k < 15:
			if a, b := user(), user(); a != b {
				p.unfollow(a, b)
			}
		case k < 18:
			u := user()
			if i%5 == 0 {
				p.check(u)
			} else {
				timelinetest.Newest(t, s, u)
			}
		default:
			c.Advance(time.Duration(rng.Int64N(int64(2 * window))))
		}
	}
	all := make([]timeline.UserID, users)
	for i := range all {
		all[i] = timeline.UserID(i + 1)
	}
	p.check(all...)
	got := counters(s)
	for _, k := range []string{counter.PushedRows, counter.SkippedRows, counter.Rebuilds, counter.Expired} {
		if got[k] == 0 {
			t.Fatalf("counters %v: no %s, the stream did not exercise the design", got, k)
		}
	}
}

// TestRebuildUnderConcurrentPosts races posts against the rebuilds of
// their followers' mailboxes (expired again and again by a moving clock)
// and then requires every timeline to equal the in-memory reference fed
// the same posts in id order: no post lost, none twice. Each author posts
// 60 times, and goes on, for a minute at most, until the counters show
// that posts raced rebuilds: a busy machine makes the race longer, not
// vacuous.
func TestRebuildUnderConcurrentPosts(t *testing.T) {
	const authors, readers, posts, window = 4, 6, 60, time.Minute
	c := newClock()
	s := open(t, window, 8, c)
	ctx := context.Background()
	mem := timeline.NewMemory()
	for r := authors + 1; r <= authors+readers; r++ {
		for a := 1; a <= authors; a++ {
			for _, st := range []timeline.Store{s, mem} {
				timelinetest.Follow(t, st, timeline.UserID(r), timeline.UserID(a))
			}
		}
	}
	var mu sync.Mutex
	var posted []timeline.Message
	var g errgroup.Group
	var done atomic.Int32
	raced := func() bool {
		got := counters(s)
		return got[counter.Rebuilds] >= readers*2 && got[counter.SkippedRows] > 0 && got[counter.PushedRows] > 0
	}
	start := time.Now()
	for a := 1; a <= authors; a++ {
		g.Go(func() error {
			defer done.Add(1)
			for i := 0; i < posts || (!raced() && time.Since(start) < time.Minute); i++ {
				m, err := s.Post(ctx, timeline.UserID(a), fmt.Sprintf("race %d", i))
				if err != nil {
					return err
				}
				mu.Lock()
				posted = append(posted, m)
				mu.Unlock()
			}
			return nil
		})
	}
	for r := authors + 1; r <= authors+readers; r++ {
		g.Go(func() error {
			for done.Load() < authors {
				if _, err := s.Timeline(ctx, timeline.UserID(r), timeline.Query{Limit: 3}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	g.Go(func() error { // expire everyone, again and again
		for done.Load() < authors {
			c.Advance(2 * window)
			if _, err := s.Expire(ctx); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if !raced() {
		t.Fatalf("counters %v: the posts did not race rebuilds", counters(s))
	}
	var below int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM mailbox b JOIN reader_state r ON r.user_id = b.user_id
		WHERE b.message_id < r.floor_id`).Scan(&below); err != nil {
		t.Fatal(err)
	}
	if below != 0 {
		t.Fatalf("%d mailbox rows below their user's floor", below)
	}
	// Walk the active readers' mailboxes as the race left them (no
	// rebuild before the walk), then everyone's against the reference.
	slices.SortFunc(posted, func(a, b timeline.Message) int { return int(a.ID) - int(b.ID) })
	ids := map[timeline.MessageID]timeline.MessageID{}
	for _, m := range posted {
		ids[m.ID] = timelinetest.Post(t, mem, m.Author, m.Body).ID
	}
	var us []timeline.UserID
	actives := 0
	for r := authors + 1; r <= authors+readers; r++ {
		u := timeline.UserID(r)
		if active, _ := state(t, s, u); active {
			actives++
			if n := len(timelinetest.WalkIDs(t, s, u, 7)); n != len(posted) {
				t.Fatalf("reader %d, active: %d messages, want %d", r, n, len(posted))
			}
		}
		us = append(us, u)
	}
	before := counters(s)
	timelinetest.SameTimelines(t, s, mem, us, []int{1, 5, 50}, ids)
	if d := delta(before, counters(s)); d[counter.Rebuilds] != int64(readers-actives) {
		t.Fatalf("%d readers were active after the race, and the walks rebuilt %d", actives, d[counter.Rebuilds])
	}
}

// TestBadOptions: every bad option or field is a *registry.OptionError,
// and creates no database.
func TestBadOptions(t *testing.T) {
	ctx := context.Background()
	for _, opts := range []map[string]string{
		{"window": "soon"}, {"window": "-1h"}, {"window": "1ns"}, {"window": "1000000h"},
		{"rebuild": "many"}, {"rebuild": "-3"}, {"rebuild": "100001"},
		{"active_reads": "x"}, {"active_reads": "-1"}, {"active_reads": "NaN"}, {"active_reads": "1e9"},
	} {
		db := testserver.Database(t)
		s, err := registry.OpenModel(ctx, active.ModelName, registry.Config{DSN: testserver.DSN(t), Database: db, Options: opts})
		if err == nil {
			s.Close()
			t.Fatalf("%v: opened", opts)
		}
		var oe *registry.OptionError
		if !errors.As(err, &oe) || !errors.Is(err, registry.ErrBadOption) {
			t.Fatalf("%v: error %v (%T) is not a *registry.OptionError matching ErrBadOption", opts, err, err)
		}
		var n int
		admin := testserver.Admin(t)
		defer admin.Close()
		if err := admin.QueryRow(`SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?`, db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%v: database %s was created", opts, db)
		}
	}
	for _, cfg := range []active.Config{{Window: -time.Second}, {Rebuild: -1}, {ActiveReads: -2}} {
		cfg.Config = push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)}
		var oe *registry.OptionError
		if _, err := active.Open(ctx, cfg); !errors.As(err, &oe) {
			t.Fatalf("%+v: error %v, want a *registry.OptionError", cfg, err)
		}
	}
}

// TestMailboxShape: a bulk load makes the users active by the store's
// activity level, ActiveReads.
func TestMailboxShape(t *testing.T) {
	shape := open(t, 0, 0, nil).MailboxShape()
	if shape.ActiveReads != active.DefaultActiveReads || shape.Cap != 0 || shape.PullAuthor != nil || shape.PushEdge != nil || shape.Whole() {
		t.Fatalf("shape with %g active reads: want the default %g alone", shape.ActiveReads, active.DefaultActiveReads)
	}
}
