package results

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestRecommendationCPU: a candidate's CPU per operation, when measured,
// is a column of the table with its unit and a note that the verdict does
// not rank by it; a table where none was measured has neither; a saved
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
	if col < 0 || !strings.Contains(out, "not ranked by") {
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
}
