package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// quietRun loads a saved counted run of evidence/plan.
func quietRun(t *testing.T, dir ...string) *results.Result {
	t.Helper()
	r, err := results.Load(filepath.Join(append([]string{"..", "..", "evidence", "plan"}, dir...)...))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fitAdditive is the additive form of fitFactors: per kind of operation
// the mean over the runs of measured minus predicted CPU, µs, then the
// mix's the same way after them.
func fitAdditive(cal *results.Calibration, phases []countedPhase) map[string]residual {
	sums := map[string]*[opKinds + 1][]float64{}
	kindOf := map[string]int{"retrieve": opNewest, "retrieve_older": opOlder, "submit": opPost}
	for _, p := range phases {
		k, ok := kindOf[p.phase]
		m, has := p.measured.AllCPU()
		if !ok || !has || m <= 0 {
			continue
		}
		if sums[p.model] == nil {
			sums[p.model] = &[opKinds + 1][]float64{}
		}
		sums[p.model][k] = append(sums[p.model][k], m-cpuOf(cal, p.predicted, p.needs).all())
	}
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / math.Max(1, float64(len(xs)))
	}
	out := map[string]residual{}
	for name, s := range sums {
		r := noResidual
		r.measured = true
		for k := range opKinds {
			r.add[k] = mean(s[k])
		}
		out[name] = r
	}
	for _, p := range phases {
		m, has := p.measured.AllCPU()
		r, ok := out[p.model]
		if p.phase != "traffic" || !has || m <= 0 || !ok {
			continue
		}
		sums[p.model][opKinds] = append(sums[p.model][opKinds], m-designCPU(cal, r, p.ops, p.shares, p.needs).all())
	}
	for name, r := range out {
		r.addMix = mean(sums[name][opKinds])
		out[name] = r
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// TestResidualForms fits the multiplicative residual (the calibration's
// factors) and the additive one (µs per operation) on the two counted
// runs at 1,000 users and sets both against the held-out run at 3,000
// users and the rate search at 3,000 users: CPU per operation and highest
// rate within 30 %. The calibration keeps the multiplicative form; it
// must do at least as well as the additive one on both.
func TestResidualForms(t *testing.T) {
	fit := []*results.Result{quietRun(t, "quiet", "runs", "uniform-1000"), quietRun(t, "quiet", "runs", "powerlaw-1000")}
	cal, err := Calibrate(fit, []string{"uniform-1000", "powerlaw-1000"})
	if err != nil {
		t.Fatal(err)
	}
	var phases []countedPhase
	for _, r := range fit {
		ps, err := counted(r, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if !p.unreliable {
				phases = append(phases, p)
			}
		}
	}
	add := fitAdditive(cal, phases)
	forms := map[string]func(string, float64) residual{
		"none":           func(string, float64) residual { return noResidual },
		"multiplicative": func(m string, size float64) residual { return residualOf(cal, m, size) },
		"additive": func(m string, _ float64) residual {
			if r, ok := add[m]; ok {
				return r
			}
			return noResidual
		},
	}
	held := map[string]*results.Result{
		"uniform-3000": quietRun(t, "quiet", "runs", "uniform-3000"),
		"rate-quiet":   quietRun(t, "rate-quiet", "run"),
	}
	score := map[string][3]int{}
	for name, form := range forms {
		var s [3]int
		for _, run := range []string{"uniform-3000", "rate-quiet"} {
			c, err := check([]*results.Result{held[run]}, []string{run}, cal, "", form)
			if err != nil {
				t.Fatal(err)
			}
			_, _, cpuN, cpu := c.Summary()
			rn, rw := c.RateSummary()
			var errs, rateErrs []float64
			for _, r := range c.Rows {
				if r.MeasuredCPUUs > 0 {
					errs = append(errs, math.Abs(r.CPUErrorPct()))
				}
			}
			for _, r := range c.Rates {
				rateErrs = append(rateErrs, math.Abs(r.ErrorPct()))
			}
			t.Logf("%s on %s: CPU within 30%%: %d of %d (median error %.0f%%); rate within 30%%: %d of %d (median error %.0f%%)",
				name, run, cpu, cpuN, median(errs), rw, rn, median(rateErrs))
			if run == "uniform-3000" {
				s[0] = cpu
			} else {
				s[1], s[2] = cpu, rw
			}
		}
		score[name] = s
	}
	m, a := score["multiplicative"], score["additive"]
	if m[0]+m[1] < a[0]+a[1] || m[2] < a[2] {
		t.Errorf("the additive form does better (CPU within 30%% at 3,000 users, in the rate run, rates): %v against %v", a, m)
	}
}

// handCalibration costs 1 µs a row read, 2 a row written, 10 a statement
// on the database and 5 an operation in the application.
func handCalibration() *results.Calibration {
	return &results.Calibration{DBRowReadUs: 1, DBRowWrittenUs: 2, DBStatementUs: 10, AppOpUs: 5}
}

// handPhase is a counted phase of model whose servers spent cpuUs an
// operation on work shares of ops.
func handPhase(model, phase string, ops registry.OpWork, shares [5]float64, cpuUs float64) countedPhase {
	return countedPhase{run: "hand", model: model, phase: phase, needs: registry.MariaDB,
		measured:  cost.Cost{cost.Ops: 100, cost.DBCPU: cpuUs * 0.75, cost.CPU: cpuUs * 0.25},
		predicted: mixWork(ops, shares), ops: ops, shares: shares}
}

// TestFactorsFromHandMadePhases: a design whose newest pages cost exactly
// twice their work at the unit costs gets 2; one whose older pages cost 2
// times in one run and 8 in another gets their geometric mean, 4; a post
// at its units gets 1; a traffic phase that costs 1.5 times its
// operations with those factors gets the mix factor 1.5; and the check
// carries them: its prediction of each phase is the measurement.
func TestFactorsFromHandMadePhases(t *testing.T) {
	cal := handCalibration()
	ops := registry.OpWork{
		Newest: registry.Work{RowsRead: 40, Statements: 1}, // 5 + 40 + 10 = 55 µs
		Older:  registry.Work{RowsRead: 90, Statements: 1}, // 105 µs
		Post:   registry.Work{RowsRead: 10, RowsWritten: 10, Statements: 2},
		Later:  registry.Work{RowsWritten: 5},                                                                        // 5 + 10 + 20 + 20 + 10 = 65 µs
		Follow: registry.Work{RowsWritten: 1, Statements: 1}, Unfollow: registry.Work{RowsWritten: 1, Statements: 1}, // 17 µs
	}
	units := func(k int) float64 { return cpuOf(cal, opWorks(ops)[k], registry.MariaDB).all() }
	if units(opNewest) != 55 || units(opOlder) != 105 || units(opPost) != 65 || units(opFollow) != 17 {
		t.Fatalf("units: %v %v %v %v", units(opNewest), units(opOlder), units(opPost), units(opFollow))
	}
	mix := [5]float64{0.5, 0.3, 0.1, 0.05, 0.05}
	withFactors := 0.5*2*55 + 0.3*4*105 + 0.1*1*65 + 0.1*17
	phases := []countedPhase{
		handPhase("push", "retrieve", ops, [5]float64{1, 0, 0, 0, 0}, 110),
		handPhase("push", "retrieve", ops, [5]float64{1, 0, 0, 0, 0}, 110),
		handPhase("push", "retrieve_older", ops, [5]float64{0, 1, 0, 0, 0}, 210),
		handPhase("push", "retrieve_older", ops, [5]float64{0, 1, 0, 0, 0}, 840),
		handPhase("push", "submit", ops, [5]float64{0, 0, 1, 0, 0}, 65),
		handPhase("push", "traffic", ops, mix, 1.5*withFactors),
	}
	got := fitFactors(cal, phases)
	want := results.CPUFactors{Newest: 2, Older: 4, Post: 1, Mix: 1.5, Phases: 6}
	f, ok := got["push"]
	if !ok || len(got) != 1 || math.Abs(f.Newest-want.Newest) > 1e-9 || math.Abs(f.Older-want.Older) > 1e-9 ||
		math.Abs(f.Post-want.Post) > 1e-9 || math.Abs(f.Mix-want.Mix) > 1e-9 || f.Phases != want.Phases {
		t.Fatalf("factors %+v; want %+v", got, want)
	}
	cal.Factors = got
	for _, p := range phases {
		m, _ := p.measured.AllCPU()
		if p.phase == "retrieve_older" {
			m = 420 // the geometric mean of the two runs
		}
		if pred := designCPU(cal, residualOf(cal, "push", 0), p.ops, p.shares, p.needs).all(); math.Abs(pred-m) > 1e-9*m {
			t.Errorf("%s: predicted %.3f µs, measured %.3f", p.phase, pred, m)
		}
	}
}

// TestMissingDesignGetsOne: a design the calibration did not run, and
// every design of a calibration without factors, has factor 1 and is
// marked so; the plan's CPU for it is the unit costs', and its text says
// so by name.
func TestMissingDesignGetsOne(t *testing.T) {
	cal := workCalibration()
	delete(cal.Factors, "pull-sp")
	r := residualOf(cal, "pull-sp", 0)
	if r.measured || r != noResidual {
		t.Errorf("pull-sp's residual %+v; want 1 everywhere, not measured", r)
	}
	w := Workload{Users: 10_000, NewestPerSec: 100, PostsPerSec: 5, Models: []string{"pull-sp", "push"}}
	old := *cal
	old.Factors = nil
	p, q := planBoth(t, w, cal, &old)
	for i, d := range p.Designs {
		units := q.Designs[i]
		if math.Abs(units.CPUFactor-1) > 1e-9 || !units.Uncalibrated {
			t.Errorf("%s without factors: factor %v, uncalibrated %v", units.Model, units.CPUFactor, units.Uncalibrated)
		}
		cpu, base := d.DBUs+d.CacheUs+d.AppUs, units.DBUs+units.CacheUs+units.AppUs
		switch d.Model {
		case "pull-sp":
			if !d.Uncalibrated || math.Abs(d.CPUFactor-1) > 1e-9 || math.Abs(cpu-base) > 1e-9*base {
				t.Errorf("pull-sp: %+v; want factor 1 and the unit costs' %v µs", d, base)
			}
		case "push":
			if d.Uncalibrated || math.Abs(cpu/base-d.CPUFactor) > 1e-9 || math.Abs(d.CPUFactor-1) < 0.01 {
				t.Errorf("push: factor %v, %v µs against %v at the unit costs", d.CPUFactor, cpu, base)
			}
		}
	}
	var b strings.Builder
	if err := results.WritePlan(&b, p); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.Contains(text, "the calibration did not run pull-sp: factor 1") {
		t.Errorf("the plan does not say pull-sp has no factor:\n%s", text)
	}
	for _, d := range p.Designs {
		line := ""
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), d.Model+" ") {
				line = l
			}
		}
		want := fmt.Sprintf("%.2f", d.CPUFactor)
		if d.Uncalibrated {
			want = "1, not calibrated"
		}
		if !strings.Contains(line, " µs  ") || !strings.Contains(line, want) {
			t.Errorf("%s's line does not name its factor %s: %q", d.Model, want, line)
		}
	}
}

// TestHighestRateByHandWithFactors: TestHighestRateByHand's design whose
// every operation costs twice its units (and its mix once more 1.5
// times) serves the rate of an operation of 100 × 2 × 1.5 = 300 µs: at
// least where the p99 of M/M/1 at 300 µs, 100·3·ln(100)/(1-u) µs, reaches
// 50 ms (u = 1 - 0.0276; the rule of queue.go, on 2 cores and for a mix
// of operations of at most 300 µs, waits less), on 2 cores
// u × 2 × 10^6/300 operations a second.
func TestHighestRateByHandWithFactors(t *testing.T) {
	cal := &results.Calibration{AppOpUs: 100, Factors: map[string]results.CPUFactors{
		"push": {Newest: 2, Older: 2, Post: 2, Mix: 1.5}}}
	w := rateWorkload()
	_, shares := w.WithDefaults().opShares()
	if !isMixed(shares) {
		t.Fatalf("the workload is not a mix: %v", shares)
	}
	// Follows and unfollows have no factor of their own: 1 × 1.5.
	opUs := 100 * 1.5 * (2*(shares[0]+shares[1]+shares[2]) + shares[3] + shares[4])
	est, err := HighestRate(w, cal, "push", Box{Cores: 2, RTT: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(est.CPUUs-opUs) > 1e-9*opUs || math.Abs(est.CPUFactor-opUs/100) > 1e-9 {
		t.Errorf("CPU %v µs, factor %v; want %v µs", est.CPUUs, est.CPUFactor, opUs)
	}
	// The p99 of a mix of 300 and 150 µs (follows): at most that of M/M/1
	// at 300 µs.
	if u := 1 - opUs*math.Log(100)/50_000; est.Utilization < u-1e-3 || est.PerSec > 2e6/opUs {
		t.Errorf("%+v; want at least utilisation %.4f and under the ceiling", est, u)
	}
	plain, err := HighestRate(w, &results.Calibration{AppOpUs: 100}, "push", Box{Cores: 2, RTT: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if est.PerSec >= plain.PerSec*100/opUs*1.01 {
		t.Errorf("with factors %.0f ops/s, without %.0f: want about %.2f times fewer", est.PerSec, plain.PerSec, opUs/100)
	}
}

// TestBadFactorRefusedAtLoad: a calibration file whose factor is 0,
// negative, NaN or infinite is refused at load with a *FactorError naming
// the design and the operation, and the plan refuses a calibration made
// in code with one; a calibration of format 1, without factors, loads
// and means factor 1.
func TestBadFactorRefusedAtLoad(t *testing.T) {
	data, err := json.Marshal(DefaultCalibration())
	if err != nil {
		t.Fatal(err)
	}
	good := string(data)
	at := strings.Index(good, `"pull-redis":{"retrieve":`)
	if at < 0 {
		t.Fatalf("no pull-redis factors in %s", good)
	}
	at += len(`"pull-redis":{"retrieve":`)
	end := at + strings.IndexByte(good[at:], ',')
	for _, bad := range []string{"0", "-1", `"NaN"`, `"Inf"`, "1e999"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, results.CalibrationFile), []byte(good[:at]+bad+good[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := results.LoadCalibration(dir)
		var fe *results.FactorError
		if !errors.As(err, &fe) || fe.Model != "pull-redis" || fe.Phase != "retrieve" || !strings.Contains(err.Error(), "want a finite number above 0") {
			t.Errorf("factor %s: %v; want a FactorError for pull-redis's retrieve", bad, err)
		}
	}
	cal := DefaultCalibration()
	cal.Factors["push"] = results.CPUFactors{Newest: math.NaN(), Older: 1, Post: 1, Mix: 1}
	var ie *InputError
	if _, err := Make(Workload{Users: 1000, NewestPerSec: 10}, cal, ""); !errors.As(err, &ie) || ie.Field != "calibration" {
		t.Errorf("a plan with a NaN factor: %v", err)
	}
	if _, err := HighestRate(rateWorkload(), cal, "push", Box{Cores: 2}); !errors.As(err, &ie) {
		t.Errorf("a rate with a NaN factor: %v", err)
	}

	old, err := results.LoadCalibration(filepath.Join("..", "..", "evidence", "plan", "quiet", "calibration"))
	if err != nil || old.Version != 1 || old.Factors != nil {
		t.Fatalf("format 1: %v, %+v", err, old)
	}
	if f, ok := old.Factor("pull-redis"); ok || f != (results.CPUFactors{Newest: 1, Older: 1, Post: 1, Mix: 1}) {
		t.Errorf("format 1's factors: %+v, %v", f, ok)
	}
}

// TestRebuildUnitsFromHandMadePhases: a design whose rebuilds cost 7 µs
// of database CPU and 2 of application CPU an entry, and nothing per row
// of theirs (one run's rebuilds read and write 1.8 times the rows of the
// other's for the same CPU, as the power-law graph's do), beside designs
// without rebuilds that pin the row and statement units: the fit finds
// the units of an entry, and the rows' and statements' units, exactly; the
// design's newest-page factor comes out 1; and a newest page of ten times
// the rebuilds costs what its entries say. A calibration without the
// entry's units prices a rebuild's rows as any others.
func TestRebuildUnitsFromHandMadePhases(t *testing.T) {
	const dbEntry, appEntry = 7.0, 2.0
	cal := handCalibration() // 1 µs a row read, 2 written, 10 a statement; 5 an operation
	cal.AppStatementUs = 3
	// units is what w costs by hand: rows outside rebuilds, statements,
	// entries; db and app apart.
	units := func(w registry.Work) (db, app float64) {
		db = (w.RowsRead - w.RebuildRowsRead) + 2*(w.RowsWritten-w.RebuildRowsWritten) + 10*w.Statements + dbEntry*w.Rebuilt
		return db, 5 + 3*w.Statements + appEntry*w.Rebuilt
	}
	phase := func(model, name string, ops registry.OpWork, shares [5]float64, measured registry.Work) countedPhase {
		p := countedPhase{run: "hand", model: model, phase: name, needs: registry.MariaDB,
			predicted: mixWork(ops, shares), ops: ops, shares: shares}
		db, app := units(p.predicted)
		p.measured = cost.Cost{cost.Ops: 100, cost.DBCPU: db, cost.CPU: app,
			cost.RowsRead: measured.RowsRead, cost.RowsWritten: measured.RowsWritten}
		return p
	}
	steady := registry.Work{RowsRead: 43, Statements: 2}
	rebuild := registry.Work{RowsRead: 1929, RowsWritten: 1802, Statements: 6, Rebuilt: 800, RebuildRowsRead: 1929, RebuildRowsWritten: 1802}
	newestAt := func(share float64) registry.OpWork {
		return registry.OpWork{Newest: steady.Add(rebuild.Scale(share)), Older: steady}
	}
	newest := [5]float64{1, 0, 0, 0, 0}
	var phases []countedPhase
	for i, x := range []registry.Work{{RowsRead: 40, Statements: 1}, {RowsRead: 200, RowsWritten: 10, Statements: 3},
		{RowsRead: 5, RowsWritten: 60, Statements: 4}, {RowsRead: 90, RowsWritten: 30, Statements: 2}, {RowsRead: 10, Statements: 8}} {
		ops := registry.OpWork{Newest: x}
		phases = append(phases, phase(fmt.Sprintf("plain-%d", i), "retrieve", ops, newest, x))
	}
	for _, x := range []struct {
		share, rows float64 // rebuilds a page; the rows they counted over the model's
	}{{0.04, 1}, {0.05, 1.8}} {
		ops := newestAt(x.share)
		counted := steady.Add(rebuild.Scale(x.share * x.rows))
		phases = append(phases, phase("rebuilder", "retrieve", ops, newest, counted))
	}
	got, err := fitUnits(phases)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		what      string
		got, want float64
	}{
		{"database, per row read", got.DBRowReadUs, 1}, {"database, per row written", got.DBRowWrittenUs, 2},
		{"database, per statement", got.DBStatementUs, 10}, {"database, per rebuilt entry", got.DBRebuiltUs, dbEntry},
		{"application, per operation", got.AppOpUs, 5}, {"application, per statement", got.AppStatementUs, 3},
		{"application, per rebuilt entry", got.AppRebuiltUs, appEntry},
	} {
		if math.Abs(x.got-x.want) > 1e-6*x.want {
			t.Errorf("%s: %v µs, want %v", x.what, x.got, x.want)
		}
	}
	if f := fitFactors(got, phases)["rebuilder"]; math.Abs(f.Newest-1) > 1e-6 {
		t.Errorf("the rebuilding design's newest-page factor %v, want 1", f.Newest)
	}
	// Ten times the rebuilds a page: what their entries and statements
	// cost, not their rows.
	ops := newestAt(0.4)
	db, app := units(ops.Newest)
	if c := cpuOf(got, ops.Newest, registry.MariaDB); math.Abs(c.db-db) > 1e-6*db || math.Abs(c.app-app) > 1e-6*app {
		t.Errorf("a page of 0.4 rebuilds: %+v, want database %v µs, application %v", c, db, app)
	}
	// A calibration that predates the entry's units prices the rows.
	old := *got
	old.DBRebuiltUs, old.AppRebuiltUs = 0, 0
	w := ops.Newest
	if c, want := cpuOf(&old, w, registry.MariaDB).db, w.RowsRead+2*w.RowsWritten+10*w.Statements; math.Abs(c-want) > 1e-6*want {
		t.Errorf("without the entry's units: database %v µs, want the rows' %v", c, want)
	}
}
