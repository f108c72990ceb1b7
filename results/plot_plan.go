package results

import (
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// checkPoint is one point of a check's plot: a run's measured and
// predicted figure; for a measurement repeated, meas is the median of the
// runs and lo and hi their lowest and highest (0 when not repeated).
type checkPoint struct {
	run        string
	meas, pred float64
	lo, hi     float64
}

// spreadBars are the horizontal bars of repeated measurements: from the
// lowest run's figure to the highest, through the median.
type spreadBars []checkPoint

func (b spreadBars) Len() int                { return len(b) }
func (b spreadBars) XY(i int) (x, y float64) { return b[i].meas, b[i].pred }
func (b spreadBars) XError(i int) (low, high float64) {
	return b[i].meas - b[i].lo, b[i].hi - b[i].meas
}

// writePlanCheckPNG draws predicted against measured, on log axes: items
// per operation on the left, CPU per operation beside it, a point per
// run, design and phase, and, when the runs searched for it, each
// design's highest rate within the objective; when runs repeat a
// measurement (PlanCheck.RepeatedRates), a last panel sets each design's
// predicted rate against the median of its runs, with a bar from the
// lowest to the highest; the points coloured by run, with the line of
// equality and the goal's band around it (±10% for items, ±30% for CPU
// and rates).
func writePlanCheckPNG(path string, c *PlanCheck) error {
	var runs []string
	for _, r := range c.Rows {
		if !slices.Contains(runs, r.Run) {
			runs = append(runs, r.Run)
		}
	}
	for _, r := range c.Rates {
		if !slices.Contains(runs, r.Run) {
			runs = append(runs, r.Run)
		}
	}
	panel := func(title, unit string, band float64, points []checkPoint) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text, p.Y.Label.Text = "measured "+unit, "predicted "+unit
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		lo, hi := math.Inf(1), math.Inf(-1)
		for i, run := range runs {
			var pts plotter.XYs
			var bars spreadBars
			for _, pt := range points {
				m, pr := pt.meas, pt.pred
				if pt.run != run || !(m > 0) || !(pr > 0) {
					continue
				}
				pts = append(pts, plotter.XY{X: m, Y: pr})
				lo, hi = math.Min(lo, math.Min(m, pr)), math.Max(hi, math.Max(m, pr))
				if pt.hi > 0 {
					if !(pt.lo > 0) { // a run that held no step: the bar from the median
						pt.lo = m
					}
					bars = append(bars, pt)
					lo, hi = math.Min(lo, pt.lo), math.Max(hi, pt.hi)
				}
			}
			if len(pts) == 0 {
				continue
			}
			if len(bars) > 0 {
				b, err := plotter.NewXErrorBars(bars)
				if err != nil {
					return nil, err
				}
				b.Color = lineColor(i)
				p.Add(b)
			}
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			s.Color = lineColor(i)
			s.Shape = draw.CircleGlyph{}
			s.Radius = vg.Points(3)
			p.Add(s)
			p.Legend.Add(run, s)
		}
		if math.IsInf(lo, 0) {
			lo, hi = 1, 10
		}
		lo, hi = lo/1.5, hi*1.5
		for _, f := range []float64{1, 1 + band, 1 - band} {
			l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo * f}, {X: hi, Y: hi * f}})
			if err != nil {
				return nil, err
			}
			l.Color = color.Gray{Y: 0x60}
			if f != 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				l.Color = color.Gray{Y: 0xa0}
			}
			p.Add(l)
		}
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
		p.Legend.Top, p.Legend.Left = true, true
		return p, nil
	}
	var items, cpus, rates []checkPoint
	for _, r := range c.Rows {
		items = append(items, checkPoint{run: r.Run, meas: r.Measured.Items(), pred: r.Predicted.Items()})
		cpus = append(cpus, checkPoint{run: r.Run, meas: r.MeasuredCPUUs, pred: r.PredictedCPUUs})
	}
	for _, r := range c.Rates {
		rates = append(rates, checkPoint{run: r.Run, meas: r.MeasuredPerSec, pred: r.PredictedPerSec})
	}
	itemsPlot, err := panel("rows + keys + commands per operation (band ±10%)", "items/op", 0.1, items)
	if err != nil {
		return err
	}
	cpuPlot, err := panel("CPU per operation, all processes (band ±30%)", "µs/op", 0.3, cpus)
	if err != nil {
		return err
	}
	plots := []*plot.Plot{itemsPlot, cpuPlot}
	if len(rates) > 0 {
		ratePlot, err := panel("highest rate within the objective (band ±30%)", "ops/s", 0.3, rates)
		if err != nil {
			return err
		}
		plots = append(plots, ratePlot)
	}
	if reps := c.RepeatedRates(); len(reps) > 0 {
		var med []checkPoint
		for _, r := range reps {
			m := r.MeasuredPerSec
			med = append(med, checkPoint{r.Run, r.MedianPerSec(), r.PredictedPerSec, m[0], m[len(m)-1]})
		}
		medPlot, err := panel("highest rate, median of a design's runs (bar: lowest to highest; band ±30%)", "ops/s", 0.3, med)
		if err != nil {
			return err
		}
		plots = append(plots, medPlot)
	}
	px := func(n int) vg.Length { return vg.Length(n) * vg.Inch / vgimg.DefaultDPI }
	img := vgimg.NewWith(vgimg.UseWH(px(700*len(plots)), px(650)), vgimg.UseDPI(vgimg.DefaultDPI), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: 30, PadTop: 8, PadBottom: 8, PadLeft: 8, PadRight: 16}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	return savePNG(path, img)
}
