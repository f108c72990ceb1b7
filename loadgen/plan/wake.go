package plan

import (
	"math"

	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// belowSaturation is a design's traffic measured at a planned rate (an
// open-loop traffic phase, or a step of a rate search): the counted
// phase whose work it ran, the rate its operations ran at, the cores of
// the box its processes shared, and the CPU each process used a second.
type belowSaturation struct {
	p           countedPhase
	rate, cores float64
	cpu         results.ProcessCPU
}

// searchSteps are the steps of r's rate searches that measured each
// process's CPU (results.RateStep.CPU) and kept up with their rate (no
// errors, none missed, at least 90 % of the offered rate achieved), each
// with the counted traffic phase of its design among ps, whose work a
// step runs at its own rate.
func searchSteps(r *results.Result, ps []countedPhase) []belowSaturation {
	var out []belowSaturation
	if r.Environment.CPUs <= 0 {
		return nil
	}
	for _, p := range ps {
		if p.phase != "traffic" || p.unreliable {
			continue
		}
		m := r.Model(p.model)
		if m == nil || !m.Traffic.Searched() {
			continue
		}
		for _, st := range m.Traffic.Search.Steps {
			if st.CPU != nil && st.AchievedPerSec > 0 && st.Errors == 0 && st.Missed == 0 && st.AchievedPerSec >= 0.9*st.OfferedPerSec {
				out = append(out, belowSaturation{p, st.AchievedPerSec, float64(r.Environment.CPUs), *st.CPU})
			}
		}
	}
	return out
}

// fitIdle is the mean of the runs' idle CPU of each process
// (results.Result.Idle), over the runs that measured it; nil when none
// did. A run on a database server it did not start counts its database
// as 0.
func fitIdle(runs []*results.Result) *results.ProcessCPU {
	var sum results.ProcessCPU
	n := 0
	for _, r := range runs {
		if i := r.Idle; i != nil {
			sum.Seconds += i.Seconds
			sum.AppUs += i.AppUs
			sum.DBUs += i.DBUs
			sum.MCUs += i.MCUs
			sum.RedisUs += i.RedisUs
			n++
		}
	}
	if n == 0 {
		return nil
	}
	f := float64(n)
	return &results.ProcessCPU{Seconds: sum.Seconds, AppUs: sum.AppUs / f, DBUs: sum.DBUs / f, MCUs: sum.MCUs / f, RedisUs: sum.RedisUs / f}
}

// trips are the round trips an operation of work w makes each process
// serve: the database its statements, memcached and Redis their round
// trips, the application every one of them and the operation's own
// start.
func trips(w registry.Work, needs registry.Servers) cpu {
	mc, rd := cacheCalls(countedPhase{needs: needs, predicted: w})
	return cpu{db: w.Statements, mc: mc, rd: rd, app: w.Statements + w.CacheCalls + 1}
}

// asleep is the share of the time each process of a planned server
// sleeps at rate operations a second of saturated CPU c per operation: 1
// less its busy share of one core (a server has one at least), which is
// at most maxBusy (a planned server is sized to be busy at most its
// utilisation).
func asleep(c cpu, rate, maxBusy float64) cpu {
	f := func(us float64) float64 { return 1 - math.Min(maxBusy, math.Max(0, rate*us/1e6)) }
	return cpu{f(c.db), f(c.mc), f(c.rd), f(c.app)}
}

// boxAsleep is the share of the time the processes of one box of cores
// that all of them share, as in a benchmark run here, sleep at rate
// operations a second of saturated CPU c per operation, with the
// servers' idle CPU quiet a second: 1 less the box's busy share. Near
// saturation the cores always have work waiting, and a process finds
// its next request queued instead of sleeping for it.
func boxAsleep(c cpu, rate, cores float64, quiet cpu) cpu {
	s := 1 - math.Min(1, math.Max(0, (rate*c.all()+quiet.all())/(cores*1e6)))
	return cpu{s, s, s, s}
}

// wakeCPU is what an operation of work w costs beyond its CPU at
// saturation on cal's machine, its processes sleeping the shares s of
// the time: each process's wake-up CPU (results.WakeCPU) per round trip
// it serves, times that share. Nothing when cal has no wake-up figures.
func wakeCPU(cal *results.Calibration, w registry.Work, needs registry.Servers, s cpu) cpu {
	k := cal.Wake
	if k == nil {
		return cpu{}
	}
	t := trips(w, needs)
	return cpu{db: k.DBStatementUs * t.db * s.db, mc: k.MCCallUs * t.mc * s.mc, rd: k.RedisCallUs * t.rd * s.rd, app: k.AppTripUs * t.app * s.app}
}

// idleCPU is cal's idle CPU a second of each process that a design
// needing needs runs (the application and the database always); none
// when cal did not measure it.
func idleCPU(cal *results.Calibration, needs registry.Servers) cpu {
	i := cal.Idle
	if i == nil {
		return cpu{}
	}
	c := cpu{db: i.DBUs, app: i.AppUs}
	if needs&registry.Memcached != 0 {
		c.mc = i.MCUs
	}
	if needs&registry.Redis != 0 {
		c.rd = i.RedisUs
	}
	return c
}

// fitWake fits each process's wake-up CPU (results.WakeCPU) on designs'
// traffic below saturation, after cal's unit costs, factors and idle
// CPU: what a process used a second beyond its idle CPU and the rate
// times its CPU per operation at saturation (the design's work at the
// unit costs, times its factors) is set against the rate times the round
// trips it served times the share of the time it slept, by least squares
// through 0 in relative error, at least 0; the processes of a run share
// its box, and sleep as much as its cores are idle (boxAsleep). nil when
// nothing ran below saturation.
func fitWake(cal *results.Calibration, below []belowSaturation) *results.WakeCPU {
	if len(below) == 0 {
		return nil
	}
	var num, den [4]float64
	for _, b := range below {
		sat := designCPU(cal, residualOf(cal, b.p.model), b.p.ops, b.p.shares, b.p.needs)
		idle := idleCPU(cal, b.p.needs)
		t, s := trips(b.p.predicted, b.p.needs), boxAsleep(sat, b.rate, b.cores, idleCPU(cal, allServers))
		measured := [4]float64{b.cpu.DBUs, b.cpu.MCUs, b.cpu.RedisUs, b.cpu.AppUs}
		base := [4]float64{idle.db + b.rate*sat.db, idle.mc + b.rate*sat.mc, idle.rd + b.rate*sat.rd, idle.app + b.rate*sat.app}
		x := [4]float64{b.rate * t.db * s.db, b.rate * t.mc * s.mc, b.rate * t.rd * s.rd, b.rate * t.app * s.app}
		for i := range 4 {
			if !(x[i] > 0) || !(measured[i] > 0) {
				continue
			}
			w := 1 / (measured[i] * measured[i])
			num[i] += w * x[i] * (measured[i] - base[i])
			den[i] += w * x[i] * x[i]
		}
	}
	coef := func(i int) float64 {
		if !(den[i] > 0) {
			return 0
		}
		return math.Max(0, num[i]/den[i])
	}
	return &results.WakeCPU{DBStatementUs: coef(0), MCCallUs: coef(1), RedisCallUs: coef(2), AppTripUs: coef(3), Observations: len(below)}
}

// allServers are every server a run measures the CPU of, whichever its
// designs need: a run's counters take each one's idle CPU.
const allServers = registry.MariaDB | registry.Memcached | registry.Redis

// offSaturation is what an operation of p, an open-loop phase at its
// rate on a box of cores, costs on cal's machine beyond sat, its CPU at
// saturation: the wake-ups of the processes it passes, and the idle CPU
// of every server the run measured, shared over the operations of a
// second.
func offSaturation(cal *results.Calibration, p countedPhase, sat cpu, cores float64) cpu {
	if !(p.rate > 0) || !(cores > 0) {
		return cpu{}
	}
	quiet := idleCPU(cal, allServers)
	return wakeCPU(cal, p.predicted, p.needs, boxAsleep(sat, p.rate, cores, quiet)).add(quiet.scale(1 / p.rate))
}
