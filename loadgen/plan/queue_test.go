package plan

import (
	"math"
	"testing"
)

// exponentialLike is a mix of service times whose mean is mean and whose
// squared coefficient of variation is 1, like an exponential's: 80 % at
// mean/2 and 20 % at 3·mean (E[S²] = 0.2 + 1.8 = 2 mean²).
func exponentialLike(mean float64) []component {
	return []component{{weight: 0.8, cpuUs: mean / 2}, {weight: 0.2, cpuUs: 3 * mean}}
}

// TestWaitIsMM1OnOneServer: on one core an operation of CPU x waits as in
// M/M/1, P(wait > t) = u·e^(−(1−u)t/x), and responds in x/(1−u) on
// average; on two, its mean response is M/M/2's, x/(1−u²) (with Erlang C
// 2u²/(1+u)), whatever the spread of the service times (processor
// sharing is insensitive to it).
func TestWaitIsMM1OnOneServer(t *testing.T) {
	const x = 100.0
	for _, u := range []float64{0.1, 0.5, 0.9, 0.99} {
		core, redis := queueing{cores: 1, u: u}.waits(x, 0)
		if redis != (tail{}) {
			t.Errorf("u %g: a Redis wait %+v for an operation without Redis", u, redis)
		}
		for _, at := range []float64{0, 50, 1000, 20_000} {
			want := u * math.Exp(-(1-u)*at/x)
			if got := core.over(at); math.Abs(got-want) > 1e-12*math.Max(want, 1e-300) {
				t.Errorf("u %g: P(wait > %g µs) = %g; want M/M/1's %g", u, at, got, want)
			}
		}
		if mean := x + core.p/core.rate; math.Abs(mean-x/(1-u)) > 1e-9*mean {
			t.Errorf("u %g: mean response %g µs on one core; want M/M/1's %g", u, mean, x/(1-u))
		}
		two, _ := queueing{cores: 2, u: u}.waits(x, 0)
		if mean := x + two.p/two.rate; math.Abs(mean-x/(1-u*u)) > 1e-9*mean {
			t.Errorf("u %g: mean response %g µs on two cores; want M/M/2's %g", u, mean, x/(1-u*u))
		}
	}
}

// TestErlangCByHand: Erlang C against values worked out by hand: one
// server, C = u; two at u = 0.8 (a = 1.6), C = 2u²/(1+u) = 32/45; three at
// u = 0.5 (a = 1.5), (1.5³/6·2)/(1 + 1.5 + 1.125 + 1.125) = 9/38; a
// fractional count between its neighbours; none busy, none wait; full,
// every one.
func TestErlangCByHand(t *testing.T) {
	for _, c := range []struct{ servers, u, want float64 }{
		{1, 0.3, 0.3}, {1, 0.95, 0.95}, {2, 0.8, 32.0 / 45}, {3, 0.5, 9.0 / 38},
		{2, 0, 0}, {4, 1, 1}, {0.5, 0.7, 0.7},
	} {
		if got := erlangC(c.servers, c.u); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("C(%g servers, u %g) = %.15g; want %.15g", c.servers, c.u, got, c.want)
		}
	}
	for _, n := range []int{1, 2, 3, 8, 64} {
		for _, u := range []float64{0.2, 0.7, 0.99} {
			if got, want := erlangC(float64(n), u), erlangCBySum(n, u); math.Abs(got-want) > 1e-9*want {
				t.Errorf("C(%d, u %g) = %g; the sum gives %g", n, u, got, want)
			}
		}
	}
	if lo, mid, hi := erlangC(2, 0.8), erlangC(2.5, 0.8), erlangC(3, 0.8); !(mid < lo && mid > hi) {
		t.Errorf("C(2.5) = %g not between C(2) = %g and C(3) = %g", mid, lo, hi)
	}
}

// TestP99ByHandOnTwoCores: one kind of operation of 1 ms of CPU and
// 0.5 ms of round trips on 2 cores busy 0.8: it waits with probability
// 32/45, then e^(−t·2·0.2/1 ms) = e^(−0.4 t/ms); its p99 is 1.5 ms +
// ln(100·32/45)/0.4 ms = 12.16 ms. Its Redis part, 0.2 ms on a thread busy
// 0.5, waits once more (0.5·e^(−t·0.5/0.2 ms)); the p99 of the two waits'
// sum is above either's alone and below the sum of their p99s, and the
// sum's tail is the convolution's.
func TestP99ByHandOnTwoCores(t *testing.T) {
	q := queueing{cores: 2, u: 0.8}
	want := 1500 + math.Log(100*32.0/45)/0.4*1000
	if got := q.p99([]component{{weight: 1, cpuUs: 1000, delayUs: 500}}); math.Abs(got-want) > 1e-6*want {
		t.Errorf("p99 %.4f µs; want %.4f", got, want)
	}
	q.ur = 0.5
	core, redis := q.waits(1000, 200)
	if math.Abs(redis.p-0.5) > 1e-12 || math.Abs(redis.rate-0.5/200) > 1e-12 {
		t.Errorf("Redis's wait %+v; want 0.5·e^(−t/400 µs)", redis)
	}
	redisAlone := 1500 + math.Log(100*0.5)/(0.5/200)
	if got := q.p99([]component{{weight: 1, cpuUs: 1000, delayUs: 500, redisUs: 200}}); !(got > want && got > redisAlone && got < want+redisAlone-1500) {
		t.Errorf("p99 with Redis %.1f µs; want above %.1f and %.1f, below their waits' sum", got, want, redisAlone)
	}
	// The sum's tail at a point, by numerical convolution of the two
	// exponential parts.
	at := 3000.0
	var both float64
	const steps = 200_000
	for i := range steps {
		x := (float64(i) + 0.5) * at / steps
		both += core.rate * math.Exp(-core.rate*x) * math.Exp(-redis.rate*(at-x)) * at / steps
	}
	both += math.Exp(-core.rate * at) // the core's wait alone past at
	wantOver := core.p*(1-redis.p)*math.Exp(-core.rate*at) + redis.p*(1-core.p)*math.Exp(-redis.rate*at) + core.p*redis.p*both
	if got := sumOver(core, redis, at); math.Abs(got-wantOver) > 1e-6 {
		t.Errorf("P(sum of waits > %g µs) = %.8f; the convolution gives %.8f", at, got, wantOver)
	}
}

// TestRareHugeOperationDoesNotStretchTheRest: a mix of operations of
// 100 µs with one in 200 of a second (a celebrity's fan-out) has about
// the p99 of the short ones alone: each waits in proportion to its own
// CPU, as the cores are shared, not behind the huge one's whole work.
func TestRareHugeOperationDoesNotStretchTheRest(t *testing.T) {
	q := queueing{cores: 2, u: 0.9}
	short := q.p99([]component{{weight: 1, cpuUs: 100}})
	mixed := q.p99([]component{{weight: 0.995, cpuUs: 100}, {weight: 0.005, cpuUs: 1e6}})
	if !(mixed >= short && mixed < 1.2*short) {
		t.Errorf("p99 %.0f µs with a rare operation of 1 s, %.0f without; want about the same", mixed, short)
	}
}

// TestDeterministicServiceWaitsLess: operations that all cost the same
// CPU (Cs² = 0) have a lower p99 than a mix of the same mean CPU spread
// like an exponential (Cs² = 1) at the same cores and load, and than
// M/M/1's S·ln(100)/(1−u).
func TestDeterministicServiceWaitsLess(t *testing.T) {
	const mean = 1000.0
	for _, cores := range []float64{1, 2, 16} {
		for _, u := range []float64{0.5, 0.9, 0.99} {
			q := queueing{cores: cores, u: u}
			same := q.p99([]component{{weight: 1, cpuUs: mean}})
			spread := q.p99(exponentialLike(mean))
			mm1 := mean * math.Log(100) / (1 - u)
			if !(same < spread) || !(same < mm1) {
				t.Errorf("%g cores, u %g: p99 %.0f µs for a constant service, %.0f for Cs² = 1, M/M/1 %.0f; want the constant's lowest", cores, u, same, spread, mm1)
			}
		}
	}
	if got := (queueing{cores: 2, u: 1}).p99([]component{{weight: 1, cpuUs: mean}}); !math.IsInf(got, 1) {
		t.Errorf("a full box: p99 %g; want +Inf", got)
	}
	// A component without CPU does not queue: its round trips alone.
	if got := (queueing{cores: 2, u: 0.99}).p99([]component{{weight: 1, delayUs: 300}}); math.Abs(got-300) > 1e-6 {
		t.Errorf("round trips only: p99 %g µs; want 300", got)
	}
}

// TestMoreCoresServeLongOperationsBetter: pull-client's pages cost some
// milliseconds of CPU each (built-in calibration, 1,000 users). On c
// cores at the same load an operation waits less the more cores there
// are (Erlang C falls with c at a given u, and the wait's rate grows with
// c), so its highest rate per core rises with the cores: 2 cores serve
// more than twice 1 core's rate, 4 more than twice 2's. A queue that
// treated the cores as one would give exactly twice.
func TestMoreCoresServeLongOperationsBetter(t *testing.T) {
	rate := func(cores float64) RateEstimate {
		est, err := HighestRate(rateWorkload(), DefaultCalibration(), "pull-client", Box{Cores: cores})
		if err != nil {
			t.Fatal(err)
		}
		return est
	}
	one, two, four := rate(1), rate(2), rate(4)
	if !(one.CPUUs > 1000) {
		t.Fatalf("pull-client: %.0f µs an operation; want a long operation", one.CPUUs)
	}
	if !(two.PerSec > 2.02*one.PerSec) || !(four.PerSec > 2.02*two.PerSec) || !(four.Utilization > two.Utilization && two.Utilization > one.Utilization) {
		t.Errorf("pull-client at %.0f µs: %.1f, %.1f, %.1f ops/s on 1, 2, 4 cores (busy %.3f, %.3f, %.3f); want more than twice at each doubling",
			two.CPUUs, one.PerSec, two.PerSec, four.PerSec, one.Utilization, two.Utilization, four.Utilization)
	}
	t.Logf("pull-client at %.0f µs: %.1f, %.1f, %.1f ops/s on 1, 2, 4 cores (busy %.3f, %.3f, %.3f)",
		two.CPUUs, one.PerSec, two.PerSec, four.PerSec, one.Utilization, two.Utilization, four.Utilization)
}

// TestSpreadOperationUsesTheCores: an operation whose CPU runs on several
// cores at once (pull-client's queries, sent eight at a time) responds in
// its CPU over the cores it can use, at most the box's: 60 ms of CPU
// spread over 8 lanes takes 30 ms on 2 cores, 7.5 on 8, on an idle box.
func TestSpreadOperationUsesTheCores(t *testing.T) {
	for _, c := range []struct{ cores, spread, want float64 }{{2, 1, 60_000}, {2, 0, 60_000}, {2, 8, 30_000}, {8, 8, 7_500}, {16, 8, 7_500}} {
		q := queueing{cores: c.cores, u: 1e-9}
		if got := q.p99([]component{{weight: 1, cpuUs: 60_000, spread: c.spread}}); math.Abs(got-c.want) > 1e-3*c.want {
			t.Errorf("%g cores, spread over %g: p99 %.0f µs, want %.0f", c.cores, c.spread, got, c.want)
		}
	}
}
