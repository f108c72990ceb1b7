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
