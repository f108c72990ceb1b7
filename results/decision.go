package results

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// DecisionMapFormatVersion is the format of a saved DecisionMap.
const DecisionMapFormatVersion = 1

// DecisionMap is the design chosen for each workload of a grid: the share
// of reads in the traffic against the skew of the follow graph and of the
// users' activity, every cell a recommendation at the same planned rate
// and objective (package loadgen/recommend).
type DecisionMap struct {
	Version    int       `json:"version"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Command    string    `json:"command"`
	// Skews label the rows, least skewed first, e.g. "uniform",
	// "powerlaw(in=2.1)"; ReadShares the columns.
	Skews      []string       `json:"skews"`
	ReadShares []float64      `json:"read_shares"`
	RatePerSec float64        `json:"rate_per_sec"`
	SLOMs      float64        `json:"slo_ms"`
	Scale      float64        `json:"scale"`
	Cells      []DecisionCell `json:"cells"`
	Notes      []string       `json:"notes,omitempty"`
}

// DecisionCell is one workload of the map and what was decided there.
type DecisionCell struct {
	Skew       string      `json:"skew"`
	ReadShare  float64     `json:"read_share"`
	Workload   Workload    `json:"workload"`
	Candidates []Candidate `json:"candidates"`
	Verdict    Verdict     `json:"verdict"`
	// Failures are the run's failures (a phase with too many errors);
	// the verdict still stands on what was measured.
	Failures []string `json:"failures,omitempty"`
}

// Cell returns the cell of skew and share, or nil.
func (m *DecisionMap) Cell(skew string, share float64) *DecisionCell {
	for i := range m.Cells {
		if c := &m.Cells[i]; c.Skew == skew && c.ReadShare == share {
			return c
		}
	}
	return nil
}

// File names inside a decision map's directory.
const (
	DecisionMapJSONFile = "decision-map.json"
	DecisionMapCSVFile  = "decision-map.csv"
	DecisionMapPNGFile  = "decision-map.png"
)

// DecisionMapFiles are the files SaveDecisionMap writes.
var DecisionMapFiles = []string{DecisionMapJSONFile, DecisionMapCSVFile, DecisionMapPNGFile}

// DecisionMapCSVHeader is the first line of decision-map.csv: a row per
// cell and candidate, with the counts the verdict ranks by (rows, memcached
// keys, and their sum, cost_per_op, as Candidate.CostPerOp) and the CPU of
// client and servers per operation where it was measured; a figure not
// measured is empty. Columns are only ever added at the end.
var DecisionMapCSVHeader = []string{"skew", "read_share", "model", "best", "held", "why", "p99_ms", "offered_per_sec",
	"achieved_per_sec", "errors", "rows_read_per_op", "rows_written_per_op", "data_bytes", "disk_bytes",
	"mc_gets_per_op", "mc_sets_per_op", "cost_per_op", "cpu_all_us_per_op"}

// WriteDecisionMapCSV writes a row per cell and candidate; best is 1 on the
// chosen model's row.
func WriteDecisionMapCSV(w io.Writer, m *DecisionMap) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(DecisionMapCSVHeader); err != nil {
		return err
	}
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	opt := func(v *float64) string { // empty when not measured
		if v == nil {
			return ""
		}
		return csvFloat(*v)
	}
	for _, cell := range m.Cells {
		for _, c := range cell.Candidates {
			read, written, total := "", "", ""
			if c.Costed {
				read, written, total = csvFloat(c.RowsReadPerOp), csvFloat(c.RowsWrittenPerOp), csvFloat(c.CostPerOp())
			}
			if err := cw.Write([]string{cell.Skew, csvFloat(cell.ReadShare), c.Model, b(c.Model == cell.Verdict.Best), b(c.Held), c.Why,
				csvFloat(c.P99Ms), csvFloat(c.OfferedPerSec), csvFloat(c.AchievedPerSec), strconv.FormatInt(c.Errors, 10),
				read, written, strconv.FormatInt(c.DataBytes, 10), strconv.FormatInt(c.DiskBytes, 10),
				opt(c.MemcachedGetsPerOp), opt(c.MemcachedSetsPerOp), total, opt(c.CPUPerOpUs)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// SaveDecisionMap creates dir and writes m there: decision-map.json,
// decision-map.csv and decision-map.png.
func SaveDecisionMap(dir string, m *DecisionMap) error { return saveDoc(decisionMapDoc, dir, m) }

// LoadDecisionMap reads the map saved in dir (or the path of its
// decision-map.json).
func LoadDecisionMap(dir string) (*DecisionMap, error) { return loadDoc(decisionMapDoc, dir) }

// decisionMapDoc saves and loads a decision map.
var decisionMapDoc = docKind[DecisionMap]{
	name: "decision map", jsonFile: DecisionMapJSONFile, version: DecisionMapFormatVersion,
	versionOf: func(m *DecisionMap) *int { return &m.Version },
	prepare: func(m *DecisionMap) *DecisionMap {
		c := *m
		c.StartedAt, c.FinishedAt = c.StartedAt.UTC(), c.FinishedAt.UTC()
		c.Cells = make([]DecisionCell, len(m.Cells))
		for i, cell := range m.Cells {
			cell.Candidates = finiteCandidates(cell.Candidates)
			c.Cells[i] = cell
		}
		return &c
	},
	derived: func(dir string, m *DecisionMap) error {
		if err := writeFile(dir, DecisionMapCSVFile, func(w io.Writer) error { return WriteDecisionMapCSV(w, m) }); err != nil {
			return err
		}
		return writeDecisionMapPNG(filepath.Join(dir, DecisionMapPNGFile), m)
	},
}

// noneColor fills a cell where no design held the objective.
var noneColor color.Color = color.RGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff}

// writeDecisionMapPNG draws the map as a grid of coloured cells, read
// share across, skew up: each cell in the colour of the design chosen
// there (one colour per design, the same in every cell), with its name and
// its rows per operation, or grey with "none held" and the design that
// came closest.
func writeDecisionMapPNG(path string, m *DecisionMap) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("best design within p99 ≤ %s at %s ops/s (lowest cost: rows read + written and memcached keys per operation)",
		fmtMs(m.SLOMs), fmtNum(m.RatePerSec))
	p.X.Label.Text = "share of reads in the traffic"
	p.Y.Label.Text = "skew of follows and activity"
	colors := map[string]color.Color{}
	var order []string
	for _, c := range m.Cells {
		if b := c.Verdict.Best; b != "" && colors[b] == nil {
			colors[b] = lineColor(len(order))
			order = append(order, b)
		}
	}
	col := func(share float64) int {
		for i, s := range m.ReadShares {
			if s == share {
				return i
			}
		}
		return -1
	}
	row := func(skew string) int {
		for i, s := range m.Skews {
			if s == skew {
				return i
			}
		}
		return -1
	}
	var labels plotter.XYLabels
	var held []bool         // by label: a design holds the cell
	var fills []color.Color // by label
	for _, c := range m.Cells {
		x, y := col(c.ReadShare), row(c.Skew)
		if x < 0 || y < 0 {
			continue
		}
		fill := noneColor
		var label string
		if c.Verdict.Best != "" {
			fill = colors[c.Verdict.Best]
			label = c.Verdict.Best
			for _, cand := range c.Candidates {
				if cand.Model == c.Verdict.Best && cand.Costed {
					label += fmt.Sprintf("\n%s/op", fmtNum(cand.CostPerOp()))
				}
			}
		} else {
			label = "none held"
			if c.Verdict.Closest != "" {
				label += "\nclosest: " + c.Verdict.Closest
			}
		}
		const h = 0.47
		poly, err := plotter.NewPolygon(plotter.XYs{{X: float64(x) - h, Y: float64(y) - h}, {X: float64(x) + h, Y: float64(y) - h},
			{X: float64(x) + h, Y: float64(y) + h}, {X: float64(x) - h, Y: float64(y) + h}})
		if err != nil {
			return err
		}
		poly.Color = fill
		poly.LineStyle.Width = 0
		p.Add(poly)
		labels.XYs = append(labels.XYs, plotter.XY{X: float64(x), Y: float64(y)})
		labels.Labels = append(labels.Labels, label)
		held = append(held, c.Verdict.Best != "")
		fills = append(fills, fill)
	}
	if len(labels.XYs) > 0 {
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign = text.XCenter
			l.TextStyle[i].YAlign = text.YCenter
			l.TextStyle[i].Font = font.From(plot.DefaultFont, 13)
			l.TextStyle[i].Color = color.Black
			if held[i] && dark(fills[i]) {
				l.TextStyle[i].Color = color.White
			}
		}
		p.Add(l)
	}
	xs := make([]string, len(m.ReadShares))
	for i, s := range m.ReadShares {
		xs[i] = strconv.FormatFloat(100*s, 'g', 4, 64) + "% reads"
	}
	p.NominalX(xs...)
	p.NominalY(m.Skews...)
	p.X.Min, p.X.Max = -0.5, float64(len(m.ReadShares))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(m.Skews))-0.5
	p.X.Tick.Length, p.Y.Tick.Length = 0, 0

	w := max(900, 260*len(m.ReadShares)+260)
	hgt := max(500, 150*len(m.Skews)+200)
	px := func(n int) vg.Length { return vg.Length(n) * vg.Inch / vgimg.DefaultDPI }
	img := vgimg.NewWith(vgimg.UseWH(px(w), px(hgt)), vgimg.UseDPI(vgimg.DefaultDPI), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	sub := fmt.Sprintf("pushpull recommend --map: scale %s, each cell one run of every candidate in an open loop", strconv.FormatFloat(m.Scale, 'g', -1, 64))
	if !m.StartedAt.IsZero() {
		sub += ", " + m.StartedAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	dc.FillText(text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, 11), XAlign: draw.XCenter, YAlign: draw.YBottom,
		Handler: plot.DefaultTextHandler}, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Min.Y + 4}, sub)
	p.Draw(draw.Crop(dc, 8, -12, 22, -8))
	return savePNG(path, img)
}

// dark reports whether c is dark enough for white text.
func dark(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return 0.299*float64(r)+0.587*float64(g)+0.114*float64(b) < 0.55*0xffff
}
