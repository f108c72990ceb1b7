package plan

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/recommend"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/results"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Memcached: true, Redis: true}) }

// TestCostModelsAgainstCountedRuns runs every candidate design on the
// test servers at a small scale, its cost counters on, and sets each
// design's cost model against what the servers counted, phase by phase
// (newest pages, older pages, posts, and the default mix): most of the
// counted phases must match within 10%, across at least half the designs.
// Each design's best phase is logged with the table. The run makes every
// user active (the option active_reads), as the cost models' steady state
// has it; what the phases of a short run just after a bulk load do
// otherwise (rebuilds of state the load left cold or a cache lost, first
// posts that create state rows) the models leave out, and docs/plan.md
// lists. A shared machine makes some phases fall back or go uncounted,
// which is why the check is on the share, not on every design.
func TestCostModelsAgainstCountedRuns(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.01) // 100 users, 10,000 messages
	if err != nil {
		t.Fatal(err)
	}
	mix := workload.DefaultMix()
	cfg := loadgen.BenchConfig{
		DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Force: true,
		Spec: spec, Scale: 0.01, Models: recommend.Candidates(), Mix: &mix, Ops: 200, Concurrency: 4,
		Options: map[string]string{"active_reads": "1000000"},
	}
	var progress bytes.Buffer
	cfg.Progress = &progress
	if testing.Verbose() {
		cfg.Progress = io.MultiWriter(&progress, os.Stderr)
	}
	_, c, _ := runAndCheck(t, cfg, &progress)
	best := map[string]float64{}
	within := 0
	for _, r := range c.Rows {
		e := math.Abs(r.ItemsErrorPct())
		if b, ok := best[r.Model]; !ok || e < b {
			best[r.Model] = e
		}
		if e <= 10 {
			within++
		}
	}
	counted := 0
	for _, name := range cfg.Models {
		if b, ok := best[name]; ok {
			counted++
			t.Logf("%s: best phase within %.0f%%", name, b)
		} else {
			t.Logf("%s: no phase counted", name)
		}
	}
	if 2*counted < len(cfg.Models) {
		t.Errorf("%d of %d designs had a phase counted", counted, len(cfg.Models))
	}
	if share := float64(within) / float64(len(c.Rows)); share < 0.6 {
		t.Errorf("%d of %d phases within 10%%: want at least 60%%", within, len(c.Rows))
	}
}

// TestCheckReadsRateSearches: a run that searched three designs' highest
// rates within the objective (bench --find-rate: its traffic only, short
// steps) at 100 users on the test servers is read by Check: each design
// gets a rate row holding the rate its search found and the lowest rate a
// step failed above it, beside a prediction above 0 and under its ceiling
// on the run's CPUs; the table prints every row and the summary, and the
// saved plot has the rates' panel beside the other two.
func TestCheckReadsRateSearches(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.01)
	if err != nil {
		t.Fatal(err)
	}
	mix := workload.DefaultMix()
	models := []string{"push", "pull-active", "hybrid-memcached"}
	var progress bytes.Buffer
	cfg := loadgen.BenchConfig{
		DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Force: true,
		Spec: spec, Scale: 0.01, Models: models, Mix: &mix, TrafficOnly: true, Concurrency: 4,
		Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond,
		FindRate: true, SLO: 50 * time.Millisecond, StepDuration: 300 * time.Millisecond, SearchSteps: 3,
		Progress: &progress,
	}
	run, c, table := runAndCheck(t, cfg, &progress)
	if len(c.Rates) != len(models) {
		t.Fatalf("%d rate rows for %d designs that searched", len(c.Rates), len(models))
	}
	for _, r := range c.Rates {
		s := run.Model(r.Model).Traffic.Search
		failed := 0.0
		for _, st := range s.Steps {
			if !st.Held && st.RatePerSec > s.BestPerSec && (failed == 0 || st.RatePerSec < failed) {
				failed = st.RatePerSec
			}
		}
		if r.MeasuredPerSec != s.BestPerSec || r.FailedPerSec != failed || r.SLOMs != 50 || r.Cores != float64(run.Environment.CPUs) {
			t.Errorf("%s: %+v; the search found %.0f ops/s, the lowest failed above it %.0f, on %d CPUs", r.Model, r, s.BestPerSec, failed, run.Environment.CPUs)
		}
		if !(r.PredictedPerSec > 0 && r.PredictedPerSec < r.CeilingPerSec && r.PredictedCPUUs > 0) {
			t.Errorf("%s: predicted %+v", r.Model, r)
		}
		if !strings.Contains(table, r.Model+"  50.0 ms") {
			t.Errorf("the table lacks %s's rate", r.Model)
		}
	}
	n, _ := c.RateSummary()
	if n != len(models) || !strings.Contains(table, fmt.Sprintf("%d of %d designs predicted within 30%%", func() int { _, w := c.RateSummary(); return w }(), n)) {
		t.Errorf("summary of %d rows; table:\n%s", n, table)
	}
	dir := t.TempDir()
	if err := results.SavePlanCheck(dir, c); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, results.PlanCheckPNGFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.DecodeConfig(f)
	if err != nil || img.Width <= img.Height*3 {
		t.Errorf("plot %dx%d (%v): want three panels side by side", img.Width, img.Height, err)
	}
}

// runAndCheck runs cfg's benchmark and checks the run against the
// built-in calibration: the run, the check and its table, which it logs;
// progress is what cfg writes its progress to, shown if the run fails.
func runAndCheck(t *testing.T, cfg loadgen.BenchConfig, progress *bytes.Buffer) (*results.Result, *results.PlanCheck, string) {
	t.Helper()
	run, err := loadgen.RunBench(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	c, err := Check([]*results.Result{run}, []string{"test"}, DefaultCalibration(), "test")
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := results.WritePlanCheck(&table, c); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	return run, c, table.String()
}

// TestCachedTrafficAgainstCountedRun runs the default mix of three
// +memcache designs on the test servers, each on a cache that starts
// empty with no warm-up, as their traffic phases do, and sets the model's
// items per operation (rows and keys) against what the servers counted:
// each within 10 %. The cache's first reads, its misses after posts and
// its keys then follow from the counts of the phase (reads per user,
// posts per read), not from how fast the machine ran them.
func TestCachedTrafficAgainstCountedRun(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.02) // 200 users, 20,000 messages
	if err != nil {
		t.Fatal(err)
	}
	mix := workload.DefaultMix()
	models := []string{"push+memcache", "pull-sp+memcache", "pull-client+memcache"}
	var progress bytes.Buffer
	cfg := loadgen.BenchConfig{
		DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Force: true,
		Spec: spec, Scale: 0.02, Models: models, Mix: &mix, TrafficOnly: true, Ops: 1500, Concurrency: 4,
		Progress: &progress,
	}
	_, c, _ := runAndCheck(t, cfg, &progress)
	checked := 0
	for _, r := range c.Rows {
		if r.Phase != "traffic" {
			continue
		}
		checked++
		if e := r.ItemsErrorPct(); math.Abs(e) > 10 {
			t.Errorf("%s: items per operation %+.0f%% off the count (rows read %.1f / %.1f, keys %.2f / %.2f)",
				r.Model, e, r.Measured.RowsRead, r.Predicted.RowsRead, r.Measured.MCKeys, r.Predicted.MCKeys)
		}
	}
	if checked != len(models) {
		t.Errorf("%d traffic phases checked of %d designs", checked, len(models))
	}
}
