package results

import (
	"encoding/csv"
	"io"
	"math"
	"slices"
	"strconv"
)

// CSVHeader is the first line WriteCSV writes: the phase's figures, then
// its cost per operation (cost.Cost, by its keys), empty when not
// measured. Columns are only ever added at the end.
var CSVHeader = append([]string{
	"model", "phase", "ops", "errors", "seconds", "ops_per_sec",
	"p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms",
	"data_bytes", "disk_bytes", "skipped",
}, costKeys()...)

func costKeys() []string {
	var out []string
	for _, c := range costColumns {
		if c.derived == nil {
			out = append(out, c.key)
		}
	}
	return out
}

// WriteCSV writes one row per model and phase (submit, retrieve,
// retrieve_older, and mixed and traffic where they ran, with a row
// "traffic_<operation>" for each operation type of the traffic, and a row
// "rate_search" where the traffic searched for its highest rate within the
// latency objective (see csvSearchRow)), then a row for the harness's
// no-op store (model "harness", phase "noop") if it was measured. Figures
// that were not measured are empty cells rather than 0, so that a
// spreadsheet's average does not count them; a phase that was not run has
// skipped=true and no figures at all.
func WriteCSV(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	if err := writeRows(cw, r, nil); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// writeRows writes WriteCSV's rows of r, each after the cells of prefix.
func writeRows(cw *csv.Writer, r *Result, prefix []string) error {
	write := func(row []string) error { return cw.Write(append(slices.Clone(prefix), row...)) }
	for i := range r.Models {
		m := &r.Models[i]
		for _, ref := range phaseRefs {
			if p := ref.get(m); p != nil {
				if err := write(csvRow(m.Name, ref.key, p, m.DataBytes, m.DiskBytes)); err != nil {
					return err
				}
			}
		}
		if t := m.Traffic; t != nil {
			for _, op := range t.OpNames() {
				if p, ok := t.Ops[op]; ok {
					if err := write(csvRow(m.Name, "traffic_"+op, &p, m.DataBytes, m.DiskBytes)); err != nil {
						return err
					}
				}
			}
			if t.Searched() {
				if err := write(csvSearchRow(m.Name, t.Search, m.DataBytes, m.DiskBytes)); err != nil {
					return err
				}
			}
		}
		if bu := m.Burst; bu != nil {
			for _, part := range []struct {
				key string
				p   *Phase
			}{{"burst_before", &bu.Before}, {"burst_during", &bu.During}, {"burst_after", &bu.After}} {
				if err := write(csvRow(m.Name, part.key, part.p, m.DataBytes, m.DiskBytes)); err != nil {
					return err
				}
			}
		}
	}
	if r.Harness != nil {
		if err := write(csvRow("harness", "noop", r.Harness, 0, 0)); err != nil {
			return err
		}
	}
	if r.MemcacheGet != nil {
		if err := write(csvRow("memcached", "get", r.MemcacheGet, 0, 0)); err != nil {
			return err
		}
	}
	return nil
}

func csvRow(model, phase string, p *Phase, data, disk int64) []string {
	row := []string{model, phase}
	if !p.Ran() {
		row = append(row, make([]string, 9)...)
	} else {
		row = append(row, strconv.FormatInt(p.Ops, 10), strconv.FormatInt(p.Errors, 10),
			csvFloat(p.Seconds), csvFloat(p.OpsPerSec))
		if p.HasLatency() {
			row = append(row, csvFloat(p.P50Ms), csvFloat(p.P90Ms), csvFloat(p.P99Ms),
				csvFloat(p.P999Ms), csvFloat(p.MaxMs))
		} else {
			row = append(row, make([]string, 5)...)
		}
	}
	row = append(row, csvBytes(data), csvBytes(disk), strconv.FormatBool(!p.Ran()))
	for _, k := range costKeys() {
		if v, ok := p.Cost[k]; ok {
			row = append(row, csvFloat(v))
		} else {
			row = append(row, "")
		}
	}
	return row
}

// CSVRateSearch is the phase of the CSV row that holds a model's highest
// rate within the latency objective.
const CSVRateSearch = "rate_search"

// csvSearchRow is the row of a rate search: ops_per_sec is the highest
// planned rate whose p99 held the objective (0 when none did), and ops,
// errors, seconds and the p50, p99 and p99.9 latencies are those of the
// step that ran at it (empty when none held; a step has no p90 or max).
func csvSearchRow(model string, s *RateSearch, data, disk int64) []string {
	row := []string{model, CSVRateSearch}
	if st, ok := s.BestStep(); ok {
		row = append(row, strconv.FormatInt(int64(math.Round(st.AchievedPerSec*s.StepSeconds)), 10),
			strconv.FormatInt(st.Errors, 10), csvFloat(s.StepSeconds), csvFloat(s.BestPerSec),
			csvFloat(st.P50Ms), "", csvFloat(st.P99Ms), csvFloat(st.P999Ms), "")
	} else {
		row = append(row, "", "", "", "0", "", "", "", "", "")
	}
	row = append(row, csvBytes(data), csvBytes(disk), "false")
	return append(row, make([]string, len(costKeys()))...)
}

func csvFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// csvBytes leaves a size of 0 (not measured) empty.
func csvBytes(n int64) string {
	if n <= 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}
