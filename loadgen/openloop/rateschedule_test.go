package openloop

import (
	"context"
	"errors"
	"math"
	"reflect"
	"sync/atomic"
	"testing"
	"time"
)

// TestParseSchedule: the written forms of a schedule, and every malformed
// one refused as a *ConfigError.
func TestParseSchedule(t *testing.T) {
	good := map[string]RateSchedule{
		"300:10s,3000:5s,300:10s": {{300, 10 * time.Second}, {3000, 5 * time.Second}, {300, 10 * time.Second}},
		" 300/s:1s , 2.5:500ms":   {{300, time.Second}, {2.5, 500 * time.Millisecond}},
		"1e3:1m":                  {{1000, time.Minute}},
	}
	for spec, want := range good {
		got, err := ParseSchedule(spec)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %v, %v; want %v", spec, got, err, want)
		}
		again, err := ParseSchedule(got.String())
		if err != nil || !reflect.DeepEqual(again, want) {
			t.Fatalf("%q written as %q reads back as %v, %v", spec, got.String(), again, err)
		}
	}
	var many string
	for i := range MaxStages + 1 {
		if i > 0 {
			many += ","
		}
		many += "1:1s"
	}
	for _, spec := range []string{
		"", " ", "300", "300:", ":5s", "300:5", "300:0s", "300:-1s", "0:5s", "-3:5s", "NaN:5s", "Inf:5s",
		"2e9:1s", "300:10s,", ",300:10s", "300:10s;3000:5s", "300/m:5s", "300:5s:1s", "x:5s", many,
	} {
		got, err := ParseSchedule(spec)
		var ce *ConfigError
		if !errors.As(err, &ce) || got != nil {
			t.Errorf("%q: got %v, %v; want a *ConfigError", spec, got, err)
		}
	}
}

// TestPlanFollowsTheStages: each stage plans its rate times its length,
// within Poisson noise, and nothing outside the schedule; constant
// arrivals plan exactly that.
func TestPlanFollowsTheStages(t *testing.T) {
	stages := RateSchedule{{200, 2 * time.Second}, {2000, time.Second}, {200, 3 * time.Second}}
	for _, arr := range []Arrivals{Poisson, Constant} {
		s := planStages(stages, arr, 5, 0, 0)
		if s.end != stages.Duration() || s.scheduled() != len(s.at) {
			t.Fatalf("%s: end %v, %d of %d measured", arr, s.end, s.scheduled(), len(s.at))
		}
		var from time.Duration
		for _, st := range stages {
			n := s.due(from+st.Duration-1) - s.due(from-1)
			want := st.Rate * st.Duration.Seconds()
			tol := 5 * math.Sqrt(want)
			if arr == Constant {
				tol = 1
			}
			if math.Abs(float64(n)-want) > tol {
				t.Fatalf("%s: %d arrivals in the stage %v, want %.0f ± %.0f", arr, n, st, want, tol)
			}
			from += st.Duration
		}
	}
	// One stage is the single-rate plan, arrival for arrival.
	one, plain := planStages(RateSchedule{{700, 3 * time.Second}}, Poisson, 9, time.Second, 0), plan(700, Poisson, 9, time.Second, 3*time.Second, 0)
	if !reflect.DeepEqual(one.at, plain.at) || one.firstMeas != plain.firstMeas || one.end != plain.end {
		t.Fatal("a one-stage schedule plans differently from its rate")
	}
}

// TestRunOnASchedule: a run on a schedule plans its stages after the
// warm-up, and its series accounts for every measured operation in the
// bucket of its intended start, ten times as many in the burst's buckets.
func TestRunOnASchedule(t *testing.T) {
	var calls atomic.Int64
	stages := RateSchedule{{100, time.Second}, {1000, 500 * time.Millisecond}, {100, time.Second}}
	res, err := Run(context.Background(), Config{
		Name: "burst", Schedule: stages, Arrivals: Constant, Warmup: 200 * time.Millisecond,
		Bucket: 250 * time.Millisecond, Workers: 64,
	}, sleeper(0, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if res.Scheduled != 100+500+100 || res.Window != 2.5 || !reflect.DeepEqual(res.Schedule, stages) {
		t.Fatalf("scheduled %d in %v s, schedule %v", res.Scheduled, res.Window, res.Schedule)
	}
	if len(res.Series) != 10 {
		t.Fatalf("%d buckets of 250 ms in 2.5 s", len(res.Series))
	}
	var sum int64
	for i, b := range res.Series {
		n := b.Ops + b.Errors + b.Missed
		sum += n
		want := int64(25)
		if i == 4 || i == 5 {
			want = 250
		}
		if b.At != time.Duration(i)*250*time.Millisecond || n != want || b.Latency.TotalCount() != b.Ops {
			t.Fatalf("bucket %d at %v: %d operations (%d with latencies), want %d", i, b.At, n, b.Latency.TotalCount(), want)
		}
	}
	if sum != res.Scheduled {
		t.Fatalf("the buckets hold %d of %d operations", sum, res.Scheduled)
	}
	for _, c := range []Config{
		{Schedule: stages, Ops: 10},
		{Schedule: RateSchedule{{0, time.Second}}},
		{Schedule: stages, Bucket: -time.Second},
		{Schedule: stages, Bucket: time.Nanosecond},
		{Schedule: RateSchedule{{1e9, time.Hour}}},
	} {
		var ce *ConfigError
		if err := c.Check(); !errors.As(err, &ce) {
			t.Errorf("%+v: %v, want a *ConfigError", c, err)
		}
	}
}

// TestRecovery: the time a series takes to come back within its
// objective, on series made by hand.
func TestRecovery(t *testing.T) {
	const w = 100 * time.Millisecond
	// series makes points w apart from 0: a value per point, -1 for a
	// point without observations, -2 for one with a missed operation.
	series := func(values ...float64) []Point {
		var out []Point
		for i, v := range values {
			p := Point{At: time.Duration(i) * w, N: 10, Value: v}
			switch v {
			case -1:
				p.N, p.Value = 0, 0
			case -2:
				p.Failed = true
			}
			out = append(out, p)
		}
		return out
	}
	for _, c := range []struct {
		name   string
		points []Point
		from   time.Duration
		hold   time.Duration
		after  time.Duration
		ok     bool
	}{
		{"within at once", series(5, 5, 80, 80, 5, 5, 5, 5), 4 * w, 3 * w, 0, true},
		{"back two points later", series(5, 80, 80, 80, 80, 5, 5, 5, 5), 3 * w, 3 * w, 2 * w, true},
		{"a lull is not a recovery", series(80, 80, 5, 80, 80, 5, 5, 5), 0, 3 * w, 5 * w, true},
		{"never back", series(5, 80, 80, 80, 80, 80), w, w, 0, false},
		{"back too near the end", series(80, 80, 80, 5), 0, 2 * w, 0, false},
		{"a missed operation breaks it", series(80, 5, -2, 5, 5, 5), 0, 2 * w, 3 * w, true},
		{"empty points neither start nor break", series(80, -1, -1, 5, -1, 5, 5), 0, 3 * w, 3 * w, true},
		{"only empty points", series(-1, -1, -1, -1), 0, w, 0, false},
		{"from inside a point", series(80, 80, 5, 5, 5, 5), 250 * time.Millisecond, 2 * w, 0, true},
		{"a later breach does not undo it", series(80, 5, 5, 5, 80, 80), 0, 3 * w, w, true},
		{"the objective itself holds", series(80, 50, 50, 50), 0, 2 * w, w, true},
	} {
		after, ok := Recovery(c.points, w, c.from, 50, c.hold)
		if after != c.after || ok != c.ok {
			t.Errorf("%s: recovered after %v (%v), want %v (%v)", c.name, after, ok, c.after, c.ok)
		}
	}
}
