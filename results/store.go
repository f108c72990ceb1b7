package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
)

// File names inside a run directory.
const (
	JSONFile = "result.json"
	CSVFile  = "result.csv"
	PNGFile  = "result.png"
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

// Save creates dir and writes r there as result.json (indented), result.csv,
// result.png and, when the dataset records its degree distributions,
// degrees.png. Times are stored in UTC. JSON cannot hold NaN or infinity,
// and a benchmark's result is too costly to lose over one bad ratio, so such
// values are saved as absent (an Extra key) or 0 (a Phase field) and each
// replacement is recorded in Notes. r itself is not modified.
func Save(dir string, r *Result) error {
	if err := save(dir, r); err != nil {
		return fmt.Errorf("save result: %w", err)
	}
	return nil
}

func save(dir string, r *Result) error {
	c := sanitized(r)
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, JSONFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	var csvBuf bytes.Buffer
	if err := WriteCSV(&csvBuf, c); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, CSVFile), csvBuf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := WritePNG(filepath.Join(dir, PNGFile), c); err != nil {
		return err
	}
	if c.Dataset.HasDegrees() {
		return WriteDegreesPNG(filepath.Join(dir, DegreesPNGFile), c)
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
	fixPhase := func(where string, p *Phase) {
		for _, f := range []struct {
			name string
			v    *float64
		}{
			{"seconds", &p.Seconds}, {"ops_per_sec", &p.OpsPerSec}, {"p50_ms", &p.P50Ms},
			{"p90_ms", &p.P90Ms}, {"p99_ms", &p.P99Ms}, {"p999_ms", &p.P999Ms}, {"max_ms", &p.MaxMs},
		} {
			if !finite(*f.v) {
				note("%s %s was %v", where, f.name, *f.v)
				*f.v = 0
			}
		}
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

// Load reads the result saved in dir by Save. dir may also be the path of
// the result.json file itself. A result of an older format that can be
// read without guessing (version 2) is converted to the current one.
func Load(dir string) (*Result, error) {
	r, err := load(dir)
	if err != nil {
		return nil, fmt.Errorf("load result: %w", err)
	}
	return r, nil
}

func load(path string) (*Result, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, JSONFile)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Version == 2 {
		upgrade(&r)
	}
	if r.Version != FormatVersion {
		return nil, fmt.Errorf("%s: format version %d, want %d (or 2)", path, r.Version, FormatVersion)
	}
	return &r, nil
}

// upgrade converts a version 2 result to version 3: every run then drew its
// readers and authors uniformly. Its degree percentiles and distributions
// stay unknown (Dataset.HasDegrees is false).
func upgrade(r *Result) {
	r.Version = 3
	if r.Dataset.Activity == "" {
		r.Dataset.Activity = "uniform"
	}
}
