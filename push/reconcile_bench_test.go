package push_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// BenchmarkReconcile measures what reconcile costs on push: the rows a
// check reads a second with no rate limit and no other load, and the
// latency of live traffic (newest pages and posts, closed loop) in windows
// without a check and with one running, alternated, for the default rate
// and batch and for others beside them, in one run. Run it once:
// go test ./push -run '^$' -bench Reconcile -benchtime 1x -timeout 30m
func BenchmarkReconcile(b *testing.B) {
	const (
		users    = 3000
		follows  = 20 // followees per user
		posts    = 10 // messages per user
		clients  = 4
		windows  = 6 // alternated: without, with, without, ...
		window   = 10 * time.Second
		postEach = 10 // one operation in postEach is a post
	)
	ctx := context.Background()
	s, err := push.Open(ctx, push.Config{DSN: testserver.DSN(b), Database: testserver.Database(b), MaxConns: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	load(b, s.DB(), users, follows, posts)
	c, err := push.Checker(s)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		// Throughput alone, twice (the first warms the buffer pool).
		var alone reconcile.Report
		for range 2 {
			if alone, err = reconcile.Run(ctx, c, reconcile.Options{Rate: math.Inf(1)}); err != nil {
				b.Fatal(err)
			}
		}
		if found, _ := alone.Found(); found != 0 {
			b.Fatalf("drift in a loaded database: %+v", alone.Counts)
		}
		b.ReportMetric(alone.RowsPerSecond, "rows/s-alone")
		b.Logf("check alone: %d users, %d rows in %.2f s: %.0f rows/s", alone.Users, alone.Rows, alone.Seconds, alone.RowsPerSecond)

		for _, o := range []reconcile.Options{
			{Rate: reconcile.DefaultRate, Batch: reconcile.DefaultBatch},
			{Rate: reconcile.DefaultRate, Batch: 10},
			{Rate: 5000, Batch: 10},
		} {
			interference(b, s, c, o, users, clients, windows, window, postEach)
		}
	}
}

// interference runs traffic on s in windows, alternately without and with
// a check of opts beside it, and reports the traffic's rate and p99 in
// each.
func interference(b *testing.B, s *push.Store, c reconcile.Checker, opts reconcile.Options, users, clients, windows int, window time.Duration, postEach int) {
	ctx := context.Background()
	hist := map[bool]*hdrhistogram.Histogram{false: newHist(), true: newHist()}
	ops := map[bool]int64{}
	var rows atomic.Int64
	for w := range windows {
		with := w%2 == 1
		wctx, cancel := context.WithTimeout(ctx, window)
		var wg sync.WaitGroup
		if with {
			wg.Go(func() {
				for wctx.Err() == nil {
					r, err := reconcile.Run(wctx, c, opts)
					rows.Add(r.Rows)
					if err != nil && wctx.Err() == nil {
						b.Error(err)
						return
					}
				}
			})
		}
		var mu sync.Mutex
		for k := range clients {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), uint64(k)))
				h := newHist()
				var n int64
				for wctx.Err() == nil {
					u := timeline.UserID(rng.IntN(users) + 1)
					start := time.Now()
					var err error
					if rng.IntN(postEach) == 0 {
						_, err = s.Post(wctx, u, "traffic")
					} else {
						_, err = s.Timeline(wctx, u, timeline.Query{})
					}
					if err != nil {
						if wctx.Err() == nil {
							b.Error(err)
						}
						break
					}
					h.RecordValue(time.Since(start).Microseconds())
					n++
				}
				mu.Lock()
				hist[with].Merge(h)
				ops[with] += n
				mu.Unlock()
			})
		}
		wg.Wait()
		cancel()
	}
	secs := float64(windows/2) * window.Seconds()
	tag := fmt.Sprintf("rate=%.0f,batch=%d", opts.Rate, opts.Batch)
	for _, with := range []bool{false, true} {
		name := map[bool]string{false: "without", true: "with"}[with]
		h := hist[with]
		b.ReportMetric(float64(h.ValueAtQuantile(99)), "p99-us-"+name+"-"+tag)
		b.ReportMetric(float64(ops[with])/secs, "ops/s-"+name+"-"+tag)
		b.Logf("%s: traffic %s the check: %.0f ops/s, p50 %d µs, p99 %d µs, p99.9 %d µs",
			tag, name, float64(ops[with])/secs, h.ValueAtQuantile(50), h.ValueAtQuantile(99), h.ValueAtQuantile(99.9))
	}
	b.ReportMetric(float64(rows.Load())/secs, "rows/s-beside-traffic-"+tag)
	b.Logf("%s: the check read %.0f rows/s beside the traffic", tag, float64(rows.Load())/secs)
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) }

// load fills db straight with users who each follow follows others at
// random and post posts messages, and push's mailbox for them.
func load(b *testing.B, db *sql.DB, users, follows, posts int) {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	insert := func(prefix string, rows []string) {
		for len(rows) > 0 {
			n := min(len(rows), 2000)
			if _, err := db.ExecContext(ctx, prefix+strings.Join(rows[:n], ",")); err != nil {
				b.Fatal(err)
			}
			rows = rows[n:]
		}
	}
	var edges []string
	for u := 1; u <= users; u++ {
		seen := map[int]bool{u: true}
		for len(seen) <= follows {
			a := rng.IntN(users) + 1
			if !seen[a] {
				seen[a] = true
				edges = append(edges, fmt.Sprintf("(%d,%d)", u, a))
			}
		}
	}
	insert("INSERT INTO follows (follower_id, followee_id) VALUES ", edges)
	var msgs []string
	for range posts {
		for u := 1; u <= users; u++ {
			msgs = append(msgs, fmt.Sprintf("(%d,'loaded',UTC_TIMESTAMP(6))", u))
		}
	}
	insert("INSERT INTO messages (author_id, body, created_at) VALUES ", msgs)
	if _, err := db.ExecContext(ctx, `INSERT INTO mailbox (user_id, message_id)
		SELECT f.follower_id, m.id FROM follows f JOIN messages m ON m.author_id = f.followee_id`); err != nil {
		b.Fatal(err)
	}
}
