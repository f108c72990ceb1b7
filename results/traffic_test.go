package results

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
)

// withTraffic is sample() with costs on push's and pull-sp's phases and
// mixed traffic for both: push in an open loop with a rate search,
// pull-sp closed.
func withTraffic() *Result {
	r := sample()
	push, sp := r.Model("push"), r.Model("pull-sp")
	push.Submit.Cost = cost.Cost{cost.Ops: 16800, cost.RowsRead: 43.9, cost.RowsWritten: 43.9, cost.RowsInserted: 43.9,
		cost.BytesWritten: 5200, cost.LogBytesWritten: 4100, cost.CPU: 60, cost.DBCPU: 210, cost.StealShare: 0.012}
	sp.Submit.Cost = cost.Cost{cost.Ops: 201000, cost.RowsRead: 0, cost.RowsWritten: 1, cost.RowsInserted: 1,
		cost.BytesWritten: 420, cost.LogBytesWritten: 300, cost.CPU: 40}
	sp.Retrieve.Cost = cost.Cost{cost.Ops: 3600, cost.RowsRead: 472, cost.CPU: 95, cost.MCCPU: 5, cost.DBCPU: 300}
	phase := func(rate, p50, p99 float64) Phase {
		return Phase{Ops: int64(rate * 10), Seconds: 10, OpsPerSec: rate, P50Ms: p50, P90Ms: p50 * 2,
			P99Ms: p99, P999Ms: p99 * 2, MaxMs: p99 * 3}
	}
	mix := "newest=76,older=20,post=2,follow=1,unfollow=1"
	push.Traffic = &Traffic{Mix: mix, Loop: LoopOpen, Workers: 64,
		Total: phase(1000, 1, 9), Ops: map[string]Phase{
			"newest": phase(760, 0.8, 5), "older": phase(200, 0.9, 6), "post": phase(20, 4, 30),
			"follow": phase(10, 3, 20), "unfollow": phase(10, 3, 21),
		},
		Open: &OpenLoop{Arrivals: "poisson", RatePerSec: 1000, OfferedPerSec: 1003, AchievedPerSec: 990,
			Scheduled: 10030, Started: 10000, Late: 1234, Missed: 30, LateP99Ms: 12.5, Service: phase(990, 0.7, 8), Saturated: true},
		Search: &RateSearch{SLOMs: 50, BestPerSec: 1500, StartPerSec: 2000, StepSeconds: 2, Steps: []RateStep{
			{RatePerSec: 2000, OfferedPerSec: 1990, AchievedPerSec: 1600, P50Ms: 30, P99Ms: 900, Missed: 40},
			{RatePerSec: 1000, OfferedPerSec: 1010, AchievedPerSec: 1010, P50Ms: 0.9, P99Ms: 8, Held: true},
			{RatePerSec: 1500, OfferedPerSec: 1480, AchievedPerSec: 1480, P50Ms: 2, P99Ms: 41, Held: true},
		}},
	}
	push.Traffic.Total.Cost = cost.Cost{cost.Ops: 10000, cost.RowsRead: 30, cost.RowsWritten: 1.2}
	sp.Traffic = &Traffic{Mix: mix, Loop: LoopClosed, Workers: 8, Total: phase(300, 10, 40),
		Ops: map[string]Phase{"newest": phase(228, 11, 40), "post": phase(6, 1, 4)}}
	return r
}

func TestTrafficTable(t *testing.T) {
	out := table(t, withTraffic())
	t.Log("\n" + out)
	if !strings.Contains(out, "production traffic, mix newest=76,older=20,post=2,follow=1,unfollow=1: open loop") {
		t.Error("no heading naming the mix")
	}
	for prefix, want := range map[string][]string{
		"mixed traffic":                 {"1,000 ops/s", "300 ops/s", Dash},
		"  newest":                      {"760 ops/s", "228 ops/s", Dash},
		"  older":                       {"200 ops/s", Dash},
		"    p50 / p99 / p99.9 / max":   {"0.80 / 5.00 / 10.0 / 15.0 ms"},
		"  late starts (p99 lateness)":  {"1,234 of 10,000 (12.5 ms)"},
		"  missed (never started)":      {"30", Dash},
		"  saturated":                   {"SATURATED"},
		"highest rate at p99 ≤ 50.0 ms": {"1,500 ops/s", Dash},
		"  search steps":                {"3 of 2.0 s"},
	} {
		l := line(t, out, prefix)
		for _, w := range want {
			if !strings.Contains(l, w) {
				t.Errorf("line %q lacks %q", l, w)
			}
		}
	}
	// Without traffic, the table is what it was.
	if plain := table(t, sample()); strings.Contains(plain, "traffic") || strings.Contains(plain, "cost") {
		t.Errorf("a run without traffic shows it:\n%s", plain)
	}
}

func TestCostTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCostTable(&b, withTraffic()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	col := func(label string) int {
		for i, c := range costColumns {
			if c.label == label {
				return 2 + i
			}
		}
		t.Fatalf("no column %q", label)
		return 0
	}
	cpu, mc, db, all, steal := col("client CPU µs"), col("mc CPU µs"), col("db CPU µs"), col("all CPU µs"), col("steal %")
	l := line(t, out, "push, submit")
	if c := cells(l); len(c) != 2+len(costColumns) || c[1] != "16,800" || c[2] != "43.9" || c[cpu] != "60.0" || c[10] != Dash ||
		c[mc] != Dash || c[db] != "210" || c[all] != "270" || c[steal] != "1.20" {
		t.Errorf("push submit row %q", c)
	}
	// A phase measured without the machine's times has no steal.
	if c := cells(line(t, out, "pull-sp, submit")); c[steal] != Dash {
		t.Errorf("pull-sp submit row %q: a steal share", c)
	}
	// Without the database server's CPU there is no sum; with it, the
	// sum takes memcached's in.
	if c := cells(line(t, out, "pull-sp, submit")); c[db] != Dash || c[all] != Dash {
		t.Errorf("pull-sp submit row %q", c)
	}
	if c := cells(line(t, out, "pull-sp, retrieve ")); c[all] != "400" {
		t.Errorf("pull-sp retrieve row %q", c)
	}
	// H: (43.9 - 1) rows over 42.9 followers is one row per follower;
	// (5200 - 420) / 42.9 = 111 bytes. L: 472 rows / 42.9 = 11.0.
	h := line(t, out, "  H, one fan-out row")
	for _, w := range []string{"1.00 rows, 111 bytes, 88.6 redo bytes per follower", "pull-sp's plain post"} {
		if !strings.Contains(h, w) {
			t.Errorf("%q lacks %q", h, w)
		}
	}
	if l := line(t, out, "  L, one followee"); !strings.Contains(l, "pull-sp 11.0 (472 rows per newest page)") {
		t.Errorf("L line %q", l)
	}
	if !withTraffic().HasCosts() || sample().HasCosts() {
		t.Error("HasCosts")
	}

	// Under skewed activity a post reaches the posting authors' followers,
	// not the average user's, and a read probes the reading users'
	// followees: H and L divide by those.
	r := withTraffic()
	r.Dataset.PostAudience, r.Dataset.ReadFollowees = 85.8, 118
	r.Model("push").Submit.Cost[cost.RowsWritten] = 86.8
	b.Reset()
	if err := WriteCostTable(&b, r); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	if h := line(t, out, "  H, one fan-out row"); !strings.Contains(h, "over 85.8 followers of the posting authors") || !strings.Contains(h, ": 1.00 rows,") {
		t.Errorf("H under skewed activity: %q", h)
	}
	if l := line(t, out, "  L, one followee"); !strings.Contains(l, "over 118 followees") || !strings.Contains(l, "pull-sp 4.00 (472 rows") {
		t.Errorf("L under skewed activity: %q", l)
	}
}

func TestTrafficSaveLoad(t *testing.T) {
	dir := t.TempDir()
	want := withTraffic()
	want.Models[0].Traffic.Search.Steps[0].P999Ms = math.Inf(1)
	if err := Save(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != FormatVersion || got.Models[0].Traffic.Search.Steps[0].P999Ms != 0 {
		t.Fatalf("version %d, non-finite step %v", got.Version, got.Models[0].Traffic.Search.Steps[0].P999Ms)
	}
	want.Models[0].Traffic.Search.Steps[0].P999Ms = 0
	if !reflect.DeepEqual(got.Models, want.Models) {
		t.Errorf("traffic did not survive the round trip:\n%+v\n%+v", got.Models[0].Traffic, want.Models[0].Traffic)
	}
	// Scripts read the costs by these keys.
	raw, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"rows_read_per_op"`, `"rows_written_per_op"`, `"bytes_written_per_op"`, `"cpu_us_per_op"`,
		`"traffic"`, `"open_loop"`, `"rate_search"`, `"best_rate_per_sec"`} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("result.json lacks %s", key)
		}
	}
	f, err := os.Open(filepath.Join(dir, RatePNGFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("rate.png: %v", err)
	}
	// A run without a search writes no rate plot.
	plain := t.TempDir()
	if err := Save(plain, sample()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(plain, RatePNGFile)); !os.IsNotExist(err) {
		t.Errorf("rate.png without a search: %v", err)
	}

	var b bytes.Buffer
	if err := WriteCSV(&b, withTraffic()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	cpu := slices.Index(recs[0], cost.CPU)
	if cpu < 0 || slices.Contains(recs[0], costAllCPU) {
		t.Fatalf("CSV header %q: want %s and no derived column", recs[0], cost.CPU)
	}
	var traffic, costs int
	for _, r := range recs[1:] {
		if strings.HasPrefix(r[1], "traffic") {
			traffic++
		}
		if r[cpu] != "" {
			costs++
		}
	}
	// push: the total and 5 operations; pull-sp: the total and 2.
	if traffic != 9 || costs != 3 {
		t.Errorf("%d traffic rows and %d with a client CPU figure, want 9 and 3", traffic, costs)
	}
}

// TestCSVRateSearch: the CSV holds each searched model's highest rate
// within the objective and the latencies of the step that ran at it, and
// 0 without latencies when no step held.
func TestCSVRateSearch(t *testing.T) {
	r := withTraffic()
	sp := r.Model("pull-sp")
	sp.Traffic.Search = &RateSearch{SLOMs: 50, StepSeconds: 2, Steps: []RateStep{
		{RatePerSec: 300, OfferedPerSec: 301, AchievedPerSec: 200, P50Ms: 90, P99Ms: 700},
	}}
	var b bytes.Buffer
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return slices.Index(recs[0], name) }
	got := map[string][]string{}
	for _, rec := range recs[1:] {
		if len(rec) != len(CSVHeader) {
			t.Fatalf("row of %d cells, header of %d: %q", len(rec), len(CSVHeader), rec)
		}
		if rec[1] == CSVRateSearch {
			got[rec[0]] = rec
		}
	}
	if len(got) != 2 {
		t.Fatalf("rate search rows for %v, want push and pull-sp", slices.Sorted(maps.Keys(got)))
	}
	for _, c := range []struct {
		model, column, want string
	}{
		{"push", "ops_per_sec", "1500"}, // the best planned rate, not the step's 1,480 achieved
		{"push", "ops", "2960"},
		{"push", "seconds", "2"},
		{"push", "p50_ms", "2"},
		{"push", "p99_ms", "41"},
		{"push", "p90_ms", ""},
		{"push", "data_bytes", "2000000000"},
		{"push", "skipped", "false"},
		{"pull-sp", "ops_per_sec", "0"},
		{"pull-sp", "p99_ms", ""},
		{"pull-sp", "ops", ""},
	} {
		if v := got[c.model][col(c.column)]; v != c.want {
			t.Errorf("%s %s = %q, want %q", c.model, c.column, v, c.want)
		}
	}
}

// TestLoadVersion2: results saved before costs and traffic existed load,
// converted, with neither.
func TestLoadVersion2(t *testing.T) {
	r, err := Load(filepath.Join("testdata", "version2"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != FormatVersion || len(r.Models) == 0 || r.HasCosts() || r.Models[0].Traffic != nil {
		t.Fatalf("version %d, %d models, costs %v", r.Version, len(r.Models), r.HasCosts())
	}
	path := filepath.Join(t.TempDir(), JSONFile)
	if err := os.WriteFile(path, []byte(`{"version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "version 1") {
		t.Errorf("version 1 loaded: %v", err)
	}
}
