package loadgen

import (
	"context"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/results"
)

// A rate search's step starts on a settled box: one that runs no
// background work of the step before it. An overloaded step leaves work
// behind that its drain does not wait for (InnoDB purging the rows it
// deleted and flushing the pages it dirtied, a store's timers), and a
// step that started beside it would count that work's stalls as its own
// latency: a step far below the cores could fail for the step before it.
const (
	// SettleWindow is how long each look at the box's CPU lasts.
	SettleWindow = 250 * time.Millisecond
	// SettleMax bounds the wait before a step; a step whose box has not
	// settled by then runs anyway, marked unsettled
	// (results.RateStep.Unsettled).
	SettleMax = 10 * time.Second
	// SettleMarginUs is how much CPU a second above the run's idle CPU
	// (results.Result.Idle), every process together, a settled box may
	// still use: 5 % of a core, above the noise of one window.
	SettleMarginUs = 50_000
)

// waitQuiet samples the box's CPU a second (every process together, µs/s)
// over windows of window until one is at most quiet, or max has passed.
// It returns how long it waited and whether the box settled; an error
// only when ctx ended or a sample failed.
func waitQuiet(ctx context.Context, sample func(ctx context.Context, window time.Duration) (float64, error), quiet float64, window, max time.Duration) (time.Duration, bool, error) {
	start := time.Now()
	for {
		us, err := sample(ctx, window)
		if err != nil {
			return time.Since(start), false, err
		}
		if us <= quiet {
			return time.Since(start), true, nil
		}
		if time.Since(start) >= max {
			return time.Since(start), false, nil
		}
	}
}

// meterSample is a sampler for waitQuiet over m: every process's CPU a
// second over one window, from two snapshots.
func meterSample(m *cost.Meter) func(ctx context.Context, window time.Duration) (float64, error) {
	return func(ctx context.Context, window time.Duration) (float64, error) {
		before, err := m.Take(ctx)
		if err != nil {
			return 0, err
		}
		t0 := time.Now()
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(window):
		}
		after, err := m.Take(ctx)
		if err != nil {
			return 0, err
		}
		p, ok := results.ProcessCPUOf(cost.PerOp(before, after, 1), time.Since(t0).Seconds())
		if !ok {
			return 0, nil
		}
		return p.All(), nil
	}
}

// settleBox waits, at most SettleMax, until the box's processes are back
// within SettleMarginUs of the run's idle CPU. It reports the wait and
// whether the box settled; a run that measures no costs, or measured no
// idle CPU, does not wait (0, true).
func (b *bench) settleBox(ctx context.Context) (time.Duration, bool, error) {
	if b.meter == nil || b.res.Idle == nil {
		return 0, true, nil
	}
	return waitQuiet(ctx, meterSample(b.meter), b.res.Idle.All()+SettleMarginUs, SettleWindow, SettleMax)
}
