package results

import (
	"bytes"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestPlanCheckRates: a check's rate rows print with their ratio and
// error, a search in which no step held counts as outside the band, the
// summary counts those within 30%, and they are saved, loaded back and
// drawn as a third panel.
func TestPlanCheckRates(t *testing.T) {
	steal := func(v float64) *float64 { return &v }
	c := &PlanCheck{Version: PlanCheckFormatVersion, Runs: []string{"a"}, RateBasis: "2 cores",
		Rows: []PlanCheckRow{{Run: "uniform, 1,000 users", Model: "push", Phase: "traffic",
			Measured: PlanWork{RowsRead: 40}, Predicted: PlanWork{RowsRead: 42}, MeasuredCPUUs: 120, PredictedCPUUs: 110}},
		Rates: []PlanRateRow{
			{Run: "uniform, 1,000 users", Model: "push", SLOMs: 50, Cores: 2, MeasuredPerSec: 8000, FailedPerSec: 8800, PredictedPerSec: 10000, CeilingPerSec: 11000, PredictedCPUUs: 180, MeasuredCPUUs: 230, BusyShare: 0.914, FailedSteal: steal(0.12)},
			{Run: "uniform, 1,000 users", Model: "pull-sp", SLOMs: 50, Cores: 2, MeasuredPerSec: 1000, FailedPerSec: 1100, FailedSteal: steal(0.02), PredictedPerSec: 1400, CeilingPerSec: 1500, PredictedCPUUs: 1300},
			{Run: "uniform, 1,000 users", Model: "pull-client", SLOMs: 50, Cores: 2, PredictedPerSec: 300, CeilingPerSec: 600, PredictedCPUUs: 3000},
		}}
	if n, w := c.RateSummary(); n != 3 || w != 1 {
		t.Errorf("summary %d rows, %d within 30%%; want 3 and 1", n, w)
	}
	var out bytes.Buffer
	if err := WritePlanCheck(&out, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"8,000", "8,800", "10,000", "1.25", "+25%", "1.40", "+40%", "none held", "230 / 180", "91%", "1 of 3 designs predicted within 30%", "2 cores",
		"12.0%", "2.0%", "7.0% at the median of 2; above 5% in 1, of which 0 missed by more than 30%; 1 of the other 1 missed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	dir := t.TempDir()
	if err := SavePlanCheck(dir, c); err != nil {
		t.Fatal(err)
	}
	back, err := LoadPlanCheck(dir)
	if err != nil || len(back.Rates) != 3 || !reflect.DeepEqual(back.Rates, c.Rates) || back.RateBasis != c.RateBasis {
		t.Fatalf("loaded %v: %+v", err, back)
	}
	if w, h := checkPlotSize(t, dir); w <= 3*h {
		t.Errorf("plot %dx%d: want three panels side by side", w, h)
	}
}

// checkPlotSize is the width and height of the plot SavePlanCheck saved
// in dir.
func checkPlotSize(t *testing.T, dir string) (width, height int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, PlanCheckPNGFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return img.Width, img.Height
}

// TestPlanCheckRepeatedRates: rate rows of one design, workload,
// objective and cores are one measurement repeated; the check sets their
// median prediction against the median of their rates, counts them and
// their spread, prints them and draws them as a panel of their own, while
// rows of another workload (here a mix) or made once stay out; a check
// with no repeat prints no such table.
func TestPlanCheckRepeatedRates(t *testing.T) {
	const u, w = "uniform, 3,000 users", "mix newest=76"
	row := func(model, workload string, measured, predicted float64) PlanRateRow {
		return PlanRateRow{Run: u, Model: model, SLOMs: 50, Cores: 2, Workload: workload, MeasuredPerSec: measured, PredictedPerSec: predicted}
	}
	c := &PlanCheck{Rates: []PlanRateRow{
		row("push", w, 1000, 1210), row("pull-sp", w, 300, 500), row("push", w, 1400, 1190), row("push", w, 1100, 1200),
		row("pull-sp", w, 0, 510), row("push", "mix newest=50", 900, 1500), row("hybrid", w, 700, 720),
	}}
	got := c.RepeatedRates()
	if len(got) != 2 {
		t.Fatalf("repeats %+v; want push's three runs and pull-sp's two", got)
	}
	push, sp := got[0], got[1]
	if push.Model != "push" || !slices.Equal(push.MeasuredPerSec, []float64{1000, 1100, 1400}) || push.PredictedPerSec != 1200 ||
		push.MedianPerSec() != 1100 || math.Abs(push.ErrorPct()-100.0/11) > 1e-9 || math.Abs(push.Spread()-1.4) > 1e-9 {
		t.Errorf("push: %+v, median %v, error %v, spread %v; want 1,000 to 1,400 around 1,100, predicted 1,200 (+9.1%%), spread 1.4",
			push, push.MedianPerSec(), push.ErrorPct(), push.Spread())
	}
	if sp.Model != "pull-sp" || sp.MedianPerSec() != 150 || sp.PredictedPerSec != 505 || !math.IsInf(sp.Spread(), 1) {
		t.Errorf("pull-sp: %+v, median %v, spread %v; want 0 and 300 around 150, predicted 505, a run without a held step spreading without bound",
			sp, sp.MedianPerSec(), sp.Spread())
	}
	if n, within, spread := c.RepeatSummary(); n != 2 || within != 1 || spread != 2 {
		t.Errorf("summary %d repeats, %d within 30%%, %d spread over 30%%; want 2, 1, 2", n, within, spread)
	}
	var out bytes.Buffer
	if err := WritePlanCheck(&out, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1,100 ops/s", "1.40", "1,200 ops/s", "1.09", "+9%", "none held", "1 of 2 predicted within 30% of their runs' median", "more than 30% (highest over lowest) for 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	dir := t.TempDir()
	if err := SavePlanCheck(dir, c); err != nil {
		t.Fatal(err)
	}
	if w, h := checkPlotSize(t, dir); w <= 4*h {
		t.Errorf("plot %dx%d: want four panels side by side, the last the medians", w, h)
	}
	out.Reset()
	c.Rates = c.Rates[:2]
	if err := WritePlanCheck(&out, c); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "several runs") {
		t.Errorf("a check without repeats printed a table of them:\n%s", out.String())
	}
}

// TestRunCPUOffsets: a check gives, per run and phase, the median over
// the designs of measured over predicted CPU (rows without a measured CPU
// left out), in the order the runs and phases first appear, and prints
// it: a figure away from 1 in every phase of one run says that run's
// machine, not a design, departs from the calibration.
func TestRunCPUOffsets(t *testing.T) {
	row := func(run, model, phase string, m, p float64) PlanCheckRow {
		return PlanCheckRow{Run: run, Model: model, Phase: phase, MeasuredCPUUs: m, PredictedCPUUs: p}
	}
	a, b := "uniform, 1,000 users", "uniform, 3,000 users"
	c := &PlanCheck{Rows: []PlanCheckRow{
		row(a, "push", "retrieve", 110, 100), row(a, "pull-sp", "retrieve", 990, 900), row(a, "pull-sp", "retrieve", 0, 900),
		row(a, "push", "submit", 120, 100), row(a, "pull-sp", "submit", 100, 100), row(a, "selective", "submit", 140, 100),
		row(b, "push", "submit", 80, 100), row(b, "pull-sp", "submit", 90, 100), row(b, "push", "traffic", 60, 100),
	}}
	got := c.RunCPUOffsets()
	want := []RunCPUOffset{
		{Run: a, Phases: []PhaseCPUOffset{{Phase: "retrieve", Median: 1.1, Designs: 2}, {Phase: "submit", Median: 1.2, Designs: 3}}},
		{Run: b, Phases: []PhaseCPUOffset{{Phase: "submit", Median: 0.85, Designs: 2}, {Phase: "traffic", Median: 0.6, Designs: 1}}},
	}
	if len(got) != len(want) {
		t.Fatalf("offsets %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i].Run != want[i].Run || len(got[i].Phases) != len(want[i].Phases) {
			t.Fatalf("offsets %+v; want %+v", got, want)
		}
		for j, w := range want[i].Phases {
			g := got[i].Phases[j]
			if g.Phase != w.Phase || g.Designs != w.Designs || math.Abs(g.Median-w.Median) > 1e-9 {
				t.Errorf("%s: %+v; want %+v", want[i].Run, g, w)
			}
		}
	}
	var out bytes.Buffer
	if err := WritePlanCheck(&out, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CPU measured / predicted, median over the designs", "1.10 (2)", "1.20 (3)", "0.85 (2)", "0.60 (1)",
		b + ": every phase cost 0.60 to 0.85 times the CPU predicted: its machine ran faster"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	// Run a's phases sit at 1.10 and 1.20: one within the designs'
	// spread, so its machine is not called off.
	if strings.Contains(out.String(), a+": every phase") {
		t.Errorf("run %s called off its calibration:\n%s", a, out.String())
	}
}

// TestCPUFactorsAtSize: factors with a size exponent grow with the store
// as (M / Messages)^exponent, the mix factor as it is; without one, or at
// a size that is not one, they stay; a calibration with an exponent out
// of bounds, or one without the size it stands for, is refused by name,
// and the exponent survives a save and a load.
func TestCPUFactorsAtSize(t *testing.T) {
	f := CPUFactors{Newest: 2, Older: 3, Post: 4, Mix: 1.5, Phases: 8, Messages: 100_000, SizeExponent: 0.1}
	g := f.At(300_000)
	want := math.Pow(3, 0.1)
	for _, x := range []struct {
		name      string
		got, want float64
	}{{"newest", g.Newest, 2 * want}, {"older", g.Older, 3 * want}, {"post", g.Post, 4 * want}, {"mix", g.Mix, 1.5}} {
		if math.Abs(x.got-x.want) > 1e-9 {
			t.Errorf("%s at 3x the messages: %v, want %v", x.name, x.got, x.want)
		}
	}
	if g := f.At(100_000); g != f {
		t.Errorf("at its own size: %+v, want %+v", g, f)
	}
	for _, m := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if g := f.At(m); g != f {
			t.Errorf("at %v messages: %+v, want the factors as they are", m, g)
		}
	}
	flat := CPUFactors{Newest: 2, Older: 3, Post: 4, Mix: 1}
	if g := flat.At(1e9); g != flat {
		t.Errorf("without an exponent at 10^9 messages: %+v", g)
	}

	for _, bad := range []CPUFactors{
		{Newest: 1, Older: 1, Post: 1, Mix: 1, Messages: 1e5, SizeExponent: 1.5},
		{Newest: 1, Older: 1, Post: 1, Mix: 1, Messages: 1e5, SizeExponent: math.NaN()},
		{Newest: 1, Older: 1, Post: 1, Mix: 1, Messages: 0, SizeExponent: 0.1},
		{Newest: 1, Older: 1, Post: 1, Mix: 1, Messages: -5},
	} {
		c := &Calibration{Factors: map[string]CPUFactors{"push": bad}}
		var fe *FactorError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Model != "push" || !strings.Contains(err.Error(), "want") {
			t.Errorf("factors %+v: %v, want a FactorError for push", bad, err)
		}
	}

	dir := t.TempDir()
	c := &Calibration{Version: CalibrationFormatVersion, DBRowReadUs: 1, Factors: map[string]CPUFactors{"pull-client": f, "push": flat}}
	if err := SaveCalibration(dir, c); err != nil {
		t.Fatal(err)
	}
	back, err := LoadCalibration(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Factors["pull-client"]; got != f {
		t.Errorf("loaded back: %+v, want %+v", got, f)
	}
	if got := back.Factors["push"]; got != flat {
		t.Errorf("loaded back without an exponent: %+v, want %+v", got, flat)
	}
	var out bytes.Buffer
	if err := WriteCalibration(&out, back); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "+0.100") || !strings.Contains(out.String(), "size exponent") {
		t.Errorf("the calibration printed without its size exponent:\n%s", out.String())
	}
}

// TestCPUFactorsOpen: a design's open factor is 1 when none was fitted;
// a calibration whose open factor is negative or not a number is
// refused by name; it survives a save and a load, and the calibration
// prints it beside the other factors only when one was fitted.
func TestCPUFactorsOpen(t *testing.T) {
	if f := (CPUFactors{Newest: 1, Older: 1, Post: 1, Mix: 1}); f.OpenFactor() != 1 {
		t.Errorf("no open factor reads as %v, want 1", f.OpenFactor())
	}
	for _, v := range []float64{-0.5, math.NaN(), math.Inf(1)} {
		c := &Calibration{Factors: map[string]CPUFactors{"pull-client": {Newest: 1, Older: 1, Post: 1, Mix: 1, Open: v}}}
		var fe *FactorError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Model != "pull-client" || fe.Phase != "open" {
			t.Errorf("open factor %v: %v, want a FactorError for pull-client's open", v, err)
		}
	}
	open := CPUFactors{Newest: 1, Older: 1, Post: 1, Mix: 1.2, Phases: 4, Open: 1.17}
	flat := CPUFactors{Newest: 1, Older: 1, Post: 1, Mix: 1}
	var before bytes.Buffer
	if err := WriteCalibration(&before, &Calibration{Factors: map[string]CPUFactors{"push": flat}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(before.String(), "at a rate") {
		t.Errorf("a calibration without open factors printed a column of them:\n%s", before.String())
	}
	dir := t.TempDir()
	c := &Calibration{Version: CalibrationFormatVersion, DBRowReadUs: 1, Factors: map[string]CPUFactors{"pull-client": open, "push": flat}}
	if err := SaveCalibration(dir, c); err != nil {
		t.Fatal(err)
	}
	back, err := LoadCalibration(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Factors["pull-client"]; got != open {
		t.Errorf("loaded back: %+v, want %+v", got, open)
	}
	if got := back.Factors["push"]; got != flat || got.OpenFactor() != 1 {
		t.Errorf("loaded back without an open factor: %+v", got)
	}
	var out bytes.Buffer
	if err := WriteCalibration(&out, back); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "at a rate") || !strings.Contains(s, "1.17") {
		t.Errorf("the calibration printed without its open factor:\n%s", s)
	}
}

// TestCPUFactorsSaturation: a design's saturation share is 1 when none
// was measured; one above 1, below 0 or not a number is refused by name;
// it survives a save and a load and prints as a percentage.
func TestCPUFactorsSaturation(t *testing.T) {
	if f := (CPUFactors{Newest: 1, Older: 1, Post: 1, Mix: 1}); f.SaturationShare() != 1 {
		t.Errorf("no saturation share reads as %v, want 1", f.SaturationShare())
	}
	for _, v := range []float64{-0.1, 1.2, math.NaN(), math.Inf(1)} {
		c := &Calibration{Factors: map[string]CPUFactors{"push-redis": {Newest: 1, Older: 1, Post: 1, Mix: 1, Saturation: v}}}
		var fe *FactorError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Model != "push-redis" || fe.Phase != "saturation" {
			t.Errorf("saturation %v: %v, want a FactorError for push-redis's saturation", v, err)
		}
	}
	f := CPUFactors{Newest: 1, Older: 1, Post: 1, Mix: 1.2, Phases: 4, Saturation: 0.83}
	dir := t.TempDir()
	if err := SaveCalibration(dir, &Calibration{Version: CalibrationFormatVersion, DBRowReadUs: 1, Factors: map[string]CPUFactors{"push-redis": f}}); err != nil {
		t.Fatal(err)
	}
	back, err := LoadCalibration(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Factors["push-redis"]; got != f {
		t.Errorf("loaded back: %+v, want %+v", got, f)
	}
	var out bytes.Buffer
	if err := WriteCalibration(&out, back); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "saturates at") || !strings.Contains(s, "83 %") {
		t.Errorf("the calibration printed without its saturation share:\n%s", s)
	}
}
