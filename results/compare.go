package results

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
)

// WriteComparison writes runs a and b side by side, model by model and figure
// by figure, with the ratio b/a: above 1 means b is larger (faster, for a
// rate; slower, for a latency; bigger, for a size). Models present in only
// one run are shown with "–" on the other side. Differences in dataset or
// durability are called out first, because they make every ratio below them
// a comparison of setups rather than of code.
func WriteComparison(w io.Writer, a, b *Result) error {
	var sb strings.Builder
	sb.WriteString("comparison of two runs, ratio b/a\n")
	for _, run := range []struct {
		name string
		r    *Result
	}{{"a", a}, {"b", b}} {
		line := run.name + ": "
		if !run.r.StartedAt.IsZero() {
			line += run.r.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC") + " "
		}
		if run.r.Command != "" {
			line += run.r.Command + " "
		}
		line += "(" + serverSummary(run.r.Environment) + ")"
		if run.r.Failed() {
			line += " RUN FAILED: " + strings.Join(run.r.Failures, "; ")
		}
		sb.WriteString(line + "\n")
	}
	if !reflect.DeepEqual(a.Dataset, b.Dataset) {
		sb.WriteString("warning: datasets differ\n  a: " + datasetSummary(a.Dataset) +
			"\n  b: " + datasetSummary(b.Dataset) + "\n")
	} else {
		sb.WriteString("dataset: " + datasetSummary(a.Dataset) + "\n")
	}
	if a.Environment.Durability != b.Environment.Durability {
		fmt.Fprintf(&sb, "warning: durability differs (a %s, b %s)\n",
			orDash(a.Environment.Durability), orDash(b.Environment.Durability))
	}
	sb.WriteString("\n")

	g := &grid{}
	g.add("", "a", "b", "b/a")
	for _, name := range modelNames(a, b) {
		g.add(name)
		for _, c := range compareRows(a.Model(name), b.Model(name)) {
			g.add(c...)
		}
	}
	if a.Harness != nil || b.Harness != nil {
		g.add("harness")
		va, vb := phaseRate(a.Harness, "ops/s"), phaseRate(b.Harness, "ops/s")
		g.add("  no-op store", va, vb, fmtRatio(ratio(rateOf(a.Harness), rateOf(b.Harness))))
	}
	g.write(&sb)
	_, err := io.WriteString(w, sb.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return Dash
	}
	return s
}

// modelNames lists a's models in order, then those only b has.
func modelNames(a, b *Result) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range []*Result{a, b} {
		for _, m := range r.Models {
			if !seen[m.Name] {
				seen[m.Name] = true
				names = append(names, m.Name)
			}
		}
	}
	return names
}

// searchLabel names the row of the highest rate within the latency
// objective, if either model searched for it: with the objective, or both
// when the runs' differ.
func searchLabel(ma, mb *Model) (string, bool) {
	var slos []float64
	for _, m := range []*Model{ma, mb} {
		if m != nil && m.Traffic.Searched() {
			slos = append(slos, m.Traffic.Search.SLOMs)
		}
	}
	switch {
	case len(slos) == 0:
		return "", false
	case len(slos) == 2 && slos[0] != slos[1]:
		return fmt.Sprintf("highest rate within p99 objective (a ≤ %s, b ≤ %s)", fmtMs(slos[0]), fmtMs(slos[1])), true
	}
	return "highest rate at p99 ≤ " + fmtMs(slos[0]), true
}

// compareRows are the rows of one model: label, a, b, b/a. ma or mb may be
// nil when the model is missing from that run.
func compareRows(ma, mb *Model) [][]string {
	var rows [][]string
	add := func(label string, va, vb float64, format func(float64) string) {
		f := func(v float64) string {
			if math.IsNaN(v) {
				return Dash
			}
			return format(v)
		}
		rows = append(rows, []string{"  " + label, f(va), f(vb), fmtRatio(ratio(vb, va))})
	}
	size := func(get func(*Model) int64) func(*Model) float64 {
		return func(m *Model) float64 { return positive(float64(get(m))) }
	}
	val := func(m *Model, get func(*Model) float64) float64 {
		if m == nil {
			return math.NaN()
		}
		return get(m)
	}
	bytesOf := func(v float64) string { return fmtBytes(int64(v)) }

	dataOf := size(func(m *Model) int64 { return m.DataBytes })
	add("data size (data+index)", val(ma, dataOf), val(mb, dataOf), bytesOf)
	diskOf := size(func(m *Model) int64 { return m.DiskBytes })
	if da, db := val(ma, diskOf), val(mb, diskOf); !math.IsNaN(da) || !math.IsNaN(db) {
		add("disk size (files)", da, db, bytesOf)
	}
	var both []Model
	for _, m := range []*Model{ma, mb} {
		if m != nil {
			both = append(both, *m)
		}
	}
	for _, ref := range usedPhases(both) {
		rate := func(m *Model) float64 { return rateOf(ref.get(m)) }
		p99 := func(m *Model) float64 {
			if p := ref.get(m); p != nil && p.HasLatency() {
				return p.P99Ms
			}
			return math.NaN()
		}
		add(ref.label, val(ma, rate), val(mb, rate), func(v float64) string { return fmtRate(v, ref.unit) })
		add("  latency p99", val(ma, p99), val(mb, p99), fmtMs)
	}
	if label, ok := searchLabel(ma, mb); ok {
		best := func(m *Model) float64 {
			if !m.Traffic.Searched() {
				return math.NaN()
			}
			return m.Traffic.Search.BestPerSec
		}
		add(label, val(ma, best), val(mb, best), fmtBestRate)
	}
	errs := func(m *Model) string {
		if m == nil {
			return Dash
		}
		var n int64
		ran := false
		for _, ref := range phaseRefs {
			if p := ref.get(m); p != nil && p.Ran() {
				n += p.Errors
				ran = true
			}
		}
		if !ran {
			return Dash
		}
		return fmtInt(n) + " errors"
	}
	rows = append(rows, []string{"  errors, all phases", errs(ma), errs(mb), ""})
	return rows
}
