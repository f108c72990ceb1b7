package reconciletest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// Traffic is the live traffic Cost runs beside a check: Clients closed
// loops of newest pages and posts of random users 1 to Users, one
// operation in PostEach a post, in Windows windows of Window each,
// alternately without a check and with one.
type Traffic struct {
	Users    int
	Clients  int
	Windows  int
	Window   time.Duration
	PostEach int
}

// Cost measures what reconcile costs on s, whose checker is c, and
// reports it as the benchmark's metrics: the rows a check reads a second
// with no rate limit and no other load (the second of two checks; the
// first warms the caches), and then, for each of settings, the
// operations a second and latency percentiles of traffic in the windows
// without a check and in those with reconcile.Run checking the whole
// store over and over beside it, and the rows it read a second. The
// store must hold no drift.
func Cost(b *testing.B, s timeline.Store, c reconcile.Checker, tr Traffic, settings ...reconcile.Options) {
	ctx := context.Background()
	var alone reconcile.Report
	var err error
	for range 2 {
		if alone, err = reconcile.Run(ctx, c, reconcile.Options{Rate: math.Inf(1)}); err != nil {
			b.Fatal(err)
		}
	}
	if found, _ := alone.Found(); found != 0 {
		b.Fatalf("drift in a loaded store: %+v", alone.Counts)
	}
	b.ReportMetric(alone.RowsPerSecond, "rows/s-alone")
	b.Logf("check alone: %d users, %d rows in %.2f s: %.0f rows/s", alone.Users, alone.Rows, alone.Seconds, alone.RowsPerSecond)
	for _, o := range settings {
		interference(b, s, c, o, tr)
	}
}

// interference runs tr on s in windows, alternately without and with a
// check of opts beside it, and reports the traffic's rate and p99 in
// each.
func interference(b *testing.B, s timeline.Store, c reconcile.Checker, opts reconcile.Options, tr Traffic) {
	ctx := context.Background()
	hist := map[bool]*hdrhistogram.Histogram{false: newHist(), true: newHist()}
	ops := map[bool]int64{}
	var rows atomic.Int64
	for w := range tr.Windows {
		with := w%2 == 1
		wctx, cancel := context.WithTimeout(ctx, tr.Window)
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
		for k := range tr.Clients {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), uint64(k)))
				h := newHist()
				var n int64
				for wctx.Err() == nil {
					u := timeline.UserID(rng.IntN(tr.Users) + 1)
					start := time.Now()
					var err error
					if rng.IntN(tr.PostEach) == 0 {
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
	secs := float64(tr.Windows/2) * tr.Window.Seconds()
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
