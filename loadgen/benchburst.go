package loadgen

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
)

// BurstConfig describes a burst phase (BenchConfig.Burst): the run's mixed
// traffic in an open loop whose planned rate follows Schedule, and, if
// CelebrityPosts > 0, that many posts by the most followed author as the
// first stage ends, made as fast as the run's Concurrency workers can.
//
// The burst runs from the end of the first stage to the end of the last
// stage above the first's rate (or the celebrity's last acknowledged post,
// if later); what comes after it is where the store recovers. The phase
// reports the p99 latency (from intended starts) before, during and after
// the burst, and how long after the burst latency, and the fan-out lag of
// a store that measures it (timeline.Lagging), took to come back within
// their objectives (openloop.Recovery over buckets of BurstBucket, held
// for BurstHold): the run's SLO, and LagSLO.
type BurstConfig struct {
	Schedule       openloop.RateSchedule
	CelebrityPosts int
	// LagSLO is the objective of the fan-out lag's p99; 0 means
	// DefaultLagSLO.
	LagSLO time.Duration
}

// Defaults and bounds of a burst phase.
const (
	// BurstBucket is the length of the buckets a burst is measured in:
	// short enough to time a recovery to a quarter of a second, long
	// enough to hold tens of operations at a few hundred a second.
	BurstBucket = 250 * time.Millisecond
	// BurstHold is how long latency (or lag) must stay within its
	// objective for the store to have recovered: eight buckets, so that
	// a lull in a backlog does not pass for a recovery (on a busy
	// machine, one of a second did).
	BurstHold = 2 * time.Second
	// DefaultLagSLO is the fan-out lag's objective: Bluesky's fan-out
	// p99 target is under 10 s; a reader of a feed notices a post a
	// second late, rarely one 100 ms late.
	DefaultLagSLO = time.Second
	// MaxCelebrityPosts bounds BurstConfig.CelebrityPosts.
	MaxCelebrityPosts = 100_000
)

// Check reports the first invalid setting of c as a *ConfigError: a
// schedule of fewer than two stages, one in which nothing bursts (no stage
// above the first's rate and no celebrity posts), one that ends in its
// burst, or with less than BurstHold after it, too little to see a
// recovery.
func (c BurstConfig) Check() error {
	bad := func(field string, v any, reason string) error {
		return &ConfigError{Field: field, Value: fmt.Sprint(v), Reason: reason}
	}
	if err := c.Schedule.Check(); err != nil {
		return err
	}
	s := c.Schedule
	switch {
	case len(s) < 2:
		return bad("schedule", s, "want at least two stages: the burst begins as the first ends")
	case c.CelebrityPosts < 0 || c.CelebrityPosts > MaxCelebrityPosts:
		return bad("celebrity posts", c.CelebrityPosts, fmt.Sprintf("want 0 to %d", MaxCelebrityPosts))
	case c.LagSLO < 0:
		return bad("lag slo", c.LagSLO, "want a lag above 0 (0 for the default)")
	}
	_, end, rises := burstWindow(s)
	if !rises && c.CelebrityPosts == 0 {
		return bad("schedule", s, "nothing bursts: no stage is above the first's rate, and no celebrity posts")
	}
	if after := s.Duration() - end; after < BurstHold {
		return bad("schedule", s, fmt.Sprintf("only %v after the burst's last stage; want at least %v at or below the first's rate to see a recovery", after, BurstHold))
	}
	return nil
}

// burstWindow is where the burst of schedule s lies, from the start of its
// measured stretch: from the end of the first stage to the end of the last
// stage above the first's rate (rises), or, when none is, the end of the
// first stage.
func burstWindow(s openloop.RateSchedule) (start, end time.Duration, rises bool) {
	start = s[0].Duration
	end = start
	var at time.Duration
	for i, st := range s {
		at += st.Duration
		if i > 0 && st.Rate > s[0].Rate {
			end, rises = at, true
		}
	}
	return start, end, rises
}

// mostFollowed is the user with the most followers (the lowest id of
// those tied).
func (b *bench) mostFollowed() uint32 {
	var author uint32
	for u := 1; u <= b.users; u++ {
		if author == 0 || len(b.data.Followers(uint32(u))) > len(b.data.Followers(author)) {
			author = uint32(u)
		}
	}
	return author
}

// burstPhase measures m's burst phase (see BurstConfig), then restores the
// graph and settles.
func (b *bench) burstPhase(ctx context.Context, m registry.Model) error {
	cfg := *b.cfg.Burst
	if cfg.LagSLO == 0 {
		cfg.LagSLO = DefaultLagSLO
	}
	s, rm := b.trafficStore(m), b.res.Model(m.Name)
	pool, err := b.olderPool(ctx, m)
	if err != nil {
		return err
	}
	mix := *b.cfg.Mix
	if len(pool) == 0 && mix.Share(workload.OpOlder) > 0 {
		mix = mix.Without(workload.OpOlder) // the traffic phase noted it
	}
	churn := workload.NewChurn(b.data)
	var w workload.Writes
	if mix.Share(workload.OpDelete) > 0 {
		w.Book = workload.NewPostBook(b.cfg.Spec.Seed)
	}
	seed := workload.NamedSeed(b.cfg.Spec.Seed^0xb0257, m.Name) // its own, as the traffic phase's (see trafficPhases)
	newOp := workload.Traffic(s, b.data, mix, pool, churn, w, seed)
	lagging, hasLag := timeline.As[timeline.Lagging](s)
	start, end, _ := burstWindow(cfg.Schedule)

	// From the start of the measured stretch: the fan-out lag taken
	// every bucket, and the celebrity's posts as the first stage ends.
	var lags []*hdrhistogram.Histogram
	var celeb *results.BurstCelebrity
	var celebErr error
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var measuredAt time.Time
	meterStart, finish := b.metered(ctx, m.Name+"/burst", nil)
	onMeasure := func() {
		measuredAt = time.Now()
		if hasLag {
			lagging.TakeLag()
			bg.Go(func() {
				tick := time.NewTicker(BurstBucket)
				defer tick.Stop()
				for range int(cfg.Schedule.Duration() / BurstBucket) {
					select {
					case <-tick.C:
						lags = append(lags, lagging.TakeLag())
					case <-stop:
						return
					}
				}
			})
		}
		if cfg.CelebrityPosts > 0 {
			bg.Go(func() {
				select {
				case <-time.After(time.Until(measuredAt.Add(start))):
				case <-stop:
					return
				}
				celeb, celebErr = b.celebrityPosts(ctx, s, cfg.CelebrityPosts, measuredAt)
			})
		}
		meterStart()
	}
	name := m.Name + "/burst"
	b.logf("phase %s (open loop, %s arrivals on the schedule %s, at most %d in flight)", name, b.cfg.Arrivals, cfg.Schedule, b.cfg.MaxInFlight)
	r, err := openloop.Run(ctx, openloop.Config{
		Name: name, Schedule: cfg.Schedule, Arrivals: b.cfg.Arrivals, Workers: b.cfg.MaxInFlight,
		Warmup: b.cfg.Warmup, Kinds: workload.MixOps, Bucket: BurstBucket,
		Seed: uint64(seed), Progress: b.cfg.Progress, OnMeasure: onMeasure,
	}, newOp)
	close(stop)
	bg.Wait()
	if err != nil {
		return err
	}
	if celebErr != nil {
		return fmt.Errorf("%s: the celebrity's posts: %w", m.Name, celebErr)
	}
	c := finish(r.Total.Ops + r.Total.Errors)
	b.checkErrors(name, r.ErrorRate(), r.SampleErrors)
	if celeb != nil {
		end = max(end, time.Duration((celeb.AtS*1000+celeb.SpanMs)*float64(time.Millisecond)))
	}
	bu := burstResult(cfg, b.cfg.SLO, r, lags, start, end)
	bu.Total.Cost = c
	bu.Celebrity = celeb
	if err := churn.Restore(ctx, s); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	t0 := time.Now()
	if err := b.settle(ctx, m, s, "burst_", rm); err != nil {
		return err
	}
	if bu.Lag != nil {
		bu.Lag.SettleS = time.Since(t0).Seconds()
	}
	rm.Burst = bu
	b.logf("  = %s: p99 %s before, %s during, %s after the burst; recovered: %s", name,
		fmtP99(bu.Before), fmtP99(bu.During), fmtP99(bu.After), recoveryText(bu.Recovered, bu.RecoveryS))
	if l := bu.Lag; l != nil {
		b.logf("  fan-out lag p99 %.1f ms before, %.1f ms during, %.1f ms after; recovered: %s; settled in %.1fs",
			l.BeforeP99Ms, l.DuringP99Ms, l.AfterP99Ms, recoveryText(l.Recovered, l.RecoveryS), l.SettleS)
	}
	if c := bu.Celebrity; c != nil {
		b.logf("  celebrity: user %d (%d followers) posted %d times from %.2fs: p99 %.1f ms, all acknowledged %.1f ms after the first began",
			c.Author, c.Followers, c.Posts, c.AtS, c.P99Ms, c.SpanMs)
	}
	return nil
}

func fmtP99(p results.Phase) string {
	if !p.HasLatency() {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", p.P99Ms)
}

func recoveryText(ok bool, s float64) string {
	if !ok {
		return "no"
	}
	return fmt.Sprintf("after %.2fs", s)
}

// celebrityPosts has the most followed author post n times, at most the
// run's Concurrency at once, and returns their figures, timed from t0.
func (b *bench) celebrityPosts(ctx context.Context, s timeline.Store, n int, t0 time.Time) (*results.BurstCelebrity, error) {
	author := b.mostFollowed()
	c := &results.BurstCelebrity{Author: int64(author), Followers: len(b.data.Followers(author))}
	h := openloop.NewHistogram()
	var mu sync.Mutex
	first := time.Now()
	c.AtS = first.Sub(t0).Seconds()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.cfg.Concurrency)
	var body []byte
	for i := range n {
		body = b.data.AppendBody(body[:0], uint64(1<<41)+uint64(i))
		text := string(body)
		g.Go(func() error {
			t := time.Now()
			_, err := s.Post(gctx, timeline.UserID(author), text)
			d := time.Since(t)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if gctx.Err() != nil {
					return err
				}
				c.Errors++
				return nil
			}
			c.Posts++
			h.RecordValue(min(max(d.Microseconds(), 1), h.HighestTrackableValue()))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	c.SpanMs = msOf(time.Since(first))
	c.P50Ms, c.P99Ms, c.MaxMs = quantilesMs(h)
	return c, nil
}

// burstResult records a burst phase from its open-loop run r and the
// fan-out lags taken every bucket (nil for a store that measures none),
// the burst lying from start to end of the measured stretch.
func burstResult(cfg BurstConfig, slo time.Duration, r openloop.Result, lags []*hdrhistogram.Histogram, start, end time.Duration) *results.Burst {
	bu := &results.Burst{
		Schedule: cfg.Schedule.String(), WindowS: r.Window, StartS: start.Seconds(), EndS: end.Seconds(),
		BucketMs: msOf(BurstBucket), HoldMs: msOf(BurstHold), SLOMs: msOf(slo), LagSLOMs: msOf(cfg.LagSLO),
		Total: results.PhaseFromHistogram(r.Total.Latency, r.Total.Ops, r.Total.Errors, r.Seconds),
	}
	bu.Open = *trafficFromOpen(workload.Mix{}, r).Open
	// Before, during and after: the buckets by their start.
	part := func(at time.Duration) int {
		switch {
		case at < start:
			return 0
		case at < end:
			return 1
		}
		return 2
	}
	var hists, lagHists [3]*hdrhistogram.Histogram
	var ops, errs [3]int64
	var secs [3]float64
	for i := range hists {
		hists[i], lagHists[i] = openloop.NewHistogram(), hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 2)
	}
	var points, lagPoints []openloop.Point
	for i, k := range r.Series {
		p := results.BurstPoint{AtS: k.At.Seconds(), Ops: k.Ops, Errors: k.Errors, Missed: k.Missed}
		if k.Ops > 0 {
			p.P50Ms, p.P99Ms, p.MaxMs = quantilesMs(k.Latency)
		}
		j := part(k.At)
		hists[j].Merge(k.Latency)
		ops[j] += k.Ops
		errs[j] += k.Errors
		secs[j] += min(BurstBucket, time.Duration(r.Window*float64(time.Second))-k.At).Seconds()
		failed := k.Missed > 0 || k.Errors > 0 && float64(k.Errors) > workload.MaxErrorRate*float64(k.Ops+k.Errors)
		points = append(points, openloop.Point{At: k.At, N: k.Ops, Value: p.P99Ms, Failed: failed})
		if lags != nil {
			lp := openloop.Point{At: k.At}
			if i < len(lags) && lags[i].TotalCount() > 0 {
				l := lags[i]
				p.LagPosts, p.LagP99Ms = l.TotalCount(), float64(l.ValueAtQuantile(99))/1000
				lp.N, lp.Value = p.LagPosts, p.LagP99Ms
				lagHists[j].Merge(l)
			}
			lagPoints = append(lagPoints, lp)
		}
		bu.Series = append(bu.Series, p)
	}
	phases := []*results.Phase{&bu.Before, &bu.During, &bu.After}
	for i, ph := range phases {
		*ph = results.PhaseFromHistogram(hists[i], ops[i], errs[i], secs[i])
	}
	after, ok := openloop.Recovery(points, BurstBucket, end, bu.SLOMs, BurstHold)
	bu.Recovered, bu.RecoveryS = ok, after.Seconds()
	if lags != nil {
		l := &results.BurstLag{}
		for i, v := range []*float64{&l.BeforeP99Ms, &l.DuringP99Ms, &l.AfterP99Ms} {
			if lagHists[i].TotalCount() > 0 {
				*v = float64(lagHists[i].ValueAtQuantile(99)) / 1000
			}
			l.MaxMs = max(l.MaxMs, float64(lagHists[i].Max())/1000)
		}
		after, ok := openloop.Recovery(lagPoints, BurstBucket, end, bu.LagSLOMs, BurstHold)
		l.Recovered, l.RecoveryS = ok, after.Seconds()
		bu.Lag = l
	}
	return bu
}
