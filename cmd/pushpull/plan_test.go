package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/results"
)

// TestPlanBadInput: a plan that cannot be made is a usage error (exit 2)
// before anything is computed, and saves nothing.
func TestPlanBadInput(t *testing.T) {
	out := t.TempDir()
	rates := []string{"--newest-per-sec", "100"}
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
		{[]string{"--check", "/no/such/run"}, "no/such/run"},
		{[]string{"--calibrate-from", "/no/such/run"}, "no/such/run"},
		{[]string{"--calibrate", "--check", "x"}, "one at a time"},
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
