package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/results"
)

// TestSweepBadInput: a sweep that cannot run is a usage error (exit 2)
// before anything runs, and saves nothing.
func TestSweepBadInput(t *testing.T) {
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--values", "1,2"}, "--vary"},
		{[]string{"--vary", "followees"}, "--values"},
		{[]string{"--vary", "height", "--values", "1"}, "unknown parameter"},
		{[]string{"--vary", "followees", "--values", "10,5000"}, "at most 1999"},
		{[]string{"--vary", "scale", "--values", "0.1", "--scale", "0.5"}, "leave out --scale"},
		{[]string{"--vary", "read-share", "--values", "0.5,1.5"}, "between 0 and 1"},
		{[]string{"--vary", "followers", "--values", "10", "--models", "nope"}, "nope"},
		{[]string{"--vary", "option:treshold", "--values", "10", "--models", "hybrid"}, `unknown option "treshold" (valid: drowning, drowning_follows, threshold)`},
		{[]string{"--vary", "option:threshold", "--values", "10,0.5", "--models", "hybrid"}, `option threshold="0.5": want an integer`},
	} {
		args := append([]string{"sweep", "--out", out, "--dsn", "nobody@tcp(127.0.0.1:1)/"}, c.args...)
		r := run(t, nil, args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("a refused sweep saved %d entries", len(entries))
	}
}

// TestSweepSmall sweeps the followees per user on the test server and
// checks the table and the saved files.
func TestSweepSmall(t *testing.T) {
	out := t.TempDir()
	r := run(t, nil, "sweep", "--dsn", testserver.DSN(t), "--force", "--models", "push,pull-sp",
		"--vary", "followees", "--values", "5,50", "--scale", "0.01", "--ops", "30", "--warmup", "0s", "--out", out)
	// Thirty operations are too few to time the harness's no-op store
	// against push on a busy machine: a run may fail on that alone (exit
	// 1, files saved), and on nothing else.
	if r.code != 0 && (r.code != 1 || !strings.Contains(r.stderr, "a run of the sweep failed")) {
		t.Fatalf("sweep: %v", r)
	}
	for _, want := range []string{"newest page (timelines/s; rows read+written per page) against followees per user", "push", "pull-sp"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(dirs) != 1 {
		t.Fatalf("saved %v", dirs)
	}
	s, err := results.LoadSweep(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 2 || s.Points[1].Result.Dataset.AvgFollowees != 50 {
		t.Fatalf("points %+v", s.Points)
	}
	for _, p := range s.Points {
		for _, f := range p.Result.Failures {
			if !strings.Contains(f, "harness") {
				t.Errorf("followees %v: %s", p.Value, f)
			}
		}
	}
	// pull-sp reads a row per followee it probes: ten times the
	// followees, several times the rows.
	lo := s.Points[0].Result.Model("pull-sp").Retrieve.Cost[cost.RowsRead]
	hi := s.Points[1].Result.Model("pull-sp").Retrieve.Cost[cost.RowsRead]
	if !(hi > 3*lo) {
		t.Errorf("pull-sp rows read per page: %v at 5 followees, %v at 50", lo, hi)
	}
}

// TestSweepTableRateSearch: a sweep whose runs searched for the highest
// rate within the objective (--find-rate) shows it per value and model;
// one without searches shows no such section.
func TestSweepTableRateSearch(t *testing.T) {
	search := func(best float64) *results.Traffic {
		return &results.Traffic{Mix: "newest=99,post=1", Loop: results.LoopClosed,
			Total:  results.Phase{Ops: 100, Seconds: 1, OpsPerSec: 100},
			Search: &results.RateSearch{SLOMs: 20, BestPerSec: best, StepSeconds: 2, Steps: []results.RateStep{{RatePerSec: 4000, Held: best > 0}}}}
	}
	point := func(v float64, a, b *results.Traffic) results.SweepPoint {
		return results.SweepPoint{Value: v, Result: &results.Result{Models: []results.Model{
			{Name: "push", Traffic: a}, {Name: "pull-sp", Traffic: b}}}}
	}
	s := &results.Sweep{Param: "read-share", Label: "share of reads in the traffic", Points: []results.SweepPoint{
		point(0.9, search(4000), search(0)),
		point(0.99, search(5200), nil),
	}}
	var b strings.Builder
	writeSweepTable(&b, s)
	out := b.String()
	t.Log("\n" + out)
	head := "highest rate of the mixed traffic at p99 ≤ 20 ms (ops/s) against share of reads in the traffic"
	_, section, ok := strings.Cut(out, head)
	if !ok {
		t.Fatalf("no section %q", head)
	}
	for _, want := range []string{"0.9  4000/s  none held", "0.99  5200/s  –"} {
		if !strings.Contains(strings.Join(strings.Fields(section), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("section lacks %q:\n%s", want, section)
		}
	}
	s.Points[0].Result.Models[0].Traffic.Search = nil
	s.Points[0].Result.Models[1].Traffic = nil
	s.Points[1].Result.Models[0].Traffic = nil
	b.Reset()
	writeSweepTable(&b, s)
	if strings.Contains(b.String(), "highest rate") {
		t.Errorf("a sweep without searches shows one:\n%s", b.String())
	}
}
