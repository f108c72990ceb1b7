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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/hostcpu"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/loadgen/recommend"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
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

// TestTransientsAgainstCountedRun runs push-active and push-capped at
// 100 users on the test servers with their default options, 300
// operations a phase: push-active's load leaves a third of the users
// inactive, whose first reads rebuild their mailboxes, and push-capped's
// leaves every mailbox at the cap, so that its first posts trim little.
// The check predicts every counted phase of both within 20 % on items
// from the run's history (registry.RunHistory): the rebuilds a phase's
// first reads make, the trims its posts add. (The model expects e^-1 of
// the users inactive, 37 of 100, and the load's coins drew 37 ± 5: the
// newest pages, whose items are mostly rebuilds, came within 9 to 16 %
// under the race detector on a loaded machine; without the run's history
// they were off by 90 %.) The entries push-active's newest pages rebuilt,
// by the store's own count, are within 20 % of the model's too.
func TestTransientsAgainstCountedRun(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.01)
	if err != nil {
		t.Fatal(err)
	}
	mix := workload.DefaultMix()
	var progress bytes.Buffer
	cfg := loadgen.BenchConfig{
		DSN: testserver.DSN(t), Force: true, Spec: spec, Scale: 0.01,
		Models: []string{"push-active", "push-capped"}, Mix: &mix, Ops: 300, Concurrency: 4, Progress: &progress,
	}
	run, c, _ := runAndCheck(t, cfg, &progress)
	if len(c.Rows) < 6 {
		t.Fatalf("%d phases counted, want the four of each design but for a few the shared machine lost", len(c.Rows))
	}
	for _, r := range c.Rows {
		if e := r.ItemsErrorPct(); math.Abs(e) > 20 {
			t.Errorf("%s %s: items off by %+.0f%%", r.Model, r.Phase, e)
		}
	}
	// The entries push-active's newest pages rebuilt, which a calibration
	// prices in place of the rebuilds' rows: the store's own count
	// against the model's for the run.
	phases, err := counted(run, 0)
	if err != nil {
		t.Fatal(err)
	}
	var model float64
	for _, p := range phases {
		if p.model == "push-active" && p.phase == "retrieve" {
			model = p.predicted.Rebuilt
		}
	}
	var store float64
	for _, m := range run.Models {
		if m.Name == "push-active" {
			store = m.Extra["newest_rebuild_rows_per_op"]
		}
	}
	t.Logf("push-active's newest pages: %.1f entries rebuilt a page counted, the model %.1f", store, model)
	if !(model > 0) || math.Abs(store-model) > 0.2*model {
		t.Errorf("push-active's newest pages rebuilt %.1f entries a page, the model says %.1f", store, model)
	}
}

// TestCheckReadsRateSearches: a run that searched three designs' highest
// rates within the objective (bench --find-rate: its traffic only, short
// steps) at 100 users on the test servers is read by Check: each design
// gets a rate row holding the rate its search found and the lowest rate a
// step failed above it, beside a prediction above 0 and under its ceiling
// on the run's CPUs; the table prints every row and the summary, and the
// saved plot has the rates' panel beside the other two. Every step
// records what an operation cost and each process's CPU a second over
// the step (the application's, and memcached's for the designs on it),
// and the run the processes' idle CPU.
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
	if i := run.Idle; i == nil || i.Seconds < loadgen.IdleInterval.Seconds() || i.AppUs < 0 || i.DBUs != 0 {
		t.Errorf("idle CPU %+v: want one measured over %v, without the database's (a server the run did not start)", i, loadgen.IdleInterval)
	}
	for _, name := range models {
		s := run.Model(name).Traffic.Search
		for i, st := range s.Steps {
			var ops int64
			for _, o := range st.Ops {
				ops += o.Ops + o.Errors
			}
			p := st.CPU
			if ops == 0 {
				// A step that ran no operation costs nothing per one.
				if st.Cost != nil || p != nil {
					t.Errorf("%s step %d ran no operation: cost %v, CPU a second %+v", name, i+1, st.Cost, p)
				}
				continue
			}
			if p == nil || st.Cost[cost.Ops] != float64(ops) || !(p.Seconds >= s.StepSeconds) || !(p.AppUs > 0) ||
				math.Abs(p.AppUs-st.Cost[cost.CPU]*float64(ops)/p.Seconds) > 1e-6*p.AppUs {
				t.Errorf("%s step %d (%d operations): cost %v, CPU a second %+v", name, i+1, ops, st.Cost, p)
				continue
			}
			if reg, _ := registry.Lookup(name); reg.Needs&registry.Memcached != 0 && !(p.MCUs > 0) {
				t.Errorf("%s step %d: memcached's CPU %.0f µs a second", name, i+1, p.MCUs)
			}
		}
	}
	// Each step's stolen CPU time is saved, and the check gives that of
	// the failure that bounded each rate, where the kernel counts it.
	if _, err := hostcpu.Read(); err == nil {
		bounded := 0
		for _, r := range c.Rates {
			for i, st := range run.Model(r.Model).Traffic.Search.Steps {
				if st.StealShare == nil || *st.StealShare < 0 || *st.StealShare > 1 {
					t.Errorf("%s step %d: steal %v", r.Model, i+1, st.StealShare)
				}
			}
			if r.FailedPerSec > 0 {
				bounded++
				if r.FailedSteal == nil {
					t.Errorf("%s: no steal for its failure at %.0f/s", r.Model, r.FailedPerSec)
				}
			}
		}
		if bounded > 0 && !strings.Contains(table, fmt.Sprintf("at the median of %d;", bounded)) {
			t.Errorf("the table does not sum up the steal of %d failures:\n%s", bounded, table)
		}
	}
	if results.StealNoted != openloop.DefaultMaxSteal {
		t.Errorf("the check counts steal above %v as disturbed, the search %v", results.StealNoted, openloop.DefaultMaxSteal)
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

// TestCheckUsesRecordedOptions: a counted run of hybrid at 100 users with
// --option threshold=44 (about half the authors have 44 followers or more:
// their posts reach no mailbox, and a page pulls them) records the
// option, with the defaults of hybrid's other options, and Check predicts
// its phases with it: the rows a post writes and a newest page reads
// within 10 % of the counted, where the same run checked as if it had
// recorded nothing (the default threshold, 1,000, above every author:
// every post fans out, no page pulls) misses both by more than 30 %.
//
// The run's graph is the paper's uniform one at 100 users, given as an
// edge file, so that Check predicts from the graph the run had rather
// than from the uniform graph's expected degrees. A threshold at the
// mean, 44, is where one graph of 100 users strays most from those: this
// one's authors at or above 44 followers are 51 of the 100 against 45
// expected (16 of them have exactly 44), and its posts below the threshold
// reach 19.1 followers against 21.6 expected, a tenth fewer rows written
// that the model of the graph does not owe. 600 posts: a post writes
// either no mailbox row or about 40, so the mean of 200 would stray by
// 7 % (one standard deviation) on its own.
func TestCheckUsesRecordedOptions(t *testing.T) {
	spec, err := ownGraph(t, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	cfg := loadgen.BenchConfig{
		DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Force: true,
		Spec: spec, Scale: 0.01, Models: []string{"hybrid"}, Ops: 600, Concurrency: 4,
		Options: map[string]string{"threshold": "44"}, Progress: &progress,
	}
	run, c, _ := runAndCheck(t, cfg, &progress)
	reg, err := registry.Lookup("hybrid")
	if err != nil {
		t.Fatal(err)
	}
	got := run.Model("hybrid").Options
	if got["threshold"] != "44" || len(got) != len(reg.Options) {
		t.Fatalf("recorded options %v; want threshold=44 and every one of hybrid's %d options", got, len(reg.Options))
	}
	for _, o := range reg.Options {
		if o.Name != "threshold" && got[o.Name] != o.Default {
			t.Errorf("recorded %s=%q; want its default %q", o.Name, got[o.Name], o.Default)
		}
	}
	bare := *run
	bare.Models = slices.Clone(run.Models)
	bare.Models[0].Options = nil
	d, err := Check([]*results.Result{&bare}, []string{"test"}, DefaultCalibration(), "test")
	if err != nil {
		t.Fatal(err)
	}
	row := func(c *results.PlanCheck, phase string) results.PlanCheckRow {
		for _, r := range c.Rows {
			if r.Phase == phase {
				return r
			}
		}
		t.Fatalf("no %s row in %+v", phase, c.Rows)
		return results.PlanCheckRow{}
	}
	for _, x := range []struct {
		phase, what string
		of          func(results.PlanWork) float64
	}{
		{"submit", "rows written", func(w results.PlanWork) float64 { return w.RowsWritten }},
		{"retrieve", "rows read", func(w results.PlanWork) float64 { return w.RowsRead }},
	} {
		with, without := row(c, x.phase), row(d, x.phase)
		if with.Measured != without.Measured {
			t.Fatalf("%s: the same run counted %+v and %+v", x.phase, with.Measured, without.Measured)
		}
		m := x.of(with.Measured)
		errOf := func(r results.PlanCheckRow) float64 { return 100 * (x.of(r.Predicted)/m - 1) }
		if e := errOf(with); !(m > 0) || !(math.Abs(e) <= 10) {
			t.Errorf("%s with threshold=44: %s %.2f predicted, %.2f counted (%+.0f%%); want within 10%%", x.phase, x.what, x.of(with.Predicted), m, e)
		}
		if e := errOf(without); !(math.Abs(e) > 30) {
			t.Errorf("%s with the default threshold: %s %.2f predicted, %.2f counted (%+.0f%%); want a miss beyond 30%%", x.phase, x.what, x.of(without.Predicted), m, e)
		}
		t.Logf("%s: %s %.2f counted; predicted %.2f with the recorded threshold, %.2f with the default", x.phase, x.what, m, x.of(with.Predicted), x.of(without.Predicted))
	}
}

// ownGraph is the paper's dataset at scale with its graph written to an
// edge file, as bench --graph edges:FILE reads it: the same users,
// follows and messages, checked by Check against the graph itself.
func ownGraph(t *testing.T, scale float64) (dataset.Spec, error) {
	t.Helper()
	spec, err := dataset.PaperSpec().Scaled(scale)
	if err != nil {
		return spec, err
	}
	ds, err := dataset.Generate(spec)
	if err != nil {
		return spec, err
	}
	var b strings.Builder
	for u, fs := range ds.Followees {
		for _, f := range fs {
			fmt.Fprintf(&b, "%d %d\n", u+1, f)
		}
	}
	path := filepath.Join(t.TempDir(), "edges.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return spec, err
	}
	el, err := dataset.ReadEdgeList(path, dataset.SelfFollowsReject)
	if err != nil {
		return spec, err
	}
	if el.Users != spec.Users {
		return spec, fmt.Errorf("edge file of %d users from a graph of %d: a user follows no one and is followed by no one", el.Users, spec.Users)
	}
	own := el.Spec()
	own.Messages = spec.Messages
	own.Activity = dataset.Activity{Mode: dataset.ActivityUniform} // an edge file's default is skewed
	return own, nil
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

// powerLaw300 is the paper's dataset at 300 users on the power-law graph
// with skewed activity, as pushpull bench --graph powerlaw --scale 0.03
// makes it.
func powerLaw300(t *testing.T) dataset.Spec {
	t.Helper()
	base := dataset.PaperSpec()
	base.Graph, base.InExponent, base.OutExponent = dataset.GraphPowerLaw, dataset.DefaultInExponent, dataset.DefaultOutExponent
	base.Activity = dataset.Activity{Mode: dataset.ActivitySkewed, PostExponent: dataset.DefaultPostExponent, ReadExponent: dataset.DefaultReadExponent}
	spec, err := base.Scaled(0.03)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestHybridOnPowerLawAgainstCountedRun runs hybrid on a power-law graph
// of 300 users with skewed activity and a threshold of 30 followers, which
// a few celebrities pass: they post most of the messages, and their heads
// reach most of their followers' pages above the mailbox's floor. Its
// newest pages and posts must write rows, and match the model's rows read
// and written, summed as the plan's items are, within 10 % (a model
// without the rows a page writes is 24 % short; with the followee classes
// drawn as the generator draws them the newest page's rows written are
// 14 % short and its rows read 2 % over): a page reads each celebrity from its head down to the
// merge's floor and updates the merged ids in the window count's scratch
// table (rows written on a read), and a post counts its author's
// followers only up to the threshold.
func TestHybridOnPowerLawAgainstCountedRun(t *testing.T) {
	spec := powerLaw300(t)
	var progress bytes.Buffer
	cfg := loadgen.BenchConfig{
		DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Force: true,
		Spec: spec, Scale: 0.03, Models: []string{"hybrid"}, Ops: 400, Concurrency: 4,
		Options: map[string]string{"threshold": "30"}, Progress: &progress,
	}
	_, c, _ := runAndCheck(t, cfg, &progress)
	checked := 0
	for _, r := range c.Rows {
		if r.Phase != "retrieve" && r.Phase != "submit" {
			continue
		}
		checked++
		counted, predicted := r.Measured.RowsRead+r.Measured.RowsWritten, r.Predicted.RowsRead+r.Predicted.RowsWritten
		if !(r.Measured.RowsWritten > 0) || math.Abs(predicted/counted-1) > 0.1 {
			t.Errorf("%s: rows read %.2f and written %.2f predicted, %.2f and %.2f counted; want their sum within 10%%",
				r.Phase, r.Predicted.RowsRead, r.Predicted.RowsWritten, r.Measured.RowsRead, r.Measured.RowsWritten)
		}
	}
	if checked != 2 {
		t.Errorf("%d of the newest-page and post phases checked", checked)
	}
}

// TestFollowTrafficAgainstCountedRun runs push-redis's default mix on the
// test servers, 6,000 operations at 200 users after the warm reads, and
// sets the model's items per operation against what the servers counted:
// within 10 %. Its follows and unfollows are a fiftieth of the mix and,
// charged every one of the followee's ids, were a fifth of its Redis
// commands; a follow adds to the follower's feed only the followee's ids
// above the feed's floor, an unfollow none at all (push/redis's
// TestFollowCommandsMatchWork counts them one by one). Counted 8.30
// commands an operation, 7.79 predicted (9.49 before). hybrid-memcached's
// mix is left out: its pages that find the index being patched by another
// read of the same user read every followee's list instead, cold in a
// design that reads its index, at a rate that follows the operations'
// latencies, not their counts (docs/plan.md).
func TestFollowTrafficAgainstCountedRun(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.02) // 200 users, 20,000 messages
	if err != nil {
		t.Fatal(err)
	}
	mix := workload.DefaultMix()
	var progress bytes.Buffer
	cfg := loadgen.BenchConfig{
		DSN: testserver.DSN(t), Redis: testserver.Redis(t), Force: true,
		Spec: spec, Scale: 0.02, Models: []string{"push-redis"}, Mix: &mix, TrafficOnly: true, Ops: 6000, Concurrency: 4,
		Progress: &progress,
	}
	// A run whose mix rebuilt feeds (far more rows written than a post's
	// and a follow's one: on a loaded machine, Redis calls that time out
	// make the store drop feeds) did not measure the steady mix; it is
	// made once more.
	for attempt := 1; ; attempt++ {
		progress.Reset()
		_, c, _ := runAndCheck(t, cfg, &progress)
		var rows []results.PlanCheckRow
		for _, r := range c.Rows {
			if r.Phase == "traffic" {
				rows = append(rows, r)
			}
		}
		if len(rows) != 1 {
			t.Fatalf("%d traffic phases checked, want push-redis's", len(rows))
		}
		r := rows[0]
		if r.Measured.RowsWritten > 1 && attempt < 2 {
			t.Logf("the mix rebuilt feeds (%.2f rows written an operation): once more", r.Measured.RowsWritten)
			continue
		}
		if e := r.ItemsErrorPct(); math.Abs(e) > 10 {
			t.Errorf("%s: items per operation %+.0f%% off the count (rows read %.2f / %.2f, written %.2f / %.2f, commands %.2f / %.2f)",
				r.Model, e, r.Measured.RowsRead, r.Predicted.RowsRead, r.Measured.RowsWritten, r.Predicted.RowsWritten,
				r.Measured.RedisCommands, r.Predicted.RedisCommands)
		}
		return
	}
}

// TestPushFollowsOnPowerLawAgainstCountedRun runs push's default mix on
// the power-law graph at 300 users, 6,000 operations, and sets the model's
// rows written against the count: within 5 %. A few hundred follows and
// unfollows each backfill or remove all their followee's messages, and
// on this graph a phase's draw of them strays a fifth or more from its
// expectation (TestChurnFolloweesMessages); the phase counts the messages
// of the followees it touched (results.Phase.FolloweeMessages) as it
// counts its posts' audience, and the check takes both.
func TestPushFollowsOnPowerLawAgainstCountedRun(t *testing.T) {
	spec := powerLaw300(t)
	mix := workload.DefaultMix()
	var progress bytes.Buffer
	cfg := loadgen.BenchConfig{
		DSN: testserver.DSN(t), Force: true, Spec: spec, Scale: 0.03, Models: []string{"push"},
		Mix: &mix, TrafficOnly: true, Ops: 6000, Concurrency: 4, Progress: &progress,
	}
	res, c, _ := runAndCheck(t, cfg, &progress)
	tr := res.Model("push").Traffic
	if tr == nil || !(tr.Total.FolloweeMessages > 0) {
		t.Fatalf("the mix counted no followees' messages: %+v", tr)
	}
	for _, r := range c.Rows {
		if r.Phase != "traffic" {
			continue
		}
		t.Logf("rows written an operation: %.2f predicted, %.2f counted (%d follows and unfollows of followees of %.1f messages, posts to %.1f followers)",
			r.Predicted.RowsWritten, r.Measured.RowsWritten, tr.Ops[workload.OpFollow].Ops+tr.Ops[workload.OpUnfollow].Ops,
			tr.Total.FolloweeMessages, tr.Total.PostAudience)
		if math.Abs(r.Predicted.RowsWritten/r.Measured.RowsWritten-1) > 0.05 {
			t.Errorf("rows written an operation: %.2f predicted, %.2f counted", r.Predicted.RowsWritten, r.Measured.RowsWritten)
		}
		return
	}
	t.Fatal("no traffic phase checked")
}
