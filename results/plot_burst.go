package results

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WriteBurstPNG plots every model's burst phase over time: the p99 latency
// of each bucket's operations (by intended start) in the upper panel, and,
// for the models that measure it, the p99 fan-out lag of the posts applied
// in each bucket in the lower one, each against its objective (a grey
// line), with the burst between two grey verticals (its end one per model,
// in the model's colour, when the celebrity's posts made the ends differ).
// The latency axes are logarithmic: a backlog's latency grows by orders of
// magnitude.
func WriteBurstPNG(path string, r *Result) error {
	if err := writeBurstPNG(path, r); err != nil {
		return fmt.Errorf("write burst png: %w", err)
	}
	return nil
}

func writeBurstPNG(path string, r *Result) error {
	lat := timePlot(chartTitle(r)+": p99 latency through the burst (open loop)", "p99 latency from intended start (ms)")
	lag := timePlot("fan-out lag through the burst", "p99 fan-out lag of the posts applied (ms)")
	var slo, lagSLO, start, end, right, top, lagTop float64
	n, lags := 0, 0
	type modelEnd struct {
		at float64
		c  color.Color
	}
	var ends []modelEnd
	for i := range r.Models {
		m := &r.Models[i]
		bu := m.Burst
		if bu == nil {
			continue
		}
		slo, lagSLO = bu.SLOMs, bu.LagSLOMs
		start, end, right = bu.StartS, bu.EndS, max(right, bu.WindowS)
		var pts, lagPts plotter.XYs
		mid := bu.BucketMs / 2000
		for _, p := range bu.Series {
			if p.Ops > 0 {
				pts = append(pts, plotter.XY{X: p.AtS + mid, Y: max(p.P99Ms, 0.001)})
				top = max(top, p.P99Ms)
			}
			if p.LagPosts > 0 {
				lagPts = append(lagPts, plotter.XY{X: p.AtS + mid, Y: max(p.LagP99Ms, 0.001)})
				lagTop = max(lagTop, p.LagP99Ms)
			}
		}
		c := lineColor(n)
		n++
		ends = append(ends, modelEnd{bu.EndS, c})
		label := m.Name + ": " + recoveryPhrase(bu.recovery())
		if err := addLine(lat, pts, c, label); err != nil {
			return err
		}
		if bu.Lag != nil && len(lagPts) > 0 {
			lags++
			if err := addLine(lag, lagPts, c, m.Name+": "+recoveryPhrase(bu.lagRecovery())); err != nil {
				return err
			}
		}
	}
	plots := []*plot.Plot{lat}
	tops := []float64{max(top, slo)}
	objectives := []float64{slo}
	if lags > 0 {
		plots, tops, objectives = append(plots, lag), append(tops, max(lagTop, lagSLO)), append(objectives, lagSLO)
	}
	same := true
	for _, e := range ends {
		same = same && e.at == end
	}
	for i, p := range plots {
		if err := addMarks(p, objectives[i], start, end, right, tops[i], same); err != nil {
			return err
		}
		for _, e := range ends {
			if same {
				break
			}
			if err := addVertical(p, e.at, max(tops[i], objectives[i])*4, e.c, true); err != nil {
				return err
			}
		}
	}
	px := func(n int) vg.Length { return vg.Length(n) * vg.Inch / vgimg.DefaultDPI }
	img := vgimg.NewWith(vgimg.UseWH(px(PNGWidth), px(len(plots)*PNGHeight+PNGHeight/2)), vgimg.UseDPI(vgimg.DefaultDPI),
		vgimg.UseBackgroundColor(color.White))
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: 20, PadTop: 8, PadBottom: 8, PadLeft: 8, PadRight: 12}
	column := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		column[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(column, tiles, draw.New(img))
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	return savePNG(path, img)
}

// timePlot is a plot of a latency against seconds into the measured
// stretch, on a logarithmic axis.
func timePlot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds into the measured stretch (by intended start)"
	p.Y.Label.Text = ylabel
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.X.Tick.Marker = plainTicks{}
	p.Legend.Top = true
	return p
}

// addLine adds a labelled line with points to p.
func addLine(p *plot.Plot, pts plotter.XYs, c color.Color, label string) error {
	if len(pts) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.Color, s.Color = c, c
	l.Width = vg.Points(1.5)
	s.Shape = draw.CircleGlyph{}
	s.Radius = vg.Points(1.5)
	p.Add(l, s)
	p.Legend.Add(label, l, s)
	return nil
}

// burstBottom is the lowest latency the burst plot's axes show.
const burstBottom = 0.01

// addVertical draws a vertical line at x up to top, dashed if asked.
func addVertical(p *plot.Plot, x, top float64, c color.Color, dashed bool) error {
	line, err := plotter.NewLine(plotter.XYs{{X: x, Y: burstBottom}, {X: x, Y: top}})
	if err != nil {
		return err
	}
	line.Color = c
	if dashed {
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(line)
	return nil
}

// addMarks draws the objective as a horizontal grey line and the burst's
// start, and its end when every model's is the same, as vertical ones, and
// sets p's axes.
func addMarks(p *plot.Plot, objective, start, end, right, top float64, sameEnd bool) error {
	grey := color.Gray{Y: 0x88}
	bottom := burstBottom
	if objective > 0 {
		line, err := plotter.NewLine(plotter.XYs{{X: 0, Y: objective}, {X: right, Y: objective}})
		if err != nil {
			return err
		}
		line.Color = grey
		line.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(line)
		p.Legend.Add("objective: p99 ≤ "+fmtMs(objective), line)
	}
	marks := []float64{start}
	if sameEnd {
		marks = append(marks, end)
	}
	for _, x := range marks {
		if err := addVertical(p, x, max(top, objective)*4, grey, false); err != nil {
			return err
		}
	}
	p.X.Min, p.X.Max = 0, right
	p.Y.Min, p.Y.Max = bottom, max(top, objective)*4
	return nil
}
