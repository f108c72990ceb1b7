// Package reconciletest is the kit the designs' reconciliation tests are
// written with: a small world written through a store, drift made on
// purpose, and a check that reconcile finds exactly that drift and that a
// repair removes it, while posts and follows run concurrently; and Cost,
// which the benchmarks measure a check's load on live traffic with.
package reconciletest

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// Users are the users of the world: each follows the next four (cyclic)
// and Celebrity; each posts PostsEach messages.
const (
	Users     = 12
	Celebrity = timeline.UserID(Users)
	PostsEach = 3
	// Newcomers are the authors the concurrent traffic follows and posts
	// as (ids above Users), so that it never touches a pair a test
	// corrupts.
	firstNewcomer = timeline.UserID(100)
	newcomers     = 4
)

// World is what Build wrote.
type World struct {
	Follows map[timeline.UserID][]timeline.UserID
	Posts   map[timeline.UserID][]timeline.MessageID
}

// Followed reports whether user follows author in the world.
func (w World) Followed(user, author timeline.UserID) bool {
	return slices.Contains(w.Follows[user], author)
}

// Followers returns author's followers in the world, ascending.
func (w World) Followers(author timeline.UserID) []timeline.UserID {
	var out []timeline.UserID
	for _, u := range slices.Sorted(maps.Keys(w.Follows)) {
		if w.Followed(u, author) {
			out = append(out, u)
		}
	}
	return out
}

// Build writes the world through s: the follows, then the posts, then a
// read of every timeline (which makes every reader active where that
// matters), and settles s.
func Build(t *testing.T, s timeline.Store) World {
	t.Helper()
	w := World{Follows: map[timeline.UserID][]timeline.UserID{}, Posts: map[timeline.UserID][]timeline.MessageID{}}
	for u := timeline.UserID(1); u <= Users; u++ {
		for k := timeline.UserID(1); k <= 4; k++ {
			a := (u+k-1)%Users + 1
			if a != u && a != Celebrity {
				w.Follows[u] = append(w.Follows[u], a)
			}
		}
		if u != Celebrity {
			w.Follows[u] = append(w.Follows[u], Celebrity)
		}
		slices.Sort(w.Follows[u])
		for _, a := range w.Follows[u] {
			timelinetest.Follow(t, s, u, a)
		}
	}
	for range PostsEach {
		for u := timeline.UserID(1); u <= Users; u++ {
			w.Posts[u] = append(w.Posts[u], timelinetest.Post(t, s, u, fmt.Sprintf("from %d", u)).ID)
		}
	}
	timelinetest.Settle(t, s)
	for u := timeline.UserID(1); u <= Users; u++ {
		timelinetest.Newest(t, s, u)
	}
	return w
}

// Open opens a store of model through the registry, closed when t ends,
// and its checker as the model declares it.
func Open(t *testing.T, model string, cfg registry.Config) (timeline.Store, reconcile.Checker) {
	t.Helper()
	m, err := registry.Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := m.Checker(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// Exec runs a statement that corrupts a view, failing t on error.
func Exec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(timelinetest.Context(t), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// MailboxDrift corrupts push's mailbox table of a store of w: a row
// deleted, a row of an author the reader does not follow, and a row of a
// message deleted through s; and returns that drift. keep reports whether
// a message must be in user's mailbox by the design's rule (the row
// deleted is one).
func MailboxDrift(t *testing.T, s timeline.Store, db *sql.DB, w World, view string) []reconcile.Drift {
	t.Helper()
	// User 1's row of a message of user 2, whom they follow.
	gone := w.Posts[2][0]
	Exec(t, db, `DELETE FROM mailbox WHERE user_id = 1 AND message_id = ?`, gone)
	// User 3 does not follow user 9.
	if w.Followed(3, 9) {
		t.Fatal("the world changed: user 3 follows user 9")
	}
	stray := w.Posts[9][1]
	Exec(t, db, `INSERT INTO mailbox (user_id, message_id) VALUES (3, ?)`, stray)
	// A message of user 6 deleted, and its row put back in a follower's
	// mailbox.
	dead := w.Posts[6][2]
	timelinetest.Delete(t, s, 6, dead)
	Exec(t, db, `INSERT IGNORE INTO mailbox (user_id, message_id) VALUES (5, ?)`, dead)
	return []reconcile.Drift{
		{Kind: reconcile.Missing, View: view, User: 1, Item: int64(gone)},
		{Kind: reconcile.Unfollowed, View: view, User: 3, Item: int64(stray)},
		{Kind: reconcile.Deleted, View: view, User: 5, Item: int64(dead)},
	}
}

// JobDrift corrupts the mailboxes of push-async's fan-out queue
// (fanout_jobs) in a store of w: a job of user 10's applied to two of
// their four followers and then lost, and a job of user 11's put back in
// the queue with its cursor past a follower whose row it did not write;
// and returns that drift. The row the queued job has still to write is
// not drift.
func JobDrift(t *testing.T, db *sql.DB, w World, view string) []reconcile.Drift {
	t.Helper()
	// User 10's followers are 6 to 9: a job of one of their messages
	// applied to 6 and 7, then lost.
	lost := w.Posts[10][1]
	if got := w.Followers(10); len(got) != 4 || got[0] != 6 || got[3] != 9 {
		t.Fatalf("the world changed: followers of 10 are %v", got)
	}
	Exec(t, db, `DELETE FROM mailbox WHERE message_id = ? AND user_id IN (8, 9)`, lost)
	// User 11's followers are 7 to 10: a job whose cursor passed 8
	// without writing its row; 10's row is the job's to write.
	queued := w.Posts[11][0]
	Exec(t, db, `DELETE FROM mailbox WHERE message_id = ? AND user_id IN (8, 10)`, queued)
	Exec(t, db, `INSERT INTO fanout_jobs (message_id, author_id, done_through, posted_at) VALUES (?, 11, 8, ?)`,
		queued, time.Now().UTC())
	return []reconcile.Drift{
		{Kind: reconcile.Missing, View: view, User: 8, Item: int64(lost)},
		{Kind: reconcile.Missing, View: view, User: 9, Item: int64(lost)},
		{Kind: reconcile.Missing, View: view, User: 8, Item: int64(queued)},
	}
}

// Case is one design's test.
type Case struct {
	Store   timeline.Store
	Checker reconcile.Checker
	// Corrupt makes drift in the views of the world's users and
	// returns it.
	Corrupt func(t *testing.T, w World) []reconcile.Drift
	// QuietWorld: the world's users do not post during the walks (the
	// newcomers still post, and follow and are followed), for views that
	// any post of a followee replaces whole, such as a cached page.
	QuietWorld bool
}

// Run builds the world through c.Store, checks that reconcile finds no
// drift, corrupts it, and then, while a goroutine posts and follows (as
// the newcomers, never touching what was corrupted), checks that a check
// finds exactly the drift made, that a repair finds it again and leaves
// none, that a repeated repair changes nothing, and that, once the traffic
// stops, every timeline is what the record says.
func Run(t *testing.T, c Case) {
	w := Build(t, c.Store)
	ctx := timelinetest.Context(t)
	if r := walk(t, c.Checker, false, nil); len(r.Drift) != 0 {
		t.Fatalf("drift in a store nobody corrupted: %v", r.Drift)
	}
	want := c.Corrupt(t, w)
	if len(want) == 0 {
		t.Fatal("the corruption made no drift")
	}

	// The traffic lives until stopped (or the test ends), not for one
	// call's deadline: on a loaded machine the walks take minutes.
	tr := startTraffic(t.Context(), c.Store, c.QuietWorld)
	found := walk(t, c.Checker, false, tr)
	sameDrift(t, "check", found.Drift, want)
	if found.Repaired != 0 {
		t.Errorf("a check repaired %d entries", found.Repaired)
	}
	if _, left := found.Found(); left != int64(len(want)) {
		t.Errorf("a check leaves %d of %d drift items", left, len(want))
	}
	repaired := walk(t, c.Checker, true, tr)
	sameDrift(t, "repair", repaired.Drift, want)
	if _, left := repaired.Found(); left != 0 {
		t.Errorf("the repair left drift: %+v", repaired.Counts)
	}
	if repaired.Repaired == 0 {
		t.Errorf("the repair changed nothing for %d drift items", len(want))
	}
	// Repairing what is repaired changes nothing.
	for _, u := range usersOf(want) {
		var mine []reconcile.Drift
		for _, d := range want {
			if d.User == u {
				mine = append(mine, d)
			}
		}
		n, err := c.Checker.Repair(ctx, u, mine)
		if err != nil {
			t.Fatalf("repeated repair of user %d: %v", u, err)
		}
		if n != 0 {
			t.Errorf("a repeated repair of user %d changed %d entries", u, n)
		}
	}
	ops := tr.stop(t)
	if ops == 0 {
		t.Fatal("no traffic ran during the walks")
	}
	timelinetest.Settle(t, c.Store)
	if r := walk(t, c.Checker, false, nil); len(r.Drift) != 0 {
		t.Errorf("drift after the repair and %d concurrent writes: %v", ops, r.Drift)
	}
	users := append(slices.Sorted(maps.Keys(w.Follows)), Celebrity)
	for k := range newcomers {
		users = append(users, firstNewcomer+timeline.UserID(k))
	}
	for _, u := range users {
		if got, want := timelinetest.WalkIDs(t, c.Store, u, 7), RecordTimeline(t, c.Store, u); !slices.Equal(got, want) {
			t.Errorf("timeline of %d after the repair:\n got %v\nwant %v (the record's)", u, got, want)
		}
	}
}

// walk runs reconcile over every user in batches of 3 with no rate limit.
// With traffic, every batch waits for two more of its writes, so that the
// writes interleave with the walk.
func walk(t *testing.T, c reconcile.Checker, repair bool, tr *traffic) reconcile.Report {
	t.Helper()
	opts := reconcile.Options{Batch: 3, Rate: math.Inf(1), Repair: repair}
	if tr != nil {
		opts.Progress = func(reconcile.Report) { tr.await(2) }
	}
	r, err := reconcile.Run(timelinetest.Context(t), c, opts)
	if tr != nil {
		if stacks, err := tr.failure(); err != nil {
			if len(stacks) > 0 {
				t.Logf("the goroutines when the traffic stalled:\n%s", stacks)
			}
			t.Fatalf("reconcile (repair %v) under traffic: %v", repair, err)
		}
	}
	if err != nil {
		t.Fatalf("reconcile (repair %v): %v", repair, err)
	}
	if !r.Complete || r.Truncated {
		t.Fatalf("reconcile stopped: %+v", r)
	}
	if r.Rows == 0 {
		t.Fatalf("reconcile read no rows")
	}
	return r
}

// sameDrift fails t unless got and want are the same drift items, by key.
func sameDrift(t *testing.T, what string, got, want []reconcile.Drift) {
	t.Helper()
	keys := func(ds []reconcile.Drift) []string {
		var out []string
		for _, d := range ds {
			k := d
			k.Have, k.Want = 0, 0
			out = append(out, k.String())
		}
		slices.Sort(out)
		return out
	}
	if g, w := keys(got), keys(want); !slices.Equal(g, w) {
		t.Errorf("%s found:\n  %v\nwant exactly the drift made:\n  %v", what, g, w)
	}
}

func usersOf(ds []reconcile.Drift) []timeline.UserID {
	var us []timeline.UserID
	for _, d := range ds {
		us = append(us, d.User)
	}
	slices.Sort(us)
	return slices.Compact(us)
}

// RecordTimeline is user's timeline as the record says: every message of
// every author they follow (as s lists them), newest first.
func RecordTimeline(t *testing.T, s timeline.Store, user timeline.UserID) []timeline.MessageID {
	ctx := timelinetest.Context(t)
	var all []timeline.MessageID
	followees := timelinetest.FollowList(t, func(u timeline.UserID, q timeline.FollowQuery) (timeline.FollowPage, error) {
		return s.Followees(ctx, u, q)
	}, user, 50)
	for _, a := range followees {
		all = append(all, timelinetest.WalkAuthor(t, s, a, 50)...)
	}
	slices.Sort(all)
	slices.Reverse(all)
	return all
}

// traffic posts and follows as the newcomers until stopped: newcomers
// follow the world's users and post; the world's users post (unless the
// world is quiet), and follow newcomers. None of it touches a pair the corruptions
// use (the world's users among themselves).
//
// It writes as far as the walk lets it (await): a few writes a batch,
// some of which run while the next batch is checked, rather than as fast
// as the machine goes, which on a loaded machine would push memcached's
// and Redis's answers past their clients' deadlines and fence them.
//
// Every wait on it is bounded: a traffic that ends before it is stopped
// (its context's deadline, an error) or makes no write within awaitLimit
// records why as its failure, and the walk waiting on it fails with that.
type traffic struct {
	cancel   context.CancelFunc
	done     chan struct{}
	ops      atomic.Int64
	tokens   chan struct{} // one per write the walk lets the traffic make
	progress chan struct{} // a write finished since the last receive
	stopped  atomic.Bool
	mu       sync.Mutex
	err      error
	stacks   []byte // every goroutine's stack when a write stalled
}

// trafficAhead is how many writes the traffic may make before the walk's
// first batch, and how many more than it waits for after each.
const trafficAhead = 4

// awaitLimit bounds how long await waits for a write to finish: long
// enough for a write that waits out a lock on a loaded machine (InnoDB
// gives up on one after 50 s), short of the package's deadline, so that a
// write that never returns fails the test with the goroutines' stacks
// rather than hanging it.
var awaitLimit = 4 * time.Minute

func startTraffic(ctx context.Context, s timeline.Store, quiet bool) *traffic {
	ctx, cancel := context.WithCancel(ctx)
	tr := &traffic{cancel: cancel, done: make(chan struct{}),
		tokens: make(chan struct{}, 4*trafficAhead), progress: make(chan struct{}, 1)}
	tr.grant(trafficAhead)
	go func() {
		defer close(tr.done)
		defer func() {
			if !tr.stopped.Load() {
				tr.fail(fmt.Errorf("the traffic ended after %d writes before it was stopped: %v", tr.ops.Load(), context.Cause(ctx)), nil)
			}
		}()
		for i := 0; ctx.Err() == nil; i++ {
			select {
			case <-tr.tokens:
			case <-ctx.Done():
				return
			}
			nc := firstNewcomer + timeline.UserID(i%newcomers)
			u := timeline.UserID(i%Users) + 1
			var err error
			switch i % 4 {
			case 0:
				_, err = s.Post(ctx, nc, fmt.Sprintf("newcomer %d, %d", nc, i))
			case 1:
				err = s.Follow(ctx, u, nc)
			case 2:
				if quiet {
					_, err = s.Post(ctx, nc, fmt.Sprintf("newcomer %d, %d", nc, i))
				} else {
					_, err = s.Post(ctx, u, fmt.Sprintf("world %d, %d", u, i))
				}
			case 3:
				err = s.Follow(ctx, nc, u)
			}
			if err != nil && ctx.Err() == nil {
				tr.fail(fmt.Errorf("traffic op %d: %w", i, err), nil)
				return
			}
			tr.ops.Add(1)
			select {
			case tr.progress <- struct{}{}:
			default:
			}
		}
	}()
	return tr
}

// fail records err as the traffic's failure, with the goroutines' stacks
// at that moment when given, unless it has one.
func (tr *traffic) fail(err error, stacks []byte) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.err == nil {
		tr.err, tr.stacks = err, stacks
	}
}

// failure is the stacks recorded with the traffic's failure, and why it
// failed (nil if it did not).
func (tr *traffic) failure() ([]byte, error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.stacks, tr.err
}

// grant lets the traffic make n more writes (fewer if it is that far
// behind already).
func (tr *traffic) grant(n int64) {
	for range n {
		select {
		case tr.tokens <- struct{}{}:
		default:
			return
		}
	}
}

// await lets the traffic make n + trafficAhead more writes and returns
// once n of them have finished, the traffic has ended, or no write has
// finished for awaitLimit (then recorded as its failure).
func (tr *traffic) await(n int64) {
	tr.grant(n + trafficAhead)
	target := tr.ops.Load() + n
	limit := time.NewTimer(awaitLimit)
	defer limit.Stop()
	for tr.ops.Load() < target {
		select {
		case <-tr.progress:
			limit.Reset(awaitLimit)
		case <-tr.done:
			return
		case <-limit.C:
			buf := make([]byte, 1<<20)
			tr.fail(fmt.Errorf("no write of the traffic finished within %v (%d made, waiting for %d)", awaitLimit, tr.ops.Load(), target),
				buf[:runtime.Stack(buf, true)])
			return
		}
	}
}

// stop ends the traffic and returns how many writes it made; it fails t
// if the traffic failed or does not end within awaitLimit.
func (tr *traffic) stop(t *testing.T) int64 {
	t.Helper()
	tr.stopped.Store(true)
	tr.cancel()
	select {
	case <-tr.done:
	case <-time.After(awaitLimit):
		t.Fatalf("the traffic did not stop within %v", awaitLimit)
	}
	if _, err := tr.failure(); err != nil {
		t.Fatal(err)
	}
	return tr.ops.Load()
}

// RaiseFloor sets user's floor_id in table to the second message of
// user 1 (every world user has rows below it) and returns the rows it
// leaves below the floor, each Extra in view.
func RaiseFloor(t *testing.T, db *sql.DB, w World, table string, user timeline.UserID, view string) []reconcile.Drift {
	t.Helper()
	floor := w.Posts[1][1]
	Exec(t, db, `UPDATE `+table+` SET floor_id = ? WHERE user_id = ?`, floor, user)
	rows, err := db.QueryContext(timelinetest.Context(t), `SELECT message_id FROM mailbox WHERE user_id = ? AND message_id < ?`, user, floor)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var drift []reconcile.Drift
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		drift = append(drift, reconcile.Drift{Kind: reconcile.Extra, View: view, User: user, Item: id})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(drift) == 0 {
		t.Fatalf("no rows of user %d below %d", user, floor)
	}
	return drift
}
