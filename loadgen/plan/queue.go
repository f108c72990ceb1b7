package plan

import "math"

// component is a kind of operation (of one degree bucket) with the share
// of the traffic it takes: what the p99 of a mix is drawn from. cpuUs is
// its CPU on every process it passes, in sequence, each a burst that
// needs a core; delayUs the round trips between those processes, which
// wait for an answer but hold no core; redisUs the part of cpuUs that
// redis-server's one thread serves (the CPU of its commands); spread the
// bursts of it that run at once, on as many cores (an operation that sends
// its queries a few at a time; 0 or 1: one after another), so that its
// CPU takes cpuUs over min(spread, cores) of its response and of its
// share of the wait.
type component struct{ weight, cpuUs, delayUs, redisUs, spread float64 }

// queueing is where the operations of a mix wait: for one of cores cores
// that every process shares, busy u, and, for the part of an operation
// that runs on redis-server, for that server's one thread, busy ur.
//
// The cores are a multi-server queue with Poisson arrivals that shares
// its servers among the operations present, as the kernel's scheduler
// time-slices its runnable threads (M/G/c processor sharing): while no
// more operations than cores run, each runs at a core's full speed;
// beyond, they share the cores. An operation's response time is its round
// trips (which hold no core) plus its CPU x plus its wait, where
//
//	P(wait > t) = C(c, c·u) · exp(−t · c·(1 − u) / x)
//
// C(c, a) is Erlang's C formula, the probability that an arrival finds
// every core busy. Averaged over the mix, the wait's mean C·S/(c·(1 − u))
// (S the mix's mean CPU) is exact for processor sharing whatever the
// distribution of the service times (the queue is symmetric, so
// insensitive to it: its mean response is M/M/c's); each operation takes
// its part in proportion to its own CPU, as processor sharing gives it
// exactly on one core. So a long operation waits in proportion to its own
// CPU, not behind another's whole work, and a mix with a rare huge
// operation (a celebrity's fan-out) does not stretch the short ones.
// Given a wait, it is taken exponential, as in M/M/c. On one
// core this is M/M/1's wait, u·e^(−(1−u)t/x), and the mean response
// x/(1 − u); an operation's own CPU is not drawn from an exponential but
// is x, every operation of a kind and degree bucket costing the same
// (the mix of components carries the spread between them), so its p99 is
// below M/M/1's x·ln 100/(1 − u). More cores shorten the wait at the same
// u twice over: C falls with c, and the wait's rate grows with c.
//
// The Redis part of an operation, r, waits once more, for redis-server's
// thread (c = 1, at ur): P > t = ur·e^(−t(1 − ur)/r); the two waits are
// taken independent. Erlang C of a fractional number of cores is
// interpolated between the whole numbers around it (one server below 1),
// and a box of more than 100,000 cores waits as one of 100,000.
type queueing struct{ cores, u, ur float64 }

// tail is a wait that is 0 with probability 1 − p and otherwise
// exponential with the given rate (per µs): P(wait > t) = p·e^(−rate·t).
type tail struct{ p, rate float64 }

// over is P(wait > t).
func (w tail) over(t float64) float64 {
	if t < 0 {
		return 1
	}
	return w.p * math.Exp(-w.rate*t)
}

// sumOver is P(a + b > t) for independent waits a and b.
func sumOver(a, b tail, t float64) float64 {
	if t < 0 {
		return 1
	}
	ea, eb := math.Exp(-a.rate*t), math.Exp(-b.rate*t)
	// Both exponential: the sum's tail (hypoexponential, or Erlang-2 when
	// the rates are equal).
	var both float64
	if d := b.rate - a.rate; math.Abs(d) > 1e-9*math.Max(a.rate, b.rate) {
		both = (b.rate*ea - a.rate*eb) / d
	} else {
		both = (1 + a.rate*t) * ea
	}
	return a.p*(1-b.p)*ea + b.p*(1-a.p)*eb + a.p*b.p*both
}

// maxErlangServers bounds the servers Erlang C is computed for.
const maxErlangServers = 100_000

// erlangC is the probability that an arrival at c servers each busy u
// waits (Erlang's C formula), by the Erlang B recursion for whole c,
// interpolated between whole numbers; one server below c = 1.
func erlangC(c, u float64) float64 {
	if u <= 0 {
		return 0
	}
	if u >= 1 {
		return 1
	}
	c = math.Min(math.Max(c, 1), maxErlangServers)
	whole := func(n int) float64 {
		a := float64(n) * u
		b := 1.0 // Erlang B for 0 servers
		for k := 1; k <= n; k++ {
			b = a * b / (float64(k) + a*b)
		}
		return b / (1 - u*(1-b))
	}
	lo := math.Floor(c)
	f := c - lo
	if f == 0 {
		return whole(int(lo))
	}
	return (1-f)*whole(int(lo)) + f*whole(int(lo)+1)
}

// waits are the waits of an operation of CPU x of which r on
// redis-server: for a core, and for redis-server's thread.
func (q queueing) waits(x, r float64) (core, redis tail) {
	return q.wait(erlangC(q.cores, q.u), math.Max(q.cores, 1), q.u, x), q.wait(q.ur, 1, q.ur, r)
}

// wait is the wait of an operation of CPU x at servers servers busy u
// that an arrival finds all busy with probability busy.
func (queueing) wait(busy, servers, u, x float64) tail {
	switch {
	case x <= 0 || u <= 0:
		return tail{}
	case u >= 1:
		return tail{p: 1}
	}
	return tail{p: busy, rate: servers * (1 - u) / x}
}

// p99 is the 99th percentile of the response times of the mix cs at q,
// each component's being its round trips plus its CPU plus its wait for
// a core (none for a component without CPU) and, for a component with a
// Redis part, its wait for redis-server's thread. +Inf when a queue is
// full.
func (q queueing) p99(cs []component) float64 {
	type at struct {
		weight, fixed float64
		core, redis   tail
		queued        bool
	}
	cc := erlangC(q.cores, q.u)
	var total float64
	ws := make([]at, len(cs))
	for i, c := range cs {
		total += c.weight
		x := c.cpuUs / math.Max(1, math.Min(c.spread, q.cores))
		ws[i] = at{weight: c.weight, fixed: c.delayUs + x, queued: c.cpuUs > 0}
		if ws[i].queued {
			ws[i].core = q.wait(cc, math.Max(q.cores, 1), q.u, x)
			ws[i].redis = q.wait(q.ur, 1, q.ur, c.redisUs)
		}
	}
	over := func(t float64) float64 {
		var s float64
		for _, w := range ws {
			left := t - w.fixed
			switch {
			case !w.queued:
				if left < 0 {
					s += w.weight
				}
			case w.redis.p > 0:
				s += w.weight * sumOver(w.core, w.redis, left)
			default:
				s += w.weight * w.core.over(left)
			}
		}
		return s / total
	}
	lo, hi := 0.0, 1.0
	for over(hi) > 0.01 {
		lo, hi = hi, 2*hi
		if hi > 1e15 {
			return math.Inf(1)
		}
	}
	for range 100 {
		mid := (lo + hi) / 2
		if over(mid) > 0.01 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
