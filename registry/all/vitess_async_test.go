package all_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/internal/vtstats"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/push/async"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// celebrityFollowers is BenchmarkVitessCelebrity's audience.
var celebrityFollowers = flag.Int("celebrity", 100000, "followers of the author in BenchmarkVitessCelebrity")

// addFollowers makes users first, first+1, ... (n of them) follow author,
// straight into both follow tables through vtgate, 2,000 rows a
// statement.
func addFollowers(t testing.TB, db *sql.DB, author timeline.UserID, first, n int) {
	t.Helper()
	ctx := context.Background()
	for lo := 0; lo < n; lo += 2000 {
		hi := min(n, lo+2000)
		follows := []byte(`INSERT INTO follows (follower_id, followee_id) VALUES `)
		followers := []byte(`INSERT INTO followers (followee_id, follower_id) VALUES `)
		for i := lo; i < hi; i++ {
			if i > lo {
				follows, followers = append(follows, ','), append(followers, ',')
			}
			follows = fmt.Appendf(follows, "(%d,%d)", first+i, author)
			followers = fmt.Appendf(followers, "(%d,%d)", author, first+i)
		}
		for _, q := range [][]byte{follows, followers} {
			if _, err := db.ExecContext(ctx, string(q)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// mailboxCount counts the mailboxes that hold message id (a query over
// every shard: a test's, not a store's).
func mailboxCount(t testing.TB, db *sql.DB, id timeline.MessageID) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM mailbox WHERE message_id = ?`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// snapshot reads the test vtgate's counts.
func snapshot(t testing.TB) vtstats.Snapshot {
	t.Helper()
	s, err := vtstats.Read(context.Background(), testserver.VtgateStatus(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// celebrityStore opens a push-async@vitess store that runs no workers, on
// a keyspace of its own, with chunks of chunk followers and n users
// (1000, 1001, ...) following author; and pools on each of its shards
// for the workers a test runs itself. Both close when t ends.
func celebrityStore(t *testing.T, chunk, n int, author timeline.UserID) (*async.VitessStore, push.Config, []async.Shard) {
	t.Helper()
	ctx := context.Background()
	cfg := push.Config{DSN: testserver.Vtgate(t), Database: testserver.Keyspace(t), VtgateStatus: testserver.VtgateStatus(t)}
	s, err := async.OpenVitess(ctx, cfg, async.Options{Workers: -1, Chunk: chunk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	addFollowers(t, s.DB(), author, 1000, n)
	shards, err := async.OpenShards(ctx, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, shard := range shards {
			shard.DB.Close()
		}
	})
	return s, cfg, shards
}

// drainVitess applies chunks with w until no job is left, and returns
// how many it applied.
func drainVitess(t *testing.T, w *async.VitessWorker) int {
	t.Helper()
	steps := 0
	for {
		worked, err := w.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !worked {
			return steps
		}
		steps++
	}
}

// TestVitessCelebrity: push-async@vitess fans out a post by an author of
// 2,500 followers in chunks, each a transaction on the author's shard and
// one statement on each follower shard, none spanning two shards. The
// post itself is one transaction on the author's shard. While a chunk's
// transaction is open, a follow and an unfollow of the author, a post by
// the author and a page of a follower complete (each under a 30 s
// deadline, which a wait for the chunk would exceed, since the chunk
// waits for them). Once settled, exactly the author's followers hold the
// message, the new follower by the follow's backfill.
func TestVitessCelebrity(t *testing.T) {
	ctx := context.Background()
	const chunk, n, author = 500, 2500, timeline.UserID(1)
	s, cfg, shards := celebrityStore(t, chunk, n, author)
	keyspace := cfg.Database

	before := snapshot(t)
	msg := timelinetest.Post(t, s, author, "to the many")
	post := snapshot(t).Sub(before)
	if got := post.Touched(keyspace); len(got) != 1 {
		t.Errorf("the post touched shards %v of the keyspace, want the author's alone", got)
	}
	if c := post.Keyspace(schema.SequenceKeyspace); c.Sequence != 1 {
		t.Errorf("the post's sequence calls: %v, want one value", c)
	}
	if post.CrossShard() != 0 {
		t.Errorf("the post's transaction spanned shards: %v", post.Transactions)
	}

	stats := async.NewStats()
	var once sync.Once
	var during []string // what failed while the chunk was open
	var theirs int64    // the cross-shard transactions of the follow and unfollow
	w := &async.VitessWorker{DB: s.DB(), Shards: shards, Chunk: chunk, Stats: stats, Between: func() {
		once.Do(func() {
			deadline, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			before := snapshot(t)
			defer func() { theirs = snapshot(t).Sub(before).CrossShard() }()
			if err := s.Follow(deadline, 7, author); err != nil {
				during = append(during, fmt.Sprintf("follow: %v", err))
			}
			if err := s.Unfollow(deadline, 1000+n-1, author); err != nil { // a follower of a later chunk
				during = append(during, fmt.Sprintf("unfollow: %v", err))
			}
			if _, err := s.Post(deadline, author, "meanwhile"); err != nil {
				during = append(during, fmt.Sprintf("post: %v", err))
			}
			if _, err := s.Timeline(deadline, 1000, timeline.Query{}); err != nil {
				during = append(during, fmt.Sprintf("page: %v", err))
			}
		})
	}}
	before = snapshot(t)
	steps := drainVitess(t, w)
	work := snapshot(t).Sub(before)
	if len(during) > 0 {
		t.Fatalf("while a chunk was open: %v", during)
	}
	if steps < n/chunk {
		t.Errorf("%d chunks for %d followers in chunks of %d", steps, n, chunk)
	}
	if work.CrossShard() != theirs {
		t.Errorf("the workers' transactions spanned shards: %v, of which %d the follow's and unfollow's", work.Transactions, theirs)
	}
	timelinetest.Settle(t, s)
	if got := mailboxCount(t, s.DB(), msg.ID); got != n {
		t.Errorf("%d mailboxes hold the post, want %d: the followers, one gone, one new", got, n)
	}
	for _, u := range []timeline.UserID{7, 1000, 1000 + n - 2} {
		if got := timelinetest.IDs(timelinetest.Walk(t, s, u, 10)); len(got) == 0 || got[len(got)-1] != msg.ID {
			t.Errorf("user %d reads %v, want the post last", u, got)
		}
	}
	if got := timelinetest.IDs(timelinetest.Walk(t, s, 1000+n-1, 10)); len(got) != 0 {
		t.Errorf("the unfollower reads %v", got)
	}
	c := stats.Counters()
	t.Logf("%d followers in %d chunks: %v, the workers' calls %v, longest worker transaction %v",
		n, steps, c, work.Keyspace(keyspace), stats.Longest())
}

// BenchmarkVitessCelebrity posts, once per iteration, by an author of
// -celebrity followers (100,000 unless told) on push-async@vitess with its
// default workers and chunk, while one goroutine follows the author with
// new users, one after another, each under a 5 s deadline. It reports the
// post's fan-out lag, the longest transaction the workers timed, the
// tablets' transactions over a second, the follows made and the slowest
// of them, and the follows that missed their deadline.
//
//	go test ./registry/all -run '^$' -bench VitessCelebrity -benchtime 1x
func BenchmarkVitessCelebrity(b *testing.B) {
	ctx := context.Background()
	keyspace := testserver.Keyspace(b)
	cfg := push.Config{DSN: testserver.Vtgate(b), Database: keyspace, VtgateStatus: testserver.VtgateStatus(b)}
	s, err := async.OpenVitess(ctx, cfg, async.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const author = timeline.UserID(1)
	n := *celebrityFollowers
	start := time.Now()
	addFollowers(b, s.DB(), author, 10_000_000, n)
	b.Logf("%d followers loaded in %v", n, time.Since(start).Round(time.Millisecond))
	s.TakeLag()
	before := snapshot(b)
	b.ResetTimer()
	var follows, missed int
	var slowest time.Duration
	for i := range b.N {
		msg, err := s.Post(ctx, author, fmt.Sprintf("to the many, %d", i))
		if err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for u := timeline.UserID(20_000_000 + i*100_000); ; u++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				deadline, cancel := context.WithTimeout(ctx, 5*time.Second)
				err := s.Follow(deadline, u, author)
				cancel()
				slowest = max(slowest, time.Since(t0))
				follows++
				if err != nil {
					missed++
				}
			}
		})
		timelinetest.Settle(b, s)
		close(stop)
		wg.Wait()
		if got, want := mailboxCount(b, s.DB(), msg.ID), n+follows; got < n || got > want {
			b.Fatalf("%d mailboxes hold the post, want %d to %d", got, n, want)
		}
	}
	b.StopTimer()
	work := snapshot(b).Sub(before)
	lag := s.TakeLag()
	b.ReportMetric(float64(lag.Max())/1e6, "lag-s")
	b.ReportMetric(float64(n)/(float64(lag.Max())/1e6), "rows/s")
	b.ReportMetric(float64(s.Stats().Longest().Milliseconds()), "longest-tx-ms")
	b.ReportMetric(float64(work.Keyspace(keyspace).Long), "tx-over-1s")
	b.ReportMetric(float64(follows), "follows")
	b.ReportMetric(float64(slowest.Milliseconds()), "slowest-follow-ms")
	b.ReportMetric(float64(missed), "follows-missed")
	b.Logf("%d followers: lag %v, counts %v; the keyspace's tablets %v; cross-shard transactions %d",
		n, time.Duration(lag.Max())*time.Microsecond, s.Stats().Counters(), work.Keyspace(keyspace), work.CrossShard())
}

// TestVitessHashShards: the shards push-async@vitess's workers compute
// for users themselves (async.HashShards) are those vtgate names for them
// (async.ShardsOf), for small ids and large.
func TestVitessHashShards(t *testing.T) {
	s, _, shards := celebrityStore(t, 1000, 0, 1)
	var names []string
	for _, shard := range shards {
		names = append(names, shard.Name)
	}
	var users []uint64
	for i := range uint64(1000) {
		users = append(users, i+1, 1<<40+i*7919, math.MaxUint64-i)
	}
	ours, err := async.HashShards(names, users)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := async.ShardsOf(context.Background(), s.DB(), users)
	if err != nil {
		t.Fatal(err)
	}
	if len(theirs) != len(shards) {
		t.Fatalf("vtgate places %d users on %d shards, want all %d", len(users), len(theirs), len(shards))
	}
	for _, name := range names {
		a, b := slices.Sorted(slices.Values(ours[name])), slices.Sorted(slices.Values(theirs[name]))
		if !slices.Equal(a, b) {
			t.Errorf("shard %s: %d users computed, %d by vtgate, not the same", name, len(a), len(b))
		}
	}
}

// smallPosts makes each of authors first, first+1, ... (n of them) the
// followee of `each` users of its own (from 100,000 on) and posts once
// by each, and returns the posts, oldest first.
func smallPosts(t *testing.T, s *async.VitessStore, first timeline.UserID, n, each int) []timeline.Message {
	t.Helper()
	var posts []timeline.Message
	for i := range n {
		a := first + timeline.UserID(i)
		addFollowers(t, s.DB(), a, 100_000+int(a)*100, each)
		posts = append(posts, timelinetest.Post(t, s, a, fmt.Sprintf("small %d", i)))
	}
	return posts
}

// TestVitessWorkerBatches: a push-async@vitess worker applies the jobs of
// many small posts (30 authors of 5 followers each, on one shard or the
// other) in one chunk: one transaction on each author shard that holds
// jobs, and one statement on each follower shard, where a worker that
// took one job per transaction would need 30. Every follower then holds
// their author's post, and no transaction spanned two shards.
func TestVitessWorkerBatches(t *testing.T) {
	ctx := context.Background()
	const posts, each = 30, 5
	s, cfg, shards := celebrityStore(t, 1000, 0, 1)
	msgs := smallPosts(t, s, 10, posts, each)
	stats := async.NewStats()
	w := &async.VitessWorker{DB: s.DB(), Shards: shards, Stats: stats}
	before := snapshot(t)
	for range shards { // a step takes the jobs of one shard
		if _, err := w.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	work := snapshot(t).Sub(before)
	if pending, err := async.Pending(ctx, s.DB()); err != nil || pending != 0 {
		t.Fatalf("after one step on each of %d shards: %d of %d jobs pending (%v), want none", len(shards), pending, posts, err)
	}
	c := stats.Counters()
	if c[counter.FanoutChunks] > int64(len(shards)) || c[counter.FanoutJobs] != posts || c[counter.FanoutRows] != posts*each {
		t.Errorf("worker counts %v: want %d jobs and %d rows in at most %d chunks", c, posts, posts*each, len(shards))
	}
	if c[counter.FanoutLooks] < c[counter.FanoutChunks] || c[counter.FanoutWriteMicros] <= 0 || c[counter.FanoutCommitMicros] <= 0 {
		t.Errorf("worker counts %v: want a look for each chunk, and the times of its writes and commit", c)
	}
	// A chunk commits on its author shard, and each statement on a
	// follower shard commits by itself.
	most := int64(len(shards) * (1 + len(shards)))
	if commits := work.Keyspace(cfg.Database).Commits; commits > most {
		t.Errorf("the tablets committed %d transactions for %d jobs, want at most %d", commits, posts, most)
	}
	if work.CrossShard() != 0 {
		t.Errorf("the worker's transactions spanned shards: %v", work.Transactions)
	}
	for _, m := range msgs {
		if got := mailboxCount(t, s.DB(), m.ID); got != each {
			t.Errorf("%d mailboxes hold post %d of user %d, want %d", got, m.ID, m.Author, each)
		}
	}
	t.Logf("%d jobs: worker counts %v, the keyspace's tablets %v", posts, c, work.Keyspace(cfg.Database))
}

// TestVitessWorkerStoppedMidChunk: a push-async@vitess worker stopped
// after writing a chunk's mailbox rows, before its transaction commits,
// leaves every job of the chunk where it was (small posts applied whole
// and a large one's first followers); another worker applies them from
// there, and every follower holds each post once.
func TestVitessWorkerStoppedMidChunk(t *testing.T) {
	ctx := context.Background()
	const chunk, n, author, small, each = 100, 300, timeline.UserID(1), 4, 5
	s, _, shards := celebrityStore(t, chunk, n, author)
	first := smallPosts(t, s, 10, small, each)
	msg := timelinetest.Post(t, s, author, "once each")
	// Both shards hold jobs: stop the worker in the chunk of the shard
	// that holds the large one, after the other's chunk commits.
	wctx, stop := context.WithCancel(ctx)
	killed := &async.VitessWorker{DB: s.DB(), Shards: shards, Chunk: chunk}
	killed.Between = func() {
		if mailboxCount(t, s.DB(), msg.ID) > 0 {
			stop()
		}
	}
	var err error
	for range 2 * len(shards) {
		if _, err = killed.Step(wctx); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("a worker stopped inside its chunk reported no error")
	}
	written := mailboxCount(t, s.DB(), msg.ID)
	if pending, err := async.Pending(ctx, s.DB()); err != nil || pending < 1 || written == 0 {
		t.Fatalf("after the stopped chunk: %d jobs pending (%v), %d mailbox rows; want the jobs left and the chunk's rows written", pending, err, written)
	}
	drainVitess(t, &async.VitessWorker{DB: s.DB(), Shards: shards, Chunk: chunk})
	timelinetest.Settle(t, s)
	if got := mailboxCount(t, s.DB(), msg.ID); got != n {
		t.Errorf("%d mailboxes hold the post, want %d", got, n)
	}
	for _, m := range first {
		if got := mailboxCount(t, s.DB(), m.ID); got != each {
			t.Errorf("%d mailboxes hold post %d, want %d", got, m.ID, each)
		}
	}
}
