package results

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/pushpull/pushpull/internal/cost"
)

// sweepMetric is one figure a sweep plots against its parameter.
type sweepMetric struct {
	file, title, unit string
	// unit is the y axis's; "" means the phase's own (ops/s, msg/s).
	// value is the figure of phase p of model m, or NaN when not
	// measured; p is nil for the per-model figures (data size).
	value func(m *Model, p *Phase) float64
}

var sweepMetrics = []sweepMetric{
	{SweepRatePNGFile, "rate", "", func(_ *Model, p *Phase) float64 {
		if !p.Ran() {
			return math.NaN()
		}
		return positive(p.OpsPerSec)
	}},
	{SweepP99PNGFile, "p99 latency", "ms", func(_ *Model, p *Phase) float64 {
		if !p.HasLatency() {
			return math.NaN()
		}
		return positive(p.P99Ms)
	}},
	{SweepCostPNGFile, "rows read + written per operation", "rows/op", func(_ *Model, p *Phase) float64 {
		r, okR := p.Cost[cost.RowsRead]
		w, okW := p.Cost[cost.RowsWritten]
		if !okR && !okW {
			return math.NaN()
		}
		return positive(r + w)
	}},
	{SweepSizePNGFile, "data size (data+index)", "MB", func(m *Model, _ *Phase) float64 {
		return positive(float64(m.DataBytes) / 1e6)
	}},
}

// writeSweepPNGs draws every metric of s into dir: a panel per phase that
// ran anywhere in the sweep (one panel for the data size), a line per
// model, the parameter on the x axis. An axis is logarithmic when its
// values span 10x or more, so that growth by a power shows as a straight
// line and its slope can be read off.
func writeSweepPNGs(dir string, s *Sweep) error {
	for _, m := range sweepMetrics {
		if err := writeSweepPNG(filepath.Join(dir, m.file), s, m); err != nil {
			return fmt.Errorf("write %s: %w", m.file, err)
		}
	}
	return nil
}

// sweepPanel is one panel of a sweep's plot: a line per model of value
// (NaN where there is none) against the parameter.
type sweepPanel struct {
	label, unit string
	value       func(m *Model) float64
}

// sweepPanels are metric's panels: one per phase that ran anywhere in s
// (one for the data size), and for the rate, when the runs searched for
// it, one of each model's highest rate within the latency objective.
func sweepPanels(s *Sweep, metric sweepMetric) []sweepPanel {
	if metric.file == SweepSizePNGFile {
		return []sweepPanel{{metric.title, metric.unit, func(m *Model) float64 { return metric.value(m, nil) }}}
	}
	var out []sweepPanel
	for _, ref := range phaseRefs {
		if !sweepRan(s, ref) {
			continue
		}
		unit := metric.unit
		if unit == "" {
			unit = ref.unit
		}
		out = append(out, sweepPanel{ref.label, unit, func(m *Model) float64 {
			if p := ref.get(m); p != nil {
				return metric.value(m, p)
			}
			return math.NaN()
		}})
	}
	if slo := s.SearchSLOMs(); metric.file == SweepRatePNGFile && slo > 0 {
		out = append(out, sweepPanel{"highest rate at p99 ≤ " + fmtMs(slo), "ops/s", func(m *Model) float64 {
			if !m.Traffic.Searched() {
				return math.NaN()
			}
			return positive(m.Traffic.Search.BestPerSec)
		}})
	}
	return out
}

func writeSweepPNG(path string, s *Sweep, metric sweepMetric) error {
	names := s.ModelNames()
	var plots []*plot.Plot
	for _, panel := range sweepPanels(s, metric) {
		p := plot.New()
		p.Title.Text = panel.label
		p.X.Label.Text = s.Label
		p.Y.Label.Text = panel.unit
		p.Legend.Top = true
		var lo, hi float64 = math.Inf(1), 0
		for i, name := range names {
			var pts plotter.XYs
			for _, pt := range s.Points {
				if pt.Result == nil {
					continue
				}
				m := pt.Result.Model(name)
				if m == nil {
					continue
				}
				v := panel.value(m)
				if math.IsNaN(v) || (s.LogX && !(pt.Value > 0)) {
					continue
				}
				pts = append(pts, plotter.XY{X: pt.Value, Y: v})
				lo, hi = min(lo, v), max(hi, v)
			}
			if len(pts) == 0 {
				continue
			}
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			c := lineColor(i)
			l.Color, sc.Color = c, c
			l.Width = vg.Points(1.5)
			sc.Shape = draw.CircleGlyph{}
			p.Add(l, sc)
			p.Legend.Add(name, l, sc)
		}
		if s.LogX {
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = logTicks{}
		} else {
			p.X.Tick.Marker = plainTicks{}
		}
		if hi > 0 && hi >= 10*lo {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = logTicks{}
		} else {
			p.Y.Min = 0
			p.Y.Tick.Marker = plainTicks{}
			if hi > 0 {
				p.Y.Max = hi * 1.15
			} else {
				p.Y.Max = 1
			}
		}
		plots = append(plots, p)
	}
	if len(plots) == 0 {
		plots = append(plots, plot.New())
		plots[0].Title.Text = "nothing measured"
	}

	px := func(n int) vg.Length { return vg.Length(n) * vg.Inch / vgimg.DefaultDPI }
	width := max(PNGWidth*2/3, len(plots)*PNGWidth/3)
	img := vgimg.NewWith(vgimg.UseWH(px(width), px(PNGHeight)), vgimg.UseDPI(vgimg.DefaultDPI),
		vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	titleStyle := text.Style{
		Color: color.Black, Font: font.From(plot.DefaultFont, 14),
		XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler,
	}
	const titleHeight = 48 // two lines
	dc.FillText(titleStyle, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - 6}, sweepTitle(s, metric))
	body := draw.Crop(dc, 0, 0, 0, -titleHeight)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: 20, PadTop: 4, PadBottom: 8, PadLeft: 8, PadRight: 12}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, body)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	return savePNG(path, img)
}

// sweepRan reports whether phase ref ran for any model at any point.
func sweepRan(s *Sweep, ref phaseRef) bool {
	for _, pt := range s.Points {
		if pt.Result == nil {
			continue
		}
		for i := range pt.Result.Models {
			if p := ref.get(&pt.Result.Models[i]); p != nil && p.Ran() {
				return true
			}
		}
	}
	return false
}

// sweepTitle names the metric, the parameter, and what the points'
// datasets have in common.
func sweepTitle(s *Sweep, m sweepMetric) string {
	t := fmt.Sprintf("pushpull sweep: %s against %s", m.title, s.Label)
	same := func(f func(r *Result) string) string {
		v := ""
		for _, pt := range s.Points {
			if pt.Result == nil {
				continue
			}
			if x := f(pt.Result); v == "" {
				v = x
			} else if x != v {
				return ""
			}
		}
		return v
	}
	var common []string
	for _, f := range []func(r *Result) string{
		func(r *Result) string { return fmtInt(int64(r.Dataset.Users)) + " users" },
		func(r *Result) string { return fmtInt(int64(r.Dataset.Messages)) + " messages" },
		func(r *Result) string { return "graph " + r.Dataset.Graph },
		func(r *Result) string { return r.Environment.Durability },
	} {
		if v := same(f); v != "" {
			common = append(common, v)
		}
	}
	if len(common) > 0 {
		t += "\n" + strings.Join(common, ", ")
	}
	if s.Failed() {
		t += " (A RUN FAILED)"
	}
	return t
}
