package results

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withBurst is withVisibility with a burst phase on push (recovered in
// 0.5 s, its lag in 1.25 s) and one on pull-sp that never recovered.
func withBurst() *Result {
	r := withVisibility()
	series := func(p99 ...float64) []BurstPoint {
		var out []BurstPoint
		for i, v := range p99 {
			out = append(out, BurstPoint{AtS: float64(i) * 0.25, Ops: 50, P50Ms: v / 2, P99Ms: v, MaxMs: v, LagPosts: 2, LagP99Ms: 10 * v})
		}
		return out
	}
	push := r.Model("push")
	push.Burst = &Burst{Schedule: "300:1s,3000:500ms,300:2s", WindowS: 3.5, StartS: 1, EndS: 1.5, BucketMs: 250, HoldMs: 1000,
		SLOMs: 50, LagSLOMs: 1000, Total: Phase{Ops: 2100, Seconds: 3.5, OpsPerSec: 600, P50Ms: 3, P99Ms: 300, MaxMs: 400},
		Before: Phase{Ops: 300, P99Ms: 4}, During: Phase{Ops: 1500, P99Ms: 380}, After: Phase{Ops: 300, P99Ms: 120},
		Recovered: true, RecoveryS: 0.5, Lag: &BurstLag{BeforeP99Ms: 40, DuringP99Ms: 3800, AfterP99Ms: 1200, Recovered: true, RecoveryS: 1.25},
		Celebrity: &BurstCelebrity{Author: 1, Followers: 9999, Posts: 20, P99Ms: 900, SpanMs: 2500},
		Series:    series(4, 4, 4, 4, 380, 300, 120, 60, 5, 5, 5, 5, 5, 5)}
	sp := r.Model("pull-sp")
	sp.Burst = &Burst{Schedule: "300:1s,3000:500ms,300:2s", WindowS: 3.5, StartS: 1, EndS: 1.5, BucketMs: 250, HoldMs: 1000,
		SLOMs: 50, LagSLOMs: 1000, Total: Phase{Ops: 900, Seconds: 3.5, P99Ms: 2000},
		Before: Phase{Ops: 300, P99Ms: 9}, During: Phase{Ops: 500, P99Ms: 2000}, After: Phase{Ops: 100, P99Ms: 1900},
		Series: series(9, 9, 9, 9, 2000, 2000, 1900, 1900, 1900, 1900, 1900, 1900, 1900, 1900)}
	return r
}

// TestBurstTable: the burst's rows, with a recovery, none within the
// stretch after the burst, and the feed-quality table of every design.
func TestBurstTable(t *testing.T) {
	out := table(t, withBurst())
	t.Log("\n" + out)
	for prefix, want := range map[string][]string{
		"burst (open loop on a schedule)":                         {"600 ops/s"},
		"  p99 before / during / after":                           {"4.00 / 380 / 120 ms", "9.00 / 2,000 / 1,900 ms"},
		"  recovery to p99 ≤ 50.0 ms":                             {"0.5 s", "not within 2.0 s"},
		"  fan-out lag p99 before / during / after":               {"40.0 / 3,800 / 1,200 ms", Dash},
		"  recovery to fan-out lag ≤ 1,000 ms":                    {"1.2 s"},
		"  celebrity's posts: posts, p99, all acknowledged after": {"20, 900 ms, 2,500 ms"},
		"quality: push ":                                          {"65.5", "180", "42.0 ms", "95 %", "0.5 s", "1.2 s"},
		"quality: pull-sp ":                                       {"not within 2.0 s"},
	} {
		in := out
		if p, ok := strings.CutPrefix(prefix, "quality: "); ok {
			_, in, _ = strings.Cut(out, "\nfeed quality")
			prefix = p
		}
		l := line(t, in, prefix)
		for _, w := range want {
			if !strings.Contains(l, w) {
				t.Errorf("line %q lacks %q", l, w)
			}
		}
	}
	over := withBurst()
	over.Model("pull-sp").Burst.Before.P99Ms = 90
	if l := line(t, table(t, over), "  recovery to p99 ≤ 50.0 ms"); !strings.Contains(l, "over before it") || !strings.Contains(l, "0.5 s") {
		t.Errorf("a base over its objective: %q", l)
	}
	if plain := table(t, withTraffic()); strings.Contains(plain, "burst") || strings.Contains(plain, "feed quality") {
		t.Errorf("a run without a burst, probe or delete study shows them:\n%s", plain)
	}
}

// TestBurstSaved: a run with bursts saves burst.png, its CSV has the
// before, during and after rows, and it loads back whole; a rate search
// with figures per operation type plots a panel for each.
func TestBurstSaved(t *testing.T) {
	r := withBurst()
	r.Model("push").Traffic.Search = &RateSearch{SLOMs: 50, BestPerSec: 1000, StepSeconds: 2, Steps: []RateStep{
		{RatePerSec: 1000, OfferedPerSec: 1000, P50Ms: 1, P99Ms: 9, Held: true, Ops: map[string]RateOp{"newest": {Ops: 1500, P50Ms: 1, P99Ms: 8}, "post": {Ops: 40, P50Ms: 3, P99Ms: 20}}},
		{RatePerSec: 2000, OfferedPerSec: 2000, P50Ms: 90, P99Ms: 700, Ops: map[string]RateOp{"newest": {Ops: 3000, P50Ms: 80, P99Ms: 690}, "post": {Ops: 80, P50Ms: 100, P99Ms: 800}}},
	}}
	dir := t.TempDir()
	if err := Save(dir, r); err != nil {
		t.Fatal(err)
	}
	heights := map[string]int{}
	for _, name := range []string{BurstPNGFile, RatePNGFile} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		heights[name] = img.Bounds().Dy()
	}
	// Two panels of the burst (latency and lag); the rate plot's whole
	// traffic and a row of two operation types below it.
	if heights[BurstPNGFile] != 2*PNGHeight+PNGHeight/2 || heights[RatePNGFile] != 3*PNGHeight {
		t.Errorf("plot heights %v", heights)
	}
	csv, err := os.ReadFile(filepath.Join(dir, CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"push,burst,2100,", "push,burst_during,1500,", "pull-sp,burst_after,100,"} {
		if !strings.Contains(string(csv), want) {
			t.Errorf("the CSV lacks %q:\n%s", want, csv)
		}
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b := back.Model("push").Burst; b == nil || len(b.Series) != 14 || b.Lag == nil || b.Lag.RecoveryS != 1.25 || b.Celebrity.Posts != 20 {
		t.Fatalf("the burst came back as %+v", b)
	}
	if st := back.Model("push").Traffic.Search.Steps[1]; st.Ops["post"].P99Ms != 800 {
		t.Fatalf("a step's figures per operation type came back as %+v", st.Ops)
	}
}
