package loadgen

import (
	"context"
	"fmt"
	"time"

	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
)

// OptionWindow is the name of the model option that, in the designs that
// stop writing to readers who do not read, is how long a reader may stay
// away before they do; the returning study notes a model whose window is
// not shorter than the absence.
const OptionWindow = "window"

// returningStudy runs the returning-users study (BenchConfig.Returning)
// on m's traffic store, after its other write phases, and records it in
// the model's results.Returning.
func (b *bench) returningStudy(ctx context.Context, m registry.Model) error {
	if b.cfg.Returning == nil {
		return nil
	}
	cfg := *b.cfg.Returning
	cfg.Seed = b.cfg.Spec.Seed
	if w, ok := b.window(m); ok && w >= cfg.Absence {
		b.res.Notes = append(b.res.Notes, fmt.Sprintf("%s's window (%v) is not shorter than the returning study's absence (%v): its dormant users stayed active", m.Name, w, cfg.Absence))
	}
	s := b.trafficStore(m)
	r, err := workload.NewReturning(s, b.data, cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	b.logf("returning users %s: %d dormant and %d steady users read, then %v away ...", m.Name, len(r.Dormant), len(r.Steady), cfg.Absence)
	if err := r.Warm(ctx); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	if err := r.Away(ctx); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	ret := &results.Returning{Users: cfg.Users, AbsenceS: cfg.Absence.Seconds(), Posts: int64(r.Posts())}
	for _, g := range []struct {
		users []timeline.UserID
		into  *results.ReturnReads
	}{{r.Dormant, &ret.Dormant}, {r.Steady, &ret.Steady}} {
		var before map[string]int64
		start, finish := b.metered(ctx, m.Name+"/returning", func() { before = counts(s) })
		start()
		res, err := r.Return(ctx, g.users)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		c := finish(res.Reads)
		*g.into = results.ReturnReads{Reads: res.Reads, Expected: res.Expected, Shown: res.Shown, Complete: res.Complete, Cost: c,
			Counters: results.ActiveFigures("", before, counts(s), res.Reads), MeanMs: res.Latency.Mean() / 1000}
		g.into.P50Ms, g.into.P99Ms, g.into.MaxMs = quantilesMs(res.Latency)
	}
	b.logf("  %s: first read after the absence p50 %.2f ms, p99 %.2f ms, %.1f%% of the missed posts shown; steady p50 %.2f ms, p99 %.2f ms",
		m.Name, ret.Dormant.P50Ms, ret.Dormant.P99Ms, 100*ret.Dormant.Completeness(), ret.Steady.P50Ms, ret.Steady.P99Ms)
	b.res.Model(m.Name).Returning = ret
	return nil
}

// window is m's OptionWindow as the run gives it, if m declares one.
func (b *bench) window(m registry.Model) (time.Duration, bool) {
	for _, o := range m.Options {
		if o.Name != OptionWindow {
			continue
		}
		v, ok := b.cfg.Options[OptionWindow]
		if !ok {
			v = o.Default
		}
		d, err := time.ParseDuration(v)
		return d, err == nil
	}
	return 0, false
}
