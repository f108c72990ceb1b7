package openloop

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/hostcpu"
)

// sleeper is an operation that takes d of service time.
func sleeper(d time.Duration, calls *atomic.Int64) func(int) Op {
	return func(int) Op {
		return func(ctx context.Context) (int, error) {
			calls.Add(1)
			time.Sleep(d)
			return 0, nil
		}
	}
}

// TestPlanIsKeptWhenTheStoreIsSlow: a store four times too slow for the
// plan does not slow the plan down. Every planned operation of the
// measured stretch is accounted for (started or missed), their number is
// the rate times the stretch within Poisson noise, however slow the store,
// most start late, and their latency from the intended start dwarfs their
// service time. A driver paced by a ticker, or by the completion of the
// previous operation, would run about capacity × stretch operations, a
// quarter as many, and fail.
func TestPlanIsKeptWhenTheStoreIsSlow(t *testing.T) {
	const (
		rate    = 400.0
		service = 20 * time.Millisecond
		workers = 2 // capacity about 100/s
		window  = time.Second
	)
	var calls atomic.Int64
	var progress bytes.Buffer
	res, err := Run(context.Background(), Config{
		Name: "slow", Rate: rate, Workers: workers, Warmup: 100 * time.Millisecond, Duration: window,
		Drain: 200 * time.Millisecond, Progress: &progress, Seed: 7,
	}, sleeper(service, &calls))
	if err != nil {
		t.Fatal(err)
	}
	want := rate * window.Seconds()
	if tol := 5 * math.Sqrt(want); math.Abs(float64(res.Scheduled)-want) > tol {
		t.Fatalf("scheduled %d operations in %v at %v/s, want %.0f ± %.0f", res.Scheduled, window, rate, want, tol)
	}
	if res.Started+res.Missed != res.Scheduled || res.Total.Ops+res.Total.Errors != res.Started {
		t.Fatalf("scheduled %d = started %d + missed %d; completed %d + %d errors: operations went unaccounted",
			res.Scheduled, res.Started, res.Missed, res.Total.Ops, res.Total.Errors)
	}
	// The store can serve about a quarter of the plan in the stretch and
	// its drain: the rest must be missed, not dropped unseen.
	if res.Missed < res.Scheduled/4 {
		t.Fatalf("missed %d of %d with a store four times too slow", res.Missed, res.Scheduled)
	}
	if res.Late < res.Started/2 {
		t.Fatalf("%d of %d started late", res.Late, res.Started)
	}
	if !res.Saturated() || res.AchievedPerSec() > rate/2 {
		t.Fatalf("achieved %.0f/s of %.0f/s, saturated %v", res.AchievedPerSec(), res.OfferedPerSec(), res.Saturated())
	}
	lat, svc := res.Total.Latency.ValueAtQuantile(99), res.Total.Service.ValueAtQuantile(99)
	t.Logf("scheduled %d, started %d (late %d), missed %d; p99 latency %d µs, service %d µs; achieved %.0f/s", res.Scheduled, res.Started, res.Late, res.Missed, lat, svc, res.AchievedPerSec())
	// Against the store's nominal service time, and against what the
	// service took here: on a busy machine a 20 ms sleep can take 100.
	if lat < 10*service.Microseconds() || lat < 5*svc {
		t.Fatalf("p99 latency %d µs against p99 service %d µs (%v nominal): latency is not measured from the intended start", lat, svc, service)
	}
	if late := res.Lateness.ValueAtQuantile(99); late < int64(300*time.Millisecond/time.Microsecond) {
		t.Fatalf("p99 lateness %d µs, want hundreds of ms behind", late)
	}
	if res.PeakInFlight > workers {
		t.Fatalf("%d in flight with %d workers", res.PeakInFlight, workers)
	}
	if !strings.Contains(progress.String(), "backlog") {
		t.Fatalf("no progress rows: %q", progress.String())
	}
}

// TestConstantArrivals plan exactly rate × stretch operations, all of
// which a fast store completes with few late starts.
func TestConstantArrivals(t *testing.T) {
	var calls atomic.Int64
	res, err := Run(context.Background(), Config{
		Name: "constant", Rate: 500, Arrivals: Constant, Workers: 8, Duration: 600 * time.Millisecond,
	}, sleeper(0, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if res.Scheduled != 300 || res.Missed != 0 || res.Total.Ops != 300 {
		t.Fatalf("scheduled %d, missed %d, completed %d; want 300, 0, 300", res.Scheduled, res.Missed, res.Total.Ops)
	}
	if calls.Load() != 300 {
		t.Fatalf("%d calls for 300 planned operations", calls.Load())
	}
}

// TestOpsCountAndKinds: with Ops the measured stretch is exactly that many
// operations, after a warm-up whose operations run unmeasured; kinds and
// errors are counted apart.
func TestOpsCountAndKinds(t *testing.T) {
	var calls atomic.Int64
	var measuring atomic.Bool
	res, err := Run(context.Background(), Config{
		Name: "kinds", Rate: 1000, Ops: 200, Warmup: 100 * time.Millisecond, Kinds: []string{"read", "write"},
		OnMeasure: func() { measuring.Store(true) },
	}, func(int) Op {
		return func(ctx context.Context) (int, error) {
			n := calls.Add(1)
			if n%10 == 0 {
				return 1, errors.New("every tenth write fails")
			}
			return int(n % 2), nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !measuring.Load() {
		t.Fatal("OnMeasure was not called")
	}
	if res.Scheduled != 200 || res.Total.Ops+res.Total.Errors != 200 {
		t.Fatalf("scheduled %d, completed %d + %d errors, want 200", res.Scheduled, res.Total.Ops, res.Total.Errors)
	}
	if calls.Load() <= 200 {
		t.Fatalf("%d calls: the warm-up ran nothing", calls.Load())
	}
	r, w := res.Kinds[0], res.Kinds[1]
	if r.Name != "read" || w.Name != "write" || r.Errors != 0 || w.Errors != res.Total.Errors || r.Ops+w.Ops != res.Total.Ops {
		t.Fatalf("kinds %+v %+v, total %+v", r, w, res.Total)
	}
	if w.Errors < 10 || r.Ops < 50 || r.Latency.TotalCount() != r.Ops {
		t.Fatalf("read %d ops (%d latencies), write %d errors", r.Ops, r.Latency.TotalCount(), w.Errors)
	}
	// The machine's stolen CPU time is read where the kernel gives it.
	if _, err := hostcpu.Read(); err == nil && (!res.StealKnown || res.Steal < 0 || res.Steal > 1) {
		t.Fatalf("steal %v (known %v) on a machine whose CPU times can be read", res.Steal, res.StealKnown)
	}
}

func TestPoissonGaps(t *testing.T) {
	s := plan(1000, Poisson, 3, 0, 20*time.Second, 0)
	n := float64(len(s.at))
	if math.Abs(n-20000) > 5*math.Sqrt(20000) {
		t.Fatalf("%v arrivals in 20 s at 1000/s", n)
	}
	// Exponential gaps: mean 1 ms, and about e^-2 of them above 2 ms.
	var above int
	for i := 1; i < len(s.at); i++ {
		if s.at[i]-s.at[i-1] > 2*time.Millisecond {
			above++
		}
	}
	if share := float64(above) / n; math.Abs(share-math.Exp(-2)) > 0.02 {
		t.Fatalf("%.3f of gaps above twice the mean, want %.3f", share, math.Exp(-2))
	}
	again := plan(1000, Poisson, 3, 0, 20*time.Second, 0)
	if len(again.at) != len(s.at) || again.at[len(s.at)-1] != s.at[len(s.at)-1] {
		t.Fatal("the same seed planned different arrivals")
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var calls atomic.Int64
	_, err := Run(ctx, Config{Name: "x", Rate: 100, Duration: time.Hour}, sleeper(time.Millisecond, &calls))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []Config{
		{Rate: 0, Duration: time.Second},
		{Rate: -5, Duration: time.Second},
		{Rate: math.NaN(), Duration: time.Second},
		{Rate: math.Inf(1), Duration: time.Second},
		{Rate: 10},
		{Rate: 10, Duration: time.Second, Workers: -1},
		{Rate: 10, Duration: time.Second, Ops: -1},
		{Rate: 10, Duration: time.Second, Arrivals: "bursty"},
		{Rate: 1e8, Duration: time.Hour},
	} {
		_, err := Run(context.Background(), c, func(int) Op { t.Fatal("ran"); return nil })
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%+v: got %v, want a *ConfigError", c, err)
		}
	}
	if _, err := ParseArrivals("uniform"); err == nil {
		t.Error("arrivals uniform accepted")
	}
}
