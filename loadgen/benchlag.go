package loadgen

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
)

// SettleTimeout bounds the wait for a store that applies posts later
// (timeline.Settler) to apply a write phase's posts.
const SettleTimeout = 10 * time.Minute

// settle waits, for a store that applies posts later, until what the
// phase just ended acknowledged is applied, so that its backlog does not
// burden the next phase; it saves how long that took and, for a
// timeline.Lagging store, the phase's lags, as figures named with prefix.
func (b *bench) settle(ctx context.Context, m registry.Model, s timeline.Store, prefix string, rm *results.Model) error {
	st, ok := timeline.As[timeline.Settler](s)
	if !ok {
		return nil
	}
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, SettleTimeout)
	defer cancel()
	if err := st.Settle(sctx); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	rm.Extra[prefix+"settle_s"] = time.Since(start).Seconds()
	if l, ok := timeline.As[timeline.Lagging](s); ok {
		lag := results.LagFigures(prefix, l.TakeLag())
		maps.Copy(rm.Extra, lag)
		b.logf("  settled in %.1fs; fan-out lag p50 %.1f ms, p99 %.1f ms, max %.1f ms",
			time.Since(start).Seconds(), lag[prefix+"lag_p50_ms"], lag[prefix+"lag_p99_ms"], lag[prefix+"lag_max_ms"])
	}
	return nil
}

// quiesce finishes, before a phase named name begins, the background work
// every open store has due (timeline.Quiescer): the servers' counters
// are global, so what one design's store does after its phases would be
// counted in whichever phase comes next, another design's. Each store's
// wait is bounded by SettleTimeout; one that fails is noted in the run's
// notes and the run goes on.
func (b *bench) quiesce(ctx context.Context, name string) {
	each := func(s timeline.Store) {
		q, ok := timeline.As[timeline.Quiescer](s)
		if !ok {
			return
		}
		start := time.Now()
		qctx, cancel := context.WithTimeout(ctx, SettleTimeout)
		defer cancel()
		if err := q.Quiesce(qctx); err != nil {
			b.res.Notes = append(b.res.Notes, fmt.Sprintf("before %s: background work not finished: %v", name, err))
			return
		}
		if d := time.Since(start); d >= 100*time.Millisecond {
			b.logf("  background work of an earlier phase finished in %.1fs", d.Seconds())
		}
	}
	b.eachStore(each)
}

// forgetLag drops the lags a Lagging store recorded so far: called as a
// phase starts measuring.
func forgetLag(s timeline.Store) {
	if l, ok := timeline.As[timeline.Lagging](s); ok {
		l.TakeLag()
	}
}

// halfRate is the PhaseHalfRate of m: posts in an open loop at half the
// rate its submission reached, as long as that phase, then a settle; the
// figures are prefixed "half_rate_". With a delete study (Deletes), the
// celebrity delete runs again while the posts do, as
// Deletes.CelebrityUnderLoad.
func (b *bench) halfRate(ctx context.Context, m registry.Model, s timeline.Store, rm *results.Model) error {
	rate := rm.Submit.OpsPerSec / 2
	if !(rate > 0) {
		b.res.Notes = append(b.res.Notes, m.Name+": no submission rate to halve; half-rate lag not measured")
		return nil
	}
	name := m.Name + "/" + string(registry.PhaseHalfRate)
	post := workload.Submit(s, b.data, b.cfg.Spec.Seed, workload.Writes{})
	newOp := func(worker int) openloop.Op {
		op := post(worker)
		return func(ctx context.Context) (int, error) { return 0, op(ctx, nil) }
	}
	b.logf("phase %s (open loop at %.0f/s, %s)", name, rate, b.cfg.Duration)
	// With a delete study, the celebrity delete runs again under this
	// load, from the start of the measured stretch.
	var celeb *results.CelebrityDelete
	var celebErr error
	celebDone := make(chan struct{})
	var before map[string]int64
	onMeasure := func() {
		before = counts(s)
		forgetLag(s)
		go func() {
			defer close(celebDone)
			celeb, celebErr = b.celebrityDelete(ctx, s, false)
		}()
	}
	if b.cfg.Deletes <= 0 || rm.Deletes == nil {
		onMeasure = func() {
			before = counts(s)
			forgetLag(s)
		}
		close(celebDone)
	}
	r, err := openloop.Run(ctx, openloop.Config{
		Name: name, Rate: rate, Arrivals: b.cfg.Arrivals, Workers: b.cfg.MaxInFlight,
		Warmup: b.cfg.Warmup, Duration: b.cfg.Duration, Ops: b.cfg.Ops,
		Seed: uint64(b.cfg.Spec.Seed) ^ 0x4a1f, Progress: b.cfg.Progress, OnMeasure: onMeasure,
	}, newOp)
	<-celebDone
	if err != nil {
		return err
	}
	if celebErr != nil {
		return fmt.Errorf("%s: the celebrity delete under load: %w", m.Name, celebErr)
	}
	if celeb != nil {
		rm.Deletes.CelebrityUnderLoad = celeb
		b.logf("  celebrity delete while posting at %.0f/s: deleted in %.1f ms, gone from %d watched pages %.1f ms after, settled in %.1f ms; %d of %d pages still show it",
			rate, celeb.DeleteMs, celeb.Watched, celeb.WatchedGoneMaxMs, celeb.SettleMs, celeb.StillShown, celeb.Checked)
		if celeb.StillShown > 0 {
			b.res.Failures = append(b.res.Failures, fmt.Sprintf("%s: the celebrity's deleted post still shown on %d of %d pages after settling", m.Name, celeb.StillShown, celeb.Checked))
		}
	}
	b.checkErrors(name, r.ErrorRate(), r.SampleErrors)
	rm.Extra["half_rate_posts_per_sec"] = r.AchievedPerSec()
	rm.Extra["half_rate_post_p99_ms"] = float64(r.Total.Latency.ValueAtQuantile(99)) / 1000
	b.logf("  = %s: offered %.0f/s, achieved %.0f/s", name, r.OfferedPerSec(), r.AchievedPerSec())
	if err := b.settle(ctx, m, s, "half_rate_", rm); err != nil {
		return err
	}
	maps.Copy(rm.Extra, results.FanoutFigures("half_rate_", before, counts(s)))
	return nil
}
