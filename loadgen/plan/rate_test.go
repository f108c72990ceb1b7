package plan

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/pushpull/pushpull/loadgen/recommend"
	"github.com/pushpull/pushpull/results"
)

// rateWorkload is the benchmark's workload at 1,000 users with the
// default mix's shares: what a find-rate run at scale 0.1 asks for.
func rateWorkload() Workload {
	return Workload{Users: 1000, NewestPerSec: 76, OlderPerSec: 20, PostsPerSec: 2, FollowsPerSec: 2, SLO: 50 * time.Millisecond}
}

// TestHighestRateByHand: with a calibration in which every operation
// costs the application 100 µs and nothing else, and no round trips, every
// operation's response time is exponential with mean 100 µs/(1-u), so the
// p99 is 100 µs·ln(100)/(1-u): it reaches 50 ms at u = 1 - 0.0092103, and
// the highest rate on 2 cores is u × 2 × 10^6/100 = 19,815.8 operations a
// second; on 4 cores twice that.
func TestHighestRateByHand(t *testing.T) {
	cal := &results.Calibration{AppOpUs: 100}
	u := 1 - 100*math.Log(100)/50_000
	for _, cores := range []float64{2, 4} {
		for _, model := range []string{"push", "pull-sp", "push-redis", "hybrid-memcached"} {
			est, err := HighestRate(rateWorkload(), cal, model, Box{Cores: cores, RTT: time.Nanosecond})
			if err != nil {
				t.Fatal(err)
			}
			want := u * cores * 1e6 / 100
			if math.Abs(est.PerSec-want) > 1e-3*want || math.Abs(est.CPUUs-100) > 1e-9 || math.Abs(est.Utilization-u) > 1e-3 {
				t.Errorf("%s on %g cores: %+v; want %.1f ops/s at 100 µs, utilisation %.4f", model, cores, est, want, u)
			}
		}
	}
}

// scaled is cal with every CPU figure times f.
func scaled(cal *results.Calibration, f float64) *results.Calibration {
	c := *cal
	for _, v := range []*float64{&c.DBRowReadUs, &c.DBRowWrittenUs, &c.DBStatementUs, &c.MCKeyUs, &c.MCCallUs,
		&c.RedisCommandUs, &c.RedisCallUs, &c.AppOpUs, &c.AppStatementUs, &c.AppCallUs, &c.AppItemUs} {
		*v *= f
	}
	return &c
}

// TestHighestRateFollowsCPUAndCores: for every candidate, on the built-in
// calibration, the predicted rate stays under the rate that fills the
// cores; it falls as the CPU per unit of work rises (twice the CPU, at
// most half the rate) and rises with the box's cores (twice the cores, about
// twice the rate); and a tighter objective lowers it.
func TestHighestRateFollowsCPUAndCores(t *testing.T) {
	cal := DefaultCalibration()
	w := rateWorkload()
	tight := w
	tight.SLO = 2 * time.Millisecond
	for _, model := range recommend.Candidates() {
		rate := func(w Workload, cal *results.Calibration, cores float64) RateEstimate {
			est, err := HighestRate(w, cal, model, Box{Cores: cores})
			if err != nil {
				t.Fatalf("%s: %v", model, err)
			}
			return est
		}
		base := rate(w, cal, 2)
		if !(base.PerSec > 0) || base.PerSec >= base.CeilingPerSec || base.Utilization >= 1 ||
			math.Abs(base.PerSec*base.CPUUs/2e6-base.Utilization) > 1e-9 {
			t.Errorf("%s: %+v: want a rate above 0 under the ceiling", model, base)
			continue
		}
		// Twice the CPU: at most half the rate, about half when queueing
		// fills nearly every core before the p99 reaches the objective
		// (service times far below it); less when they are not. Where the
		// p99 is the service time over 1-u, twice the service time holds
		// it at 1-u twice as large: the ratio (2u-1)/2u (0.44 at u = 0.9).
		dear := rate(w, scaled(cal, 2), 2)
		r := dear.PerSec / base.PerSec
		u := base.Utilization
		if !(r < 0.51) || (u > 0.9 && !(r > (2*u-1)/(2*u)-0.02)) {
			t.Errorf("%s: twice the CPU per unit: %.0f ops/s against %.0f (×%.2f) at utilisation %.2f; want about half", model, dear.PerSec, base.PerSec, r, base.Utilization)
		}
		big := rate(w, cal, 4)
		if r := big.PerSec / base.PerSec; !(r > 1.8 && r < 2.2) {
			t.Errorf("%s: 4 cores: %.0f ops/s against %.0f on 2 (×%.2f); want about twice", model, big.PerSec, base.PerSec, r)
		}
		if tt := rate(tight, cal, 2); !(tt.PerSec < base.PerSec) {
			t.Errorf("%s: p99 ≤ 2 ms: %.0f ops/s, not below the %.0f of 50 ms", model, tt.PerSec, base.PerSec)
		}
		t.Logf("%s: %.0f ops/s at %.1f µs/op on 2 cores (ceiling %.0f, utilisation %.2f)", model, base.PerSec, base.CPUUs, base.CeilingPerSec, base.Utilization)
	}
}

// TestHighestRateRefusesBadInput: a box without cores, an unknown design
// or a workload a plan refuses is an *InputError.
func TestHighestRateRefusesBadInput(t *testing.T) {
	bad := rateWorkload()
	bad.Users = 1
	for name, c := range map[string]struct {
		w     Workload
		model string
		box   Box
	}{
		"no cores":     {rateWorkload(), "push", Box{}},
		"NaN cores":    {rateWorkload(), "push", Box{Cores: math.NaN()}},
		"negative rtt": {rateWorkload(), "push", Box{Cores: 2, RTT: -time.Second}},
		"no design":    {rateWorkload(), "nope", Box{Cores: 2}},
		"one user":     {bad, "push", Box{Cores: 2}},
	} {
		_, err := HighestRate(c.w, DefaultCalibration(), c.model, c.box)
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: %v, want an *InputError", name, err)
		}
	}
}
