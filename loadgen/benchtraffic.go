package loadgen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
)

// trafficStore is the store m's traffic runs on: for a cache-mixed model a
// store on a memcached namespace nobody has used (see openStores), whose
// cache fills in the phase's warm-up; for the others the model's store.
func (b *bench) trafficStore(m registry.Model) timeline.Store {
	if s, ok := b.traffic[m.Name]; ok {
		return s
	}
	return b.open[m.Name]
}

// releaseIdle closes the idle connections of s's pool, if it hands one
// out (timeline.DBHolder), and lets it keep idle connections again from
// then on. A run keeps every design's store open to its end, and a
// design's traffic and rate search leave its pool holding as many idle
// connections as they ever had in flight (up to MaxInFlight): without
// this, nineteen designs held more connections than the sandbox's server
// takes, and a server of the default 151 would refuse the third design.
func releaseIdle(s timeline.Store) {
	h, ok := timeline.As[timeline.DBHolder](s)
	if !ok {
		return
	}
	db := h.DB()
	keep := db.Stats().MaxOpenConnections
	if keep == 0 {
		keep = 2 // database/sql's default
	}
	db.SetMaxIdleConns(0) // closes the idle ones
	db.SetMaxIdleConns(keep)
}

// olderPool returns the older-page cursors for m's traffic, walked now:
// a page 2 to 5 deep continues from where the design's own pages lead as
// its traffic begins. Cursors walked once, when the first design
// on a database was read, would lie below every post that the designs
// measured in between made there, and a pull design's first step reads
// each followee's messages above its cursor
// (TestTrafficOlderCursorsAreFresh). They are walked through m's store of
// the read phases, not its traffic's (see trafficStore): a cache-mixed
// model's traffic store is to fill its cache in the phase's warm-up only,
// and cursors are valid for every store of the database.
func (b *bench) olderPool(ctx context.Context, m registry.Model) ([]workload.OlderPage, error) {
	s := b.open[m.Name]
	sample := m.Bench.OlderSample
	if sample <= 0 {
		sample = registry.DefaultOlderSample
	}
	pool, err := workload.CollectOlderPages(ctx, s, b.data, sample, b.cfg.Concurrency, b.cfg.Spec.Seed)
	if errors.Is(err, workload.ErrNoOlderPages) {
		return nil, nil
	}
	return pool, err
}

// trafficPhases measures m's mixed traffic: in a closed loop, or in an open
// loop at the run's rate, then, if asked, searches for the highest rate
// that holds the objective, and settles. Follows and unfollows go through
// one workload.Churn, which puts the dataset's graph back afterwards;
// deletes through a workload.PostBook, whose deleted messages are checked
// once the store has settled. A probe (BenchConfig.Probe) runs beside the
// measured stretch of the traffic phase.
func (b *bench) trafficPhases(ctx context.Context, m registry.Model) error {
	s, rm := b.trafficStore(m), b.res.Model(m.Name)
	defer releaseIdle(s)
	pool, err := b.olderPool(ctx, m)
	if err != nil {
		return err
	}
	mix := *b.cfg.Mix
	if len(pool) == 0 && mix.Share(workload.OpOlder) > 0 {
		mix = mix.Without(workload.OpOlder)
		b.res.Notes = append(b.res.Notes, m.Name+": no timeline has a second page; its traffic reads no older pages")
		if mix.Empty() {
			return nil
		}
	}
	churn := workload.NewChurn(b.data)
	var w workload.Writes
	if mix.Share(workload.OpDelete) > 0 {
		w.Book = workload.NewPostBook(b.cfg.Spec.Seed)
	}
	if b.cfg.Probe != nil {
		w.Probe = workload.NewProbe(ctx, s, b.data, *b.cfg.Probe)
	}
	book := w.Book
	w.Audience = &workload.Audience{} // of the measured stretch's posts, from posted on
	// A seed of the design's own: designs that share a database read
	// each other's traffic's posts, which are to be as spread over the
	// authors as the activity spreads independent draws (see
	// workload.Traffic).
	newOp := workload.Traffic(s, b.data, mix, pool, churn, w, workload.NamedSeed(b.cfg.Spec.Seed, m.Name))
	name, dur := m.Name+"/traffic", b.duration(m)
	startProbe := func() {
		if w.Probe != nil {
			w.Probe.Arm()
		}
	}
	// The probe stops with the phase: the rate search's steps are not
	// watched.
	stopProbe := func() *results.Visibility {
		if w.Probe == nil {
			return nil
		}
		v := visibility(w.Probe.Config(), w.Probe.Stop())
		b.logf("  probe: %d posts watched, visible p50 %.2f ms, p99 %.2f ms, max %.2f ms; %d of %d pages showed them; %d deletes watched, gone p99 %.2f ms, %d pages still showing; %d errors",
			v.Total.Posts, v.Total.P50Ms, v.Total.P99Ms, v.Total.MaxMs, v.Total.Visible, v.Total.Visible+v.Total.Missing, v.Deletes, v.GoneP99Ms, v.StillShown, v.Errors)
		if d := v.Drowning; d != nil {
			b.logf("  probe, drowning readers: visible p50 %.2f ms, p99 %.2f ms; %d of %d pages showed the posts", d.P50Ms, d.P99Ms, d.Visible, d.Visible+d.Missing)
		}
		return v
	}
	var undone results.Undone
	var posted workload.AudienceMark
	var churned workload.ChurnMark
	if b.cfg.Rate > 0 {
		var before map[string]int64
		r, c, err := b.openPhase(ctx, name, b.cfg.Rate, dur, b.cfg.Ops, newOp, func() {
			before = counts(s)
			undone.AtStart = churn.Undone()
			posted = w.Audience.Mark()
			churned = churn.Mark()
			startProbe()
		})
		vis := stopProbe()
		if err != nil {
			return err
		}
		maps.Copy(rm.Extra, results.IndexFigures("traffic_", before, counts(s), r.Total.Ops))
		b.checkErrors(name, r.ErrorRate(), r.SampleErrors)
		rm.Traffic = trafficFromOpen(mix, r)
		rm.Traffic.Total.Cost = c
		rm.Traffic.Visibility = vis
		if o := rm.Traffic.Open; o.Saturated {
			b.res.Notes = append(b.res.Notes, fmt.Sprintf("%s: the open loop at %.0f/s saturated it: %.0f/s achieved, %d of %d operations started late (p99 %.1f ms behind), %d never started",
				m.Name, o.RatePerSec, o.AchievedPerSec, o.Late, o.Started, o.LateP99Ms, o.Missed))
		}
	} else {
		var before map[string]int64
		p, kinds, err := b.phaseKinds(ctx, name, dur, workload.MixOps, workload.ClosedOp(newOp), func() {
			before = counts(s)
			undone.AtStart = churn.Undone()
			posted = w.Audience.Mark()
			churned = churn.Mark()
			startProbe()
		})
		vis := stopProbe()
		if err != nil {
			return err
		}
		rm.Traffic = trafficFromClosed(mix, b.cfg.Concurrency, p, kinds)
		rm.Traffic.Visibility = vis
		maps.Copy(rm.Extra, results.IndexFigures("traffic_", before, counts(s), p.Ops))
	}
	rm.Traffic.Mix = mix.String()
	undone.AtEnd = churn.Undone()
	rm.Traffic.Total.PostAudience, _ = w.Audience.Since(posted)
	rm.Traffic.Total.FolloweeMessages, _ = churn.FolloweeMessages(churned)
	if b.cfg.FindRate {
		if err := b.searchRate(ctx, m, s, rm.Traffic, newOp); err != nil {
			return err
		}
	}
	if err := churn.Restore(ctx, s); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	undone.Total = churn.Undone()
	rm.Traffic.Undone = &undone
	if err := b.settle(ctx, m, s, "traffic_", rm); err != nil {
		return err
	}
	if book != nil {
		if rm.Traffic.Visibility == nil {
			rm.Traffic.Visibility = &results.Visibility{}
		}
		if err := b.deletedStillShown(ctx, s, book, rm.Traffic.Visibility); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if v := rm.Traffic.Visibility; v.DeletedShown > 0 {
			b.res.Failures = append(b.res.Failures, fmt.Sprintf("%s: %d of %d pages checked after settling still showed a message the traffic deleted",
				m.Name, v.DeletedShown, v.DeletedChecked))
		}
	}
	return nil
}

// openPhase runs one open-loop phase with the run's arrivals and bound on
// operations in flight, and returns it with its cost per operation. Its
// errors are the caller's to judge. onMeasure, if not nil, runs when the
// warm-up ends.
func (b *bench) openPhase(ctx context.Context, name string, rate float64, dur time.Duration, ops int64, newOp func(int) openloop.Op, onMeasure func()) (openloop.Result, cost.Cost, error) {
	length := dur.String()
	if ops > 0 {
		length = fmt.Sprintf("%d ops", ops)
	}
	b.logf("phase %s (open loop, %s arrivals at %.0f/s, %s, at most %d in flight)", name, b.cfg.Arrivals, rate, length, b.cfg.MaxInFlight)
	start, finish := b.metered(ctx, name, onMeasure)
	r, err := openloop.Run(ctx, openloop.Config{
		Name: name, Rate: rate, Arrivals: b.cfg.Arrivals, Workers: b.cfg.MaxInFlight,
		Warmup: b.cfg.Warmup, Duration: dur, Ops: ops, Kinds: workload.MixOps,
		Seed: uint64(b.cfg.Spec.Seed) ^ uint64(rate*1000), Progress: b.cfg.Progress, OnMeasure: start,
	}, newOp)
	if err != nil {
		return r, nil, err
	}
	c := finish(r.Total.Ops + r.Total.Errors)
	p99 := float64(r.Total.Latency.ValueAtQuantile(99)) / 1000
	b.logf("  = %s: offered %.0f/s, achieved %.0f/s, p99 %.2f ms from intended starts (service %.2f ms), %d late, %d missed, %d errors",
		name, r.OfferedPerSec(), r.AchievedPerSec(), p99, float64(r.Total.Service.ValueAtQuantile(99))/1000, r.Late, r.Missed, r.Total.Errors)
	return r, c, nil
}

// searchRate finds m's highest rate whose p99 holds the run's SLO, from
// the traffic phase's achieved rate, in open-loop steps on its store s.
// Each step of a model whose reads are measured warm (Bench.WarmReads,
// on the store the traffic phase warmed) starts, as that phase did, after
// every user's newest page was read: the phase or step before may have
// left its state cold (push-redis drops the feeds a post cut off at a
// phase's end could have changed, and pays its fence, which drops every
// feed, when a Redis write timed out in an overloaded step; each dropped
// feed is rebuilt on its next read), and every later step would measure
// that instead of its rate. A model that builds state by its reads but
// measures them cold (Bench.WarmSearch) has every user's newest page read
// once before the first step instead, so that the search measures the
// rate with that state built, not its building.
func (b *bench) searchRate(ctx context.Context, m registry.Model, s timeline.Store, t *results.Traffic, newOp func(int) openloop.Op) error {
	_, own := b.traffic[m.Name]
	warm := m.Bench.WarmReads && !own
	var stepCounts []map[string]int64
	var stepCosts []stepCost
	var stepSettles []stepSettle
	start := t.Total.OpsPerSec
	if t.Open != nil {
		start = t.Open.AchievedPerSec
	}
	if !(start > 0) {
		start = 1
	}
	b.logf("search %s: the highest rate at p99 ≤ %v, from %.0f/s, %d steps of %v at most", m.Name, b.cfg.SLO, start, b.cfg.SearchSteps, b.cfg.StepDuration)
	if m.Bench.WarmSearch && !warm {
		if err := b.warm(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	sr, err := openloop.FindRate(ctx, openloop.SearchConfig{
		SLO: b.cfg.SLO, Start: start, MaxSteps: b.cfg.SearchSteps, Confirm: b.cfg.Confirm, MaxSteal: b.cfg.MaxSteal,
		MaxErrorRate: workload.MaxErrorRate,
	}, func(ctx context.Context, rate float64) (openloop.Result, error) {
		// Every step but the first starts on a settled box (settleBox).
		var settled stepSettle
		if len(stepCosts) > 0 {
			d, ok, err := b.settleBox(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return openloop.Result{}, ctx.Err()
				}
				b.res.Notes = append(b.res.Notes, fmt.Sprintf("%s: the box's CPU could not be read before a step: %v", m.Name, err))
			}
			settled = stepSettle{d.Seconds(), !ok}
			if !ok {
				b.logf("  the box had not settled after %.1fs (CPU above the idle CPU and %.0f µs/s); the step at %.0f/s runs anyway", d.Seconds(), float64(SettleMarginUs), rate)
			} else if d >= time.Second {
				b.logf("  the box settled in %.1fs", d.Seconds())
			}
		}
		stepSettles = append(stepSettles, settled)
		if warm {
			if err := b.warm(ctx, s); err != nil {
				return openloop.Result{}, fmt.Errorf("%s: %w", m.Name, err)
			}
		}
		before := counts(s)
		r, c, err := b.openPhase(ctx, fmt.Sprintf("%s/slo@%.0f", m.Name, rate), rate, b.cfg.StepDuration, 0, newOp, nil)
		d := countedSince(before, counts(s))
		stepCounts = append(stepCounts, d)
		stepCosts = append(stepCosts, stepCost{c, r.Seconds})
		if d[counter.Fences] > 0 || d[counter.Rebuilds] > 0 || d[counter.DroppedFeeds] > 0 {
			b.logf("  counted in the step: %d fences paid, %d feeds dropped, %d rebuilds", d[counter.Fences], d[counter.DroppedFeeds], d[counter.Rebuilds])
		}
		return r, err
	})
	if err != nil {
		return err
	}
	for _, st := range sr.Steps {
		if st.Disturbed {
			b.logf("  %.0f/s failed (p99 %.1f ms) while the hypervisor took %.1f%% of the CPUs' time, above %.1f%%: it ran again", st.Rate, st.P99Ms, 100*st.Result.Steal, 100*cmp.Or(b.cfg.MaxSteal, openloop.DefaultMaxSteal))
		} else if st.Retry && st.Held {
			b.logf("  re-ran %.0f/s, which had failed: it held (p99 %.1f ms), so the failure was transient", st.Rate, st.P99Ms)
		} else if st.Retry {
			b.logf("  re-ran %.0f/s, which had failed: it failed again (p99 %.1f ms)", st.Rate, st.P99Ms)
		}
	}
	// A step's errors decide whether it held; they do not fail the run.
	t.Search = searchResult(b.cfg.SLO, b.cfg.StepDuration, start, sr)
	for i := range t.Search.Steps {
		if i < len(stepCounts) {
			t.Search.Steps[i].Counted = stepCounts[i]
		}
		if i < len(stepSettles) {
			t.Search.Steps[i].SettleS, t.Search.Steps[i].Unsettled = stepSettles[i].seconds, stepSettles[i].unsettled
		}
		if i < len(stepCosts) && stepCosts[i].cost != nil {
			st := &t.Search.Steps[i]
			st.Cost = stepCosts[i].cost
			if p, ok := results.ProcessCPUOf(st.Cost, stepCosts[i].seconds); ok {
				st.CPU = &p
			}
		}
	}
	b.logf("  = %s: %.0f/s held p99 ≤ %v", m.Name, sr.Best, b.cfg.SLO)
	return nil
}

// stepCost is what one step of a rate search cost an operation, and the
// seconds its operations ran over (openloop.Result.Seconds).
type stepCost struct {
	cost    cost.Cost
	seconds float64
}

// stepSettle is how long a step of a rate search waited for the box to
// settle, and whether it did not (settleBox).
type stepSettle struct {
	seconds   float64
	unsettled bool
}

// countedSince is what a store counted (timeline.Counting) between two
// snapshots, every counter of after; nil for a store that counts nothing.
func countedSince(before, after map[string]int64) map[string]int64 {
	if len(after) == 0 {
		return nil
	}
	out := make(map[string]int64, len(after))
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

// DefaultSLO is the latency objective of the rate search: the p99 of the
// mixed traffic, from intended starts. 50 ms is well within what a person
// waits for a feed to appear, and an order of magnitude above a warm read
// of any model here, so that only queueing breaks it.
const DefaultSLO = 50 * time.Millisecond

// DefaultStepDuration is the measured length of each step of the rate
// search: long enough for a few thousand operations at the rates these
// stores sustain, short enough for eight steps per model.
const DefaultStepDuration = 2 * time.Second

// MaxConfirm bounds BenchConfig.Confirm: each re-run is one more step.
const MaxConfirm = 10

// ConfigError reports an invalid traffic setting of a benchmark run: the
// open loop's error, as every one of these settings is the open loop's or
// its rate search's.
type ConfigError = openloop.ConfigError

// checkTraffic reports the first invalid traffic setting of c as a
// *ConfigError.
func (c *BenchConfig) checkTraffic() error {
	bad := func(field string, v any, reason string) error {
		return &ConfigError{Field: field, Value: fmt.Sprint(v), Reason: reason}
	}
	switch {
	case c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return bad("rate", c.Rate, "want operations per second above 0, or 0 for a closed loop")
	case c.MaxInFlight < 0 || c.MaxInFlight > openloop.MaxWorkers:
		return bad("max in flight", c.MaxInFlight, fmt.Sprintf("want 1 to %d", openloop.MaxWorkers))
	case c.SLO < 0:
		return bad("slo", c.SLO, "want a p99 latency above 0")
	case c.StepDuration < 0:
		return bad("step duration", c.StepDuration, "want a length above 0")
	case c.SearchSteps < 0 || c.SearchSteps > 100:
		return bad("search steps", c.SearchSteps, "want 1 to 100")
	case c.Confirm < -1 || c.Confirm > MaxConfirm:
		return bad("confirm", c.Confirm, fmt.Sprintf("want 0 to %d re-runs, or -1 for none", MaxConfirm))
	case !(c.MaxSteal >= 0 && c.MaxSteal <= 1):
		return bad("max steal", c.MaxSteal, "want a share of the CPUs' time, 0 to 1")
	case c.Mix != nil && c.Mix.Empty():
		return &workload.MixError{Spec: c.Mix.String(), Reason: "every weight is 0"}
	}
	if c.Burst != nil {
		if err := c.Burst.Check(); err != nil {
			return err
		}
	}
	if c.Arrivals != "" {
		if _, err := openloop.ParseArrivals(string(c.Arrivals)); err != nil {
			return err
		}
	}
	return nil
}

// trafficFromClosed records a closed-loop traffic phase.
func trafficFromClosed(mix workload.Mix, workers int, total results.Phase, kinds []workload.KindResult) *results.Traffic {
	t := &results.Traffic{Mix: mix.String(), Loop: results.LoopClosed, Workers: workers, Total: total, Ops: map[string]results.Phase{}}
	for _, k := range kinds {
		if mix.Share(k.Name) > 0 {
			t.Ops[k.Name] = results.PhaseFromHistogram(k.Latency, k.Ops, k.Errors, total.Seconds)
		}
	}
	return t
}

// trafficFromOpen records an open-loop traffic phase.
func trafficFromOpen(mix workload.Mix, r openloop.Result) *results.Traffic {
	t := &results.Traffic{Mix: mix.String(), Loop: results.LoopOpen, Workers: r.Workers, Ops: map[string]results.Phase{},
		Total: results.PhaseFromHistogram(r.Total.Latency, r.Total.Ops, r.Total.Errors, r.Seconds)}
	for _, k := range r.Kinds {
		if mix.Share(k.Name) > 0 {
			t.Ops[k.Name] = results.PhaseFromHistogram(k.Latency, k.Ops, k.Errors, r.Seconds)
		}
	}
	late := r.Lateness.ValueAtPercentiles([]float64{50, 99})
	t.Open = &results.OpenLoop{
		Arrivals: string(r.Arrivals), RatePerSec: r.Rate, OfferedPerSec: r.OfferedPerSec(), AchievedPerSec: r.AchievedPerSec(),
		Scheduled: r.Scheduled, Started: r.Started, Late: r.Late, Missed: r.Missed,
		LateP50Ms: float64(late[50]) / 1000, LateP99Ms: float64(late[99]) / 1000, LateMaxMs: float64(r.Lateness.Max()) / 1000,
		Service:      results.PhaseFromHistogram(r.Total.Service, r.Total.Ops, r.Total.Errors, r.Seconds),
		PeakInFlight: r.PeakInFlight, PeakBacklog: r.PeakBacklog, Saturated: r.Saturated(), StealShare: stealOf(r),
	}
	return t
}

// stealOf is r's share of the machine's CPU time stolen, nil when unknown.
func stealOf(r openloop.Result) *float64 {
	if !r.StealKnown {
		return nil
	}
	return &r.Steal
}

// searchResult records a rate search.
func searchResult(slo, step time.Duration, start float64, sr openloop.SearchResult) *results.RateSearch {
	out := &results.RateSearch{SLOMs: float64(slo.Microseconds()) / 1000, BestPerSec: sr.Best, StartPerSec: start,
		StepSeconds: step.Seconds()}
	for _, s := range sr.Steps {
		out.Steps = append(out.Steps, results.RateStep{RatePerSec: s.Rate, OfferedPerSec: s.Offered, AchievedPerSec: s.Achieved,
			P50Ms: s.P50Ms, P99Ms: s.P99Ms, P999Ms: s.P999Ms, Errors: s.Errors, Late: s.Late, Missed: s.Missed, Held: s.Held,
			Retry: s.Retry, StealShare: stealOf(s.Result), Disturbed: s.Disturbed, Ops: rateOps(s.Result)})
	}
	return out
}

// rateOps are each operation type's figures in one step of a rate search,
// for the types the step ran.
func rateOps(r openloop.Result) map[string]results.RateOp {
	out := map[string]results.RateOp{}
	for _, k := range r.Kinds {
		if k.Ops+k.Errors == 0 {
			continue
		}
		op := results.RateOp{Ops: k.Ops, Errors: k.Errors}
		if r.Seconds > 0 {
			op.OpsPerSec = float64(k.Ops) / r.Seconds
		}
		if k.Latency != nil && k.Latency.TotalCount() > 0 {
			op.P50Ms, op.P99Ms = float64(k.Latency.ValueAtQuantile(50))/1000, float64(k.Latency.ValueAtQuantile(99))/1000
		}
		out[k.Name] = op
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
