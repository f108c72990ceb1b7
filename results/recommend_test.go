package results

import (
	"bytes"
	"encoding/csv"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestRecommendationCPU: a candidate's CPU per operation, when measured,
// is a column of the table with its unit and a note that says what it is;
// a table where none was measured has neither; a run cost, when known, is
// a column with its cores, and the note says the verdict ranks by it; a saved
// recommendation keeps the figure, and a figure that is not finite is
// saved as 0 rather than failing the save.
func TestRecommendationCPU(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	r := &Recommendation{
		Workload: Workload{Users: 100, Messages: 1000, Graph: "uniform", Activity: "uniform", Mix: "newest=100", ReadShare: 1, RatePerSec: 500, SLOMs: 50},
		Candidates: []Candidate{
			{Model: "a", Held: true, Ops: 100, P99Ms: 3, AchievedPerSec: 500, Costed: true, RowsReadPerOp: 40, MemcachedGetsPerOp: f(2), CPUPerOpUs: f(87.5)},
			{Model: "b", Held: true, Ops: 100, P99Ms: 4, AchievedPerSec: 500, Costed: true, RowsReadPerOp: 50, MemcachedSetsPerOp: f(math.Inf(1))},
		},
		Verdict: Verdict{Best: "a", Reason: "a: the lowest cost"},
	}
	var b bytes.Buffer
	if err := WriteRecommendation(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	head := line(t, out, "model")
	col := -1
	for i, c := range cells(head) {
		if c == "CPU/op, all" {
			col = i
		}
	}
	if col < 0 || !strings.Contains(out, "CPU/op, all is") || strings.Contains(out, "cost to run") {
		t.Fatalf("no CPU column or note:\n%s", out)
	}
	if c := cells(line(t, out, "a ◀")); len(c) <= col || c[col] != "87.5 µs" {
		t.Errorf("a's row %q: want 87.5 µs in column %d", c, col)
	}
	if c := cells(line(t, out, "b ")); len(c) <= col || c[col] != Dash {
		t.Errorf("b's row %q: want %s in column %d", c, Dash, col)
	}

	dir := t.TempDir()
	if err := SaveRecommendation(dir, r); err != nil {
		t.Fatal(err)
	}
	back, err := LoadRecommendation(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := back.Candidates; c[0].CPUPerOpUs == nil || *c[0].CPUPerOpUs != 87.5 || c[1].CPUPerOpUs != nil ||
		c[1].MemcachedSetsPerOp == nil || *c[1].MemcachedSetsPerOp != 0 {
		t.Errorf("loaded candidates %+v %+v", c[0], c[1])
	}

	for i := range r.Candidates {
		r.Candidates[i].CPUPerOpUs = nil
	}
	b.Reset()
	if err := WriteRecommendation(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "CPU/op") {
		t.Errorf("a CPU column with nothing in it:\n%s", b.String())
	}

	cost := 3.5
	r.Candidates[0].RunCost, r.Candidates[0].Resources = &cost, &Resources{DBCores: 2, AppCores: 1}
	b.Reset()
	if err := WriteRecommendation(&b, r); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	if !strings.Contains(out, "cost to run, which the verdict ranks by") {
		t.Errorf("no note on the run cost:\n%s", out)
	}
	if c := cells(line(t, out, "a ◀")); c[len(c)-2] != "3.00" || c[len(c)-1] != "3.50" {
		t.Errorf("a's row %q: want 3 cores and a cost of 3.5 last", c)
	}
	if c := cells(line(t, out, "b ")); c[len(c)-1] != Dash {
		t.Errorf("b's row %q: want no cost", c)
	}
}

// TestDecisionMapCSVCosts: a candidate's row in decision-map.csv carries
// what the verdict ranked by (rows and memcached keys, and their sum) and
// the CPU figure, empty where not measured.
func TestDecisionMapCSVCosts(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	m := &DecisionMap{Cells: []DecisionCell{{Skew: "uniform", ReadShare: 0.9, Candidates: []Candidate{
		{Model: "a", Held: true, Costed: true, RowsReadPerOp: 1, RowsWrittenPerOp: 0.5, MemcachedGetsPerOp: f(8), MemcachedSetsPerOp: f(1.5), CPUPerOpUs: f(420)},
		{Model: "b", Held: true, Costed: true, RowsReadPerOp: 40, RowsWrittenPerOp: 5},
	}, Verdict: Verdict{Best: "a"}}}}
	var b bytes.Buffer
	if err := WriteDecisionMapCSV(&b, m); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records: %v", len(recs), err)
	}
	col := func(rec []string, name string) string {
		i := slices.Index(DecisionMapCSVHeader, name)
		if i < 0 || len(rec) != len(DecisionMapCSVHeader) {
			t.Fatalf("column %s in %q", name, rec)
		}
		return rec[i]
	}
	for _, c := range []struct {
		rec                   []string
		gets, sets, cost, cpu string
	}{
		{recs[1], "8", "1.5", "11", "420"},
		{recs[2], "", "", "45", ""},
	} {
		if g, s, total, cpu := col(c.rec, "mc_gets_per_op"), col(c.rec, "mc_sets_per_op"), col(c.rec, "cost_per_op"), col(c.rec, "cpu_all_us_per_op"); g != c.gets || s != c.sets || total != c.cost || cpu != c.cpu {
			t.Errorf("row %q: gets %q sets %q cost %q cpu %q, want %q %q %q %q", c.rec, g, s, total, cpu, c.gets, c.sets, c.cost, c.cpu)
		}
	}
}
