package recommend

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	schema "github.com/pushpull/pushpull/sql"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{}) }

// mariaDBCandidates are a push and a pull candidate that need nothing but
// MariaDB, from the registry.
func mariaDBCandidates(t *testing.T) []string {
	var push, pull string
	for _, name := range Candidates() {
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
		t.Fatalf("no push (%q) or pull (%q) candidate on MariaDB alone", push, pull)
	}
	return []string{push, pull}
}

// checkVerdict checks a verdict against its own evidence: the best held
// the objective, and no candidate that held costs less beyond the tie
// band; with no best, none held and the closest was measured.
func checkVerdict(t *testing.T, where string, cands []results.Candidate, v results.Verdict) {
	t.Helper()
	if v.Best == "" {
		for _, c := range cands {
			if c.Held {
				t.Errorf("%s: no best, but %s held", where, c.Model)
			}
		}
		return
	}
	var best *results.Candidate
	for i := range cands {
		if cands[i].Model == v.Best {
			best = &cands[i]
		}
	}
	if best == nil || !best.Held || !best.Costed {
		t.Fatalf("%s: best %q: %+v", where, v.Best, best)
	}
	// The rule ranks by the run cost when every candidate that held has
	// one, else by items.
	key := results.Candidate.Cost
	for _, c := range cands {
		if c.Held && c.RunCost == nil {
			key = results.Candidate.CostPerOp
		}
	}
	for _, c := range cands {
		if c.Held && !math.IsNaN(key(c)) && key(c)*(1+TieShare) < key(*best) {
			t.Errorf("%s: %s won at a cost of %.2f, but %s held at %.2f", where, best.Model, key(*best), c.Model, key(c))
		}
	}
}

// TestRunMapSmall draws a two-by-two decision map on the test server: each
// cell measured every candidate in an open loop at the planned rate, with
// the cost counters; each verdict follows from its cell's evidence; a
// write-heavy cell makes push write more rows per operation than a
// read-heavy one; the saved files load back.
func TestRunMapSmall(t *testing.T) {
	models := mariaDBCandidates(t)
	spec, err := dataset.PaperSpec().Scaled(0.005) // 50 users, 5,000 messages
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	cfg := MapConfig{
		Bench: loadgen.BenchConfig{DSN: testserver.DSN(t), Force: true, Spec: spec, Scale: 0.005, Models: models,
			Duration: 700 * time.Millisecond, Warmup: 100 * time.Millisecond, Concurrency: 2, Rate: 150, SLO: time.Second},
		ReadShares: []float64{0.5, 0.95},
		Skews:      []Skew{{Graph: dataset.GraphUniform}, {Graph: dataset.GraphPowerLaw, InExponent: 2.1}},
		Progress:   &progress,
	}
	m, err := RunMap(t.Context(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(m.Cells) != 4 {
		t.Fatalf("%d cells", len(m.Cells))
	}
	for _, c := range m.Cells {
		where := c.Skew + "/" + strings.TrimRight(strings.TrimRight(fmtFloat(c.ReadShare), "0"), ".")
		if len(c.Candidates) != len(models) {
			t.Fatalf("%s: candidates %+v", where, c.Candidates)
		}
		if math.Abs(c.Workload.ReadShare-c.ReadShare) > 1e-3 {
			t.Errorf("%s: the traffic had %v reads", where, c.Workload.ReadShare)
		}
		if c.Skew != "uniform" && !strings.HasPrefix(c.Workload.Graph, "powerlaw(in=2.1") {
			t.Errorf("%s: graph %q", where, c.Workload.Graph)
		}
		for _, cand := range c.Candidates {
			if cand.Ops == 0 || !cand.Costed || cand.OfferedPerSec <= 0 || cand.DataBytes <= 0 {
				t.Errorf("%s: %s not measured in full: %+v", where, cand.Model, cand)
			}
		}
		checkVerdict(t, where, c.Candidates, c.Verdict)
	}
	// Push fans each post out to the author's followers: half the
	// traffic posting and following writes more rows per operation
	// than a twentieth.
	push := models[0]
	written := func(share float64) float64 {
		for _, cand := range m.Cell("uniform", share).Candidates {
			if cand.Model == push {
				return cand.RowsWrittenPerOp
			}
		}
		return math.NaN()
	}
	if lo, hi := written(0.95), written(0.5); !(hi > 2*lo) {
		t.Errorf("%s rows written per op: %v at 95%% reads, %v at 50%%", push, lo, hi)
	}

	dir := t.TempDir()
	if err := results.SaveDecisionMap(dir, m); err != nil {
		t.Fatal(err)
	}
	for _, f := range results.DecisionMapFiles {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() < 200 {
			t.Errorf("%s: %v", f, err)
		}
	}
	back, err := results.LoadDecisionMap(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Cells) != 4 || back.Cell("powerlaw:2.1", 0.95) == nil || back.Cell("powerlaw:2.1", 0.95).Verdict.Reason != m.Cell("powerlaw:2.1", 0.95).Verdict.Reason {
		t.Errorf("loaded back: %+v", back)
	}
	csv, _ := os.ReadFile(filepath.Join(dir, results.DecisionMapCSVFile))
	if got := strings.Count(string(csv), "\n"); got != 1+4*len(models) {
		t.Errorf("decision-map.csv has %d lines:\n%s", got, csv)
	}
}
