package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/loadgen/plan"
	"github.com/pushpull/pushpull/results"
)

// TestPlanBadInput: a plan that cannot be made is a usage error (exit 2)
// before anything is computed, and saves nothing.
func TestPlanBadInput(t *testing.T) {
	out := t.TempDir()
	rates := []string{"--newest-per-sec", "100"}
	// A calibration whose CPU factor is not a number above 0.
	badCal := t.TempDir()
	if err := os.WriteFile(filepath.Join(badCal, results.CalibrationFile),
		[]byte(`{"version": 2, "db_row_read_us": 1, "factors": {"push": {"retrieve": 0, "retrieve_older": 1, "submit": 1, "mix": 1}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "give the planned rates"},
		{[]string{"--newest-per-sec", "-1"}, "newest-per-sec"},
		{[]string{"--rate", "0"}, "rate"},
		{[]string{"--rate", "100", "--posts-per-sec", "5"}, "not both"},
		{[]string{"--mix", "default"}, "--mix goes with --rate"},
		{[]string{"--rate", "100", "--mix", "newest=1,bogus=2"}, "--mix"},
		{append([]string{"--users", "1"}, rates...), "users"},
		{append([]string{"--graph", "zipf"}, rates...), "graph"},
		{append([]string{"--graph", "edges:/no/such/file"}, rates...), "--graph"},
		{append([]string{"--graph", "powerlaw", "--in-exponent", "1"}, rates...), "in-exponent"},
		{append([]string{"--activity", "celebrity"}, rates...), "activity"},
		{append([]string{"--active-share", "0"}, rates...), "active-share"},
		{append([]string{"--slo", "0s"}, rates...), "slo"},
		{append([]string{"--freshness", "-1s"}, rates...), "freshness"},
		{append([]string{"--node-cores", "0"}, rates...), "node-cores"},
		{append([]string{"--utilization", "1.5"}, rates...), "utilization"},
		{append([]string{"--price-core", "-1"}, rates...), "price-core"},
		{append([]string{"--retention", "24h"}, rates...), "retention"},
		{append([]string{"--models", "nope"}, rates...), "nope"},
		{append([]string{"--option", "nope=1"}, rates...), "nope"},
		{append([]string{"--calibration", "/no/such/dir"}, rates...), "--calibration"},
		{append([]string{"--calibration", badCal}, rates...), "push's CPU factor of retrieve is 0"},
		{[]string{"--check", "/no/such/run"}, "no/such/run"},
		{[]string{"--calibrate-from", "/no/such/run"}, "no/such/run"},
		{[]string{"--calibrate", "--check", "x"}, "one at a time"},
		{[]string{"--validate", "--check", "x"}, "one at a time"},
		{[]string{"--validate", "--validate-scales", "0.3,0.1"}, "larger than those calibrated at"},
		{[]string{"--validate", "--validate-scales", "0.1,0.3,0.2"}, "in increasing order"},
		{[]string{"--validate", "--validate-scales", "0.1,0.1,0.3"}, "in increasing order"},
		{[]string{"--validate", "--validate-scales", "0.1"}, "want two scales or more"},
		{[]string{"--validate", "--validate-scales", "0.1,x,0.3"}, `"x" is not a number`},
		{[]string{"--validate", "--validate-scales", "0.1,20"}, "at most 10"},
		{[]string{"--validate", "--validate-duration", "0s"}, "--validate-duration"},
		{[]string{"--validate", "--validate-repeat", "0"}, "--validate-repeat 0: want 1 to 10"},
		{[]string{"--validate", "--validate-repeat", "11"}, "want 1 to 10"},
		{append([]string{"--validate-repeat", "2"}, rates...), "go with --validate"},
		{[]string{"--validate", "--models", "nope"}, "nope"},
		{[]string{"--validate", "--calibration", "/no/such/cal"}, "--calibration"},
		{[]string{"--validate", "--calibration", "builtin:nope"}, `no calibration "nope" is built in`},
		{[]string{"--validate", "--calibration", "builtin:amd-epyc", "--validate-scales", "0.1,0.3"}, "with --calibration, want the one scale"},
		{[]string{"--validate", "--calibration", "builtin:amd-epyc", "--validate-scales", "0.0001"}, "want at least 10"},
		{[]string{"--validate", "--calibration", "builtin:amd-epyc", "--models", "nope"}, "nope"},
		{append([]string{"--validate-scales", "0.1,0.3"}, rates...), "go with --validate"},
		{append([]string{"--set", "thread_handling=pool-of-threads"}, rates...), "--set goes with --validate or --calibrate"},
		{[]string{"--check", "/no/such/run", "--set", "thread_handling=pool-of-threads"}, "--set goes with --validate or --calibrate"},
		{[]string{"--validate", "--set", "thread_handling"}, "want key=value"},
		{[]string{"--calibrate", "--set", "datadir=/tmp/x"}, "the sandbox sets this option itself"},
		{append([]string{"--calibration", "builtin:nope"}, rates...), `no calibration "nope" is built in (built in: builtin:amd-epyc`},
		{[]string{"--calibrate-from", "/no/such/run", "--calibration", "builtin:" + plan.ReferenceCalibration}, "not saved over"},
	} {
		args := append([]string{"plan", "--out", out}, c.args...)
		r := run(t, nil, args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("a refused plan saved %d entries", len(entries))
	}
}

// TestPlanValidateCalibration: plan --validate --calibration checks the
// calibration it is given instead of fitting one: only the held-out runs,
// at the one scale given, each design on both graphs; the calibration
// saved beside the check is the one given, and the check is made with it.
func TestPlanValidateCalibration(t *testing.T) {
	dir, r := runValidate(t, "--calibration", "builtin:"+plan.ReferenceCalibration, "--validate-scales", "0.01",
		"--validate-duration", "100ms", "--models", "push")
	made, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "*", "*", results.JSONFile))
	if len(made) != 2 {
		t.Errorf("saved runs %v, want push's at 100 users on both graphs alone", made)
	}
	for _, run := range []string{"uniform-100/push", "powerlaw-100/push"} {
		if got, _ := filepath.Glob(filepath.Join(dir, "runs", run, "*", results.JSONFile)); len(got) != 1 {
			t.Errorf("runs/%s: %d saved runs, want 1", run, len(got))
		}
	}
	cal, err := results.LoadCalibration(filepath.Join(dir, "calibration"))
	if err != nil {
		t.Fatal(err)
	}
	given := plan.BuiltInCalibration(plan.ReferenceCalibration)
	if !slices.Equal(cal.Sources, given.Sources) || cal.DBStatementUs != given.DBStatementUs {
		t.Errorf("the calibration saved is not the one given: %d sources, %v µs a statement", len(cal.Sources), cal.DBStatementUs)
	}
	c, err := results.LoadPlanCheck(filepath.Join(dir, "check"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Calibration.DBStatementUs != given.DBStatementUs || len(c.Rates) != 2 || len(c.Rows) != 8 {
		t.Errorf("the check: calibration %v µs a statement, %d rates, %d rows; want the given one's, push's 2 and 8",
			c.Calibration.DBStatementUs, len(c.Rates), len(c.Rows))
	}
	inOrder(t, r.stderr, "validation run 1 of 2: pushpull bench", "--scale 0.01 --graph uniform --models push",
		"validation run 2 of 2: pushpull bench", "--scale 0.01 --graph powerlaw --models push")
}

// runValidate runs plan --validate with args, saving under a directory of
// its own, and returns the one validation directory it saved and the
// command's result; it fails t unless the command succeeded.
func runValidate(t *testing.T, args ...string) (string, result) {
	t.Helper()
	out := t.TempDir()
	r := run(t, nil, append(append([]string{"plan", "--validate"}, args...), "--out", out, "--quiet")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	dirs, err := filepath.Glob(filepath.Join(out, "validation", "*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("want one validation directory, got %v (%v)", dirs, err)
	}
	return dirs[0], r
}

// inOrder fails t unless text holds each of wants, one after the other.
func inOrder(t *testing.T, text string, wants ...string) {
	t.Helper()
	for i, want := range wants {
		at := strings.Index(text, want)
		if at < 0 {
			t.Fatalf("line %d %q not there, or out of order: %q", i, want, text)
		}
		text = text[at+len(want):]
	}
}

// TestPlanTenMillionUsers: a plan for ten million users prints the
// designs, the verdict and the margin, and saves files that load back.
func TestPlanTenMillionUsers(t *testing.T) {
	out := t.TempDir()
	r := run(t, nil, "plan", "--out", out, "--users", "10000000", "--graph", "powerlaw",
		"--newest-per-sec", "300000", "--posts-per-sec", "6000", "--slo", "100ms", "--freshness", "5s")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"10,000,000 users", "verdict:", "margin:", "DB cores"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(dirs) != 1 {
		t.Fatalf("saved %v", dirs)
	}
	p, err := results.LoadPlan(dirs[0])
	if err != nil || p.Verdict.Best == "" || !strings.Contains(r.stdout, "verdict: "+p.Verdict.Best) {
		t.Errorf("loaded %v: %+v", err, p)
	}
}

// TestPlanBuiltInCalibrations: --calibration builtin:NAME plans with
// that built-in calibration, and a plan whose calibration was not made on
// this machine's processor says so, on stderr and in its assumptions.
func TestPlanBuiltInCalibrations(t *testing.T) {
	local := results.LocalCPUModel()
	for _, name := range plan.BuiltInCalibrations() {
		c := plan.BuiltInCalibration(name)
		out := t.TempDir()
		r := run(t, nil, "plan", "--calibration", "builtin:"+name, "--users", "5000", "--rate", "100", "--out", out)
		if r.code != 0 || !strings.Contains(r.stdout, "calibration: "+c.Machine) {
			t.Fatalf("%s: exit %d, %s\n%s", name, r.code, r.stderr, r.stdout)
		}
		dirs, _ := filepath.Glob(filepath.Join(out, "*"))
		if len(dirs) != 1 {
			t.Fatalf("%s: saved %v", name, dirs)
		}
		p, err := results.LoadPlan(dirs[0])
		if err != nil {
			t.Fatal(err)
		}
		noted := slices.ContainsFunc(p.Assumptions, func(a string) bool {
			return strings.HasPrefix(a, "the calibration's runs") && strings.Contains(a, c.Machine)
		})
		other := c.CPUModel == "" || c.CPUModel != local
		if noted != other || strings.Contains(r.stderr, "note: the calibration's runs") != other {
			t.Errorf("%s (made on %q) on %q: noted in the plan %v, stderr %q", name, c.CPUModel, local, noted, r.stderr)
		}
	}
}

// TestPlanCalibrateAndCheck fits a calibration on the saved counted runs
// of evidence/plan, plans with it, and checks the cost models against a
// run: each saves its files, and the check's table and plot name every
// design it set against the run; a check of a saved run that searched for
// the designs' highest rates prints each of them.
func TestPlanCalibrateAndCheck(t *testing.T) {
	runs := filepath.Join("..", "..", "evidence", "plan", "runs")
	uniform, powerlaw := filepath.Join(runs, "uniform-1000"), filepath.Join(runs, "powerlaw-1000")
	cal, out := t.TempDir(), t.TempDir()
	r := run(t, nil, "plan", "--calibrate-from", uniform+","+powerlaw, "--calibration", cal)
	if r.code != 0 || !strings.Contains(r.stdout, "database, per row read") {
		t.Fatalf("calibrate: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	c, err := results.LoadCalibration(cal)
	if err != nil || c.Fit.Phases == 0 || !(c.DBRowReadUs > 0) || len(c.Sources) != 2 {
		t.Fatalf("calibration %v: %+v", err, c)
	}
	if len(c.Factors) == 0 || !strings.Contains(r.stdout, "CPU factors") {
		t.Errorf("the calibration has no CPU factors, or does not print them: %+v\n%s", c.Factors, r.stdout)
	}
	r = run(t, nil, "plan", "--calibration", cal, "--users", "5000", "--rate", "100", "--out", out, "--quiet")
	if r.code != 0 {
		t.Fatalf("plan with it: exit %d: %s", r.code, r.stderr)
	}
	r = run(t, nil, "plan", "--calibration", cal, "--check", uniform, "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "phases within 10%") || !strings.Contains(r.stdout, "CPU factor") ||
		!strings.Contains(r.stdout, "median over the designs") {
		t.Fatalf("check: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	saved, _ := filepath.Glob(filepath.Join(out, "check", "*", results.PlanCheckPNGFile))
	if len(saved) != 1 {
		t.Fatalf("check saved %v", saved)
	}
	check, err := results.LoadPlanCheck(filepath.Dir(saved[0]))
	if err != nil || len(check.Rows) == 0 {
		t.Fatalf("check %v: %+v", err, check)
	}
	for _, row := range check.Rows {
		if !strings.Contains(r.stdout, row.Model) {
			t.Errorf("the table lacks %s", row.Model)
		}
		if f, ok := c.Factor(row.Model); ok != !row.Uncalibrated || !(row.CPUFactor > 0) || ok && row.Phase == "retrieve" && math.Abs(row.CPUFactor-f.Newest) > 1e-9 {
			t.Errorf("%s %s: factor %v, uncalibrated %v; the calibration's %+v", row.Model, row.Phase, row.CPUFactor, row.Uncalibrated, f)
		}
	}
	// A saved run that searched five designs' highest rates.
	searched := filepath.Join("..", "..", "evidence", "hybrid-memcached")
	r = run(t, nil, "plan", "--calibration", cal, "--check", searched, "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "designs predicted within 30%") {
		t.Fatalf("check of a rate search: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	res, err := results.Load(searched)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Models {
		if m.Traffic.Searched() && !strings.Contains(r.stdout, m.Name+"  50.0 ms") {
			t.Errorf("the rate table lacks %s:\n%s", m.Name, r.stdout)
		}
	}
}

// TestPlanValidate: plan --validate makes the calibration's runs at the
// smaller scales (two here) and the held-out runs at the largest, on both
// graphs, each design's runs on a graph one after the other, fits the
// calibration on the runs at the smaller scales alone, and checks the
// model against the two it has not seen: work, CPU and the highest rate of
// each design, all saved under --out/validation. Every run starts its
// database with the mariadbd option --set gives (here MariaDB's thread
// pool). --validate-repeat 2 makes each held-out run twice, one right
// after the other, and the check sets the prediction against both.
func TestPlanValidate(t *testing.T) {
	dir, r := runValidate(t, "--validate-scales", "0.005,0.0075,0.01", "--validate-duration", "100ms",
		"--validate-repeat", "2", "--models", "push", "--set", "thread_handling=pool-of-threads")
	for _, run := range []string{"rate-100", "uniform-50/push", "powerlaw-50/push", "uniform-75/push", "powerlaw-75/push", "uniform-100/push", "powerlaw-100/push",
		"uniform-100-repeat-2/push", "powerlaw-100-repeat-2/push"} {
		got, _ := filepath.Glob(filepath.Join(dir, "runs", run, "*", results.JSONFile))
		if len(got) != 1 {
			t.Errorf("runs/%s: %d saved runs, want 1", run, len(got))
			continue
		}
		// Every run's database had the option --set gave.
		saved, err := results.Load(filepath.Dir(got[0]))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(saved.Command, "--set=[thread_handling=pool-of-threads]") {
			t.Errorf("runs/%s: command %q: want the --set it was given", run, saved.Command)
		}
	}
	cal, err := results.LoadCalibration(filepath.Join(dir, "calibration"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Sources) != 5 || !strings.Contains(cal.Sources[0], "rate-100") || !strings.Contains(cal.Sources[1], "uniform-50") ||
		!strings.Contains(cal.Sources[2], "uniform-75") || !strings.Contains(cal.Sources[3], "powerlaw-50") ||
		!strings.Contains(cal.Sources[4], "powerlaw-75") || cal.Fit.Phases < 16 || cal.Factors["push"].Phases < 8 {
		t.Errorf("the calibration was not fitted on the five runs at 50 and 75 users: %v, %d phases, push's factors %+v", cal.Sources, cal.Fit.Phases, cal.Factors["push"])
	}
	c, err := results.LoadPlanCheck(filepath.Join(dir, "check"))
	if err != nil {
		t.Fatal(err)
	}
	phases := map[string]int{}
	for _, row := range c.Rows {
		if row.Model != "push" || !(row.MeasuredCPUUs > 0) || !(row.PredictedCPUUs > 0) || !(row.Predicted.Items() > 0) {
			t.Errorf("check row %+v: want push's, measured and predicted", row)
		}
		phases[row.Run]++
	}
	if len(phases) != 2 || phases["uniform, 100 users"] != 8 || phases["powerlaw, 100 users"] != 8 {
		t.Errorf("checked phases by run %v, want push's four in each of the two runs at 100 users", phases)
	}
	if len(c.Rates) != 4 {
		t.Errorf("%d rates checked, want push's in both runs on both graphs", len(c.Rates))
	}
	if reps := c.RepeatedRates(); len(reps) != 2 || len(reps[0].MeasuredPerSec) != 2 || len(reps[1].MeasuredPerSec) != 2 {
		t.Errorf("repeated rates %+v: want push's two runs on each graph", reps)
	}
	for _, rate := range c.Rates {
		if !(rate.MeasuredPerSec > 0) || !(rate.PredictedPerSec > 0) {
			t.Errorf("rate row %+v: want measured and predicted", rate)
		}
	}
	if !strings.Contains(r.stderr, "validation run 9 of 9: pushpull bench") {
		t.Errorf("no progress on stderr: %q", r.stderr)
	}
	// A design's held-out run follows its runs at the smaller scales on
	// the same graph.
	inOrder(t, r.stderr, "validation run 1 of 9: pushpull recommend --scale 0.005",
		"validation run 2 of 9: pushpull bench", "--scale 0.005 --graph uniform --models push",
		"validation run 3 of 9: pushpull bench", "--scale 0.0075 --graph uniform --models push",
		"validation run 4 of 9: pushpull bench", "--scale 0.01 --graph uniform --models push",
		"validation run 5 of 9: pushpull bench", "--scale 0.01 --graph uniform --models push",
		"validation run 6 of 9: pushpull bench", "--scale 0.005 --graph powerlaw --models push",
		"validation run 7 of 9: pushpull bench", "--scale 0.0075 --graph powerlaw --models push",
		"validation run 8 of 9: pushpull bench", "--scale 0.01 --graph powerlaw --models push",
		"validation run 9 of 9: pushpull bench", "--scale 0.01 --graph powerlaw --models push")
	for _, src := range cal.Sources {
		if strings.Contains(src, "-100") && !strings.Contains(src, "rate-100") {
			t.Errorf("the calibration was fitted on a held-out run: %s", src)
		}
	}
}
