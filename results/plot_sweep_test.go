package results

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// searchedSweep is a sweep of two points whose runs searched push's
// highest rate (withTraffic: 1,500/s held) and, at the second point,
// found none that held for pull-sp.
func searchedSweep() *Sweep {
	a, b := withTraffic(), withTraffic()
	b.Model("push").Traffic.Search.BestPerSec = 1000
	b.Model("pull-sp").Traffic.Search = &RateSearch{SLOMs: 50, StepSeconds: 2, Steps: []RateStep{{RatePerSec: 300, P99Ms: 700}}}
	return &Sweep{Version: SweepFormatVersion, Param: "read-share", Label: "share of reads in the traffic",
		Points: []SweepPoint{{Value: 0.9, Result: a}, {Value: 0.99, Result: b}}}
}

// TestSweepSearchPanel: with rate searches, the sweep's rate plot gains a
// panel of each model's highest rate within the objective, which has a
// point where a search held and none where it did not or did not run.
func TestSweepSearchPanel(t *testing.T) {
	s := searchedSweep()
	if got := s.SearchSLOMs(); got != 50 {
		t.Fatalf("SearchSLOMs = %v, want 50", got)
	}
	metric := func(file string) sweepMetric {
		for _, m := range sweepMetrics {
			if m.file == file {
				return m
			}
		}
		t.Fatalf("no metric %s", file)
		return sweepMetric{}
	}
	panels := sweepPanels(s, metric(SweepRatePNGFile))
	last := panels[len(panels)-1]
	if last.label != "highest rate at p99 ≤ 50.0 ms" || last.unit != "ops/s" {
		t.Fatalf("last rate panel %q (%s); panels %d", last.label, last.unit, len(panels))
	}
	for _, c := range []struct {
		point int
		model string
		want  float64
	}{{0, "push", 1500}, {1, "push", 1000}, {0, "pull-sp", math.NaN()}, {1, "pull-sp", math.NaN()}, {0, "pull-naive", math.NaN()}} {
		got := last.value(s.Points[c.point].Result.Model(c.model))
		if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("point %d %s: %v, want %v", c.point, c.model, got, c.want)
		}
	}
	// The other metrics, and a sweep without searches, have no such panel.
	for _, p := range sweepPanels(s, metric(SweepP99PNGFile)) {
		if p.label == last.label {
			t.Errorf("the p99 plot has the search panel")
		}
	}
	plain := &Sweep{Points: []SweepPoint{{Value: 1, Result: sample()}}}
	if n, m := len(sweepPanels(plain, metric(SweepRatePNGFile))), len(sweepPanels(plain, metric(SweepP99PNGFile))); n != m {
		t.Errorf("without searches: %d rate panels, %d p99 panels", n, m)
	}
	dir := t.TempDir()
	if err := SaveSweep(dir, s); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, SweepRatePNGFile)); err != nil || fi.Size() < 1000 {
		t.Errorf("%s: %v", SweepRatePNGFile, err)
	}
}
