package results

import (
	"errors"
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Image size of WriteDegreesPNG, in pixels.
const (
	DegreesPNGWidth  = 1100
	DegreesPNGHeight = 500
)

// errNoDegrees: the result records no degree distributions (it predates
// format 4).
var errNoDegrees = errors.New("the result holds no degree distributions")

// WriteDegreesPNG draws the dataset's two degree distributions side by side
// on log-log axes: for followers (in-degree) and followees (out-degree) per
// user, the share of users with at least d, at each bin's lower edge. A
// power law with exponent a is a straight line of slope 1-a there, which is
// why the complementary distribution is drawn rather than the histogram:
// it needs no binning to be exact, and its tail is not noise. Users with
// no followers or followees cannot sit on a log axis; the titles count
// them.
func WriteDegreesPNG(path string, r *Result) error {
	if err := writeDegreesPNG(path, r); err != nil {
		return fmt.Errorf("write degrees png: %w", err)
	}
	return nil
}

func writeDegreesPNG(path string, r *Result) error {
	d := r.Dataset
	if !d.HasDegrees() {
		return errNoDegrees
	}
	var plots []*plot.Plot
	for _, c := range []struct {
		name          string
		bins          []DegreeBin
		most, p99, p5 int
		color         color.Color
	}{
		{"followers per user (in-degree)", d.FollowerBins, d.MaxFollowers, d.P99Followers, d.P50Followers, pushColor},
		{"followees per user (out-degree)", d.FolloweeBins, d.MaxFollowees, d.P99Followees, d.P50Followees, pullColor},
	} {
		p, err := ccdfPlot(c.name, c.bins, c.color)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		p.X.Label.Text = fmt.Sprintf("d (max %s, p99 %s, p50 %s)", fmtInt(int64(c.most)), fmtInt(int64(c.p99)), fmtInt(int64(c.p5)))
		plots = append(plots, p)
	}

	px := func(n int) vg.Length { return vg.Length(n) * vg.Inch / vgimg.DefaultDPI }
	img := vgimg.NewWith(vgimg.UseWH(px(DegreesPNGWidth), px(DegreesPNGHeight)), vgimg.UseDPI(vgimg.DefaultDPI),
		vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	titleStyle := text.Style{
		Color: color.Black, Font: font.From(plot.DefaultFont, 14),
		XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler,
	}
	const titleHeight = 28
	title := fmt.Sprintf("%s users, %s follows, %s graph", fmtInt(int64(d.Users)), fmtInt(d.Edges), orDash(d.Graph))
	dc.FillText(titleStyle, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - 6}, title)
	body := draw.Crop(dc, 0, 0, 0, -titleHeight)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: 30, PadTop: 4, PadBottom: 8, PadLeft: 8, PadRight: 16}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, body)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
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

// ccdfPlot plots the share of users with degree at least each bin's lower
// edge, on log-log axes.
func ccdfPlot(title string, bins []DegreeBin, c color.Color) (*plot.Plot, error) {
	total, zero := 0, 0
	for _, b := range bins {
		total += b.Users
		if b.Max == 0 {
			zero = b.Users
		}
	}
	var pts plotter.XYs
	atLeast := total
	for _, b := range bins {
		if b.Min > 0 {
			pts = append(pts, plotter.XY{X: float64(b.Min), Y: float64(atLeast) / float64(total)})
		}
		atLeast -= b.Users
	}
	p := plot.New()
	p.Title.Text = title
	if zero > 0 {
		p.Title.Text += fmt.Sprintf(", %s users at 0 not shown", fmtInt(int64(zero)))
	}
	p.Y.Label.Text = "share of users with at least d"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	if len(pts) == 0 {
		// Nothing to draw; a log axis still needs a positive range.
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 1, 10, 0.1, 1
		return p, nil
	}
	// One distinct value on an axis would give it an empty range, which a
	// log scale cannot draw: widen it around the value.
	xmin, xmax, ymin, ymax := plotter.XYRange(pts)
	if xmin == xmax {
		p.X.Min, p.X.Max = xmin/2, xmax*2
	}
	if ymin == ymax {
		p.Y.Min, p.Y.Max = ymin/2, ymax*2
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	line.Color, points.Color = c, c
	line.Width = vg.Points(1.5)
	points.Shape = draw.CircleGlyph{}
	points.Radius = vg.Points(2.5)
	p.Add(line, points)
	return p, nil
}
