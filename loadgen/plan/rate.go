package plan

import (
	"math"
	"time"

	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// Box is one machine that runs the application and every server a design
// needs on the same cores, as a benchmark run here does: the load
// generator, the stores' client side, MariaDB, memcached and Redis.
type Box struct {
	// Cores are the box's CPU cores, shared by all its processes.
	Cores float64
	// RTT is a round trip between two of its processes; 0 means
	// LoopbackRTT.
	RTT time.Duration
}

// LoopbackRTT is the round trip a plan assumes between two processes of
// one box, beyond the CPU the calibration counts for it: the wake-up of
// the process that answers over the loopback interface.
const LoopbackRTT = 50 * time.Microsecond

// RateEstimate is a design's predicted highest rate within the objective
// on a box.
type RateEstimate struct {
	// PerSec is the highest rate of the mix at which the predicted p99
	// holds the objective; 0 when it does not hold even on an idle box.
	PerSec float64
	// CPUUs is the CPU of an operation of the mix at that rate, on every
	// process (the application's too), with the wake-ups of processes
	// that sleep there, µs; Utilization the share of the box's cores it
	// fills there, with the servers' idle CPU.
	CPUUs       float64
	Utilization float64
	// CeilingPerSec is the rate that would fill the cores the design
	// can use (results.CPUFactors.Saturation: all of them, unless its
	// throughput stopped rising short of that in the calibration) at
	// that CPU per operation, or redis-server's one thread at its CPU
	// per operation if that comes first.
	CeilingPerSec float64
	// CPUFactor is CPUUs without the wake-ups over what the work costs
	// at the calibration's unit costs alone: the design's CPU factors
	// (results.CPUFactors) for this mix; 1 for a design the calibration
	// did not run.
	CPUFactor float64
	// RedisUs is redis-server's part of CPUUs, µs; RedisUtilization the
	// share of its one thread it fills at PerSec (0 for a design without
	// Redis).
	RedisUs          float64
	RedisUtilization float64
}

// HighestRate predicts the highest rate of w's mix at which model's p99
// latency stays within w.SLO on box: w's rates give the mix's shares
// (their sum is not used) and the workload's users, graph, activity and
// messages are w's. It is the plan's own model run the other way round: at
// a rate R the design's work per operation (its cost model at the
// workload's rates at R) costs its calibrated CPU, on every process, so
// the box's cores are busy u = R × CPU per operation ÷ cores; every kind
// of operation (of every degree bucket) responds in its round trips plus
// its CPU plus its wait for one of the box's cores, a multi-server queue
// with as many servers as the box has cores, the rule of a plan's p99
// (queueing: Erlang C corrected for the mix's spread of CPU); the answer is
// the highest R whose p99 is within the objective, found by bisection.
// The CPU of each kind of operation is scaled by the design's CPU factors
// in cal, at the workload's store size (results.CPUFactors.At). redis-server runs its commands on one thread, whatever the
// box's cores: it is a queue of its own, one server busy ur = R × its CPU
// per operation ÷ 1 core, and an operation with a Redis part waits for
// that thread as well as for a core; so a design whose Redis CPU per
// operation is a large part of its CPU is bounded by Redis's thread on a
// box of many cores, where more cores no longer raise its rate. When cal
// measured it (results.Calibration.Idle), every server's idle CPU keeps the
// box and Redis's thread that much busier. Below saturation the processes
// sleep between requests and each round trip wakes them
// (results.Calibration.Wake): at R an operation costs its CPU at
// saturation plus those wake-ups at the share of the time each process
// sleeps at the box's busy share u, and u depends on that CPU, so it is
// the fixed point of both (boxBusy). How long the processes keep
// sleeping as the cores fill is the calibration's sleep exponent per
// process: while they do, the highest rate falls where an operation costs
// more than in the closed loop the unit costs come from. At a planned
// rate the design's CPU is also times its open factor
// (results.CPUFactors.Open), and its processes fill at most its
// saturation share of the cores (results.CPUFactors.Saturation): the
// queue is that share of the box. A workload or box a plan cannot
// be made with is an *InputError.
func HighestRate(w Workload, cal *results.Calibration, model string, box Box) (RateEstimate, error) {
	if err := cal.Validate(); err != nil {
		return RateEstimate{}, &InputError{Field: "calibration", Reason: err.Error()}
	}
	return highestRateWith(w, cal, model, box, residualOf(cal, model, w.WithDefaults().Messages()), nil)
}

// highestRateWith is HighestRate with the design's residual r, and, when
// cold is not nil, the stretch of traffic since its caches were empty at
// each rate it tries (a check of a benchmark's rate search, whose steps
// run on a cache its traffic phase started empty); nil is the steady
// state.
func highestRateWith(w Workload, cal *results.Calibration, model string, box Box, r residual,
	cold func(rate float64) registry.ColdStart) (RateEstimate, error) {
	if !(box.Cores > 0) || math.IsInf(box.Cores, 0) {
		return RateEstimate{}, &InputError{"cores", fmtFloat(box.Cores), "want the box's cores, above 0"}
	}
	if box.RTT < 0 {
		return RateEstimate{}, &InputError{"rtt", box.RTT.String(), "want a duration, 0 or more"}
	}
	w.Models = []string{model}
	if err := w.Check(); err != nil {
		return RateEstimate{}, err
	}
	w = w.WithDefaults()
	d, dc, err := w.demand()
	if err != nil {
		return RateEstimate{}, err
	}
	models, err := w.models()
	if err != nil {
		return RateEstimate{}, err
	}
	_, shares := w.opShares()
	return highestRate(w, d, dc, models[0], cal, r, shares, box, cold)
}

// rateSearchSteps bounds the bisection of highestRate: far more than the
// 10^-4 it stops at needs.
const rateSearchSteps = 100

// highestRate is HighestRate for a checked workload's Demand.
func highestRate(w Workload, d registry.Demand, dc demandClasses, m registry.Model, cal *results.Calibration, r residual,
	shares [5]float64, box Box, cold func(rate float64) registry.ColdStart) (RateEstimate, error) {
	w.RTT = box.RTT
	if w.RTT == 0 {
		w.RTT = LoopbackRTT
	}
	r = r.planned()
	// µs of CPU a second the design's processes can use: its cores, up to
	// the busy share where its throughput stops rising.
	capacity := box.Cores * 1e6 * r.saturationShare()
	slo := float64(w.SLO) / float64(time.Microsecond)
	// at is the CPU per operation at rate and whether the p99 holds
	// there.
	var units float64 // the CPU per operation at the unit costs alone, at the last rate tried
	var sat cpu       // the CPU per operation at saturation, at the last rate tried
	quiet := idleCPU(cal, allServers)
	at := func(rate float64) (c cpu, held bool, err error) {
		d.ReadsPerSec, d.OlderPerSec, d.PostsPerSec = rate*(shares[0]+shares[1]), rate*shares[1], rate*shares[2]
		if cold != nil {
			d.Cold = cold(rate)
		}
		ow, _, _, err := m.WorkFor(d, w.Options)
		if err != nil {
			return cpu{}, false, &InputError{Field: "option", Reason: err.Error()}
		}
		perOp := mixWork(ow, shares)
		sat = designCPU(cal, r, ow, shares, m.Needs)
		units = cpuOf(cal, perOp, m.Needs).all()
		// Every server burns its idle CPU too, and below saturation
		// each round trip wakes the processes it passes as often as
		// they sleep at the box's busy share (when cal measured them).
		c = sat.add(wakeCPU(cal, perOp, m.Needs, boxAsleep(cal, perOp, m.Needs, sat, rate, box.Cores, quiet)))
		u, ur := (rate*c.all()+quiet.all())/capacity, (rate*c.rd+quiet.rd)/1e6
		if !(c.all() > 0) || u >= 1 || ur >= 1 {
			return c, false, nil
		}
		lat, err := latencyOf(w, d, dc, m, cal, r, shares, ow)
		if err != nil {
			return cpu{}, false, err
		}
		return c, queueing{cores: box.Cores, u: u, ur: ur}.p99(lat.comps) <= slo, nil
	}
	ceiling := func(c cpu) float64 {
		if c.rd > 0 {
			return min((capacity-quiet.all())/c.all(), (1e6-quiet.rd)/c.rd)
		}
		return (capacity - quiet.all()) / c.all()
	}
	// The rate the box would serve at an idle box's CPU per operation
	// starts the bracket; it doubles while the p99 holds (caches that hit
	// more at higher rates make an operation cheaper).
	const idle = 1e-3
	c, held, err := at(idle)
	if err != nil || !held {
		return RateEstimate{CPUUs: c.all(), RedisUs: c.rd}, err
	}
	lo, hi := idle, ceiling(c)
	for range rateSearchSteps {
		_, ok, err := at(hi)
		if err != nil {
			return RateEstimate{}, err
		}
		if !ok {
			break
		}
		lo, hi = hi, 2*hi
	}
	for range rateSearchSteps {
		if hi-lo <= 1e-4*hi {
			break
		}
		mid := (lo + hi) / 2
		_, ok, err := at(mid)
		if err != nil {
			return RateEstimate{}, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	c, _, err = at(lo)
	if err != nil {
		return RateEstimate{}, err
	}
	return RateEstimate{PerSec: lo, CPUUs: c.all(), Utilization: (lo*c.all() + quiet.all()) / (box.Cores * 1e6), CeilingPerSec: ceiling(c),
		CPUFactor: sat.all() / units, RedisUs: c.rd, RedisUtilization: (lo*c.rd + quiet.rd) / 1e6}, nil
}
