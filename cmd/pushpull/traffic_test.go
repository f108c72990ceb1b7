package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/results"
)

// TestBenchTraffic runs the studies' flags end to end at a tiny scale on
// the test server: open-loop traffic, a short rate search and the costs,
// in the table, the cost table, result.json and rate.png.
func TestBenchTraffic(t *testing.T) {
	out := t.TempDir()
	r := run(t, nil, "bench", "--dsn", testserver.DSN(t), "--force", "--models", "push,pull-sp",
		"--scale", "0.002", "--duration", "300ms", "--warmup", "0s", "--out", out,
		"--mix", "newest=70,older=20,post=6,follow=2,unfollow=2", "--rate", "300", "--arrivals", "constant",
		"--find-rate", "--step", "200ms", "--search-steps", "2")
	if r.code != 0 {
		t.Fatalf("bench: %v", r)
	}
	for _, want := range []string{
		"production traffic, mix newest=70,older=20,post=6,follow=2,unfollow=2: open loop",
		"  late starts (p99 lateness)", "highest rate at p99 ≤ 50.0 ms",
		"cost per operation", "push, submit", "pull-sp, traffic",
		"H, one fan-out row", "L, one followee probed",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "from intended starts") || !strings.Contains(r.stderr, results.RatePNGFile) {
		t.Errorf("no open-loop progress or rate plot on stderr:\n%s", r.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*", results.RatePNGFile))
	if len(files) != 1 {
		t.Fatalf("rate plots %v", files)
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(files[0]), results.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Models []struct {
			Name    string
			Submit  struct{ Cost map[string]float64 }
			Traffic struct {
				Loop   string
				Ops    map[string]struct{ Ops, Errors int64 }
				Open   struct{ Arrivals string } `json:"open_loop"`
				Search struct {
					Best  float64 `json:"best_rate_per_sec"`
					Steps []any
				} `json:"rate_search"`
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range doc.Models {
		tr := m.Traffic
		if tr.Loop != results.LoopOpen || len(tr.Ops) != 5 || tr.Open.Arrivals != "constant" || len(tr.Search.Steps) == 0 {
			t.Errorf("%s: traffic %+v", m.Name, tr)
		}
		for _, key := range []string{"rows_read_per_op", "rows_written_per_op", "rows_inserted_per_op", "rows_deleted_per_op",
			"bytes_written_per_op", "cpu_us_per_op"} {
			if _, ok := m.Submit.Cost[key]; !ok {
				t.Errorf("%s: submission cost lacks %s: %v", m.Name, key, m.Submit.Cost)
			}
		}
		// A server given by --dsn may not run here: its CPU is not taken.
		if _, ok := m.Submit.Cost[cost.DBCPU]; ok {
			t.Errorf("%s: database server CPU measured on a server given by --dsn: %v", m.Name, m.Submit.Cost)
		}
	}
	// report re-renders the costs.
	if rep := run(t, nil, "report", "--cost", filepath.Dir(files[0])); rep.code != 0 || !strings.Contains(rep.stdout, "H, one fan-out row") {
		t.Errorf("report --cost: %v", rep)
	}
}

// TestBenchBadTrafficFlags: each bad study flag is a usage error that
// starts nothing and writes nothing.
func TestBenchBadTrafficFlags(t *testing.T) {
	out := t.TempDir()
	for _, args := range [][]string{
		{"--mix", "nonsense"}, {"--mix", "newest=-1"}, {"--mix", "newest=1,newest=2"}, {"--mix", "read=5"},
		{"--mix", "newest=0"}, {"--rate", "-5"}, {"--rate", "NaN"}, {"--rate", "Inf"}, {"--arrivals", "bursty"},
		{"--max-in-flight", "0"}, {"--slo", "0s"}, {"--step", "-1s"}, {"--search-steps", "0"}, {"--confirm", "-1"}, {"--confirm", "11"}, {"--max-steal", "0"}, {"--max-steal", "101"}, {"--max-steal", "NaN"},
		{"--mix", "newest=9,delete=1"}, {"--probe-every", "1s"}, {"--deletes", "-1"}, {"--deletes", "2000000"},
		{"--mix", "default", "--probe-every", "1us"}, {"--mix", "default", "--probe-followers", "0"},
		{"--mix", "default", "--visible-timeout", "0s"}, {"--mix", "default", "--probe-poll", "10s"},
	} {
		r := run(t, nil, append([]string{"bench", "--out", out}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, args[len(args)-2]) {
			t.Errorf("%q: exit %d, want 2 (usage) naming the flag\n%s", args, r.code, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("bad flags wrote %d entries", len(entries))
	}
}
