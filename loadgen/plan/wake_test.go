package plan

import (
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// TestWakeFromHandMadeSteps: traffic measured at five rates below
// saturation, made by hand from known idle and wake-up CPU and sleep
// exponents (every process's CPU a second = idle + rate × (CPU at
// saturation + wake × round trips × (1 − u^k)), u the box's busy share
// with those wake-ups, k the process's exponent), gives back those
// figures; the idle CPU is the mean of the runs'; nothing below
// saturation gives none.
func TestWakeFromHandMadeSteps(t *testing.T) {
	cal := handCalibration()
	cal.MCKeyUs, cal.MCCallUs = 1, 4
	runs := []*results.Result{
		{Idle: &results.ProcessCPU{Seconds: 1, AppUs: 1000, DBUs: 6000, MCUs: 200}},
		{Idle: &results.ProcessCPU{Seconds: 1, AppUs: 3000, DBUs: 10000, MCUs: 400}},
		{}, // a run that predates the idle figures
	}
	cal.Idle = fitIdle(runs)
	if i := cal.Idle; i == nil || i.AppUs != 2000 || i.DBUs != 8000 || i.MCUs != 300 || i.RedisUs != 0 || i.Seconds != 2 {
		t.Fatalf("idle %+v; want the mean of the two runs that measured it", i)
	}
	ops := registry.OpWork{
		Newest: registry.Work{RowsRead: 40, Statements: 1, MCKeys: 3, CacheCalls: 2},
		Post:   registry.Work{RowsRead: 10, RowsWritten: 10, Statements: 2, MCKeys: 2, CacheCalls: 2},
	}
	shares := [5]float64{0.9, 0, 0.1, 0, 0}
	p := handPhase("hybrid-memcached", "traffic", ops, shares, 0)
	p.needs = registry.MariaDB | registry.Memcached
	sat := designCPU(cal, residualOf(cal, p.model, p.messages), ops, shares, p.needs)
	tr := trips(p.predicted, p.needs)
	if tr.db != 1.1 || tr.mc != 2 || math.Abs(tr.app-4.1) > 1e-12 || tr.rd != 0 {
		t.Fatalf("round trips %+v", tr)
	}
	quiet := idleCPU(cal, allServers)
	for _, want := range []results.WakeCPU{
		{DBStatementUs: 30, MCCallUs: 12, AppTripUs: 20, DBExp: 1, MCExp: 1, RedisExp: 1, AppExp: 1},
		{DBStatementUs: 30, MCCallUs: 12, AppTripUs: 20, DBExp: 2, MCExp: 8, RedisExp: 1, AppExp: math.Sqrt2},
	} {
		made := *cal
		made.Wake = &want
		var below []belowSaturation
		for _, f := range []float64{0.005, 0.2, 0.5, 0.7, 0.85} {
			rate := f * 2e6 / sat.all()
			s := boxAsleep(&made, p.predicted, p.needs, sat, rate, 2, quiet)
			m := results.ProcessCPU{Seconds: 2,
				DBUs:  cal.Idle.DBUs + rate*(sat.db+want.DBStatementUs*tr.db*s.db),
				MCUs:  cal.Idle.MCUs + rate*(sat.mc+want.MCCallUs*tr.mc*s.mc),
				AppUs: cal.Idle.AppUs + rate*(sat.app+want.AppTripUs*tr.app*s.app),
			}
			// The box's busy share is the fixed point: what its
			// processes use a second over its cores, wake-ups and all.
			if u := boxBusy(&made, p.predicted, p.needs, sat, rate, 2, quiet.all()); math.Abs(u-(m.DBUs+m.MCUs+m.AppUs)/2e6) > 1e-9 || !(u > f) {
				t.Fatalf("busy share %.6f at %.0f a second; its processes use %.6f of the cores", u, rate, (m.DBUs+m.MCUs+m.AppUs)/2e6)
			}
			below = append(below, belowSaturation{p, p.ops, p.predicted, rate, 2, m, 0})
		}
		got := fitWake(cal, below)
		if got == nil || got.Observations != 5 || math.Abs(got.DBStatementUs-want.DBStatementUs) > 1e-6 ||
			math.Abs(got.MCCallUs-want.MCCallUs) > 1e-6 || math.Abs(got.AppTripUs-want.AppTripUs) > 1e-6 || got.RedisCallUs != 0 ||
			math.Abs(got.DBExp-want.DBExp) > 1e-9 || math.Abs(got.MCExp-want.MCExp) > 1e-9 || math.Abs(got.AppExp-want.AppExp) > 1e-9 || got.RedisExp != 1 {
			t.Errorf("wake-ups %+v; want %+v", got, want)
		}
		// Steps at low busy shares alone cannot tell the exponents
		// apart: they stay 1.
		if low := fitWake(cal, below[:2]); low.DBExp != 1 || low.MCExp != 1 || low.AppExp != 1 || low.RedisExp != 1 {
			t.Errorf("exponents from steps at busy shares below %g: %+v", wakeSpread, low)
		}
	}
	// The busy share matters: at 5,000 a second without wake-ups the
	// box's 2 cores are busy 5,000 times the operation's CPU and the idle
	// CPU, and its processes sleep through the rest of the round trips.
	if s := boxAsleep(cal, p.predicted, p.needs, sat, 5000, 2, quiet); math.Abs(s.db-(1-(5000*sat.all()+quiet.all())/2e6)) > 1e-12 || !(s.db < 0.9) || s.app != s.db {
		t.Errorf("asleep %+v at 5,000 a second, CPU %+v", s, sat)
	}
	// A planned server has a core at least, busy at most its utilisation;
	// it sleeps 1 − busy^k of the time.
	cal.Wake = &results.WakeCPU{DBExp: 3}
	if s := asleep(cal, sat, 5000, 0.5); s.db != 1-math.Pow(math.Min(0.5, 5000*sat.db/1e6), 3) || s.app != 1-math.Min(0.5, 5000*sat.app/1e6) {
		t.Errorf("a planned server's asleep %+v at 5,000 a second, CPU %+v", s, sat)
	}
	if fitWake(cal, nil) != nil || fitIdle([]*results.Result{{}}) != nil {
		t.Error("figures from runs that measured nothing below saturation")
	}
}

// TestPlanCoresAtLowRate: with idle and wake-up CPU in the calibration, a
// plan's cores at a low rate are its CPU at saturation plus each server's
// idle CPU and the wake-ups of every round trip, all over the planned
// utilisation; at a high rate each server is busy its utilisation and
// sleeps through only the rest of the round trips. Without them (a
// calibration that predates them) the cores are today's, the rate times
// the CPU at saturation.
func TestPlanCoresAtLowRate(t *testing.T) {
	plain := DefaultCalibration()
	plain.Idle, plain.Wake = nil, nil
	terms := DefaultCalibration()
	terms.Idle = &results.ProcessCPU{Seconds: 1, AppUs: 5000, DBUs: 20000, MCUs: 1000, RedisUs: 700}
	terms.Wake = &results.WakeCPU{DBStatementUs: 40, MCCallUs: 15, RedisCallUs: 10, AppTripUs: 25, Observations: 1}
	for _, rate := range []float64{300, 3_000_000} {
		w := Workload{Users: 1000, NewestPerSec: 0.76 * rate, OlderPerSec: 0.2 * rate, PostsPerSec: 0.02 * rate, FollowsPerSec: 0.02 * rate,
			Models: []string{"hybrid-memcached", "push-redis"}, SLO: time.Second}
		without, with := planBoth(t, w, plain, terms)
		for i, d := range with.Designs {
			p := without.Designs[i]
			util := 0.5
			// The saturated CPU a second of each server is the plan
			// without the terms: its cores × utilisation.
			satDB := p.Resources.DBCores * util * 1e6
			busy := math.Min(util, satDB/1e6)
			wantDB := (satDB + rate*terms.Wake.DBStatementUs*d.PerOp.Statements*(1-busy) + terms.Idle.DBUs) / 1e6 / util
			if math.Abs(d.Resources.DBCores-wantDB) > 1e-9*wantDB {
				t.Errorf("%s at %.0f/s: %.6f database cores, want %.6f (%.6f without the terms)", d.Model, rate, d.Resources.DBCores, wantDB, p.Resources.DBCores)
			}
			if !(d.Resources.AppCores > p.Resources.AppCores) || !(d.Resources.CacheCores > p.Resources.CacheCores) {
				t.Errorf("%s at %.0f/s: application %.4f and cache %.4f cores, %.4f and %.4f without the terms",
					d.Model, rate, d.Resources.AppCores, d.Resources.CacheCores, p.Resources.AppCores, p.Resources.CacheCores)
			}
			perOp := d.DBUs + d.CacheUs + d.AppUs
			plainOp := p.DBUs + p.CacheUs + p.AppUs
			if rate == 300 && !(perOp > plainOp+terms.Wake.AppTripUs) {
				t.Errorf("%s at 300/s: %.1f µs an operation with the wake-ups, %.1f without", d.Model, perOp, plainOp)
			}
		}
	}
	var buf strings.Builder
	p, err := Make(Workload{Users: 1000, NewestPerSec: 300, Models: []string{"push"}, SLO: time.Second}, plain, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := results.WritePlan(&buf, p); err != nil || !strings.Contains(buf.String(), "cores are the CPU at saturation") {
		t.Errorf("a plan without the terms does not say so (%v):\n%s", err, buf.String())
	}
}

// TestCalibrationWithoutTermsLoads: a calibration fitted before idle and
// wake-up CPU were measured (the held-out one, built in) loads without
// them; a term below 0 is refused at load by name.
func TestCalibrationWithoutTermsLoads(t *testing.T) {
	old, err := results.LoadCalibration(filepath.Join("..", "..", "evidence", "plan", "held-out", "calibration"))
	if err != nil || old.Version != 2 || old.Idle != nil || old.Wake != nil || len(old.Factors) == 0 {
		t.Fatalf("format 2: %v, version %d, idle %v, wake %v", err, old.Version, old.Idle, old.Wake)
	}
	for bad, name := range map[string]string{
		`"wake_cpu":{"db_statement_us":-1,"mc_call_us":0,"redis_call_us":0,"app_trip_us":0,"observations":1}`:            "the database wake-up CPU is -1",
		`"idle_cpu":{"seconds":1,"app_us_per_sec":10,"db_us_per_sec":-5}`:                                                "the idle database CPU is -5",
		`"wake_cpu":{"db_statement_us":1,"mc_call_us":0,"redis_call_us":0,"app_trip_us":0,"observations":1,"db_exp":-2}`: "the database sleep exponent is -2",
		`"serial_rows_per_sec":-55000`: "the serial pace in rows a second is -55000",
	} {
		dir := t.TempDir()
		data, err := os.ReadFile(filepath.Join("..", "..", "evidence", "plan", "held-out", "calibration", results.CalibrationFile))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(data), `"version": 2,`, `"version": 2, `+bad+`,`, 1)
		if s == string(data) {
			t.Fatalf("no version in %s", data[:80])
		}
		if err := os.WriteFile(filepath.Join(dir, results.CalibrationFile), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = results.LoadCalibration(dir)
		var te *results.TermError
		if !errors.As(err, &te) || !(te.Value < 0) || !strings.Contains(err.Error(), name+": want a finite number, 0 or more") {
			t.Errorf("%s: %v; want a TermError", bad, err)
		}
	}
}

// TestHighestRateWithIdleCPU: as TestHighestRateByHand (every operation
// 100 µs of the application's CPU, no round trips), with the servers
// burning half a core while idle: the busy share u of the 2 cores at which
// the p99 reaches 50 ms is the same as without them, but half a core of it
// is the idle CPU's, so the highest rate is (u × 2 − 0.5) × 10^6/100.
func TestHighestRateWithIdleCPU(t *testing.T) {
	bare, err := HighestRate(rateWorkload(), &results.Calibration{AppOpUs: 100}, "push", Box{Cores: 2, RTT: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	u := bare.Utilization
	cal := &results.Calibration{AppOpUs: 100, Idle: &results.ProcessCPU{Seconds: 1, AppUs: 200_000, DBUs: 250_000, MCUs: 30_000, RedisUs: 20_000}}
	est, err := HighestRate(rateWorkload(), cal, "push", Box{Cores: 2, RTT: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	want := (u*2 - 0.5) * 1e6 / 100
	if math.Abs(est.PerSec-want) > 1e-3*want || math.Abs(est.Utilization-u) > 1e-3 || math.Abs(est.CeilingPerSec-15_000) > 1e-6 {
		t.Errorf("%+v; want %.1f ops/s, utilisation %.4f with the idle CPU, ceiling 15,000", est, want, u)
	}
	// With wake-ups, an operation at the rate costs its 100 µs plus its
	// round trips' wake-ups times the share of the time its processes
	// sleep at the box's busy share there, 1 − u^k; the queue still
	// reaches the objective at u, so the rate falls to
	// (u × 2 − 0.5) × 10^6 over that CPU; more so when the processes keep
	// sleeping at higher busy shares (k above 1).
	m, err := registry.Lookup("push")
	if err != nil {
		t.Fatal(err)
	}
	w := rateWorkload().WithDefaults()
	w.Models = []string{"push"}
	d, _, err := w.demand()
	if err != nil {
		t.Fatal(err)
	}
	_, shares := w.opShares()
	last := est.PerSec
	for _, k := range []float64{1, 4} {
		cal.Wake = &results.WakeCPU{AppTripUs: 30, DBStatementUs: 100, AppExp: k, DBExp: k}
		woke, err := HighestRate(rateWorkload(), cal, "push", Box{Cores: 2, RTT: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		d.ReadsPerSec, d.OlderPerSec, d.PostsPerSec = woke.PerSec*(shares[0]+shares[1]), woke.PerSec*shares[1], woke.PerSec*shares[2]
		ow, _, _, err := m.WorkFor(d, nil)
		if err != nil {
			t.Fatal(err)
		}
		tr := trips(mixWork(ow, shares), m.Needs)
		wantCPU := 100 + (30*tr.app+100*tr.db)*(1-math.Pow(u, k))
		want := (u*2 - 0.5) * 1e6 / wantCPU
		if math.Abs(woke.Utilization-u) > 1e-3 || math.Abs(woke.CPUUs-wantCPU) > 1e-2*(wantCPU-100) || math.Abs(woke.PerSec-want) > 1e-3*want ||
			!(woke.PerSec < last) || math.Abs(woke.CPUFactor-1) > 1e-9 {
			t.Errorf("k %g: with wake-ups %+v; want %.1f ops/s at %.3f µs an operation, utilisation %.4f, below %.1f", k, woke, want, wantCPU, u, last)
		}
		last = woke.PerSec
	}
}

// workCalibration is the built-in calibration without each server's idle
// CPU and the wake-ups below saturation: what the tests of how the work
// scales with the rate, the cores and the factors use, where those terms,
// tested above, would add CPU that no operation does.
func workCalibration() *results.Calibration {
	c := DefaultCalibration()
	c.Idle, c.Wake = nil, nil
	return c
}

// TestMachineIsTheRunsOne: a calibration names the processor its runs
// recorded, not the one of the machine that fits it; runs that predate
// the record name this machine's.
func TestMachineIsTheRunsOne(t *testing.T) {
	run := &results.Result{Environment: results.Environment{CPUs: 64, CPUModel: "Imaginary CPU 9000"}}
	if got := machine([]*results.Result{run}); !strings.HasSuffix(got, ", 64 CPUs Imaginary CPU 9000") {
		t.Errorf("machine of a run on 64 Imaginary CPU 9000: %q", got)
	}
	run.Environment.CPUModel = ""
	if got, want := machine([]*results.Result{run}), results.LocalCPUModel(); !strings.HasSuffix(got, " "+want) {
		t.Errorf("machine of a run that recorded no processor: %q, want this machine's %q", got, want)
	}
}

// savedSteps are the counted phases, the model and the rate steps
// (searchSteps) of design model's run at size in validation-xeon-7.
func savedSteps(t *testing.T, size, model string) ([]countedPhase, *results.Model, []belowSaturation) {
	t.Helper()
	r := quietRun(t, "validation-xeon-7", "runs", size, model)
	ps, err := counted(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := searchSteps(r, ps)
	if err != nil {
		t.Fatal(err)
	}
	return ps, r.Model(model), steps
}

// TestSearchStepsTakeTheirOwnWork: a rate search's steps are each
// predicted at their own rate and, on a cache the traffic started empty,
// with the reads it had seen before them. pull-client+memcache's steps
// at 3,000 users read 336 to 396 rows an operation, its closed-loop
// traffic before them 457: the page cache filled as the search went on.
// Taken at the traffic's own work, every step would be predicted its
// 462.
func TestSearchStepsTakeTheirOwnWork(t *testing.T) {
	ps, m, steps := savedSteps(t, "uniform-3000", "pull-client+memcache")
	if len(steps) != len(m.Traffic.Search.Steps) || len(steps) < 4 {
		t.Fatalf("%d steps of %d kept", len(steps), len(m.Traffic.Search.Steps))
	}
	var traffic float64
	for _, p := range ps {
		if p.phase == "traffic" {
			traffic = p.predicted.RowsRead
		}
	}
	for _, b := range steps {
		i, st := b.step, m.Traffic.Search.Steps[b.step]
		measured := st.Cost[cost.RowsRead]
		if got := b.work.RowsRead; math.Abs(got/measured-1) > 0.1 {
			t.Errorf("step %d at %.0f a second: %.0f rows an operation predicted, %.0f measured", i, st.RatePerSec, got, measured)
		}
		if b.rate != st.AchievedPerSec || b.work.RowsRead >= traffic {
			t.Errorf("step %d: rate %.0f, rows %.0f; the traffic's %.0f", i, b.rate, b.work.RowsRead, traffic)
		}
	}
}

// TestSearchStepsTakeTheirHistory: a rate search's steps are predicted
// after what the run did before them. push-active rebuilds the mailbox of
// a reader who has not read since the load; by its search at 3,000
// users most readers have read, and every step is predicted nearer its
// counted items than the traffic phase's history predicts it (that one
// has far more readers still to read), the last step within 10 %. (The
// first steps are still predicted above their counts: 183 items an
// operation for 49 on the uniform graph.)
func TestSearchStepsTakeTheirHistory(t *testing.T) {
	for _, g := range []string{"uniform-3000", "powerlaw-3000"} {
		_, m, steps := savedSteps(t, g, "push-active")
		if len(steps) < 4 {
			t.Fatalf("%s: %d steps of %d kept", g, len(steps), len(m.Traffic.Search.Steps))
		}
		for k, b := range steps {
			i := b.step
			measured := measuredWork(m.Traffic.Search.Steps[i].Cost).Items()
			d, err := b.p.stepWork(-1, b.rate, registry.ColdStart{}) // no step -1: the traffic's history
			if err != nil {
				t.Fatal(err)
			}
			traffic := mixWork(d, b.p.shares).Items()
			got := b.work.Items()
			if math.Abs(got-measured) >= math.Abs(traffic-measured) {
				t.Errorf("%s step %d: %.1f items an operation predicted, %.1f counted; %.1f with the traffic's history", g, i, got, measured, traffic)
			}
			if k == len(steps)-1 && math.Abs(got/measured-1) > 0.1 {
				t.Errorf("%s last step: %.1f items an operation predicted, %.1f counted", g, got, measured)
			}
		}
	}
}

// TestOpenFromHandMadeSteps: a design whose steps cost its CPU at
// saturation times 1.2, beyond the idle CPU and its wake-ups, gets an
// open factor of 1.2; one with fewer than minOpenSteps steps, or whose
// traffic below saturation ran in open-loop phases alone, gets none.
func TestOpenFromHandMadeSteps(t *testing.T) {
	cal := handCalibration()
	cal.MCKeyUs, cal.MCCallUs = 1, 4
	cal.Idle = &results.ProcessCPU{Seconds: 1, AppUs: 2000, DBUs: 8000, MCUs: 300}
	cal.Wake = &results.WakeCPU{DBStatementUs: 30, MCCallUs: 12, AppTripUs: 20, DBExp: 2, MCExp: 1, RedisExp: 1, AppExp: 1}
	ops := registry.OpWork{
		Newest: registry.Work{RowsRead: 40, Statements: 1, MCKeys: 3, CacheCalls: 2},
		Post:   registry.Work{RowsRead: 10, RowsWritten: 10, Statements: 2, MCKeys: 2, CacheCalls: 2},
	}
	shares := [5]float64{0.9, 0, 0.1, 0, 0}
	const open = 1.2
	steps := func(model string, n int, step bool) []belowSaturation {
		index := func(i int) int {
			if step {
				return i
			}
			return -1
		}
		p := handPhase(model, "traffic", ops, shares, 0)
		p.needs = registry.MariaDB | registry.Memcached
		sat := designCPU(cal, residualOf(cal, p.model, p.messages), ops, shares, p.needs)
		var out []belowSaturation
		for i := range n {
			rate := (0.3 + 0.15*float64(i)) * 2e6 / sat.all() / open
			// The busy share the processes show is the fixed point of
			// what they use with their wake-ups at it, Redis's 5,000 µs
			// a second included.
			at := func(u float64) cpu {
				return sat.scale(open).add(wakeCPU(cal, p.predicted, p.needs, sleeping(cal.Wake, everywhere(u)))).scale(rate).add(idleCPU(cal, p.needs))
			}
			lo, hi := 0.0, 1.0
			for range 60 {
				if mid := (lo + hi) / 2; (at(mid).all()+5000)/2e6 > mid {
					lo = mid
				} else {
					hi = mid
				}
			}
			c := at(lo)
			out = append(out, belowSaturation{p, ops, p.predicted, rate, 2,
				results.ProcessCPU{Seconds: 2, DBUs: c.db, MCUs: c.mc, AppUs: c.app, RedisUs: 5000}, index(i)})
		}
		return out
	}
	var below []belowSaturation
	below = append(below, steps("hybrid-memcached", 4, true)...)
	below = append(below, steps("push+memcache", minOpenSteps-1, true)...)
	below = append(below, steps("pull-sp+memcache", 4, false)...)
	cal.Factors = map[string]results.CPUFactors{}
	for _, m := range []string{"hybrid-memcached", "push+memcache", "pull-sp+memcache"} {
		cal.Factors[m] = results.CPUFactors{Newest: 1, Older: 1, Post: 1, Mix: 1}
	}
	fitOpen(cal, below)
	if got := cal.Factors["hybrid-memcached"].Open; math.Abs(got-open) > 1e-3 {
		t.Errorf("open factor %v; want %v (Redis's CPU, which the design does not use, left out)", got, open)
	}
	for _, m := range []string{"push+memcache", "pull-sp+memcache"} {
		if f := cal.Factors[m]; f.Open != 0 || f.OpenFactor() != 1 {
			t.Errorf("%s: open factor %v from too few steps or open-loop phases", m, f.Open)
		}
	}
	// At a planned rate the factor multiplies every kind's CPU.
	r := residualOf(cal, "hybrid-memcached", 1e5)
	sat := designCPU(cal, r, ops, shares, registry.MariaDB|registry.Memcached)
	if at := designCPU(cal, r.planned(), ops, shares, registry.MariaDB|registry.Memcached); math.Abs(at.all()/sat.all()-cal.Factors["hybrid-memcached"].Open) > 1e-9 {
		t.Errorf("CPU at a planned rate %v, at saturation %v", at.all(), sat.all())
	}
}

// TestOpenAndSaturationFromRunsAtTwoSizes: calibrated as
// validation-xeon-7 was (its runs at 1,000 and 2,000 users of the 19
// candidates, and their mix at 100 a second), and checked at 3,000 users,
// which the calibration did not see:
//   - pull-client's and pull-client+memcache's traffic costs more CPU in
//     their rate searches' steps than in their closed loop at the same
//     rate, beyond the wake-ups fitted on every design's steps: they get
//     open factors above 1. Without them pull-client+memcache's highest
//     rates are 1.3 times and more the measured (1.34 and 1.45 in the
//     validation).
//   - push-redis's throughput stops rising with the box's cores 83 %
//     busy: it gets a saturation share below 0.9. Without it its rate is
//     1.3 times and more the measured on the uniform graph.
//
// With both, all three designs' highest rates are within 30 % of the
// measured ones on both graphs.
func TestOpenAndSaturationFromRunsAtTwoSizes(t *testing.T) {
	ev := filepath.Join("..", "..", "evidence", "plan", "validation-xeon-7", "runs")
	var runs, held []*results.Result
	var names, heldNames []string
	load := func(dir string) *results.Result {
		r, err := results.Load(filepath.Join(ev, dir))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	runs, names = append(runs, load("rate-100")), append(names, "rate-100")
	for _, size := range []string{"1000", "2000"} {
		for _, g := range []string{"uniform", "powerlaw"} {
			dirs, err := os.ReadDir(filepath.Join(ev, g+"-"+size))
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dirs {
				name := filepath.Join(g+"-"+size, d.Name())
				runs, names = append(runs, load(name)), append(names, name)
			}
		}
	}
	models := []string{"pull-client", "pull-client+memcache", "push-redis"}
	for _, g := range []string{"uniform", "powerlaw"} {
		for _, m := range models {
			name := filepath.Join(g+"-3000", m)
			held, heldNames = append(held, load(name)), append(heldNames, name)
		}
	}
	if len(runs) != 77 {
		t.Fatalf("%d runs to calibrate on, want 77", len(runs))
	}
	cal, err := Calibrate(runs, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models[:2] {
		if o := cal.Factors[m].Open; !(o > 1.05) {
			t.Errorf("%s: open factor %v, want above 1.05", m, o)
		}
	}
	if s := cal.Factors["push-redis"].Saturation; !(s > 0.7 && s < 0.9) {
		t.Errorf("push-redis saturates at %v of the cores, want 0.7 to 0.9", s)
	}
	ratios := func(cal *results.Calibration) map[string]float64 {
		c, err := Check(held, heldNames, cal, "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, r := range c.Rates {
			out[r.Run+"/"+r.Model] = r.PredictedPerSec / r.MeasuredPerSec
		}
		if len(out) != 6 {
			t.Fatalf("rates checked: %v", out)
		}
		return out
	}
	for k, v := range ratios(cal) {
		if v < 1/1.3 || v > 1.3 {
			t.Errorf("%s: predicted / measured highest rate %.2f, want within 30 %%", k, v)
		}
	}
	// worst is the largest ratio of model's rates with every design's
	// factors changed by change.
	worst := func(model string, change func(*results.CPUFactors)) float64 {
		without := *cal
		without.Factors = maps.Clone(cal.Factors)
		for m, f := range without.Factors {
			change(&f)
			without.Factors[m] = f
		}
		w := 0.0
		for k, v := range ratios(&without) {
			if strings.HasSuffix(k, "/"+model) {
				w = max(w, v)
			}
		}
		return w
	}
	if w := worst("pull-client+memcache", func(f *results.CPUFactors) { f.Open = 0 }); !(w > 1.3) {
		t.Errorf("without open factors pull-client+memcache's rates are at most %.2f the measured; the test shows nothing", w)
	}
	if w := worst("push-redis", func(f *results.CPUFactors) { f.Saturation = 0 }); !(w > 1.3) {
		t.Errorf("without saturation shares push-redis's rates are at most %.2f the measured; the test shows nothing", w)
	}
}

// TestSaturationFromHandMadeSteps: a design's saturation share is the
// median busy share of its rate steps that fell short of their offered
// rate; steps that kept up, or failed with errors, do not count, and a
// design with one such step, or none, gets none.
func TestSaturationFromHandMadeSteps(t *testing.T) {
	step := func(offered, achieved, busy float64, errs int64) results.RateStep {
		return results.RateStep{RatePerSec: offered, OfferedPerSec: offered, AchievedPerSec: achieved, Errors: errs,
			CPU: &results.ProcessCPU{Seconds: 2, AppUs: busy * 2e6 * 0.4, DBUs: busy * 2e6 * 0.3, RedisUs: busy * 2e6 * 0.3}}
	}
	run := func(model string, steps ...results.RateStep) *results.Result {
		r := &results.Result{Environment: results.Environment{CPUs: 2}}
		r.Models = []results.Model{{Name: model, Traffic: &results.Traffic{Search: &results.RateSearch{SLOMs: 50, StepSeconds: 2, Steps: steps}}}}
		return r
	}
	runs := []*results.Result{
		run("push-redis", step(20000, 20000, 0.7, 0), step(30000, 26000, 0.84, 0), step(40000, 25000, 0.82, 0)),
		run("push-redis", step(28000, 26500, 0.86, 0), step(26000, 25900, 0.80, 0), step(50000, 20000, 0.2, 3)),
		run("push", step(12000, 12000, 0.9, 0), step(14000, 13000, 0.95, 0)),
		run("push", step(15000, 13500, 0.93, 0)),
		run("hybrid", step(5000, 4000, 0.9, 0)),
	}
	cal := handCalibration()
	cal.Factors = map[string]results.CPUFactors{}
	for _, m := range []string{"push-redis", "push", "hybrid"} {
		cal.Factors[m] = results.CPUFactors{Newest: 1, Older: 1, Post: 1, Mix: 1}
	}
	fitSaturation(cal, runs)
	if got := cal.Factors["push-redis"].Saturation; math.Abs(got-0.84) > 1e-9 {
		t.Errorf("push-redis saturates at %v, want 0.84, the median of 0.82, 0.84 and 0.86", got)
	}
	if got := cal.Factors["push"].Saturation; math.Abs(got-0.94) > 1e-9 {
		t.Errorf("push saturates at %v, want 0.94, between its two runs' steps that fell short", got)
	}
	if f := cal.Factors["hybrid"]; f.Saturation != 0 || f.SaturationShare() != 1 {
		t.Errorf("hybrid saturates at %v from one step", f.Saturation)
	}
}
