package results

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pushpull/pushpull/registry"
)

// sample is a run shaped like the paper's: push and pull-sp at the paper's
// figures, pull-client faster at retrieval, pull-naive with its older-page
// phase skipped.
func sample() *Result {
	start := time.Date(2026, 11, 23, 10, 15, 0, 123456789, time.UTC)
	phase := func(rate, p50, p99 float64) Phase {
		return Phase{Ops: int64(rate * 30), Seconds: 30, OpsPerSec: rate,
			P50Ms: p50, P90Ms: p50 * 2, P99Ms: p99, P999Ms: p99 * 2, MaxMs: p99 * 4}
	}
	return &Result{
		Version:    FormatVersion,
		StartedAt:  start,
		FinishedAt: start.Add(12*time.Minute + 34*time.Second),
		Command:    "pushpull bench --scale 1",
		Dataset: Dataset{Users: 10000, Messages: 1000000, AvgFollowees: 42.9, Seed: 1,
			Graph: "uniform", Edges: 429000, MaxFollowees: 80, MaxFollowers: 95,
			MailboxRows: 42900000, Scale: 1},
		Environment: Environment{ServerVersion: "11.4.2-MariaDB", Durability: Durable,
			InnoDB: map[string]string{"innodb_flush_log_at_trx_commit": "1",
				"innodb_buffer_pool_size": "134217728"},
			CPUs: 8, GoVersion: "go1.26.8", GitCommit: "abc1234", OS: "linux", Arch: "amd64",
			Concurrency: 16, PhaseSeconds: 30},
		Load: &DataLoad{Seconds: 95.5, Tables: []TableLoad{
			{Database: "push", Table: "mailbox", Rows: 42900000, Seconds: 80, RowsPerSec: 536250},
			{Database: "pull_sp", Table: "messages", Rows: 1000000, Seconds: 15.5, RowsPerSec: 64516.1},
		}},
		Harness:     &Phase{Ops: 30000000, Seconds: 30, OpsPerSec: 1e6, P50Ms: 0.01, P99Ms: 0.05},
		MemcacheGet: &Phase{Ops: 400000, Seconds: 10, OpsPerSec: 40000, P50Ms: 0.1, P99Ms: 1.2},
		Goals: []Goal{
			{Name: "cached retrieval / push retrieval", Value: 3.5, Target: 5, Detail: "push+memcache 35000/s, push 10000/s"},
			{Name: "cached retrieval / raw memcached get", Value: 0.8, Target: 0.5, Met: true},
		},
		Models: []Model{
			{Name: "push", Family: registry.FamilyPush, PaperModel: true, DataBytes: 2.0e9, DiskBytes: 2.2e9,
				Submit: phase(560, 20, 80), Retrieve: phase(1300.4, 5, 30), RetrieveOlder: phase(1100, 6, 35),
				Extra: map[string]float64{"rows_per_page": 20}},
			{Name: "pull-sp", Family: registry.FamilyPull, PaperModel: true, SharedSubmit: true, DataBytes: 130e6,
				Submit: phase(6700, 1.5, 9), Retrieve: phase(120, 100, 400), RetrieveOlder: phase(110, 110, 420),
				Mixed: &Phase{Ops: 100, Errors: 2, Seconds: 30, OpsPerSec: 3.33, P50Ms: 1, P99Ms: 2}},
			{Name: "pull-client", Family: registry.FamilyPull, PaperModel: true, SharedSubmit: true, DataBytes: 131e6,
				Submit: phase(6500, 1.6, 9.5), Retrieve: phase(240, 50, 200), RetrieveOlder: phase(230, 55, 210),
				Extra: map[string]float64{"hit_ratio": 0.953}},
			{Name: "pull-naive", Family: registry.FamilyPull, PaperModel: true, SharedSubmit: true, DataBytes: 129e6,
				Submit: phase(6600, 1.5, 9), Retrieve: phase(12, 900, 2500), RetrieveOlder: Phase{Skipped: true}},
		},
		Notes: []string{"pull-naive older pages skipped: too slow"},
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	want := sample()
	// Times in another zone are stored as UTC; the instant must survive.
	want.StartedAt = want.StartedAt.In(time.FixedZone("CET", 3600))
	if err := Save(dir, want); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{JSONFile, CSVFile, PNGFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("Save did not write %s: %v", name, err)
		}
		if fi.Size() == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	for _, path := range []string{dir, filepath.Join(dir, JSONFile)} {
		got, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		norm := *want
		norm.StartedAt = norm.StartedAt.UTC()
		norm.FinishedAt = norm.FinishedAt.UTC()
		if !reflect.DeepEqual(got, &norm) {
			t.Errorf("Load(%s) = %+v\nwant %+v", path, got, &norm)
		}
	}
	if want.StartedAt.Location() == time.UTC {
		t.Error("Save modified its argument")
	}
}

func TestSavePNG(t *testing.T) {
	dir := t.TempDir()
	r := sample()
	if err := Save(dir, r); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, PNGFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("result.png does not decode: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != pngWidth(len(r.Models)) || b.Dx() < PNGWidth || b.Dy() != PNGHeight {
		t.Errorf("result.png is %dx%d, want %dx%d", b.Dx(), b.Dy(), pngWidth(len(r.Models)), PNGHeight)
	}
}

func TestSaveNonFinite(t *testing.T) {
	r := sample()
	r.Models[0].Extra["hit_ratio"] = math.NaN()
	r.Models[1].Submit.OpsPerSec = math.Inf(1)
	dir := t.TempDir()
	if err := Save(dir, r); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Models[0].Extra["hit_ratio"]; ok {
		t.Error("NaN extra was saved")
	}
	if got.Models[1].Submit.OpsPerSec != 0 {
		t.Errorf("Inf rate saved as %v", got.Models[1].Submit.OpsPerSec)
	}
	if len(got.Notes) != len(r.Notes)+2 {
		t.Errorf("notes = %q, want the two replacements recorded", got.Notes)
	}
	if !math.IsNaN(r.Models[0].Extra["hit_ratio"]) {
		t.Error("Save modified its argument")
	}
}

func TestLoadMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nosuchrun")
	_, err := Load(dir)
	if err == nil {
		t.Fatal("Load of a missing dir succeeded")
	}
	if !strings.Contains(err.Error(), dir) || !strings.HasPrefix(err.Error(), "load result: ") {
		t.Errorf("error %q does not say what and where", err)
	}
	if !os.IsNotExist(errorsUnwrapAll(err)) {
		t.Errorf("error %q does not wrap a not-exist error", err)
	}
}

func errorsUnwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func TestLoadBadVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(path, []byte(`{"version": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("Load of version 99 gave %v", err)
	}
}

func table(t *testing.T, r *Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// line returns the first line of s that starts with prefix.
func line(t *testing.T, s, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no line starting with %q in\n%s", prefix, s)
	return ""
}

// section returns n lines of s from the first that starts with prefix (n <
// 0: all the rest).
func section(t *testing.T, s, prefix string, n int) string {
	t.Helper()
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines = lines[i:]
			if n >= 0 && n < len(lines) {
				lines = lines[:n]
			}
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("no line starting with %q in\n%s", prefix, s)
	return ""
}

// cells splits a table line into its cells, which are separated by at least
// two spaces.
func cells(l string) []string {
	return regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(l), -1)
}

func TestWriteTable(t *testing.T) {
	out := table(t, sample())
	t.Log("\n" + out)
	var heads string // the line above the first figure
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "data size (data+index)") && i > 0 {
			heads = lines[i-1]
			break
		}
	}
	for _, name := range []string{"push", "pull-sp", "pull-client", "pull-naive"} {
		if !strings.Contains(heads, name) {
			t.Errorf("model %s missing from the column heads", name)
		}
	}
	for prefix, want := range map[string][]string{
		"data size (data+index)": {"2.0 GB", "130 MB", "131 MB", "129 MB"},
		"disk size (files)":      {"2.2 GB", Dash},
		"submission":             {"560 msg/s", "6,700 msg/s"},
		"retrieval, newest page": {"1,300 timelines/s", "120 timelines/s", "12.0 timelines/s"},
		"retrieval, older page":  {"1,100 timelines/s", Dash},
		"mixed load":             {"3.33 ops/s", Dash},
		"hit_ratio":              {"0.953"},
		"harness":                {"1,000,000 ops/s"},
		"load":                   {"95.5 s"},
		"server":                 {"durable", "innodb_flush_log_at_trx_commit=1"},
		"dataset":                {"10,000 users", "1,000,000 messages", "42.9 followees"},
	} {
		l := line(t, out, prefix)
		for _, w := range want {
			if !strings.Contains(l, w) {
				t.Errorf("line %q lacks %q", l, w)
			}
		}
	}
	if !regexp.MustCompile(`\n +push\.mailbox: 42,900,000 rows in 80\.0 s, 536,250 rows/s\n`).MatchString(out) {
		t.Error("per-table load missing")
	}
	if l := line(t, out, "memcached:"); !strings.Contains(l, "40,000 gets/s") {
		t.Errorf("raw memcached rate: %q", l)
	}
	if l := line(t, out, "cached retrieval / push retrieval"); !strings.Contains(l, "3.50x") || !strings.Contains(l, "≥ 5.00x") || !strings.Contains(l, "NOT met") {
		t.Errorf("goal line %q", l)
	}
	if l := line(t, out, "cached retrieval / raw memcached get"); !strings.Contains(l, "0.8x") || strings.Contains(l, "NOT") {
		t.Errorf("goal line %q", l)
	}
	if l := line(t, out, "retrieval, older page"); strings.Contains(l, " 0 ") || strings.HasSuffix(l, " 0") {
		t.Errorf("skipped phase rendered as 0: %q", l)
	}
	older := section(t, out, "retrieval, older page", 3)
	if l := line(t, older, "  latency p50 / p99"); !strings.HasSuffix(l, Dash) || !strings.Contains(l, "6.00 ms / 35.0 ms") {
		t.Errorf("older-page latency row = %q", l)
	}
	if got, want := cells(line(t, older, "  errors")), []string{"errors", "0", "0", "0", Dash}; !reflect.DeepEqual(got, want) {
		t.Errorf("older-page errors row = %q, want %q", got, want)
	}
	if got, want := cells(line(t, section(t, out, "mixed load", 3), "  errors")), []string{"errors", Dash, "2", Dash, Dash}; !reflect.DeepEqual(got, want) {
		t.Errorf("mixed errors row = %q, want %q", got, want)
	}

	// Paper block and ratios: retrieval 1300/120 = 10.8x, data 2.0 GB / 130
	// MB = 15.4x, submission 560/6700 = 0.084x.
	if l := line(t, out, "paper (2008)  "); !strings.Contains(l, "15.4x") ||
		!strings.Contains(l, "0.084x") || !strings.Contains(l, "10.8x") {
		t.Errorf("paper ratios wrong: %q", l)
	}
	if l := line(t, out, "ours, push : pull"); !strings.Contains(l, "15.4x") ||
		!strings.Contains(l, "0.084x") || !strings.Contains(l, "10.8x") {
		t.Errorf("push:pull-sp ratios wrong: %q", l)
	}
	// Best pull: smallest data (pull-naive, 2000/129 = 15.5x), fastest
	// submission (pull-sp), fastest retrieval (pull-client, 1300.4/240 =
	// 5.42x).
	if l := line(t, out, "ours, push : best pull"); !strings.Contains(l, "15.5x (pull-naive)") ||
		!strings.Contains(l, "0.084x (pull-sp)") || !strings.Contains(l, "5.42x (pull-client)") {
		t.Errorf("push:best pull ratios wrong: %q", l)
	}
	if l := line(t, section(t, out, "paper (2008):", 5), "retrieval"); !strings.Contains(l, "1,300 timelines/s") || !strings.Contains(l, "120 timelines/s") {
		t.Errorf("paper retrieval row wrong: %q", l)
	}
	if !strings.Contains(out, "Kazuho Oku") {
		t.Error("paper not cited")
	}
	if strings.Contains(out, "RUN FAILED") {
		t.Error("successful run shown as failed")
	}
}

func TestWriteTableFailedAndMissing(t *testing.T) {
	r := sample()
	r.Failures = []string{"push: submit: deadlock"}
	r.Models = r.Models[:1] // push only: no pull to compare with
	r.Models[0].Submit = Phase{Skipped: true}
	out := table(t, r)
	if !strings.Contains(line(t, out, "RUN FAILED"), "deadlock") {
		t.Error("failure not shown")
	}
	if l := line(t, out, "submission"); !strings.HasSuffix(l, Dash) {
		t.Errorf("skipped submission shown as %q", l)
	}
	if l := line(t, out, "ours, push : pull"); strings.Count(l, Dash) != 3 {
		t.Errorf("ratios without a pull model: %q", l)
	}
	if strings.Contains(out, "mixed") {
		t.Error("mixed row shown though no model ran it")
	}
}

func TestWriteCSV(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCSV(&b, sample()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// Header, 4 models x 3 phases, pull-sp's mixed phase, the harness,
	// the raw memcached gets.
	if len(recs) != 1+12+1+1+1 {
		t.Fatalf("%d records, want 16:\n%q", len(recs), recs)
	}

	if !reflect.DeepEqual(recs[0], CSVHeader) || recs[0][0] != "model" || recs[0][12] != "disk_bytes" {
		t.Errorf("header = %q", recs[0])
	}
	find := func(model, phase string) []string {
		for _, r := range recs {
			if r[0] == model && r[1] == phase {
				return r
			}
		}
		t.Fatalf("no row for %s %s", model, phase)
		return nil
	}
	if r := find("memcached", "get"); r == nil || r[5] != "40000" {
		t.Errorf("memcached row %q", r)
	}
	if r := find("push", "retrieve"); r[5] != "1300.4" || r[2] != "39012" || r[11] != "2000000000" || r[12] != "2200000000" {
		t.Errorf("push retrieve row = %q", r)
	}
	if r := find("pull-sp", "submit"); r[12] != "" {
		t.Errorf("unmeasured disk size written as %q", r[12])
	}
	if r := find("pull-naive", "retrieve_older"); r[5] != "" || r[13] != "true" {
		t.Errorf("skipped phase row = %q", r)
	}
	if r := find("harness", "noop"); r[5] != "1000000" {
		t.Errorf("harness row = %q", r)
	}
}

func TestPhaseFromHistogram(t *testing.T) {
	h := hdrhistogram.New(1, 60_000_000, 3)
	for us := int64(1); us <= 1000; us++ { // 1 µs .. 1 ms, once each
		if err := h.RecordValue(us); err != nil {
			t.Fatal(err)
		}
	}
	p := PhaseFromHistogram(h, 1000, 3, 4)
	want := Phase{Ops: 1000, Errors: 3, Seconds: 4, OpsPerSec: 250,
		P50Ms: 0.5, P90Ms: 0.9, P99Ms: 0.99, P999Ms: 0.999, MaxMs: 1}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("PhaseFromHistogram = %+v\nwant %+v", p, want)
	}

	if p := PhaseFromHistogram(nil, 0, 5, 0); !reflect.DeepEqual(p, Phase{Errors: 5}) || !p.Ran() || p.HasLatency() {
		t.Errorf("empty phase = %+v, ran %v", p, p.Ran())
	}
}

func TestFailedAndModel(t *testing.T) {
	r := sample()
	if r.Failed() {
		t.Error("Failed on a clean run")
	}
	r.Failures = append(r.Failures, "x")
	if !r.Failed() {
		t.Error("not Failed with a failure")
	}
	if m := r.Model("pull-sp"); m == nil || m.DataBytes != 130e6 {
		t.Errorf("Model(pull-sp) = %+v", m)
	}
	r.Model("push").DataBytes = 7
	if r.Models[0].DataBytes != 7 {
		t.Error("Model does not point into the result")
	}
	if r.Model("nope") != nil {
		t.Error("Model of a missing name is not nil")
	}
}

func TestPaperFor(t *testing.T) {
	for _, m := range sample().Models {
		want := map[registry.Family]float64{registry.FamilyPush: 1300, registry.FamilyPull: 120}[m.Family]
		f, ok := PaperFor(&m)
		if !ok || f.RetrievePerSec != want {
			t.Errorf("PaperFor(%s) = %+v, %v", m.Name, f, ok)
		}
	}
	if _, ok := PaperFor(&Model{Name: "noop", Family: "reference"}); ok {
		t.Error("PaperFor(noop) found figures")
	}
}

func TestRunDir(t *testing.T) {
	at := time.Date(2026, 11, 23, 11, 15, 0, 0, time.FixedZone("CET", 3600))
	if got, want := RunDir("results/runs", at), filepath.Join("results/runs", "20261123T101500Z"); got != want {
		t.Errorf("RunDir = %q, want %q", got, want)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{fmtBytes(2.0e9), "2.0 GB"}, {fmtBytes(130e6), "130 MB"}, {fmtBytes(999_960_000), "1.0 GB"},
		{fmtBytes(9_960_000), "10 MB"}, {fmtBytes(512), "512 B"}, {fmtBytes(1500), "1.5 kB"},
		{fmtRate(1300.4, "msg/s"), "1,300 msg/s"}, {fmtRate(45.67, "msg/s"), "45.7 msg/s"},
		{fmtRate(1234567, "ops/s"), "1,234,567 ops/s"}, {fmtMs(0.123), "0.12 ms"},
		{fmtRatio(1300.0 / 120), "10.8x"}, {fmtRatio(560.0 / 6700), "0.084x"},
		{fmtRatio(math.NaN()), Dash}, {fmtInt(-1234), "-1,234"}, {fmtInt(999), "999"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestWriteComparison(t *testing.T) {
	a, b := sample(), sample()
	b.Models[0].Retrieve.OpsPerSec = 2600.8 // push retrieval doubled
	b.Models = append(b.Models[:3], Model{Name: "push+memcache", Family: registry.FamilyPush, Base: "push", DataBytes: 2.1e9,
		Submit: Phase{Ops: 1, Seconds: 1, OpsPerSec: 500}})
	b.Environment.Durability = Relaxed
	var buf bytes.Buffer
	if err := WriteComparison(&buf, a, b); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Log("\n" + out)
	if !strings.Contains(out, "durability differs") {
		t.Error("durability difference not called out")
	}
	if strings.Contains(out, "datasets differ") {
		t.Error("equal datasets called different")
	}
	sections := map[string]string{}
	var cur string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, " ") {
			cur = l
		}
		sections[cur] += l + "\n"
	}
	push := sections["push"]
	if l := line(t, push, "  retrieval, newest page"); !strings.Contains(l, "1,300 timelines/s") ||
		!strings.Contains(l, "2,601 timelines/s") || !strings.HasSuffix(l, "2.00x") {
		t.Errorf("push retrieval comparison = %q", l)
	}
	naive := sections["pull-naive"]
	if l := line(t, naive, "  data size"); !strings.Contains(l, "129 MB") || strings.Count(l, Dash) != 2 {
		t.Errorf("model only in a = %q", l)
	}
	mc := sections["push+memcache"]
	if l := line(t, mc, "  submission"); !strings.Contains(l, "500 msg/s") || strings.Count(l, Dash) != 2 {
		t.Errorf("model only in b = %q", l)
	}
	if l := line(t, sections["harness"], "  no-op store"); !strings.HasSuffix(l, "1.00x") {
		t.Errorf("harness comparison = %q", l)
	}
}

// TestComparisonRateSearch: two runs that searched for the highest rate
// within the objective are compared on it; an objective that differs is
// named on both sides, and runs without searches have no such row.
func TestComparisonRateSearch(t *testing.T) {
	a, b := withTraffic(), withTraffic()
	b.Model("push").Traffic.Search.BestPerSec = 3000
	compare := func(a, b *Result) string {
		var buf bytes.Buffer
		if err := WriteComparison(&buf, a, b); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	out := compare(a, b)
	t.Log("\n" + out)
	if l := line(t, out, "  highest rate at p99 ≤ 50.0 ms"); !strings.Contains(l, "1,500 ops/s") ||
		!strings.Contains(l, "3,000 ops/s") || !strings.HasSuffix(l, "2.00x") {
		t.Errorf("rate search comparison = %q", l)
	}
	b.Model("push").Traffic.Search.SLOMs = 20
	if l := line(t, compare(a, b), "  highest rate within p99 objective (a ≤ 50.0 ms, b ≤ 20.0 ms)"); !strings.Contains(l, "3,000 ops/s") {
		t.Errorf("differing objectives = %q", l)
	}
	if plain := compare(sample(), sample()); strings.Contains(plain, "highest rate") {
		t.Errorf("runs without searches compared on one:\n%s", plain)
	}
}

// TestJudgeCachedSubmission: the cached push model's post rate is judged
// against push's, met at 0.8 of it; a cached pull model's is not judged.
func TestJudgeCachedSubmission(t *testing.T) {
	phase := func(rate float64) Phase { return Phase{Ops: int64(rate), Seconds: 1, OpsPerSec: rate} }
	r := &Result{Models: []Model{
		{Name: "a", Family: registry.FamilyPush, PaperModel: true, Submit: phase(2000)},
		{Name: "a+c", Family: registry.FamilyPush, Base: "a", Submit: phase(1700)},
		{Name: "b", Family: registry.FamilyPull, PaperModel: true, Submit: phase(1000)},
		{Name: "b+c", Family: registry.FamilyPull, Base: "b", Submit: phase(500)},
	}}
	r.Judge()
	got := map[string]Goal{}
	for _, g := range r.Goals {
		got[g.Name] = g
	}
	if g, ok := got["a+c submission / a submission"]; !ok || !g.Met || g.Value != 0.85 {
		t.Errorf("a+c: %+v (found %v)", g, ok)
	}
	if g, ok := got["b+c submission / b submission"]; ok {
		t.Errorf("b+c judged: %+v", g)
	}
}
