package results

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/pushpull/pushpull/registry"
)

// Image size of WritePNG, in pixels. The width grows beyond PNGWidth by
// pngBarWidth per bar when a run has so many models that the value labels
// above the bars would run into each other.
const (
	PNGWidth    = 1500
	PNGHeight   = 500
	pngBarWidth = 62
)

// pngWidth is the image width for a run of n models (plus the paper's two
// bars in each of the three charts).
func pngWidth(n int) int { return max(PNGWidth, 3*(n+2)*pngBarWidth+80) }

// Bar colours: one per design family, and grey for the paper, so that the
// eye groups push against pull before reading names.
var (
	pushColor  = color.RGBA{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff}
	pullColor  = color.RGBA{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff}
	otherColor = color.RGBA{R: 0x75, G: 0x70, B: 0xb3, A: 0xff}
	paperColor = color.RGBA{R: 0xaa, G: 0xaa, B: 0xaa, A: 0xff}
)

// bar is one bar of a chart.
type bar struct {
	name  string
	value float64 // NaN when not measured
	label string  // written above the bar
	color color.Color
}

// WritePNG draws three bar charts side by side, data size, submission rate
// and retrieval rate, with one bar per model followed by the paper's push
// and pull in grey. The scale is linear, so that a 10x difference looks like
// one, and every bar carries its value, so that the short bars can still be
// read. It needs no display: gonum/plot renders into memory.
func WritePNG(path string, r *Result) error {
	if err := writePNG(path, r); err != nil {
		return fmt.Errorf("write png: %w", err)
	}
	return nil
}

func writePNG(path string, r *Result) error {
	charts := []struct {
		title string
		unit  string
		value func(m *Model) float64
		paper func(f PaperFigures) float64
		label func(v float64) string
	}{
		{"data size (data+index, MB)", "MB",
			func(m *Model) float64 { return positive(float64(m.DataBytes) / 1e6) },
			func(f PaperFigures) float64 { return float64(f.DataBytes) / 1e6 },
			func(v float64) string { return fmtBytes(int64(v * 1e6)) }},
		{"submission (messages/s)", "messages/s",
			func(m *Model) float64 { return rateOf(&m.Submit) },
			func(f PaperFigures) float64 { return f.SubmitPerSec },
			func(v float64) string { return fmtNum(v) + "/s" }},
		{"retrieval (newest page, timelines/s)", "timelines/s",
			func(m *Model) float64 { return rateOf(&m.Retrieve) },
			func(f PaperFigures) float64 { return f.RetrievePerSec },
			func(v float64) string { return fmtNum(v) + "/s" }},
	}
	var plots []*plot.Plot
	for _, c := range charts {
		var bars []bar
		for i := range r.Models {
			m := &r.Models[i]
			v := c.value(m)
			bars = append(bars, bar{m.Name, v, labelOf(v, c.label), familyColor(m)})
		}
		for _, fam := range []registry.Family{registry.FamilyPush, registry.FamilyPull} {
			v := c.paper(Paper[fam])
			bars = append(bars, bar{"paper " + string(fam), v, c.label(v), paperColor})
		}
		p, err := barPlot(c.title, c.unit, bars)
		if err != nil {
			return fmt.Errorf("%s: %w", c.title, err)
		}
		plots = append(plots, p)
	}

	px := func(n int) vg.Length { return vg.Length(n) * vg.Inch / vgimg.DefaultDPI }
	img := vgimg.NewWith(vgimg.UseWH(px(pngWidth(len(r.Models))), px(PNGHeight)), vgimg.UseDPI(vgimg.DefaultDPI),
		vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)

	titleStyle := text.Style{
		Color:   color.Black,
		Font:    font.From(plot.DefaultFont, 14),
		XAlign:  draw.XCenter,
		YAlign:  draw.YTop,
		Handler: plot.DefaultTextHandler,
	}
	const titleHeight = 28
	dc.FillText(titleStyle, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - 6}, chartTitle(r))
	body := draw.Crop(dc, 0, 0, 0, -titleHeight)

	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: 20, PadY: 0, PadTop: 4, PadBottom: 8, PadLeft: 8, PadRight: 12}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, body)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}

	return savePNG(path, img)
}

// savePNG writes img to path as a PNG file.
func savePNG(path string, img *vgimg.Canvas) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// chartTitle names the dataset, since the same models on another dataset
// give different bars.
func chartTitle(r *Result) string {
	d := r.Dataset
	s := fmt.Sprintf("pushpull: %s users, %s messages, %s followees/user", fmtInt(int64(d.Users)),
		fmtInt(int64(d.Messages)), fmtNum(d.AvgFollowees))
	if r.Environment.Durability != "" {
		s += ", " + r.Environment.Durability
	}
	if !r.StartedAt.IsZero() {
		s += ", " + r.StartedAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	if r.Failed() {
		s += " (RUN FAILED)"
	}
	return s
}

func barPlot(title, unit string, bars []bar) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	p.Y.Min = 0
	top := 0.0
	var names []string
	var labels plotter.XYLabels
	for i, b := range bars {
		names = append(names, b.name)
		h := b.value
		if !(h > 0) {
			h = 0
		}
		top = math.Max(top, h)
		bc, err := plotter.NewBarChart(plotter.Values{h}, vg.Points(28))
		if err != nil {
			return nil, err
		}
		bc.XMin = float64(i)
		bc.Color = b.color
		bc.LineStyle.Width = 0
		p.Add(bc)
		labels.XYs = append(labels.XYs, plotter.XY{X: float64(i), Y: h})
		labels.Labels = append(labels.Labels, b.label)
	}
	if top == 0 {
		top = 1
	}
	// Headroom for the value written above the tallest bar.
	p.Y.Max = top * 1.12
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign = text.XCenter
		l.TextStyle[i].YAlign = text.YBottom
	}
	l.Offset = vg.Point{Y: vg.Points(2)}
	p.Add(l)
	p.Y.Tick.Marker = plainTicks{}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 8
	p.X.Tick.Label.XAlign = text.XRight
	p.X.Tick.Label.YAlign = text.YCenter
	return p, nil
}

func labelOf(v float64, f func(float64) string) string {
	if !(v >= 0) {
		return Dash
	}
	return f(v)
}

// familyColor colours a model by the paper's family it belongs to.
func familyColor(m *Model) color.Color {
	switch m.Family {
	case registry.FamilyPush:
		return pushColor
	case registry.FamilyPull:
		return pullColor
	}
	return otherColor
}

// positive is v, or NaN when v is not a measurement (<= 0).
func positive(v float64) float64 {
	if v > 0 {
		return v
	}
	return math.NaN()
}

// plainTicks labels a linear axis as the table does, "7,500" rather than
// "7500.00".
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i, t := range ticks {
		if t.Label == "" {
			continue
		}
		ticks[i].Label = tickLabel(t.Value)
	}
	return ticks
}

// tickLabel writes an axis value as the table does: "7,500", "0.25".
func tickLabel(v float64) string {
	if v == math.Trunc(v) {
		return fmtInt(int64(v))
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// logTicks marks a logarithmic axis at 1, 2 and 5 times each power of ten,
// labelled as the table writes numbers, with the other digits as minor
// ticks; across more than three decades only the powers of ten are
// labelled. plot.LogTicks labels powers of ten only, which leaves an axis
// spanning less than a decade with no label at all.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	wide := math.Log10(hi/lo) > 3
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow(10, e)
		for d := 1.0; d < 10; d++ {
			v := d * p
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if d == 1 || (!wide && (d == 2 || d == 5)) {
				t.Label = tickLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// lineColors tell up to twelve lines apart (Paul Tol's "muted" scheme and
// four more); plotutil's seven repeat in a run of every model.
var lineColors = []color.Color{
	color.RGBA{0xcc, 0x66, 0x77, 0xff}, color.RGBA{0x33, 0x22, 0x88, 0xff},
	color.RGBA{0x11, 0x77, 0x33, 0xff}, color.RGBA{0x88, 0xcc, 0xee, 0xff},
	color.RGBA{0x99, 0x99, 0x33, 0xff}, color.RGBA{0xaa, 0x44, 0x99, 0xff},
	color.RGBA{0x44, 0xaa, 0x99, 0xff}, color.RGBA{0x88, 0x22, 0x55, 0xff},
	color.RGBA{0xdd, 0xcc, 0x77, 0xff}, color.RGBA{0x00, 0x00, 0x00, 0xff},
	color.RGBA{0xee, 0x77, 0x33, 0xff}, color.RGBA{0x77, 0x77, 0x77, 0xff},
}

// lineColor is the colour of the i-th line of a plot.
func lineColor(i int) color.Color { return lineColors[i%len(lineColors)] }
