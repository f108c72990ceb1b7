package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen/recommend"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	schema "github.com/pushpull/pushpull/sql"
)

// TestRecommendBadInput: a recommendation that cannot run is a usage
// error (exit 2) before anything runs, and saves nothing.
func TestRecommendBadInput(t *testing.T) {
	out := t.TempDir()
	models := recommendModels(t)
	var vitess, memory string
	for _, m := range registry.Listed() {
		if m.OnVitess() && vitess == "" {
			vitess = m.Name
		}
		if !m.Persistent() && memory == "" {
			memory = m.Name
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "0"}, "rate"},
		{[]string{"--rate", "-5"}, "rate"},
		{[]string{"--slo", "0s"}, "--slo"},
		{[]string{"--read-share", "1.5"}, "read-share"},
		{[]string{"--read-share", "0.9", "--mix", "default"}, "leave out --mix"},
		{[]string{"--mix", "newest=1,bogus=2"}, "--mix"},
		{[]string{"--models", "nope"}, "nope"},
		{[]string{"--models", vitess}, "Vitess"},
		{[]string{"--models", memory}, "process memory"},
		{[]string{"--users", "1"}, "--users"},
		{[]string{"--users", "100", "--scale", "0.1"}, "leave out --scale"},
		{[]string{"--find-rate"}, "does not apply"},
		{[]string{"--extra-duration", "1s"}, "does not apply"},
		{[]string{"--graph", "edges:/no/such/file"}, "--graph"},
		{[]string{"--skews", "uniform"}, "goes with --map"},
		{[]string{"--map", "--graph", "powerlaw"}, "does not go with --map"},
		{[]string{"--map", "--read-share", "0.9"}, "does not go with --map"},
		{[]string{"--map", "--skews", "zipf"}, "skew"},
		{[]string{"--map", "--skews", "powerlaw:0.5"}, "exponent"},
		{[]string{"--map", "--read-shares", "0.5,1"}, "between 0 and 1"},
		{[]string{"--map", "--read-shares", "0.5,0.5"}, "given twice"},
		{[]string{"--fresh", "-1s"}, "--fresh"},
		{[]string{"--completeness", "1.5"}, "--completeness"},
		{[]string{"--completeness", "NaN"}, "--completeness"},
		{[]string{"--fresh", "1s", "--probe-every", "0"}, "--probe-every"},
		{[]string{"--map", "--fresh", "1s"}, "do not go with --map"},
		{[]string{"--mix", "newest=9,delete=1"}, "delete without post"},
	} {
		args := []string{"recommend", "--out", out, "--dsn", "nobody@tcp(127.0.0.1:1)/"}
		if !slices.Contains(c.args, "--models") {
			// Models that need no memcached, which --dsn would ask for.
			args = append(args, "--models", models)
		}
		args = append(args, c.args...)
		r := run(t, nil, args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("a refused recommendation saved %d entries", len(entries))
	}
}

// recommendModels are a push and a pull candidate that need only MariaDB
// (this package's test server has no memcached), from the registry.
func recommendModels(t *testing.T) string {
	var push, pull string
	for _, name := range recommend.Candidates() {
		m, _ := registry.Lookup(name)
		switch {
		case m.Needs != registry.MariaDB:
		case push == "" && m.Schema == schema.Push:
			push = name
		case pull == "" && m.Schema == schema.Pull:
			pull = name
		}
	}
	if push == "" || pull == "" {
		t.Fatalf("no push (%q) or pull (%q) candidate", push, pull)
	}
	return push + "," + pull
}

// TestRecommendSmall runs the command on a tiny dataset: with an
// objective every model can hold it names the cheapest, and with one none
// can it says so and names the closest; the files are written and load
// back.
func TestRecommendSmall(t *testing.T) {
	models := recommendModels(t)
	for _, c := range []struct {
		slo  string
		want string
	}{
		{"2s", "the lowest cost that holds p99 ≤ 2000 ms at 150 ops/s"},
		{"1us", "no design holds p99 ≤ 0.001 ms at 150 ops/s; closest: "},
	} {
		out := t.TempDir()
		r := run(t, nil, "recommend", "--dsn", testserver.DSN(t), "--force", "--models", models, "--scale", "0.005",
			"--duration", "700ms", "--warmup", "100ms", "--concurrency", "2", "--rate", "150", "--slo", c.slo, "--out", out)
		if r.code != 0 {
			t.Fatalf("slo %s: %v", c.slo, r)
		}
		for _, want := range append(strings.Split(models, ","), "verdict: ", c.want, "rows read/op", "held SLO") {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("slo %s: stdout lacks %q:\n%s", c.slo, want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "CPU/op") {
			t.Errorf("slo %s: a CPU column for a server given by --dsn:\n%s", c.slo, r.stdout)
		}
		if !strings.Contains(r.stderr, "/traffic (open loop") || !strings.Contains(r.stderr, "saved ") {
			t.Errorf("slo %s: progress:\n%s", c.slo, r.stderr)
		}
		dirs, _ := filepath.Glob(filepath.Join(out, "*"))
		if len(dirs) != 1 {
			t.Fatalf("saved %v", dirs)
		}
		for _, f := range []string{results.RecommendationJSONFile, results.RecommendationTableFile, results.JSONFile, results.CSVFile} {
			if fi, err := os.Stat(filepath.Join(dirs[0], f)); err != nil || fi.Size() < 100 {
				t.Errorf("slo %s: %s: %v", c.slo, f, err)
			}
		}
		rec, err := results.LoadRecommendation(dirs[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := results.Load(dirs[0]); err != nil {
			t.Errorf("the run: %v", err)
		}
		table, _ := os.ReadFile(filepath.Join(dirs[0], results.RecommendationTableFile))
		if !strings.Contains(r.stdout, string(table)) {
			t.Errorf("recommendation.txt is not the table printed:\n%s", table)
		}
		if rec.Workload.RatePerSec != 150 || rec.Workload.Users != 50 || len(rec.Candidates) != 2 || rec.Run == nil {
			t.Errorf("slo %s: loaded %+v", c.slo, rec.Workload)
		}
		var cheapest string
		low := 0.0
		for _, cand := range rec.Candidates {
			if cand.Ops == 0 || !cand.Costed {
				t.Errorf("slo %s: %s not measured: %+v", c.slo, cand.Model, cand)
			}
			if cand.Held && (cheapest == "" || cand.RowsPerOp() < low) {
				cheapest, low = cand.Model, cand.RowsPerOp()
			}
		}
		switch c.slo {
		case "1us":
			if rec.Verdict.Best != "" || rec.Verdict.Closest == "" || cheapest != "" {
				t.Errorf("an objective of 1µs: verdict %+v", rec.Verdict)
			}
		default:
			// The cheapest that held wins, unless another held
			// within the tie band.
			best := rec.Candidate(rec.Verdict.Best)
			if best == nil || !best.Held || best.RowsPerOp() > low*(1+recommend.TieShare) {
				t.Errorf("verdict %+v; cheapest that held: %s at %.1f rows/op", rec.Verdict, cheapest, low)
			}
		}
	}
}
