package openloop

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResult is a run whose every operation took lat from its intended
// start.
func fakeResult(rate float64, lat time.Duration) Result {
	r := Result{Rate: rate, Window: 1, Scheduled: int64(rate), Started: int64(rate), Seconds: 1,
		Total: Stats{Ops: int64(rate), Latency: NewHistogram(), Service: NewHistogram()}}
	for range int(rate) {
		record(r.Total.Latency, lat)
	}
	return r
}

// TestFindRateBisects: a store that holds 10 ms up to 1,234 ops/s and
// takes 200 ms beyond is found within the search's precision, from above
// and from below.
func TestFindRateBisects(t *testing.T) {
	const capacity = 1234.0
	step := func(_ context.Context, rate float64) (Result, error) {
		if rate <= capacity {
			return fakeResult(rate, 10*time.Millisecond), nil
		}
		return fakeResult(rate, 200*time.Millisecond), nil
	}
	for _, start := range []float64{100, 5000} {
		res, err := FindRate(context.Background(), SearchConfig{SLO: 50 * time.Millisecond, Start: start, MaxSteps: 20}, step)
		if err != nil {
			t.Fatal(err)
		}
		if res.Best > capacity || res.Best < capacity/(1+DefaultPrecision) {
			t.Fatalf("from %v: best %v, want within %.0f%% below %v (steps %d)", start, res.Best, 100*DefaultPrecision, capacity, len(res.Steps))
		}
		for _, s := range res.Steps {
			if s.Held != (s.Rate <= capacity) {
				t.Fatalf("step %+v", s)
			}
		}
	}
	// Nothing holds: the search gives up at the minimum rate with Best 0.
	res, err := FindRate(context.Background(), SearchConfig{SLO: time.Millisecond, Start: 64, MinRate: 2}, step)
	if err != nil || res.Best != 0 || len(res.Steps) != 6 {
		t.Fatalf("best %v after %d steps, err %v", res.Best, len(res.Steps), err)
	}
	// A missed operation fails a step whatever its latency.
	missed := fakeResult(10, time.Millisecond)
	missed.Missed = 1
	if (SearchConfig{SLO: time.Second}).Held(missed) {
		t.Fatal("a step with a missed operation held")
	}
}

// TestFindRateOnAFakeStore: a store of known capacity (4 workers, 5 ms per
// operation: 800 ops/s) is searched for real, in short open-loop steps;
// the rate found is near the capacity the store showed in the run. Timers
// on a busy machine oversleep, which lowers that capacity: the rate found
// is held to the highest rate any step achieved, not to the nominal 800/s,
// which it cannot exceed. The bounds are wide: queueing near capacity
// raises the p99 well before the rate reaches it.
func TestFindRateOnAFakeStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 5 s of timed steps")
	}
	const workers, service = 4, 5 * time.Millisecond
	capacity := workers / service.Seconds()
	var calls atomic.Int64
	step := func(ctx context.Context, rate float64) (Result, error) {
		return Run(ctx, Config{Name: "fake", Rate: rate, Workers: workers, Duration: 400 * time.Millisecond,
			Drain: 300 * time.Millisecond, Seed: uint64(rate)}, sleeper(service, &calls))
	}
	res, err := FindRate(context.Background(), SearchConfig{SLO: 50 * time.Millisecond, Start: capacity / 2, MaxSteps: 7}, step)
	if err != nil {
		t.Fatal(err)
	}
	var shown float64 // the highest rate the store achieved in a step
	for _, s := range res.Steps {
		t.Logf("rate %.0f: achieved %.0f, p99 %.1f ms, missed %d, held %v", s.Rate, s.Achieved, s.P99Ms, s.Missed, s.Held)
		shown = max(shown, s.Achieved)
	}
	if res.Best < 0.4*shown || res.Best > 1.1*capacity {
		t.Fatalf("best %.0f/s for a store of capacity %.0f/s that achieved %.0f/s here", res.Best, capacity, shown)
	}
}

func TestFindRateBadConfig(t *testing.T) {
	step := func(context.Context, float64) (Result, error) { t.Fatal("ran"); return Result{}, nil }
	for _, c := range []SearchConfig{{Start: 10}, {SLO: time.Second}, {SLO: time.Second, Start: -1}, {SLO: time.Second, Start: 1, MaxSteps: -2}, {SLO: time.Second, Start: 1, Confirm: -2},
		{SLO: time.Second, Start: 1, MaxSteal: -0.1}, {SLO: time.Second, Start: 1, MaxSteal: 1.5}, {SLO: time.Second, Start: 1, MaxSteal: math.NaN()}} {
		var ce *ConfigError
		if _, err := FindRate(context.Background(), c, step); !errors.As(err, &ce) {
			t.Errorf("%+v: got %v", c, err)
		}
	}
}

// TestFindRateConfirms: a failure the search would end at is re-run once
// (SearchConfig.Confirm); a transient one, which the re-run does not
// repeat, no longer bounds the search, and a steady one ends it as before.
func TestFindRateConfirms(t *testing.T) {
	const capacity = 1234.0
	slo := 50 * time.Millisecond
	// A store of the capacity whose first step stalls, whatever the rate.
	stalled := func() func(context.Context, float64) (Result, error) {
		first := true
		return func(_ context.Context, rate float64) (Result, error) {
			if first || rate > capacity {
				first = false
				return fakeResult(rate, 200*time.Millisecond), nil
			}
			return fakeResult(rate, 10*time.Millisecond), nil
		}
	}
	plain, err := FindRate(context.Background(), SearchConfig{SLO: slo, Start: 1000, MaxSteps: 20, Confirm: -1}, stalled())
	if err != nil {
		t.Fatal(err)
	}
	if plain.Best >= 1000 {
		t.Fatalf("without confirming, the stall at 1,000/s should bound the search: best %v", plain.Best)
	}
	for _, s := range plain.Steps {
		if s.Retry {
			t.Fatalf("a step was re-run without confirming: %+v", s)
		}
	}
	res, err := FindRate(context.Background(), SearchConfig{SLO: slo, Start: 1000, MaxSteps: 20}, stalled())
	if err != nil {
		t.Fatal(err)
	}
	if res.Best > capacity || res.Best < capacity/(1+DefaultPrecision) {
		t.Fatalf("best %v, want within %.0f%% below %v: the stall was re-run and held", res.Best, 100*DefaultPrecision, capacity)
	}
	var retries []Step
	for _, s := range res.Steps {
		if s.Retry {
			retries = append(retries, s)
		}
	}
	if len(retries) != DefaultConfirm || retries[0].Rate != 1000 || !retries[0].Held {
		t.Fatalf("re-run steps %+v, want the one at 1,000/s, held", retries)
	}
	// A steady store: the re-run fails as the step did, and the best rate
	// is the plain search's, one step later.
	steady := func(_ context.Context, rate float64) (Result, error) {
		if rate <= capacity {
			return fakeResult(rate, 10*time.Millisecond), nil
		}
		return fakeResult(rate, 200*time.Millisecond), nil
	}
	a, err := FindRate(context.Background(), SearchConfig{SLO: slo, Start: 100, MaxSteps: 20, Confirm: -1}, steady)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FindRate(context.Background(), SearchConfig{SLO: slo, Start: 100, MaxSteps: 20, Confirm: 3}, steady)
	if err != nil {
		t.Fatal(err)
	}
	last := b.Steps[len(b.Steps)-1]
	if b.Best != a.Best || len(b.Steps) != len(a.Steps)+1 || !last.Retry || last.Held || last.Rate <= b.Best {
		t.Fatalf("steady store: best %v in %d steps (last %+v), without confirming %v in %d", b.Best, len(b.Steps), last, a.Best, len(a.Steps))
	}
	// The step budget ending the search does not skip the re-run: it
	// raises the best rate to the rate re-run when that holds.
	short, err := FindRate(context.Background(), SearchConfig{SLO: slo, Start: 1000, MaxSteps: 3}, stalled())
	if err != nil {
		t.Fatal(err)
	}
	if len(short.Steps) != 4 || short.Best != 1000 {
		t.Fatalf("3 steps and a re-run: best %v after %d steps", short.Best, len(short.Steps))
	}
}

// TestFindRateStolen: a step that fails while the hypervisor took more
// than MaxSteal of the CPUs' time does not count; its rate runs again at
// once, at most MaxStealReruns times a search. A failure with little
// stolen counts, and so does one once the re-runs are spent.
func TestFindRateStolen(t *testing.T) {
	const capacity = 1234.0
	slo := 50 * time.Millisecond
	// A store of the capacity whose steps fail while n of them are
	// disturbed (steal share given), whatever the rate.
	disturbed := func(n int, steal float64) func(context.Context, float64) (Result, error) {
		return func(_ context.Context, rate float64) (Result, error) {
			r := fakeResult(rate, 10*time.Millisecond)
			if n > 0 || rate > capacity {
				r = fakeResult(rate, 200*time.Millisecond)
			}
			r.StealKnown = true
			if n > 0 {
				n--
				r.Steal = steal
			}
			return r, nil
		}
	}
	cfg := SearchConfig{SLO: slo, Start: 1000, MaxSteps: 20, Confirm: -1}
	res, err := FindRate(context.Background(), cfg, disturbed(1, 0.2))
	if err != nil {
		t.Fatal(err)
	}
	if res.Best > capacity || res.Best < capacity/(1+DefaultPrecision) {
		t.Fatalf("best %v, want within %.0f%% below %v: the disturbed step ran again and held", res.Best, 100*DefaultPrecision, capacity)
	}
	if s := res.Steps; !s[0].Disturbed || s[0].Held || !s[1].Retry || s[1].Rate != 1000 || !s[1].Held || s[1].Disturbed {
		t.Fatalf("first steps %+v, %+v: want 1,000/s disturbed, then run again and held", s[0], s[1])
	}
	// The same failure with less stolen than the bound counts.
	res, err = FindRate(context.Background(), cfg, disturbed(1, DefaultMaxSteal/2))
	if err != nil {
		t.Fatal(err)
	}
	if res.Best >= 1000 || res.Steps[0].Disturbed || res.Steps[1].Retry {
		t.Fatalf("steal below the bound: best %v, first steps %+v, %+v", res.Best, res.Steps[0], res.Steps[1])
	}
	// An overloaded step, its operations completing at half the offered
	// rate, failed for its rate however much was stolen.
	overloaded := func(_ context.Context, rate float64) (Result, error) {
		r := fakeResult(rate, 10*time.Millisecond)
		if rate > capacity {
			r = fakeResult(rate, 200*time.Millisecond)
			r.Seconds = 2
		}
		r.StealKnown, r.Steal = true, 0.2
		return r, nil
	}
	if res, err = FindRate(context.Background(), cfg, overloaded); err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Steps {
		if s.Disturbed {
			t.Fatalf("an overloaded step was run again for steal: %+v", s)
		}
	}
	// One that kept up within what was stolen is run again.
	if !stolen(Result{StealKnown: true, Steal: 0.2, Window: 1, Scheduled: 1000, Seconds: 1, Total: Stats{Ops: 750}}, DefaultMaxSteal) {
		t.Fatal("a step at 75 % of its plan with 20 % stolen was not taken as disturbed")
	}
	// MaxSteal 1 never re-runs.
	cfg.MaxSteal = 1
	if res, err = FindRate(context.Background(), cfg, disturbed(1, 0.9)); err != nil || res.Best >= 1000 {
		t.Fatalf("MaxSteal 1: best %v, %v", res.Best, err)
	}
	cfg.MaxSteal = 0
	// A machine disturbed for longer than the re-runs: the failure after
	// them counts, and the search ends below 1,000/s as a plain one.
	res, err = FindRate(context.Background(), cfg, disturbed(MaxStealReruns+1, 0.2))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range res.Steps {
		if s.Disturbed {
			n++
		}
	}
	if n != MaxStealReruns || res.Best >= 1000 || res.Steps[MaxStealReruns].Rate != 1000 || res.Steps[MaxStealReruns].Disturbed {
		t.Fatalf("%d disturbed steps, best %v: want %d, then the failure at 1,000/s counted", n, res.Best, MaxStealReruns)
	}
	// A re-run of a confirmation that is disturbed is a confirmation
	// still: if it fails, the search ends there.
	steps := 0
	conf := func(_ context.Context, rate float64) (Result, error) {
		steps++
		r := fakeResult(rate, 10*time.Millisecond)
		if rate > capacity {
			r = fakeResult(rate, 200*time.Millisecond)
		}
		return r, nil
	}
	plain, err := FindRate(context.Background(), SearchConfig{SLO: slo, Start: 100, MaxSteps: 20, Confirm: -1}, conf)
	if err != nil {
		t.Fatal(err)
	}
	last := plain.Steps[len(plain.Steps)-1].Rate // where the confirmation runs
	k := 0
	confDisturbed := func(ctx context.Context, rate float64) (Result, error) {
		r, err := conf(ctx, rate)
		if rate == last {
			k++
			if k == 2 { // the confirmation, disturbed
				r.StealKnown, r.Steal = true, 0.3
			}
		}
		return r, err
	}
	res, err = FindRate(context.Background(), SearchConfig{SLO: slo, Start: 100, MaxSteps: 20}, confDisturbed)
	if err != nil {
		t.Fatal(err)
	}
	tail := res.Steps[len(res.Steps)-2:]
	if res.Best != plain.Best || len(res.Steps) != len(plain.Steps)+2 || !tail[0].Retry || !tail[0].Disturbed || !tail[1].Retry || tail[1].Disturbed || tail[1].Held {
		t.Fatalf("a disturbed confirmation: best %v (plain %v), %d steps (plain %d), last two %+v", res.Best, plain.Best, len(res.Steps), len(plain.Steps), tail)
	}
}
