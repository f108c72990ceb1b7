package plan

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/recommend"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"

	_ "github.com/pushpull/pushpull/registry/all"
)

// TestPowerLawBucketsAreTheGenerators: the plan's power-law degrees are
// the generator's: the follower counts of a generated graph, sorted and
// grouped as the buckets group ranks, have the buckets' means (within a
// follow of rounding), and they add up to the graph's follows.
func TestPowerLawBucketsAreTheGenerators(t *testing.T) {
	s := dataset.Spec{Users: 3000, Messages: 10, AvgFollowees: 20, Graph: dataset.GraphPowerLaw, Seed: 3}
	d, err := dataset.Generate(s)
	if err != nil {
		t.Fatal(err)
	}
	got := d.Stats().Followers
	slices.SortFunc(got, func(a, b int) int { return b - a })
	buckets := powerLawBuckets(s.Users, float64(s.Edges()), dataset.DefaultInExponent, 16, 1.5)
	var sum float64
	rank := 0
	for _, b := range buckets {
		var gen float64
		for _, f := range got[rank : rank+int(b.n)] {
			gen += float64(f)
		}
		gen /= b.n
		if math.Abs(gen-b.mean) > 1 {
			t.Errorf("ranks %d to %d: %.2f followers in the graph, %.2f in the plan", rank, rank+int(b.n), gen, b.mean)
		}
		sum += b.n * b.mean
		rank += int(b.n)
	}
	if rank != s.Users || math.Abs(sum-float64(s.Edges())) > 1e-6*sum {
		t.Errorf("%d users, %.0f follows; want %d and %d", rank, sum, s.Users, s.Edges())
	}
}

// TestDemandOfAUniformGraph: the classes of a uniform workload keep its
// mean degree, and a post's audience and a reader's followees are it.
func TestDemandOfAUniformGraph(t *testing.T) {
	w := Workload{Users: 100_000, AvgFollowees: 50, NewestPerSec: 100, PostsPerSec: 10}
	d, err := w.Demand()
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{"edges per user": d.Edges() / d.Users, "post audience": d.PostAudience(), "read followees": d.ReadFollowees()} {
		if math.Abs(v-50) > 0.5 {
			t.Errorf("%s %.2f, want 50", name, v)
		}
	}
	if m := d.MailboxRows(); math.Abs(m-50*100*100_000) > 0.01*m {
		t.Errorf("mailbox rows %.0f, want about messages × followers", m)
	}
}

// TestSkewMovesTheAudience: on a power-law graph with posts growing with
// followers, a post reaches more followers than the mean, and more
// still as the exponent of posting grows.
func TestSkewMovesTheAudience(t *testing.T) {
	audience := func(post float64) float64 {
		w := Workload{Users: 10_000, Graph: dataset.GraphPowerLaw, NewestPerSec: 100, PostsPerSec: 10,
			Activity: dataset.Activity{Mode: dataset.ActivitySkewed, PostExponent: post, ReadExponent: 0.5}}
		d, err := w.Demand()
		if err != nil {
			t.Fatal(err)
		}
		return d.PostAudience()
	}
	a, b := audience(0.5), audience(1)
	if !(a > 42.9*1.2 && b > a*1.5) {
		t.Errorf("audience %.1f at exponent 0.5, %.1f at 1: want both above the mean 42.9, growing", a, b)
	}
}

// TestNNLS: the fit recovers non-negative coefficients of exact data and
// holds a coefficient the data would make negative at 0.
func TestNNLS(t *testing.T) {
	xs := [][]float64{{1, 2}, {2, 1}, {3, 5}, {4, 1}}
	ys := make([]float64, len(xs))
	ws := make([]float64, len(xs))
	for i, x := range xs {
		ys[i], ws[i] = 0.5*x[0]+2*x[1], 1
	}
	if c := nnls(xs, ys, ws); math.Abs(c[0]-0.5) > 1e-9 || math.Abs(c[1]-2) > 1e-9 {
		t.Errorf("coefficients %v, want [0.5 2]", c)
	}
	for i, x := range xs {
		ys[i] = 3*x[0] - 0.2*x[1]
	}
	if c := nnls(xs, ys, ws); c[1] != 0 || c[0] <= 0 {
		t.Errorf("coefficients %v, want the second held at 0", c)
	}
}

// testWorkload is a workload of the size the issue names: ten million
// users on the power-law graph, Twitter's 2013 read and post rates.
func testWorkload() Workload {
	return Workload{Users: 10_000_000, Graph: dataset.GraphPowerLaw, NewestPerSec: 300_000, PostsPerSec: 6_000,
		FollowsPerSec: 1_000, SLO: 100 * time.Millisecond, Freshness: 5 * time.Second}
}

// TestPlanAtTenMillionUsers: a plan for ten million users names a design
// that holds the objective, its servers and its margin, and the verdict
// follows from the designs' figures by recommend's rule: no design that
// holds costs less beyond the tie band.
func TestPlanAtTenMillionUsers(t *testing.T) {
	p, err := Make(testWorkload(), DefaultCalibration(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if p.Verdict.Best == "" || p.Margin == "" {
		t.Fatalf("no design or no margin: %+v", p.Verdict)
	}
	if len(p.Designs) != len(recommend.Candidates()) {
		t.Errorf("%d designs, want every candidate (%d)", len(p.Designs), len(recommend.Candidates()))
	}
	var best results.PlanDesign
	for _, d := range p.Designs {
		if d.Model == p.Verdict.Best {
			best = d
		}
	}
	if !best.Held || best.DBNodes < 1 || best.Resources.Cores() <= 0 || best.Resources.StorageGB <= 0 {
		t.Errorf("best %+v", best)
	}
	for _, d := range p.Designs {
		if d.Held && d.RunCost*(1+recommend.TieShare) < best.RunCost {
			t.Errorf("%s holds at a cost of %.1f, below %s's %.1f", d.Model, d.RunCost, best.Model, best.RunCost)
		}
		if !d.Held && d.Why == "" {
			t.Errorf("%s does not hold, and no reason", d.Model)
		}
	}
	var b strings.Builder
	if err := results.WritePlan(&b, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10,000,000 users", "verdict: " + p.Verdict.Best, "margin:", "assumptions:"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the printed plan lacks %q:\n%s", want, b.String())
		}
	}
	dir := t.TempDir()
	if err := results.SavePlan(dir, p); err != nil {
		t.Fatal(err)
	}
	if back, err := results.LoadPlan(dir); err != nil || back.Verdict.Best != p.Verdict.Best {
		t.Errorf("loaded back: %v, %+v", err, back)
	}
}

// TestPlanScales: what grows with the service grows in the plan: ten
// times the rate needs about ten times the database cores of every
// design (a little more where an in-process cache covers less of a day
// of posts ten times larger, a little less where a cache in front of the
// database hits more often, its pages read again sooner), and
// ten times the users with the same messages each about ten times the
// storage.
func TestPlanScales(t *testing.T) {
	small := Workload{Users: 100_000, Graph: dataset.GraphPowerLaw, NewestPerSec: 1000, PostsPerSec: 20}
	plan := func(w Workload) map[string]results.PlanDesign {
		p, err := Make(w, workCalibration(), "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]results.PlanDesign{}
		for _, d := range p.Designs {
			out[d.Model] = d
		}
		return out
	}
	base := plan(small)
	faster := small
	faster.NewestPerSec, faster.PostsPerSec = 10*small.NewestPerSec, 10*small.PostsPerSec
	bigger := small
	bigger.Users *= 10
	for name, d := range plan(faster) {
		if r := d.Resources.DBCores / base[name].Resources.DBCores; base[name].Resources.DBCores > 0 && (r < 9 || r > 12) {
			t.Errorf("%s: database cores ×%.2f at ten times the rate", name, r)
		}
	}
	for name, d := range plan(bigger) {
		if r := d.Resources.StorageGB / base[name].Resources.StorageGB; r < 9 {
			t.Errorf("%s: storage ×%.2f at ten times the users", name, r)
		}
	}
}

// TestAsyncLag: an asynchronous design reports a fan-out lag, the others
// none; a freshness bound below its lag fails it.
func TestAsyncLag(t *testing.T) {
	w := testWorkload()
	var async string
	for _, name := range recommend.Candidates() {
		if m, _ := registry.Lookup(name); m.Traits.Has(registry.Async) {
			async = name
		}
	}
	if async == "" {
		t.Skip("no asynchronous candidate")
	}
	w.Models = []string{async}
	w.Options = map[string]string{"workers": "64"}
	p, err := Make(w, DefaultCalibration(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := p.Designs[0]
	if !d.Async || !(d.LagP99Ms > 0) || !(d.LagMaxMs >= d.LagP99Ms) {
		t.Fatalf("%s: async %v, lag p99 %v ms, max %v ms", async, d.Async, d.LagP99Ms, d.LagMaxMs)
	}
	w.Freshness = time.Duration(d.LagP99Ms / 2 * float64(time.Millisecond))
	p, err = Make(w, DefaultCalibration(), "")
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Designs[0]; d.Held || !strings.Contains(d.Why, "fan-out lag") || p.Verdict.Best != "" {
		t.Errorf("a freshness bound below the lag: held %v (%q), best %q", d.Held, d.Why, p.Verdict.Best)
	}
}

// TestPlanRefusesBadInput: every bad input is an *InputError, before
// anything is computed.
func TestPlanRefusesBadInput(t *testing.T) {
	ok := Workload{Users: 1000, NewestPerSec: 100}
	for _, c := range []struct {
		name  string
		edit  func(*Workload)
		field string
	}{
		{"no rates", func(w *Workload) { w.NewestPerSec = 0 }, "rates"},
		{"a negative rate", func(w *Workload) { w.PostsPerSec = -1 }, "posts-per-sec"},
		{"a rate that is not a number", func(w *Workload) { w.OlderPerSec = math.NaN() }, "older-per-sec"},
		{"follows alone", func(w *Workload) { w.NewestPerSec, w.FollowsPerSec = 0, 5 }, "rates"},
		{"one user", func(w *Workload) { w.Users = 1 }, "users"},
		{"more follows than users", func(w *Workload) { w.AvgFollowees = 5000 }, "avg-followees"},
		{"an unknown graph", func(w *Workload) { w.Graph = "zipf" }, "graph"},
		{"an exponent out of range", func(w *Workload) { w.Graph, w.InExponent = dataset.GraphPowerLaw, 1.2 }, "in-exponent"},
		{"edges without a file", func(w *Workload) { w.Graph = dataset.GraphEdges }, "graph"},
		{"a celebrity's activity", func(w *Workload) { w.Activity.Mode = dataset.ActivityCelebrity }, "activity"},
		{"an active share above 1", func(w *Workload) { w.ActiveShare = 1.5 }, "active-share"},
		{"a page of none", func(w *Workload) { w.Page = -1 }, "page"},
		{"retention without posts", func(w *Workload) { w.Retention = time.Hour }, "retention"},
		{"a negative slo", func(w *Workload) { w.SLO = -time.Second }, "slo"},
		{"a negative freshness", func(w *Workload) { w.Freshness = -time.Second }, "freshness"},
		{"half a core", func(w *Workload) { w.Node.Cores = 0.5 }, "node-cores"},
		{"a utilisation above 1", func(w *Workload) { w.Utilization = 2 }, "utilization"},
		{"a negative price", func(w *Workload) { w.Prices = results.Prices{Core: -1} }, "price-core"},
		{"an unknown model", func(w *Workload) { w.Models = []string{"no-such-model"} }, "models"},
		{"a model twice", func(w *Workload) { w.Models = append(recommend.Candidates()[:1:1], recommend.Candidates()[0]) }, "models"},
		{"an unknown option", func(w *Workload) { w.Options = map[string]string{"no_such_option": "1"} }, "option"},
	} {
		w := ok
		c.edit(&w)
		p, err := Make(w, DefaultCalibration(), "")
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != c.field || p != nil {
			t.Errorf("%s: %v (%T), plan %v; want an *InputError of field %s", c.name, err, err, p != nil, c.field)
		}
	}
	if _, err := Make(ok, DefaultCalibration(), ""); err != nil {
		t.Errorf("a good workload: %v", err)
	}
}

// TestDefaultCalibration: the built-in calibration parses, names the runs
// and the machine it comes from, and costs something per unit.
func TestDefaultCalibration(t *testing.T) {
	c := DefaultCalibration()
	if c.Version != results.CalibrationFormatVersion || len(c.Sources) == 0 || c.Machine == "" {
		t.Errorf("calibration %+v", c)
	}
	if !(c.DBRowReadUs > 0 && c.DBStatementUs > 0 && c.MessageBytes > 0 && c.MailboxRowBytes > 0) {
		t.Errorf("costs nothing: %+v", c)
	}
}

// TestEdgeFileAsSample: an edge file stands for a graph of the planned
// size: its users scale up, their counts stay, and so does the mean.
func TestEdgeFileAsSample(t *testing.T) {
	path := t.TempDir() + "/edges.txt"
	// 1 and 2 follow 3; 3 follows 1; 4 follows 1, 2 and 3.
	if err := os.WriteFile(path, []byte("1 3\n2 3\n3 1\n4 1\n4 2\n4 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	el, err := dataset.ReadEdgeList(path, dataset.SelfFollowsReject)
	if err != nil {
		t.Fatal(err)
	}
	w := Workload{Users: 4_000_000, Graph: dataset.GraphEdges, EdgeList: el, AvgFollowees: el.AvgFollowees(), NewestPerSec: 100, PostsPerSec: 1}
	d, err := w.Demand()
	if err != nil {
		t.Fatal(err)
	}
	var users float64
	for _, c := range d.Classes {
		users += c.Users
	}
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-6*want {
			t.Errorf("%s %v, want %v", what, got, want)
		}
	}
	near("users", users, 4_000_000)
	near("follows per user", d.Edges()/d.Users, 1.5)
	near("most followers", d.MostFollowers(), 3)
}

// TestEdgeFileSplitsAtExactCounts: an edge file's users with few
// followers keep their exact counts, so a threshold among them (hybrid's
// threshold=44 on a 100-user graph, whose users have 30 to 55 followers)
// splits them where the designs do, not at a bin's edge. Eleven authors
// have 40 to 50 followers, drawn from 50 readers with none, and all
// post alike.
func TestEdgeFileSplitsAtExactCounts(t *testing.T) {
	var b strings.Builder
	for a := 1; a <= 11; a++ {
		for r := 12; r < 12+39+a; r++ {
			fmt.Fprintf(&b, "%d %d\n", r, a)
		}
	}
	path := t.TempDir() + "/edges.txt"
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	el, err := dataset.ReadEdgeList(path, dataset.SelfFollowsReject)
	if err != nil {
		t.Fatal(err)
	}
	w := Workload{Users: el.Users, Graph: dataset.GraphEdges, EdgeList: el, AvgFollowees: el.AvgFollowees(),
		Activity: dataset.Activity{Mode: dataset.ActivityUniform}, NewestPerSec: 100, PostsPerSec: 1}
	d, err := w.Demand()
	if err != nil {
		t.Fatal(err)
	}
	users := float64(el.Users)
	s := d.SplitAt(44)
	// 44 to 50 followers: 7 of the authors; 40 to 43 fan out.
	if want := 7 / users; math.Abs(s.PostShare-want) > 1e-9 {
		t.Errorf("%d users: share of posts at or above 44 followers %.4f, want %.4f", el.Users, s.PostShare, want)
	}
	if want := (40 + 41 + 42 + 43) / users; math.Abs(s.AudienceBelow-want) > 1e-9 {
		t.Errorf("followers a post reaches below 44 %.4f, want %.4f", s.AudienceBelow, want)
	}
}

// TestUnreliablePhasesAreNotChecked: a phase whose run could not trust
// the database's counters (cost.DBCountersUnreliable, its rows left out)
// is neither checked against its model nor fitted in a calibration; the
// check names it instead.
func TestUnreliablePhasesAreNotChecked(t *testing.T) {
	dir := filepath.Join("..", "..", "evidence", "plan", "quiet", "runs", "uniform-1000")
	run, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	first := &run.Models[0]
	c := first.Retrieve.Cost
	for _, k := range cost.DBRowKeys {
		delete(c, k)
	}
	c[cost.DBCountersUnreliable] = 1
	check, err := Check([]*results.Result{run}, []string{dir}, DefaultCalibration(), "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range check.Rows {
		if r.Model == first.Name && r.Phase == "retrieve" {
			t.Errorf("the unreliable phase was checked: %+v", r)
		}
	}
	want := runLabel(run) + ", " + first.Name + ", retrieve"
	if !slices.Contains(check.Unreliable, want) {
		t.Errorf("unreliable phases %q, want %q among them", check.Unreliable, want)
	}
	var out strings.Builder
	if err := results.WritePlanCheck(&out, check); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "unreliable: "+want) {
		t.Errorf("the table does not name the unreliable phase:\n%s", out.String())
	}
	whole, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	all, err := Calibrate([]*results.Result{whole}, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	cal, err := Calibrate([]*results.Result{run}, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if cal.Fit.Phases != all.Fit.Phases-1 {
		t.Errorf("the calibration fitted %d phases, the same run whole %d: want one fewer", cal.Fit.Phases, all.Fit.Phases)
	}
}
