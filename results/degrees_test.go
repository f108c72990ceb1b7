package results

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDegreesOf(t *testing.T) {
	// 100 users: degrees 0..99, and one more user with 5,000.
	var counts []int
	for d := range 100 {
		counts = append(counts, d)
	}
	counts = append(counts, 5000)
	got := DegreesOf(counts)
	// Nearest rank over 101 users: the 51st and the 100th smallest.
	if got.Max != 5000 || got.P50 != 50 || got.P99 != 99 {
		t.Errorf("max %d, p99 %d, p50 %d; want 5000, 99, 50", got.Max, got.P99, got.P50)
	}
	want := []DegreeBin{
		{0, 0, 1}, {1, 1, 1}, {2, 2, 1}, {3, 3, 1}, {4, 5, 2}, {6, 7, 2}, {8, 11, 4}, {12, 15, 4},
		{16, 23, 8}, {24, 31, 8}, {32, 47, 16}, {48, 63, 16}, {64, 95, 32}, {96, 127, 4}, {4096, 6143, 1},
	}
	if !reflect.DeepEqual(got.Bins, want) {
		t.Errorf("bins\n%v, want\n%v", got.Bins, want)
	}
	if d := DegreesOf(nil); d.Max != 0 || d.Bins != nil {
		t.Errorf("no users: %+v", d)
	}
	if d := DegreesOf([]int{7}); d.Max != 7 || d.P99 != 7 || d.P50 != 7 {
		t.Errorf("one user: %+v", d)
	}
	for c := range 100_000 {
		lo, hi := degreeBin(c)
		if c < lo || c > hi {
			t.Fatalf("degree %d in bin [%d, %d]", c, lo, hi)
		}
		if c > 0 {
			if plo, phi := degreeBin(c - 1); plo != lo && phi != lo-1 {
				t.Fatalf("bins [%d, %d] and [%d, %d] leave a gap", plo, phi, lo, hi)
			}
		}
	}
}

func withDegrees() *Result {
	r := sample()
	r.Dataset.Graph, r.Dataset.GraphParams = "powerlaw(in=2.3, out=2.5)", map[string]float64{"in_exponent": 2.3, "out_exponent": 2.5}
	r.Dataset.Activity, r.Dataset.ActivityParams = "skewed(post=0.5, read=0.5)", map[string]float64{"post_exponent": 0.5, "read_exponent": 0.5}
	r.Dataset.SetDegrees(DegreesOf([]int{1, 2, 40, 300, 3000}), DegreesOf([]int{0, 3, 20, 500, 9999}))
	return r
}

// TestDegreeRecord: the degree figures are in result.json under their
// stable keys, survive a round trip, show in the table and are plotted.
func TestDegreeRecord(t *testing.T) {
	dir := t.TempDir()
	r := withDegrees()
	if err := Save(dir, r); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Dataset map[string]any `json:"dataset"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]float64{
		"max_followers": 9999, "p99_followers": 9999, "p50_followers": 20,
		"max_followees": 3000, "p99_followees": 3000, "p50_followees": 40,
	} {
		if got, ok := doc.Dataset[key].(float64); !ok || got != want {
			t.Errorf("dataset.%s = %v, want %v", key, doc.Dataset[key], want)
		}
	}
	for _, key := range []string{"graph", "graph_params", "activity", "activity_params", "follower_bins", "followee_bins"} {
		if _, ok := doc.Dataset[key]; !ok {
			t.Errorf("dataset.%s missing from %s", key, raw)
		}
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Dataset, r.Dataset) {
		t.Errorf("dataset after a round trip\n%+v, want\n%+v", got.Dataset, r.Dataset)
	}
	tab := table(t, got)
	if l := line(t, tab, "degrees:"); !strings.Contains(l, "followers per user: max 9,999, p99 9,999, p50 20; followees per user: max 3,000") {
		t.Errorf("degrees line %q", l)
	}
	if l := line(t, tab, "dataset:"); !strings.Contains(l, "powerlaw(in=2.3, out=2.5) graph") || !strings.Contains(l, "skewed(post=0.5, read=0.5) activity") {
		t.Errorf("dataset line %q", l)
	}

	f, err := os.Open(filepath.Join(dir, DegreesPNGFile))
	if err != nil {
		t.Fatalf("degrees plot not saved: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s does not decode: %v", DegreesPNGFile, err)
	}
	if b := img.Bounds(); b.Dx() != DegreesPNGWidth || b.Dy() != DegreesPNGHeight {
		t.Errorf("%s is %dx%d", DegreesPNGFile, b.Dx(), b.Dy())
	}
}

// TestDegreesPNGEdgeCases: distributions with nobody above 0, one degree,
// or everyone at 1 still plot.
func TestDegreesPNGEdgeCases(t *testing.T) {
	for _, c := range [][2][]int{
		{{0, 0, 0}, {0, 0, 0}},
		{{1, 1, 1}, {5, 5, 5}},
		{{0}, {1}},
		{{0, 1, 2, 3, 1000}, {7, 7, 7, 7, 7}},
	} {
		r := sample()
		r.Dataset.SetDegrees(DegreesOf(c[0]), DegreesOf(c[1]))
		if err := WriteDegreesPNG(filepath.Join(t.TempDir(), DegreesPNGFile), r); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
}

// TestLoadVersion2Degrees: results saved before format 4 load, converted: uniform
// activity, no degree percentiles, no plot of them.
func TestLoadVersion2Degrees(t *testing.T) {
	r, err := Load(filepath.Join("testdata", "version2", JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != FormatVersion || r.Dataset.Activity != "uniform" || r.Dataset.HasDegrees() || r.Dataset.MaxFollowers == 0 {
		t.Errorf("converted reference: version %d, dataset %+v", r.Version, r.Dataset)
	}
	if strings.Contains(table(t, r), "degrees:") {
		t.Error("the table of a version 2 result shows degree percentiles it does not have")
	}
	dir := t.TempDir()
	if err := Save(dir, r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, DegreesPNGFile)); !os.IsNotExist(err) {
		t.Errorf("a degrees plot without degree distributions: %v", err)
	}
	if err := WriteDegreesPNG(filepath.Join(dir, DegreesPNGFile), r); err == nil {
		t.Error("WriteDegreesPNG drew a result without degree distributions")
	}
	for _, v := range []int{1, 5} {
		path := filepath.Join(t.TempDir(), JSONFile)
		if err := os.WriteFile(path, []byte(`{"version": `+string(rune('0'+v))+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil {
			t.Errorf("version %d loaded", v)
		}
	}
}

// TestDegreesPNGDegenerate: a tiny dataset's distributions (everyone with
// the same count, or nobody above 0) still draw: a log axis needs a range.
func TestDegreesPNGDegenerate(t *testing.T) {
	for name, bins := range map[string][2][]DegreeBin{
		"one value": {{{Min: 3, Max: 3, Users: 20}}, {{Min: 3, Max: 3, Users: 20}}},
		"all zero":  {{{Min: 0, Max: 0, Users: 20}}, {{Min: 1, Max: 1, Users: 20}}},
	} {
		t.Run(name, func(t *testing.T) {
			r := &Result{Version: FormatVersion, Dataset: Dataset{Users: 20, FollowerBins: bins[0], FolloweeBins: bins[1]}}
			if err := WriteDegreesPNG(filepath.Join(t.TempDir(), DegreesPNGFile), r); err != nil {
				t.Fatal(err)
			}
		})
	}
}
