package results

import (
	"cmp"
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// HasRateSearch reports whether any model of r searched for its highest
// rate within the latency objective.
func (r *Result) HasRateSearch() bool {
	for i := range r.Models {
		if r.Models[i].Traffic.Searched() {
			return true
		}
	}
	return false
}

// WriteRatePNG plots, for every model that searched for its highest rate,
// the p99 (solid) and p50 (dashed) latency of the mixed traffic, from
// intended starts, against the offered rate of each step, with the
// objective as a grey line: first over all operations, then one panel per
// operation type (its latencies against the whole traffic's offered rate),
// for the steps that record them. The latency axis is logarithmic: past
// its capacity a store's latency grows by orders of magnitude within one
// step.
func WriteRatePNG(path string, r *Result) error {
	if err := writeRatePNG(path, r); err != nil {
		return fmt.Errorf("write rate png: %w", err)
	}
	return nil
}

func writeRatePNG(path string, r *Result) error {
	all, err := ratePanel(r, chartTitle(r)+": latency against offered rate (open loop)", "",
		func(st RateStep) (float64, float64, bool) { return st.P50Ms, st.P99Ms, st.P99Ms > 0 })
	if err != nil {
		return err
	}
	plots := []*plot.Plot{all}
	for _, op := range searchedOps(r) {
		p, err := ratePanel(r, op+": latency against the traffic's offered rate", op, func(st RateStep) (float64, float64, bool) {
			o, ok := st.Ops[op]
			return o.P50Ms, o.P99Ms, ok && o.P99Ms > 0
		})
		if err != nil {
			return err
		}
		plots = append(plots, p)
	}
	px := func(n int) vg.Length { return vg.Length(n) * vg.Inch / vgimg.DefaultDPI }
	if len(plots) == 1 {
		img := vgimg.NewWith(vgimg.UseWH(px(PNGWidth), px(2*PNGHeight)), vgimg.UseDPI(vgimg.DefaultDPI),
			vgimg.UseBackgroundColor(color.White))
		all.Draw(draw.New(img))
		return savePNG(path, img)
	}
	// The whole traffic on top, across; the operation types below it,
	// two a row.
	rows := (len(plots) - 1 + 1) / 2
	img := vgimg.NewWith(vgimg.UseWH(px(PNGWidth), px(2*PNGHeight+rows*PNGHeight)), vgimg.UseDPI(vgimg.DefaultDPI),
		vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	split := dc.Max.Y - (dc.Max.Y-dc.Min.Y)*vg.Length(2)/vg.Length(2+rows)
	all.Draw(draw.Crop(dc, 8, -12, split-dc.Min.Y+12, -8))
	grid := make([][]*plot.Plot, rows)
	for i, p := range plots[1:] {
		grid[i/2] = append(grid[i/2], p)
	}
	if len(grid[rows-1]) == 1 {
		grid[rows-1] = append(grid[rows-1], nil)
	}
	tiles := draw.Tiles{Rows: rows, Cols: 2, PadX: 20, PadY: 20, PadTop: 16, PadBottom: 8, PadLeft: 8, PadRight: 12}
	canvases := plot.Align(grid, tiles, draw.Crop(dc, 0, 0, 0, split-dc.Max.Y))
	for i := range grid {
		for j, p := range grid[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	return savePNG(path, img)
}

// searchedOps are the operation types that any rate search step records,
// in the order of the traffic's mix.
func searchedOps(r *Result) []string {
	var out []string
	for i := range r.Models {
		t := r.Models[i].Traffic
		if !t.Searched() {
			continue
		}
		for _, op := range t.OpNames() {
			if slices.Contains(out, op) {
				continue
			}
			for _, st := range t.Search.Steps {
				if _, ok := st.Ops[op]; ok {
					out = append(out, op)
					break
				}
			}
		}
	}
	return out
}

// ratePanel is one panel of WriteRatePNG: for every model that searched,
// the p50 and p99 that get reads off each step (when it has them) against
// the step's offered rate. op names the panel's operation type, "" for all.
func ratePanel(r *Result, title, op string, get func(RateStep) (p50, p99 float64, ok bool)) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "offered rate (operations/s)"
	p.Y.Label.Text = "latency from intended start (ms)"
	if op != "" {
		p.Y.Label.Text = op + " latency from intended start (ms)"
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Tick.Marker = plainTicks{}
	p.Legend.Top = true
	p.Legend.Left = true
	slo, top, right := 0.0, 0.0, 0.0
	n := 0
	for i := range r.Models {
		m := &r.Models[i]
		if !m.Traffic.Searched() {
			continue
		}
		s := m.Traffic.Search
		slo = max(slo, s.SLOMs)
		steps := slices.Clone(s.Steps)
		slices.SortFunc(steps, func(a, b RateStep) int { return cmp.Compare(a.OfferedPerSec, b.OfferedPerSec) })
		var p50, p99 plotter.XYs
		for _, st := range steps {
			lo, hi, ok := get(st)
			if !ok {
				continue
			}
			p50 = append(p50, plotter.XY{X: st.OfferedPerSec, Y: max(lo, 0.001)})
			p99 = append(p99, plotter.XY{X: st.OfferedPerSec, Y: hi})
			top, right = max(top, hi), max(right, st.OfferedPerSec)
		}
		c := lineColor(n)
		n++ // a model keeps its colour in every panel
		if len(p99) == 0 {
			continue
		}
		for j, pts := range []plotter.XYs{p99, p50} {
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, err
			}
			l.Color, s.Color = c, c
			l.Width = vg.Points(1.5)
			s.Shape = draw.CircleGlyph{}
			if j == 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				s.Shape = draw.RingGlyph{}
			} else {
				label := fmt.Sprintf("%s (best %s/s)", m.Name, fmtNum(m.Traffic.Search.BestPerSec))
				if !(m.Traffic.Search.BestPerSec > 0) {
					label = m.Name + " (no step held)"
				}
				if op != "" {
					label = m.Name
				}
				p.Legend.Add(label, l, s)
			}
			p.Add(l, s)
		}
	}
	if slo > 0 && right > 0 {
		start := 0.0
		if left := lowestOffered(r); left > 0 && right >= 10*left {
			start = left / 1.2
		}
		line, err := plotter.NewLine(plotter.XYs{{X: start, Y: slo}, {X: right * 1.05, Y: slo}})
		if err != nil {
			return nil, err
		}
		line.Color = color.Gray{Y: 0x88}
		line.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("objective: p99 ≤ %s", fmtMs(slo)), line)
	}
	// Rates of the models span decades: a log axis keeps the slow ones
	// off the y axis.
	if left := lowestOffered(r); left > 0 && right >= 10*left {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
		p.X.Min = left / 1.2
	} else {
		p.X.Min = 0
	}
	p.Y.Max = max(top, slo) * 2
	return p, nil
}

// lowestOffered is the lowest offered rate of any search step with a
// latency, 0 if none.
func lowestOffered(r *Result) float64 {
	lo := 0.0
	for i := range r.Models {
		t := r.Models[i].Traffic
		if t == nil || t.Search == nil {
			continue
		}
		for _, st := range t.Search.Steps {
			if st.P99Ms > 0 && st.OfferedPerSec > 0 && (lo == 0 || st.OfferedPerSec < lo) {
				lo = st.OfferedPerSec
			}
		}
	}
	return lo
}
