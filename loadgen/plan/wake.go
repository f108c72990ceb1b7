package plan

import (
	"fmt"
	"math"
	"slices"

	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// belowSaturation is a design's traffic measured at a planned rate (an
// open-loop traffic phase, or a step of a rate search): the counted
// phase whose work it ran, the work per operation its design's cost model
// predicts for it (ops of each kind, work for its mix: a step's at its
// own rate and, on a cache its traffic started empty, with the reads
// the cache had seen before it), the rate its operations ran at, the
// cores of the box its processes shared, and the CPU each process used a
// second; step is the index of the step of a rate search it is among
// its search's steps, -1 for an open-loop phase.
type belowSaturation struct {
	p           countedPhase
	ops         registry.OpWork
	work        registry.Work
	rate, cores float64
	cpu         results.ProcessCPU
	step        int
}

// searchSteps are the steps of r's rate searches that measured each
// process's CPU (results.RateStep.CPU) and kept up with their rate (no
// errors, none missed, at least 90 % of the offered rate achieved), each
// with the counted traffic phase of its design among ps and the work its
// design's cost model predicts for the step: the traffic's mix at the
// step's rate after what the run did before it (a design whose state
// follows its readers, push-active, has most of them active by then), and
// for a design whose traffic runs on a cache of its own
// (registry.PhaseCacheMixed), with the newest pages that cache saw
// before the step (stepReads).
func searchSteps(r *results.Result, ps []countedPhase) ([]belowSaturation, error) {
	var out []belowSaturation
	if r.Environment.CPUs <= 0 {
		return nil, nil
	}
	for _, p := range ps {
		if p.phase != "traffic" || p.unreliable || p.stepWork == nil {
			continue
		}
		m := r.Model(p.model)
		if m == nil || !m.Traffic.Searched() {
			continue
		}
		reg, err := registry.Lookup(p.model)
		if err != nil {
			return nil, err
		}
		s, newest := m.Traffic.Search, p.shares[0]
		before := stepReads(r, m, newest)
		for i, st := range s.Steps {
			if st.CPU == nil || !(st.AchievedPerSec > 0) || st.Errors != 0 || st.Missed != 0 || st.AchievedPerSec < 0.9*st.OfferedPerSec {
				continue
			}
			var cold registry.ColdStart
			if reg.Bench.Has(registry.PhaseCacheMixed) && newest > 0 && s.StepSeconds > 0 {
				cold = registry.ColdStart{Warmup: before[i] / (st.AchievedPerSec * newest), Span: s.StepSeconds}
			}
			ow, err := p.stepWork(i, st.AchievedPerSec, cold)
			if err != nil {
				return nil, fmt.Errorf("plan: run %s: %s, rate step at %.0f a second: %w", r.Command, p.model, st.RatePerSec, err)
			}
			out = append(out, belowSaturation{p, ow, mixWork(ow, p.shares), st.AchievedPerSec, float64(r.Environment.CPUs), *st.CPU, i})
		}
	}
	return out, nil
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

// sleeping is the share of the time each process sleeps on cores busy
// the shares busy (clamped to 0 to 1), by k's law: 1 − u^e, e the
// process's exponent (results.WakeCPU.Exp; 1 without k).
func sleeping(k *results.WakeCPU, busy cpu) cpu {
	f := func(i int, u float64) float64 {
		e := 1.0
		if k != nil {
			e = k.Exp(i)
		}
		return asleepAt(u, e)
	}
	return cpu{f(0, busy.db), f(1, busy.mc), f(2, busy.rd), f(3, busy.app)}
}

// asleepAt is the share of the time a process of sleep exponent k
// sleeps on cores busy u (clamped to 0 to 1): 1 − u^k.
func asleepAt(u, k float64) float64 { return 1 - math.Pow(math.Min(1, math.Max(0, u)), k) }

// everywhere is u on every process.
func everywhere(u float64) cpu { return cpu{u, u, u, u} }

// asleep is the share of the time each process of a planned server
// sleeps at rate operations a second of saturated CPU c per operation,
// by cal's law (sleeping) of its busy share of one core (a server has
// one at least), which is at most maxBusy (a planned server is sized to
// be busy at most its utilisation).
func asleep(cal *results.Calibration, c cpu, rate, maxBusy float64) cpu {
	f := func(us float64) float64 { return math.Min(maxBusy, math.Max(0, rate*us/1e6)) }
	return sleeping(cal.Wake, cpu{f(c.db), f(c.mc), f(c.rd), f(c.app)})
}

// boxBusy is the busy share of one box of cores that the processes of a
// design all share, as in a benchmark run here, at rate operations a
// second of work w (of a design needing needs) whose CPU at saturation
// is sat, with the servers' idle CPU quiet a second: the operations' CPU
// with their wake-ups (wakeCPU) and the idle CPU, over the cores, at
// most 1. The wake-ups depend on the busy share and the busy share on
// them: it is the fixed point, found by bisection (the CPU falls as the
// share rises, so there is one).
func boxBusy(cal *results.Calibration, w registry.Work, needs registry.Servers, sat cpu, rate, cores, quiet float64) float64 {
	at := func(u float64) float64 {
		c := sat.add(wakeCPU(cal, w, needs, sleeping(cal.Wake, everywhere(u))))
		return (rate*c.all() + quiet) / (cores * 1e6)
	}
	if at(1) >= 1 {
		return 1
	}
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		if at(mid) > mid {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Max(0, (lo+hi)/2)
}

// boxAsleep is the share of the time each process of one box of cores
// that all of a design's processes share, as in a benchmark run here,
// sleeps at rate operations a second of work w and saturated CPU sat,
// with the servers' idle CPU quiet a second: cal's law (sleeping) at the
// box's busy share (boxBusy). Near saturation the cores always have work
// waiting, and a process finds its next request queued instead of
// sleeping for it.
func boxAsleep(cal *results.Calibration, w registry.Work, needs registry.Servers, sat cpu, rate, cores float64, quiet cpu) cpu {
	return sleeping(cal.Wake, everywhere(boxBusy(cal, w, needs, sat, rate, cores, quiet.all())))
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

// fitWake fits each process's wake-up CPU and sleep exponent
// (results.WakeCPU) on designs' traffic below saturation, after cal's
// unit costs, factors and idle CPU: what a process used a second beyond
// its idle CPU and the rate times its CPU per operation at saturation
// (the design's work at the unit costs, times its factors) is set
// against the rate times the round trips it served times the share of
// the time it slept, 1 − u^k at the box's measured busy share u (the
// processes of a run share its box), by least squares through 0 in
// relative error, at least 0. The exponent k is the one of wakeExponents
// whose fit leaves the least error (1, the share of the time the cores
// are idle, unless another does better), fitted when the process ran at
// a busy share of wakeSpread or more twice at least: traffic at low busy
// shares alone, where every exponent sleeps nearly always, cannot tell
// them apart. nil when nothing ran below saturation.
func fitWake(cal *results.Calibration, below []belowSaturation) *results.WakeCPU {
	if len(below) == 0 {
		return nil
	}
	// An observation of process i: the CPU it used a second, what its
	// idle CPU and CPU at saturation account for, its round trips a
	// second, and the box's busy share.
	type obs struct {
		measured, base, x [4]float64
		u                 float64
	}
	var obsv []obs
	for _, b := range below {
		sat := designCPU(cal, residualOf(cal, b.p.model, b.p.messages), b.ops, b.p.shares, b.p.needs)
		idle := idleCPU(cal, b.p.needs)
		t := trips(b.work, b.p.needs)
		obsv = append(obsv, obs{
			measured: [4]float64{b.cpu.DBUs, b.cpu.MCUs, b.cpu.RedisUs, b.cpu.AppUs},
			base:     [4]float64{idle.db + b.rate*sat.db, idle.mc + b.rate*sat.mc, idle.rd + b.rate*sat.rd, idle.app + b.rate*sat.app},
			x:        [4]float64{b.rate * t.db, b.rate * t.mc, b.rate * t.rd, b.rate * t.app},
			u:        b.cpu.All() / (b.cores * 1e6),
		})
	}
	// usable is whether o says anything of process i.
	usable := func(o obs, i int) bool { return o.x[i] > 0 && o.measured[i] > 0 }
	// fit is process i's wake-up CPU at exponent k and its weighted
	// squared error.
	fit := func(i int, k float64) (coef, sse float64) {
		var num, den float64
		for _, o := range obsv {
			if !usable(o, i) {
				continue
			}
			x := o.x[i] * asleepAt(o.u, k)
			w := 1 / (o.measured[i] * o.measured[i])
			num += w * x * (o.measured[i] - o.base[i])
			den += w * x * x
		}
		if den > 0 {
			coef = math.Max(0, num/den)
		}
		for _, o := range obsv {
			if !usable(o, i) {
				continue
			}
			d := o.measured[i] - o.base[i] - coef*o.x[i]*asleepAt(o.u, k)
			sse += d * d / (o.measured[i] * o.measured[i])
		}
		return coef, sse
	}
	// busy counts process i's observations at a busy share of
	// wakeSpread or more: fewer than two cannot tell the exponents apart.
	busy := func(i int) int {
		n := 0
		for _, o := range obsv {
			if usable(o, i) && o.u >= wakeSpread {
				n++
			}
		}
		return n
	}
	var coef, exp [4]float64
	for i := range 4 {
		var best float64
		coef[i], best = fit(i, 1)
		exp[i] = 1
		if busy(i) < 2 {
			continue
		}
		for _, k := range wakeExponents {
			if c, sse := fit(i, k); sse < best*(1-1e-9) {
				coef[i], exp[i], best = c, k, sse
			}
		}
		if coef[i] == 0 {
			exp[i] = 1
		}
	}
	return &results.WakeCPU{DBStatementUs: coef[0], MCCallUs: coef[1], RedisCallUs: coef[2], AppTripUs: coef[3],
		DBExp: exp[0], MCExp: exp[1], RedisExp: exp[2], AppExp: exp[3], Observations: len(below)}
}

// fitOpen sets each design's open factor (results.CPUFactors.Open) in
// cal, after its unit costs, factors, idle CPU and wake-ups, from the
// steps of its rate searches among below (open-loop phases are left
// out: most ran at rates far below saturation, where the idle CPU and
// the wake-ups are most of what they cost): the geometric mean over the
// steps of the CPU the design's processes used beyond their idle CPU and
// their wake-ups at the box's measured busy share, over the CPU its
// factors predict for the step's work at the step's rate. The processes
// are taken together: the factors scale them alike (residual.op), so
// what one process shows apart is how the factors share the CPU out,
// not what the traffic costs. A design needs minOpenSteps steps; one the
// calibration has no factors for, or with fewer steps, keeps none (1).
func fitOpen(cal *results.Calibration, below []belowSaturation) {
	logs := map[string][]float64{}
	for _, b := range below {
		if b.step < 0 {
			continue
		}
		if _, ok := cal.Factors[b.p.model]; !ok {
			continue
		}
		sat := designCPU(cal, residualOf(cal, b.p.model, b.p.messages), b.ops, b.p.shares, b.p.needs)
		u := b.cpu.All() / (b.cores * 1e6)
		beyond := idleCPU(cal, b.p.needs).add(wakeCPU(cal, b.work, b.p.needs, sleeping(cal.Wake, everywhere(u))).scale(b.rate))
		used := b.cpu.DBUs + b.cpu.AppUs
		if b.p.needs&registry.Memcached != 0 {
			used += b.cpu.MCUs
		}
		if b.p.needs&registry.Redis != 0 {
			used += b.cpu.RedisUs
		}
		if x, y := used-beyond.all(), b.rate*sat.all(); x > 0 && y > 0 {
			logs[b.p.model] = append(logs[b.p.model], math.Log(x/y))
		}
	}
	for model, ls := range logs {
		if len(ls) < minOpenSteps {
			continue
		}
		var sum float64
		for _, l := range ls {
			sum += l
		}
		f := cal.Factors[model]
		f.Open = math.Exp(sum / float64(len(ls)))
		cal.Factors[model] = f
	}
}

// fitSaturation sets each design's saturation share
// (results.CPUFactors.Saturation) in cal from the steps of its rate
// searches in runs that fell short of their offered rate (achieved below
// shortOfOffered of it, without errors): the median of the busy share of
// the box their processes showed, every process measured counted. A
// design with fewer than two such steps, or that cal has no factors
// for, keeps none (1).
func fitSaturation(cal *results.Calibration, runs []*results.Result) {
	shares := map[string][]float64{}
	for _, r := range runs {
		if r.Environment.CPUs <= 0 {
			continue
		}
		for i := range r.Models {
			m := &r.Models[i]
			if _, ok := cal.Factors[m.Name]; !ok || m.Traffic == nil || !m.Traffic.Searched() {
				continue
			}
			for _, st := range m.Traffic.Search.Steps {
				if st.CPU == nil || st.Errors != 0 || !(st.AchievedPerSec > 0) || st.AchievedPerSec >= shortOfOffered*st.OfferedPerSec {
					continue
				}
				shares[m.Name] = append(shares[m.Name], math.Min(1, st.CPU.All()/(float64(r.Environment.CPUs)*1e6)))
			}
		}
	}
	for model, us := range shares {
		if len(us) < 2 {
			continue
		}
		slices.Sort(us)
		med := us[len(us)/2]
		if len(us)%2 == 0 {
			med = (us[len(us)/2-1] + us[len(us)/2]) / 2
		}
		if med > 0 {
			f := cal.Factors[model]
			f.Saturation = med
			cal.Factors[model] = f
		}
	}
}

// shortOfOffered is the share of its offered rate below which a rate
// step did not keep up: the design saturated there.
const shortOfOffered = 0.97

// minOpenSteps is how many steps of a design's rate searches fitOpen
// needs: one step alone is one rate's noise.
const minOpenSteps = 3

// wakeSpread is the busy share at or above which fitWake needs two
// observations of a process to fit its sleep exponent; with fewer (runs
// at a low rate alone) it is 1.
const wakeSpread = 0.4

// wakeExponents are the sleep exponents fitWake tries: 1/4 to 32, each
// 2^(1/8) (9 %) above the last.
var wakeExponents = func() []float64 {
	var ks []float64
	for j := -16; j <= 40; j++ {
		ks = append(ks, math.Pow(2, float64(j)/8))
	}
	return ks
}()

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
	return wakeCPU(cal, p.predicted, p.needs, boxAsleep(cal, p.predicted, p.needs, sat, p.rate, cores, quiet)).add(quiet.scale(1 / p.rate))
}
