package results

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Dash stands for a figure that was not measured. It is never 0: a reader
// must be able to tell "not run" from "ran and got nothing".
const Dash = "–"

// fmtInt writes n with thousands separators, as the paper's figures are
// read: 1,000,000 not 1000000.
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtNum writes a non-negative quantity with about three significant digits,
// and whole numbers with separators once they are large enough that
// fractions are noise.
func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return Dash
	case a >= 100:
		return fmtInt(int64(math.Round(v)))
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// fmtRate writes an operation rate with its unit, e.g. "1,300 timelines/s".
func fmtRate(v float64, unit string) string { return fmtNum(v) + " " + unit }

// fmtMs writes a latency in milliseconds.
func fmtMs(v float64) string { return fmtNum(v) + " ms" }

// fmtSeconds writes a duration in seconds.
func fmtSeconds(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " s" }

// fmtBytes writes a size in decimal units (1 MB = 10^6 bytes), the way the
// paper's "2.0GB" and "130MB" are best read: two significant digits are all
// that a data size comparison needs.
func fmtBytes(n int64) string {
	if n < 1000 {
		return fmtInt(n) + " B"
	}
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	v, i := float64(n), 0
	// 999.5 rather than 1000, so that 999.96 MB is written "1.0 GB", not
	// "1000 MB".
	for v >= 999.5 && i < len(units)-1 {
		v /= 1000
		i++
	}
	if v >= 9.95 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + units[i]
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}

// fmtRatio writes a ratio such as push/pull as "10.8x".
func fmtRatio(r float64) string {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0) || r <= 0:
		return Dash
	case r >= 100:
		return fmtInt(int64(math.Round(r))) + "x"
	case r >= 10:
		return strconv.FormatFloat(r, 'f', 1, 64) + "x"
	case r >= 1:
		return strconv.FormatFloat(r, 'f', 2, 64) + "x"
	default:
		return strconv.FormatFloat(r, 'g', 2, 64) + "x"
	}
}

// fmtExtra writes a model-specific figure, whose unit the key names.
func fmtExtra(v float64) string {
	if math.Abs(v) >= 1000 {
		return fmtInt(int64(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// ratio is a/b, or NaN when either side is missing.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return math.NaN()
	}
	return a / b
}

// sortedKeys returns m's keys in order, so that output is reproducible.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// grid lays out text in aligned columns: the first (labels) left-aligned,
// the rest (figures) right-aligned so that digits line up. A row of one cell
// is a heading and does not widen the columns. Widths count runes, so "–"
// takes one column.
type grid struct{ rows [][]string }

func (g *grid) add(cells ...string) { g.rows = append(g.rows, cells) }

func (g *grid) addf(format string, a ...any) { g.add(fmt.Sprintf(format, a...)) }

func (g *grid) write(b *strings.Builder) {
	var widths []int
	for _, row := range g.rows {
		if len(row) < 2 {
			continue
		}
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range g.rows {
		var line strings.Builder
		for i, c := range row {
			if len(row) < 2 {
				line.WriteString(c)
				break
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i == 0 {
				line.WriteString(c + pad)
			} else {
				line.WriteString("   " + pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}
