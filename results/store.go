package results

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
)

// File names inside a run directory.
const (
	JSONFile = "result.json"
	CSVFile  = "result.csv"
	PNGFile  = "result.png"
	// RatePNGFile plots latency against offered rate, for a run that
	// searched for the highest rate within its latency objective.
	RatePNGFile = "rate.png"
	// BurstPNGFile plots latency and fan-out lag through the burst, for a
	// run with a burst phase.
	BurstPNGFile = "burst.png"
	// DegreesPNGFile is the plot of the dataset's degree distributions
	// (WriteDegreesPNG), saved when the result records them.
	DegreesPNGFile = "degrees.png"
)

// RunDir is the directory a run started at t is saved in: base/<UTC time>,
// e.g. base/20261123T101500Z. The name sorts by time and never depends on
// the machine's time zone.
func RunDir(base string, t time.Time) string {
	return filepath.Join(base, t.UTC().Format("20060102T150405Z"))
}

// Save creates dir and writes r there as result.json (indented), result.csv
// and result.png, rate.png when the run searched for rates, and degrees.png
// when the dataset records its degree distributions. Times are stored in
// UTC. JSON cannot hold NaN or infinity, and a benchmark's result is too
// costly to lose over one bad ratio, so such values are saved as absent (an
// Extra key) or 0 (a Phase field) and each replacement is recorded in
// Notes. r itself is not modified.
func Save(dir string, r *Result) error { return saveDoc(resultDoc, dir, r) }

// Load reads the result saved in dir by Save. dir may also be the path of
// the result.json file itself. A result of an older format that can be
// read without guessing (version 2) is converted to the current one.
func Load(dir string) (*Result, error) { return loadDoc(resultDoc, dir) }

// resultDoc saves and loads a run.
var resultDoc = docKind[Result]{
	name: "result", jsonFile: JSONFile, version: FormatVersion,
	versionOf: func(r *Result) *int { return &r.Version },
	prepare:   sanitized,
	derived:   writeRunFiles,
	upgrade:   upgrade,
}

// writeRunFiles writes the files derived from a run saved in dir: its CSV
// and plots.
func writeRunFiles(dir string, r *Result) error {
	if err := writeFile(dir, CSVFile, func(w io.Writer) error { return WriteCSV(w, r) }); err != nil {
		return err
	}
	if err := WritePNG(filepath.Join(dir, PNGFile), r); err != nil {
		return err
	}
	if r.HasRateSearch() {
		if err := WriteRatePNG(filepath.Join(dir, RatePNGFile), r); err != nil {
			return err
		}
	}
	if r.HasBursts() {
		if err := WriteBurstPNG(filepath.Join(dir, BurstPNGFile), r); err != nil {
			return err
		}
	}
	if r.Dataset.HasDegrees() {
		return WriteDegreesPNG(filepath.Join(dir, DegreesPNGFile), r)
	}
	return nil
}

// sanitized returns a copy of r ready to be encoded: version set, times in
// UTC, and no non-finite numbers.
func sanitized(r *Result) *Result {
	c := *r
	if c.Version == 0 {
		c.Version = FormatVersion
	}
	c.StartedAt = c.StartedAt.UTC()
	c.FinishedAt = c.FinishedAt.UTC()
	c.Notes = append([]string(nil), r.Notes...)
	note := func(format string, a ...any) {
		c.Notes = append(c.Notes, "saved without a non-finite value: "+fmt.Sprintf(format, a...))
	}
	fixFloats := func(where string, fields map[string]*float64) {
		for _, name := range sortedKeys(fields) {
			if v := fields[name]; !finite(*v) {
				note("%s %s was %v", where, name, *v)
				*v = 0
			}
		}
	}
	fixPhase := func(where string, p *Phase) {
		fixFloats(where, map[string]*float64{
			"seconds": &p.Seconds, "ops_per_sec": &p.OpsPerSec, "p50_ms": &p.P50Ms,
			"p90_ms": &p.P90Ms, "p99_ms": &p.P99Ms, "p999_ms": &p.P999Ms, "max_ms": &p.MaxMs,
		})
		if p.Cost != nil {
			kept := make(cost.Cost, len(p.Cost))
			for _, k := range sortedKeys(p.Cost) {
				if v := p.Cost[k]; finite(v) {
					kept[k] = v
				} else {
					note("%s cost %s was %v", where, k, v)
				}
			}
			p.Cost = kept
		}
	}
	fixTraffic := func(where string, t *Traffic) *Traffic {
		c := *t
		fixPhase(where, &c.Total)
		c.Ops = make(map[string]Phase, len(t.Ops))
		for _, k := range sortedKeys(t.Ops) {
			p := t.Ops[k]
			fixPhase(where+" "+k, &p)
			c.Ops[k] = p
		}
		if t.Open != nil {
			o := *t.Open
			fixPhase(where+" service", &o.Service)
			fixFloats(where, map[string]*float64{"rate_per_sec": &o.RatePerSec, "offered_per_sec": &o.OfferedPerSec,
				"achieved_per_sec": &o.AchievedPerSec, "late_p50_ms": &o.LateP50Ms, "late_p99_ms": &o.LateP99Ms, "late_max_ms": &o.LateMaxMs})
			c.Open = &o
		}
		if t.Search != nil {
			s := *t.Search
			fixFloats(where+" rate search", map[string]*float64{"slo_p99_ms": &s.SLOMs, "best_rate_per_sec": &s.BestPerSec,
				"start_rate_per_sec": &s.StartPerSec, "step_seconds": &s.StepSeconds})
			s.Steps = slices.Clone(t.Search.Steps)
			for i := range s.Steps {
				st := &s.Steps[i]
				fixFloats(where+" rate step", map[string]*float64{"rate_per_sec": &st.RatePerSec, "offered_per_sec": &st.OfferedPerSec,
					"achieved_per_sec": &st.AchievedPerSec, "p50_ms": &st.P50Ms, "p99_ms": &st.P99Ms, "p999_ms": &st.P999Ms})
			}
			c.Search = &s
		}
		return &c
	}
	if r.Harness != nil {
		h := *r.Harness
		fixPhase("harness", &h)
		c.Harness = &h
	}
	if r.MemcacheGet != nil {
		h := *r.MemcacheGet
		fixPhase("memcache_get", &h)
		c.MemcacheGet = &h
	}
	c.Goals = nil
	for _, g := range r.Goals {
		if !finite(g.Value) {
			note("goal %q was %v", g.Name, g.Value)
			g.Value = 0
		}
		c.Goals = append(c.Goals, g)
	}
	c.Models = make([]Model, len(r.Models))
	for i, m := range r.Models {
		fixPhase(m.Name+" submit", &m.Submit)
		fixPhase(m.Name+" retrieve", &m.Retrieve)
		fixPhase(m.Name+" retrieve_older", &m.RetrieveOlder)
		if m.Mixed != nil {
			mixed := *m.Mixed
			fixPhase(m.Name+" mixed", &mixed)
			m.Mixed = &mixed
		}
		if m.Traffic != nil {
			m.Traffic = fixTraffic(m.Name+" traffic", m.Traffic)
		}
		if m.Extra != nil {
			extra := make(map[string]float64, len(m.Extra))
			for _, k := range sortedKeys(m.Extra) {
				if v := m.Extra[k]; finite(v) {
					extra[k] = v
				} else {
					note("%s extra %s was %v", m.Name, k, v)
				}
			}
			m.Extra = extra
		}
		c.Models[i] = m
	}
	if r.Load != nil {
		l := *r.Load
		l.Tables = append([]TableLoad(nil), r.Load.Tables...)
		if !finite(l.Seconds) {
			note("load seconds was %v", l.Seconds)
			l.Seconds = 0
		}
		for i := range l.Tables {
			t := &l.Tables[i]
			if !finite(t.Seconds) || !finite(t.RowsPerSec) {
				note("load of %s.%s was %v s, %v rows/s", t.Database, t.Table, t.Seconds, t.RowsPerSec)
				t.Seconds, t.RowsPerSec = zeroIfNotFinite(t.Seconds), zeroIfNotFinite(t.RowsPerSec)
			}
		}
		c.Load = &l
	}
	for _, v := range []*float64{&c.Dataset.AvgFollowees, &c.Dataset.Scale, &c.Environment.PhaseSeconds} {
		if !finite(*v) {
			note("dataset or environment figure was %v", *v)
			*v = 0
		}
	}
	return &c
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func zeroIfNotFinite(v float64) float64 {
	if finite(v) {
		return v
	}
	return 0
}

// fileIn is path itself, or the file name inside it when path is a
// directory.
func fileIn(path, name string) (string, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return filepath.Join(path, name), nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return path, nil
}

// OldestReadable is the oldest format version Load converts.
const OldestReadable = 2

// upgrade converts a result of an older format version to the current one
// in place, or refuses a version it cannot read. Versions 2 and 3 lack only
// what later versions added (costs and mixed traffic in 3; degree figures
// and activity in 4), whose absence means "not measured"; their users were
// drawn uniformly.
func upgrade(r *Result) error {
	switch r.Version {
	case FormatVersion:
		return nil
	case 2, 3:
		r.Version = FormatVersion
		if r.Dataset.Activity == "" {
			r.Dataset.Activity = "uniform"
		}
		return nil
	}
	return fmt.Errorf("format version %d, want %d to %d", r.Version, OldestReadable, FormatVersion)
}
