package plan

import (
	"fmt"
	"time"

	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// Check sets the plan's model against counted runs: for every phase of
// every design that declares a cost model, the work per operation its
// counters counted beside what the design's cost model predicts for the
// run's own workload (its users, graph, activity, messages and the
// phase's rates), and the CPU per operation of all processes measured
// beside cal's prediction from the predicted work (for an open-loop
// traffic phase, at its rate: with the wake-ups and the idle CPU that
// cal measured, results.Calibration.Wake and Idle). For every design that
// searched for its highest rate within the objective (bench --find-rate),
// the rate it found beside HighestRate's for the run's workload, mix,
// objective and CPUs. Phases whose
// database counters the run could not trust are listed apart, not
// checked. runs are named by sources.
func Check(runs []*results.Result, sources []string, cal *results.Calibration, command string) (*results.PlanCheck, error) {
	if err := cal.Validate(); err != nil {
		return nil, err
	}
	return check(runs, sources, cal, command, func(model string, messages float64) residual { return residualOf(cal, model, messages) })
}

// check is Check with each design's residual at a store's size given by
// residualOf.
func check(runs []*results.Result, sources []string, cal *results.Calibration, command string, residualOf func(model string, messages float64) residual) (*results.PlanCheck, error) {
	c := &results.PlanCheck{Version: results.PlanCheckFormatVersion, CreatedAt: time.Now(), Command: command,
		Calibration: *cal, Runs: sources}
	for _, r := range runs {
		phases, err := counted(r, cal.SerialRowsPerSec)
		if err != nil {
			return nil, err
		}
		for _, p := range phases {
			if p.unreliable {
				c.Unreliable = append(c.Unreliable, p.run+", "+p.model+", "+p.phase)
				continue
			}
			res := residualOf(p.model, p.messages)
			if p.open {
				res = res.planned() // at its rate
			}
			sat := designCPU(cal, res, p.ops, p.shares, p.needs)
			row := results.PlanCheckRow{Run: p.run, Model: p.model, Phase: p.phase,
				Measured: planWork(measuredWork(p.measured)), Predicted: planWork(p.predicted),
				PredictedCPUUs: sat.all(), Uncalibrated: !res.measured}
			if units := cpuOf(cal, p.predicted, p.needs).all(); units > 0 {
				row.CPUFactor = row.PredictedCPUUs / units
			}
			if p.open {
				// At its planned rate: the wake-ups and the idle CPU too.
				row.PredictedCPUUs += offSaturation(cal, p, sat, float64(r.Environment.CPUs)).all()
			}
			row.MeasuredCPUUs, _ = p.measured.AllCPU()
			c.Rows = append(c.Rows, row)
		}
		rates, err := searchedRates(r, cal, residualOf)
		if err != nil {
			return nil, err
		}
		c.Rates = append(c.Rates, rates...)
	}
	if len(c.Rates) > 0 {
		c.RateBasis = fmt.Sprintf("predicted on the run's cores, shared by the application and every server: an operation's CPU, plus %s per statement and cache round trip, plus its wait for one of the cores (M/G/c processor sharing: Erlang C, each operation waiting in proportion to its own CPU), and its Redis commands' wait for Redis's one thread; a design whose traffic runs on a cache of its own, with the reads that cache had seen before the search's best step", LoopbackRTT)
	}
	return c, nil
}

// searchedRates are the highest rates within the objective of the models
// of r that searched for theirs (bench --find-rate) and declare a cost
// model, each beside HighestRate's prediction for the run's workload, its
// traffic's mix and objective, on a box of the run's cores.
func searchedRates(r *results.Result, cal *results.Calibration, residualOf func(model string, messages float64) residual) ([]results.PlanRateRow, error) {
	var out []results.PlanRateRow
	for i := range r.Models {
		m := &r.Models[i]
		reg, err := registry.Lookup(m.Name)
		if err != nil || reg.Work == nil || !m.Traffic.Searched() {
			continue
		}
		if r.Environment.CPUs <= 0 {
			return nil, fmt.Errorf("plan: run %s: its rate searches cannot be predicted: it records no count of CPUs", r.Command)
		}
		w, err := runWorkload(r)
		if err != nil {
			return nil, err
		}
		s := m.Traffic.Search
		n, o, p, f, u, err := mixOf(m.Traffic.Mix)
		if err != nil {
			return nil, err
		}
		w.NewestPerSec, w.OlderPerSec, w.PostsPerSec, w.FollowsPerSec = n, o, p, f+u
		w.SLO = time.Duration(s.SLOMs * float64(time.Millisecond))
		w.Options = m.Options
		box := Box{Cores: float64(r.Environment.CPUs)}
		res := residualOf(m.Name, w.Messages())
		var cold func(rate float64) registry.ColdStart
		if reg.Bench.Has(registry.PhaseCacheMixed) {
			cold = searchCold(r, m, n)
		}
		est, err := highestRateWith(w, cal, m.Name, box, res, cold)
		if err != nil {
			return nil, fmt.Errorf("plan: run %s: %s: %w", r.Command, m.Name, err)
		}
		row := results.PlanRateRow{Run: runLabel(r), Model: m.Name, SLOMs: s.SLOMs, Cores: box.Cores,
			MeasuredPerSec: s.BestPerSec, PredictedPerSec: est.PerSec, PredictedCPUUs: est.CPUUs, CeilingPerSec: est.CeilingPerSec,
			CPUFactor: est.CPUFactor, Uncalibrated: !res.measured, Workload: searchedWorkload(r, m)}
		if cpu, ok := m.Traffic.Total.Cost.AllCPU(); ok && cpu > 0 {
			row.MeasuredCPUUs = cpu
			if m.Traffic.Loop == results.LoopClosed {
				row.BusyShare = m.Traffic.Total.OpsPerSec * cpu / 1e6 / box.Cores
			}
		}
		for _, st := range s.Steps {
			if !st.Held && st.RatePerSec > s.BestPerSec && (row.FailedPerSec == 0 || st.RatePerSec < row.FailedPerSec) {
				row.FailedPerSec = st.RatePerSec
			}
		}
		// The steal of the failure that stood there: the last at that
		// rate, a disturbed one only if none other ran.
		for _, st := range s.Steps {
			if !st.Held && st.RatePerSec == row.FailedPerSec && row.FailedPerSec > 0 && st.StealShare != nil &&
				(!st.Disturbed || row.FailedSteal == nil) {
				row.FailedSteal = st.StealShare
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// searchedWorkload names what r's rate search of m measured beyond its
// graph and users: the dataset's messages, followees, seed, graph file
// and activity, the traffic's mix and loop, and the design's options, so
// that only runs of one measurement count as its repeats
// (results.PlanCheck.RepeatedRates).
func searchedWorkload(r *results.Result, m *results.Model) string {
	ds := r.Dataset
	return fmt.Sprintf("%s %s; %d messages, %g followees a user, seed %d; %s; mix %s, %s loop; options %v",
		ds.Graph, ds.GraphFile, ds.Messages, ds.AvgFollowees, ds.Seed, ds.Activity, m.Traffic.Mix, m.Traffic.Loop, m.Options)
}

// searchCold is the cold start of the step of m's rate search that held
// at its best rate, for a design whose traffic runs on a cache of its own
// that the traffic phase's warm-up started empty (PhaseCacheMixed): the
// search's steps go on with that cache, and at a few thousand users most
// readers first read it there. newest is the mix's share of newest
// pages. At a rate tried, the reads the cache saw before the step
// (stepReads) are taken as that many seconds at the rate's own newest
// pages, so that each reader's chance of having read before is the
// run's, and the step's span is its own. Nil when the search has no held
// step at its best rate.
func searchCold(r *results.Result, m *results.Model, newest float64) func(rate float64) registry.ColdStart {
	s := m.Traffic.Search
	before := -1.0
	for i, reads := range stepReads(r, m, newest) {
		if st := s.Steps[i]; st.Held && st.RatePerSec == s.BestPerSec {
			before = reads
			break
		}
	}
	span := s.StepSeconds
	if before < 0 || !(newest > 0) || !(span > 0) {
		return nil
	}
	return func(rate float64) registry.ColdStart {
		return registry.ColdStart{Warmup: before / (rate * newest), Span: span}
	}
}

// stepReads are, for each step of m's rate search, the newest pages its
// traffic had read before the step's measured seconds: the traffic
// phase's warm-up and its own, each earlier step's warm-up and newest
// pages, and the step's own warm-up (at its rate, newest being the mix's
// share of newest pages).
func stepReads(r *results.Result, m *results.Model, newest float64) []float64 {
	t, s := m.Traffic, m.Traffic.Search
	warm := runWarmup(r)
	warmOps := float64(t.Total.WarmupOps)
	if warmOps <= 0 {
		warmOps = warm * t.Total.OpsPerSec
	}
	reads := (warmOps + float64(t.Total.Ops)) * newest
	out := make([]float64, len(s.Steps))
	for i, st := range s.Steps {
		reads += warm * st.RatePerSec * newest
		out[i] = reads
		reads += float64(st.Ops[workload.OpNewest].Ops)
	}
	return out
}

// planWork is w as a plan shows it.
func planWork(w registry.Work) results.PlanWork {
	return results.PlanWork{RowsRead: w.RowsRead, RowsWritten: w.RowsWritten, MCKeys: w.MCKeys,
		RedisCommands: w.RedisCommands, Statements: w.Statements, CacheCalls: w.CacheCalls}
}
