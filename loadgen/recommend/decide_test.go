package recommend

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"

	_ "github.com/pushpull/pushpull/registry/all"
)

// cand is a candidate that kept up with 100 ops/s without errors, with
// p99 ms latency, rows per operation (split 3:1 read:written) and size
// bytes of data on disk.
func cand(name string, p99, rows float64, size int64) results.Candidate {
	return results.Candidate{Model: name, Ops: 1000, P50Ms: p99 / 2, P99Ms: p99, OfferedPerSec: 100, AchievedPerSec: 100,
		Costed: true, RowsReadPerOp: rows * 0.75, RowsWrittenPerOp: rows * 0.25, DataBytes: size / 2, DiskBytes: size}
}

func TestJudge(t *testing.T) {
	slo := 50 * time.Millisecond
	ok := cand("a", 49, 10, 1)
	for _, c := range []struct {
		name string
		edit func(*results.Candidate)
		held bool
		why  string
	}{
		{"within", func(*results.Candidate) {}, true, ""},
		{"at the objective", func(c *results.Candidate) { c.P99Ms = 50 }, true, ""},
		{"over", func(c *results.Candidate) { c.P99Ms = 50.5 }, false, "p99 50.5 ms > 50 ms"},
		{"not measured", func(c *results.Candidate) { c.Ops = 0 }, false, "not measured"},
		{"errors at the limit", func(c *results.Candidate) { c.Errors = 10; c.Ops = 990 }, true, ""},
		{"errors over the limit", func(c *results.Candidate) { c.Errors = 11; c.Ops = 989 }, false, "1.1% errors"},
		{"missed operations", func(c *results.Candidate) { c.Missed = 1 }, false, "fell behind"},
		{"fell behind", func(c *results.Candidate) { c.AchievedPerSec = 89 }, false, "fell behind: 89 of 100"},
		{"kept up within 10%", func(c *results.Candidate) { c.AchievedPerSec = 91 }, true, ""},
	} {
		x := ok
		c.edit(&x)
		held, why := Judge(x, slo)
		if held != c.held || !strings.Contains(why, c.why) || (c.held && why != "") {
			t.Errorf("%s: held %v (%q), want %v (%q)", c.name, held, why, c.held, c.why)
		}
	}
}

func TestDecide(t *testing.T) {
	slo := 50 * time.Millisecond
	over := cand("cheap-but-slow", 80, 1, 1)
	errs := cand("cheap-but-failing", 5, 1, 1)
	errs.Errors = 100
	behind := cand("cheap-but-behind", 20, 1, 1)
	behind.AchievedPerSec = 60
	uncosted := cand("uncosted", 5, 0, 1)
	uncosted.Costed = false
	for _, c := range []struct {
		name          string
		cands         []results.Candidate
		best, closest string
		ranking       []string
		reason        []string
	}{
		{"the cheapest wins", []results.Candidate{cand("a", 10, 30, 100), cand("b", 10, 20, 100), cand("c", 10, 25, 100)},
			"b", "", []string{"b", "c", "a"}, []string{"b: the lowest cost", "20 rows/op", "next: c"}},
		{"a model over the objective never wins, however cheap", []results.Candidate{over, cand("dear", 40, 100, 100)},
			"dear", "", []string{"dear"}, []string{"the only design that held", "cheaper but over the objective: cheap-but-slow (p99 80 ms > 50 ms)"}},
		{"nor one with errors", []results.Candidate{errs, cand("dear", 40, 100, 100)}, "dear", "", []string{"dear"}, []string{"cheap-but-failing (9.1% errors)"}},
		{"nor one that fell behind", []results.Candidate{behind, cand("dear", 40, 100, 100)}, "dear", "", []string{"dear"}, []string{"cheap-but-behind (fell behind"}},
		{"a tie goes to the smaller data", []results.Candidate{cand("big", 5, 10, 2e6), cand("small", 30, 10.4, 1e6)},
			"small", "", []string{"small", "big"}, []string{"tied within 5% with big", "has less data (1 MB against 2 MB)"}},
		{"then to the lower p99", []results.Candidate{cand("slow", 30, 10, 1e6), cand("fast", 5, 10.4, 1e6)},
			"fast", "", []string{"fast", "slow"}, []string{"a lower p99 (5 ms against 30 ms)"}},
		{"then to the order given", []results.Candidate{cand("first", 5, 10, 1e6), cand("second", 5, 10, 1e6)},
			"first", "", []string{"first", "second"}, []string{"comes first in the order given"}},
		{"outside the tie band cost decides", []results.Candidate{cand("big", 30, 10, 2e6), cand("small", 5, 10.6, 1e6)},
			"big", "", []string{"big", "small"}, []string{"next: small"}},
		{"a cost not measured ranks last", []results.Candidate{uncosted, cand("costed", 40, 100, 9e9)},
			"costed", "", []string{"costed", "uncosted"}, nil},
		{"none holds: the lowest p99 came closest", []results.Candidate{cand("x", 90, 1, 1), cand("y", 60, 100, 1), over},
			"", "y", nil, []string{"no design holds p99 ≤ 50 ms at 100 ops/s", "closest: y (p99 60 ms > 50 ms"}},
		{"none holds: errors count before latency", []results.Candidate{func() results.Candidate {
			c := cand("fast-failing", 60, 1, 1)
			c.Errors = 500
			return c
		}(), cand("slow", 200, 1, 1)}, "", "slow", nil, []string{"closest: slow"}},
		{"nothing measured", []results.Candidate{{Model: "a"}, {Model: "b"}}, "", "", nil, []string{"no design holds"}},
	} {
		judged, v := Decide(c.cands, 100, slo)
		if v.Best != c.best || v.Closest != c.closest || !slices.Equal(v.Ranking, c.ranking) {
			t.Errorf("%s: best %q closest %q ranking %v; want %q, %q, %v", c.name, v.Best, v.Closest, v.Ranking, c.best, c.closest, c.ranking)
		}
		for _, want := range c.reason {
			if !strings.Contains(v.Reason, want) {
				t.Errorf("%s: reason %q lacks %q", c.name, v.Reason, want)
			}
		}
		if len(judged) != len(c.cands) {
			t.Fatalf("%s: %d judged of %d", c.name, len(judged), len(c.cands))
		}
		for i, j := range judged {
			if j.Model != c.cands[i].Model || j.Held != slices.Contains(c.ranking, j.Model) {
				t.Errorf("%s: judged %d: %+v", c.name, i, j)
			}
			if c.cands[i].Held || c.cands[i].Why != "" {
				t.Errorf("%s: Decide changed its input", c.name)
			}
		}
	}
}

// TestCandidates: the default candidates are the registry's models that a
// recommendation can run, whatever they are named.
func TestCandidates(t *testing.T) {
	cands := Candidates()
	families := map[registry.Family]bool{}
	for _, m := range registry.Listed() {
		in := slices.Contains(cands, m.Name)
		want := m.Persistent() && !m.OnVitess() && !m.Bench.Slow
		if in != want {
			t.Errorf("%s: candidate %v, want %v", m.Name, in, want)
		}
		if in {
			families[m.Family] = true
		}
	}
	if !families[registry.FamilyPush] || !families[registry.FamilyPull] {
		t.Errorf("candidates %v lack push or pull", cands)
	}
}

// TestCheck: a setting Run cannot work with is an *InputError, before
// anything runs.
func TestCheck(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.01)
	if err != nil {
		t.Fatal(err)
	}
	mix := workload.DefaultMix()
	noReads, _ := workload.ParseMix("follow=1,unfollow=1")
	var slow, vitess, memory string
	for _, m := range registry.Listed() {
		switch {
		case m.Bench.Slow && slow == "":
			slow = m.Name
		case m.OnVitess() && vitess == "":
			vitess = m.Name
		case !m.Persistent() && memory == "":
			memory = m.Name
		}
	}
	good := func() Config {
		return Config{Bench: loadgen.BenchConfig{DSN: "nobody@tcp(127.0.0.1:1)/", Spec: spec, Mix: &mix, Rate: 100, SLO: time.Second}}
	}
	if err := Check(good()); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Bench.Rate = 0 }, "rate"},
		{func(c *Config) { c.Bench.Rate = math.Inf(1) }, "rate"},
		{func(c *Config) { c.Bench.SLO = 0 }, "slo"},
		{func(c *Config) { c.Bench.Mix = nil }, "mix"},
		{func(c *Config) { c.Bench.Mix = &noReads }, "nothing tells the designs apart"},
		{func(c *Config) { c.Bench.FindRate = true }, "find-rate"},
		{func(c *Config) { c.Bench.Models = []string{} }, "no models"},
		{func(c *Config) { c.Bench.Models = []string{"no-such-model"} }, "unknown model"},
		{func(c *Config) { c.Bench.Models = []string{vitess} }, "Vitess"},
		{func(c *Config) { c.Bench.Models = []string{memory} }, "process memory"},
		{func(c *Config) { c.Bench.Models = []string{Candidates()[0], Candidates()[0]} }, "named twice"},
		{func(c *Config) { c.Bench.Spec.Users = 1 }, "dataset"},
	} {
		cfg := good()
		c.edit(&cfg)
		err := Check(cfg)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an InputError saying %q, got %v", c.want, err)
		}
		// Run refuses it the same way, before connecting anywhere.
		if _, err := Run(t.Context(), cfg); !errors.As(err, &ie) {
			t.Errorf("Run: %v", err)
		}
	}
	_ = slow // a slow model may be named: it is measured, only not by default
}

func TestParseSkew(t *testing.T) {
	for in, want := range map[string]Skew{
		"uniform":      {Graph: dataset.GraphUniform},
		"powerlaw":     {Graph: dataset.GraphPowerLaw, InExponent: dataset.DefaultInExponent},
		"powerlaw:2.1": {Graph: dataset.GraphPowerLaw, InExponent: 2.1},
	} {
		got, err := ParseSkew(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
		if back, _ := ParseSkew(got.String()); back != got {
			t.Errorf("%q: String %q reads back as %+v", in, got.String(), back)
		}
	}
	for _, in := range []string{"", "zipf", "powerlaw:", "powerlaw:1", "powerlaw:x", "uniform:2"} {
		var ie *InputError
		if _, err := ParseSkew(in); !errors.As(err, &ie) {
			t.Errorf("%q: %v, want an InputError", in, err)
		}
	}
}

func TestCheckMap(t *testing.T) {
	spec, _ := dataset.PaperSpec().Scaled(0.01)
	base := MapConfig{Bench: loadgen.BenchConfig{Spec: spec, Rate: 100, SLO: time.Second},
		ReadShares: []float64{0.5, 0.9}, Skews: []Skew{{Graph: dataset.GraphUniform}, {Graph: dataset.GraphPowerLaw, InExponent: 2.1}}}
	if err := CheckMap(base); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*MapConfig)
		want string
	}{
		{func(c *MapConfig) { c.ReadShares = nil }, "read-shares"},
		{func(c *MapConfig) { c.ReadShares = []float64{0.5, 1} }, "between 0 and 1"},
		{func(c *MapConfig) { c.ReadShares = []float64{0.5, 0.5} }, "given twice"},
		{func(c *MapConfig) { c.Skews = nil }, "skews"},
		{func(c *MapConfig) { c.Skews = append(c.Skews, c.Skews[0]) }, "given twice"},
		{func(c *MapConfig) { c.Bench.Rate = 0 }, "rate"},
		{func(c *MapConfig) { c.Bench.Models = []string{"no-such-model"} }, "unknown model"},
	} {
		cfg := base
		cfg.ReadShares, cfg.Skews = slices.Clone(base.ReadShares), slices.Clone(base.Skews)
		c.edit(&cfg)
		var ie *InputError
		err := CheckMap(cfg)
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an InputError saying %q, got %v", c.want, err)
		}
		if m, err := RunMap(t.Context(), cfg); m != nil || !errors.As(err, &ie) {
			t.Errorf("RunMap ran: %v", err)
		}
	}
}

// TestEvidence: a model's traffic phase gives a candidate its latency,
// rate and counts, and the CPU of client and servers together only when
// the database server's was measured.
func TestEvidence(t *testing.T) {
	m := &results.Model{Name: "m", DataBytes: 1 << 20, Traffic: &results.Traffic{Total: results.Phase{
		Ops: 900, Errors: 1, OpsPerSec: 450, P50Ms: 1, P99Ms: 9,
		Cost: cost.Cost{cost.Ops: 901, cost.RowsRead: 3, cost.RowsWritten: 0.5,
			cost.MCGets: 8, cost.CPU: 50, cost.MCCPU: 20},
	}}}
	c := Evidence(m)
	if !c.Costed || c.RowsPerOp() != 3.5 || c.MemcachedKeysPerOp() != 8 || c.P99Ms != 9 || c.Errors != 1 || c.CPUPerOpUs != nil {
		t.Fatalf("without the server's CPU: %+v", c)
	}
	m.Traffic.Total.Cost[cost.DBCPU] = 30
	if c := Evidence(m); c.CPUPerOpUs == nil || *c.CPUPerOpUs != 100 {
		t.Fatalf("with the server's CPU: %+v", c)
	}
}

// TestRankByRunCost: with a run cost for every candidate that held, the
// cheapest to run wins whatever its items, and the verdict shows both;
// when one lacks it, items decide, as before.
func TestRankByRunCost(t *testing.T) {
	priced := func(c results.Candidate, cost float64) results.Candidate {
		c.RunCost, c.Resources = &cost, &results.Resources{DBCores: cost}
		return c
	}
	slo := 50 * time.Millisecond
	cands := []results.Candidate{priced(cand("many-items", 10, 100, 1), 2), priced(cand("few-items", 10, 10, 1), 5)}
	_, v := Decide(cands, 100, slo)
	if v.Best != "many-items" {
		t.Fatalf("best %q, want the cheaper to run; %s", v.Best, v.Reason)
	}
	for _, want := range []string{"costs 2 to run (2 cores", "100 rows/op", "next: few-items, costs 5 to run"} {
		if !strings.Contains(v.Reason, want) {
			t.Errorf("reason %q lacks %q", v.Reason, want)
		}
	}
	cands[1].RunCost = nil
	if _, v := Decide(cands, 100, slo); v.Best != "few-items" {
		t.Errorf("a candidate without a run cost: best %q, want the fewest items", v.Best)
	}
	// A candidate over the objective is never chosen, however cheap to run.
	over := priced(cand("cheap-but-slow", 80, 1, 1), 0.5)
	if _, v := Decide([]results.Candidate{over, priced(cand("dear", 10, 100, 1), 9)}, 100, slo); v.Best != "dear" ||
		!strings.Contains(v.Reason, "cheaper but over the objective: cheap-but-slow") {
		t.Errorf("best %q: %s", v.Best, v.Reason)
	}
}

// TestBound: a bound on freshness and completeness keeps a cheaper design
// whose posts show late, on too few pages, or whose deletes linger, from
// winning; without the bound it wins.
func TestBound(t *testing.T) {
	slo := 50 * time.Millisecond
	fresh := func(c results.Candidate, p99, complete, deletedShown float64) results.Candidate {
		c.Freshness = &results.Freshness{Pages: 30, VisibleP99Ms: p99, VisibleMaxMs: p99, Completeness: complete, DeletedShown: deletedShown}
		return c
	}
	late := fresh(cand("cheap-but-late", 5, 1, 1), 2500, 1, 0)
	lossy := fresh(cand("cheap-but-lossy", 5, 2, 1), 3, 0.9, 0)
	lingering := fresh(cand("cheap-but-lingering", 5, 3, 1), 3, 1, 0.05)
	unmeasured := cand("cheap-unmeasured", 5, 4, 1)
	good := fresh(cand("dear-but-current", 5, 10, 1), 3, 1, 0)
	all := []results.Candidate{late, lossy, lingering, unmeasured, good}

	bound := Bound{Fresh: time.Second, Completeness: 0.99}
	for _, c := range []struct {
		cand results.Candidate
		why  string
	}{
		{late, "posts visible in p99 2500 ms > 1000 ms"},
		{lossy, "90% of pages showed the post < 99%"},
		{lingering, "5% of pages still showed a deleted post"},
		{unmeasured, "freshness not measured"},
		{good, ""},
	} {
		if got := bound.Check(c.cand); got != c.why {
			t.Errorf("%s: Check %q, want %q", c.cand.Model, got, c.why)
		}
	}
	judged := slices.Clone(all)
	for i := range judged {
		judged[i].OutOfBound = bound.Check(judged[i])
	}
	_, v := Decide(judged, 100, slo)
	if v.Best != good.Model || !strings.Contains(v.Reason, "cheap-but-late (posts visible in p99 2500 ms") {
		t.Fatalf("with the bound: %s (%s)", v.Best, v.Reason)
	}
	if _, v := Decide(all, 100, slo); v.Best != late.Model {
		t.Fatalf("without the bound: %s, want the cheapest, %s", v.Best, late.Model)
	}
	// Only freshness bounded: the lossy and lingering ones are fine.
	judged = slices.Clone(all)
	for i := range judged {
		judged[i].OutOfBound = Bound{Fresh: time.Second}.Check(judged[i])
	}
	if _, v := Decide(judged, 100, slo); v.Best != lossy.Model {
		t.Fatalf("bounding freshness only: %s, want %s", v.Best, lossy.Model)
	}
}

// TestFromRunWithinBound: FromRunWithin takes each model's freshness from
// its traffic's probe and records the bound in the workload.
func TestFromRunWithinBound(t *testing.T) {
	r := &results.Result{Models: []results.Model{
		{Name: "a", Traffic: &results.Traffic{Mix: "newest=1,post=1", Total: results.Phase{Ops: 100, P99Ms: 1, OpsPerSec: 100},
			Visibility: &results.Visibility{Total: results.VisibleBand{Pages: 10, Visible: 9, Missing: 1, P99Ms: 3}}}},
		{Name: "b", Traffic: &results.Traffic{Mix: "newest=1,post=1", Total: results.Phase{Ops: 100, P99Ms: 1, OpsPerSec: 100},
			Visibility: &results.Visibility{Total: results.VisibleBand{Pages: 10, Visible: 10, P99Ms: 3}}}},
	}}
	rec := FromRunWithin(r, []string{"a", "b"}, 100, 50*time.Millisecond, Bound{Completeness: 0.95})
	if rec.Workload.MinCompleteness != 0.95 {
		t.Fatalf("workload %+v", rec.Workload)
	}
	a, b := rec.Candidate("a"), rec.Candidate("b")
	if a.Freshness == nil || a.Freshness.Completeness != 0.9 || a.Held || !strings.Contains(a.Why, "90% of pages") {
		t.Fatalf("a: %+v", a)
	}
	if !b.Held || b.Freshness.VisibleP99Ms != 3 {
		t.Fatalf("b: %+v", b)
	}
}
