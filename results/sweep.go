package results

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"
)

// SweepFormatVersion is the format of a saved Sweep. It changes when a
// reader of an older one would misread it.
const SweepFormatVersion = 1

// Sweep is a series of benchmark runs that differ in one parameter (a
// growth curve): the dataset's size, the followees per user, one author's
// followers, the traffic's share of reads. Each point is a whole Result,
// so everything a run records is kept; the CSV and the plots pick the
// figures that show how each design's cost grows.
type Sweep struct {
	Version    int       `json:"version"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Command    string    `json:"command"`
	// Param names the parameter (e.g. "followees"), Label says what its
	// values are, for axes (e.g. "followees per user").
	Param string `json:"param"`
	Label string `json:"label"`
	// LogX: the values span enough (10x or more) for a logarithmic axis.
	LogX   bool         `json:"log_x,omitempty"`
	Points []SweepPoint `json:"points"`
	Notes  []string     `json:"notes,omitempty"`
}

// SweepPoint is one value of the parameter and the run at it.
type SweepPoint struct {
	Value float64 `json:"value"`
	// Skipped are models left out at this value, with the reason (e.g.
	// push's mailbox would not fit the disk).
	Skipped map[string]string `json:"skipped,omitempty"`
	Result  *Result           `json:"result"`
}

// Failed reports whether any point's run failed.
func (s *Sweep) Failed() bool {
	for _, p := range s.Points {
		if p.Result != nil && p.Result.Failed() {
			return true
		}
	}
	return false
}

// SearchSLOMs is the p99 objective within which the sweep's runs searched
// for each model's highest rate (bench's --find-rate), or 0 if none did.
func (s *Sweep) SearchSLOMs() float64 {
	for _, p := range s.Points {
		if p.Result == nil {
			continue
		}
		for i := range p.Result.Models {
			if t := p.Result.Models[i].Traffic; t.Searched() {
				return t.Search.SLOMs
			}
		}
	}
	return 0
}

// ModelNames lists the models measured at any point, in the order they
// first appear.
func (s *Sweep) ModelNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range s.Points {
		if p.Result == nil {
			continue
		}
		for _, m := range p.Result.Models {
			if !seen[m.Name] {
				seen[m.Name] = true
				out = append(out, m.Name)
			}
		}
	}
	return out
}

// File names inside a sweep directory.
const (
	SweepJSONFile = "sweep.json"
	SweepCSVFile  = "sweep.csv"
	// SweepRatePNGFile, SweepP99PNGFile and SweepCostPNGFile have one
	// panel per phase and one line per model (SweepRatePNGFile one more
	// of the highest rate within the objective, when the runs searched
	// for it); SweepSizePNGFile one panel of data sizes.
	SweepRatePNGFile = "sweep-rate.png"
	SweepP99PNGFile  = "sweep-p99.png"
	SweepCostPNGFile = "sweep-cost.png"
	SweepSizePNGFile = "sweep-size.png"
)

// SweepFiles are the files SaveSweep writes.
var SweepFiles = []string{SweepJSONFile, SweepCSVFile, SweepRatePNGFile, SweepP99PNGFile, SweepCostPNGFile, SweepSizePNGFile}

// SweepCSVHeader is the first line of sweep.csv: the parameter and its
// value, then the columns of a run's CSV (CSVHeader).
var SweepCSVHeader = append([]string{"param", "value"}, CSVHeader...)

// WriteSweepCSV writes, for every point, the rows WriteCSV writes for its
// run, each after the parameter's name and value.
func WriteSweepCSV(w io.Writer, s *Sweep) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(SweepCSVHeader); err != nil {
		return err
	}
	for _, p := range s.Points {
		if p.Result == nil {
			continue
		}
		if err := writeRows(cw, p.Result, []string{s.Param, csvFloat(p.Value)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// SaveSweep creates dir and writes s there: sweep.json (every point's
// whole result, as Save would, non-finite values replaced and noted),
// sweep.csv and the four plots.
func SaveSweep(dir string, s *Sweep) error { return saveDoc(sweepDoc, dir, s) }

// sweepDoc saves and loads a sweep.
var sweepDoc = docKind[Sweep]{
	name: "sweep", jsonFile: SweepJSONFile, version: SweepFormatVersion,
	versionOf: func(s *Sweep) *int { return &s.Version },
	prepare: func(s *Sweep) *Sweep {
		c := *s
		c.StartedAt, c.FinishedAt = c.StartedAt.UTC(), c.FinishedAt.UTC()
		c.Points = make([]SweepPoint, len(s.Points))
		for i, p := range s.Points {
			c.Points[i] = p
			if p.Result != nil {
				c.Points[i].Result = sanitized(p.Result)
			}
		}
		return &c
	},
	derived: func(dir string, s *Sweep) error {
		if err := writeFile(dir, SweepCSVFile, func(w io.Writer) error { return WriteSweepCSV(w, s) }); err != nil {
			return err
		}
		return writeSweepPNGs(dir, s)
	},
	upgrade: func(s *Sweep) error {
		if s.Version != SweepFormatVersion {
			return fmt.Errorf("format version %d, want %d", s.Version, SweepFormatVersion)
		}
		for _, p := range s.Points {
			if p.Result == nil {
				continue
			}
			if err := upgrade(p.Result); err != nil {
				return fmt.Errorf("point %s: %w", strconv.FormatFloat(p.Value, 'g', -1, 64), err)
			}
		}
		return nil
	},
}

// LoadSweep reads the sweep saved in dir by SaveSweep (or the path of its
// sweep.json).
func LoadSweep(dir string) (*Sweep, error) { return loadDoc(sweepDoc, dir) }
