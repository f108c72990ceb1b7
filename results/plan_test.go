package results

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanCheckRates: a check's rate rows print with their ratio and
// error, a search in which no step held counts as outside the band, the
// summary counts those within 30%, and they are saved, loaded back and
// drawn as a third panel.
func TestPlanCheckRates(t *testing.T) {
	c := &PlanCheck{Version: PlanCheckFormatVersion, Runs: []string{"a"}, RateBasis: "2 cores",
		Rows: []PlanCheckRow{{Run: "uniform, 1,000 users", Model: "push", Phase: "traffic",
			Measured: PlanWork{RowsRead: 40}, Predicted: PlanWork{RowsRead: 42}, MeasuredCPUUs: 120, PredictedCPUUs: 110}},
		Rates: []PlanRateRow{
			{Run: "uniform, 1,000 users", Model: "push", SLOMs: 50, Cores: 2, MeasuredPerSec: 8000, FailedPerSec: 8800, PredictedPerSec: 10000, CeilingPerSec: 11000, PredictedCPUUs: 180, MeasuredCPUUs: 230, BusyShare: 0.914},
			{Run: "uniform, 1,000 users", Model: "pull-sp", SLOMs: 50, Cores: 2, MeasuredPerSec: 1000, PredictedPerSec: 1400, CeilingPerSec: 1500, PredictedCPUUs: 1300},
			{Run: "uniform, 1,000 users", Model: "pull-client", SLOMs: 50, Cores: 2, PredictedPerSec: 300, CeilingPerSec: 600, PredictedCPUUs: 3000},
		}}
	if n, w := c.RateSummary(); n != 3 || w != 1 {
		t.Errorf("summary %d rows, %d within 30%%; want 3 and 1", n, w)
	}
	var out bytes.Buffer
	if err := WritePlanCheck(&out, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"8,000", "8,800", "10,000", "1.25", "+25%", "1.40", "+40%", "none held", "230 / 180", "91%", "1 of 3 designs predicted within 30%", "2 cores"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	dir := t.TempDir()
	if err := SavePlanCheck(dir, c); err != nil {
		t.Fatal(err)
	}
	back, err := LoadPlanCheck(dir)
	if err != nil || len(back.Rates) != 3 || back.Rates[0] != c.Rates[0] || back.RateBasis != c.RateBasis {
		t.Fatalf("loaded %v: %+v", err, back)
	}
	f, err := os.Open(filepath.Join(dir, PlanCheckPNGFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.DecodeConfig(f)
	if err != nil || img.Width <= 3*img.Height {
		t.Errorf("plot %dx%d (%v): want three panels side by side", img.Width, img.Height, err)
	}
}
