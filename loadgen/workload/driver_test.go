package workload

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunPhaseCountsOpsAndErrors(t *testing.T) {
	var calls atomic.Int64
	res, err := RunPhase(context.Background(), PhaseConfig{Name: "t", Workers: 4, Ops: 1000}, func(int) Op {
		return func(ctx context.Context, c *Clock) error {
			if calls.Add(1)%10 == 0 {
				return errors.New("every tenth fails")
			}
			return nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops+res.Errors != 1000 {
		t.Fatalf("measured %d ops + %d errors, want 1000 in all", res.Ops, res.Errors)
	}
	if res.Errors < 80 || res.Errors > 120 {
		t.Fatalf("%d errors, want about 100", res.Errors)
	}
	if r := res.ErrorRate(); r <= MaxErrorRate {
		t.Fatalf("error rate %.3f not above the failure threshold", r)
	}
	if len(res.SampleErrors) != 1 || res.SampleErrors[0] != "every tenth fails" {
		t.Fatalf("sample errors %q", res.SampleErrors)
	}
	if res.Latency.TotalCount() != res.Ops {
		t.Fatalf("histogram holds %d values for %d ops", res.Latency.TotalCount(), res.Ops)
	}
}

// TestRunPhaseDurationWarmupAndLatency: operations run during the
// warm-up, unmeasured; the measured stretch lasts the duration; latency
// counts only what follows Clock.Restart. The bounds follow from the
// operations, not from the machine's speed: a sleep never ends early, and
// the set-up before Restart (200 ms) is far longer than what follows it
// (1 ms), so a median under the set-up shows it excluded.
func TestRunPhaseDurationWarmupAndLatency(t *testing.T) {
	const setup = 200 * time.Millisecond
	var progress bytes.Buffer
	var warm atomic.Int64
	var measuring atomic.Bool
	res, err := RunPhase(context.Background(), PhaseConfig{
		Name: "sleepy", Workers: 2, Warmup: 200 * time.Millisecond, Duration: 1500 * time.Millisecond, Progress: &progress,
		OnMeasure: func() { measuring.Store(true) },
	}, func(int) Op {
		return func(ctx context.Context, c *Clock) error {
			if !measuring.Load() {
				warm.Add(1)
			}
			time.Sleep(setup) // set-up, excluded by Restart
			c.Restart()
			time.Sleep(time.Millisecond)
			return nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if warm.Load() == 0 {
		t.Fatal("no operations ran during the warm-up")
	}
	// At least the duration; a driver that measured to the end of the
	// operations in flight, or that lost its deadline, would be seconds
	// past it.
	if res.Seconds < 1.5 || res.Seconds > 10 {
		t.Fatalf("measured %.2fs, want about 1.5s", res.Seconds)
	}
	p50 := time.Duration(res.Latency.ValueAtQuantile(50)) * time.Microsecond
	if p50 < time.Millisecond || p50 >= setup {
		t.Fatalf("p50 %v, want 1 ms up to the set-up's %v (the measured part only)", p50, setup)
	}
	if res.Ops == 0 || res.Errors != 0 {
		t.Fatalf("ops %d errors %d", res.Ops, res.Errors)
	}
	if !strings.Contains(progress.String(), "sleepy") || !strings.Contains(progress.String(), "ops/s") {
		t.Fatalf("no progress rows: %q", progress.String())
	}
}

func TestRunPhaseNeedsAnEnd(t *testing.T) {
	if _, err := RunPhase(context.Background(), PhaseConfig{Name: "x"}, func(int) Op { return nil }); err == nil {
		t.Fatal("phase without duration or count accepted")
	}
}

func TestRunPhaseCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := RunPhase(ctx, PhaseConfig{Name: "x", Duration: time.Hour}, func(int) Op {
		return func(ctx context.Context, c *Clock) error { time.Sleep(time.Millisecond); return nil }
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}

// TestRunPhaseMeasuresNoWarmupOp: OnMeasure is where a phase's counters
// are first read, so no warm-up operation may be running while it runs
// nor start after it, and every operation that starts after it is one of
// the phase's: what the servers count between OnMeasure and the end is
// exactly the work of the operations the phase reports.
func TestRunPhaseMeasuresNoWarmupOp(t *testing.T) {
	var started, finished atomic.Int64
	var atMeasure, inFlight int64
	res, err := RunPhase(context.Background(), PhaseConfig{Name: "t", Workers: 4, Ops: 200, Warmup: 20 * time.Millisecond,
		OnMeasure: func() {
			atMeasure = started.Load()
			inFlight = atMeasure - finished.Load()
			time.Sleep(20 * time.Millisecond) // a snapshot that takes its time
		}}, func(int) Op {
		return func(ctx context.Context, c *Clock) error {
			started.Add(1)
			defer finished.Add(1)
			time.Sleep(100 * time.Microsecond)
			return nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if inFlight != 0 {
		t.Errorf("%d warm-up operations were running while OnMeasure ran", inFlight)
	}
	if after := started.Load() - atMeasure; after != res.Ops+res.Errors {
		t.Errorf("%d operations started after OnMeasure, the phase measured %d", after, res.Ops+res.Errors)
	}
	if res.WarmupOps != atMeasure {
		t.Errorf("%d operations ran before OnMeasure, the phase says %d warmed up", atMeasure, res.WarmupOps)
	}
}
