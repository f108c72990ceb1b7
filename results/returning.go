package results

import (
	"github.com/pushpull/pushpull/internal/cost"
)

// Returning is a model's returning-users study (bench --returning): users
// who stop reading for an absence longer than the window of the designs
// that stop writing to readers who do not read, then come back, beside
// as many steady users who kept reading (see workload.Returning).
type Returning struct {
	Users    int     `json:"users"`
	AbsenceS float64 `json:"absence_s"`
	// Posts were made during the absence by the dormant users'
	// followees.
	Posts int64 `json:"posts"`
	// Dormant are the returning users' first reads, Steady the steady
	// users' reads at the same time.
	Dormant ReturnReads `json:"dormant"`
	Steady  ReturnReads `json:"steady"`
}

// ReturnReads are the newest-page reads of one group of a returning
// study, one at a time.
type ReturnReads struct {
	Reads  int64   `json:"reads"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
	// Expected is the posts of the absence the pages should have shown
	// (each reader's newest, up to a page), Shown those they showed,
	// Complete the pages that showed every one.
	Expected int64 `json:"expected"`
	Shown    int64 `json:"shown"`
	Complete int64 `json:"complete"`
	// Cost is per read; Counters the store's own counts per read
	// (rebuilds, rows per rebuild), as ActiveFigures gives them.
	Cost     cost.Cost          `json:"cost,omitempty"`
	Counters map[string]float64 `json:"counters,omitempty"`
}

// Completeness is Shown of Expected, 1 when nothing was expected.
func (r ReturnReads) Completeness() float64 {
	if r.Expected == 0 {
		return 1
	}
	return float64(r.Shown) / float64(r.Expected)
}

// returningRows are the table's rows of the returning study.
func returningRows(ms []Model, row func(label string, cell func(m *Model) string)) {
	has := false
	for i := range ms {
		has = has || ms[i].Returning != nil
	}
	if !has {
		return
	}
	ret := func(cell func(r *Returning) string) func(m *Model) string {
		return func(m *Model) string {
			if m.Returning == nil {
				return Dash
			}
			return cell(m.Returning)
		}
	}
	row("returning users: absence, posts meanwhile", ret(func(r *Returning) string {
		return fmtNum(r.AbsenceS) + " s, " + fmtInt(r.Posts)
	}))
	for _, g := range []struct {
		label string
		of    func(r *Returning) ReturnReads
	}{{"first read after the absence", func(r *Returning) ReturnReads { return r.Dormant }}, {"steady reader's read", func(r *Returning) ReturnReads { return r.Steady }}} {
		row("  "+g.label+": p50 / p99 / max", ret(func(r *Returning) string {
			x := g.of(r)
			return fmtNum(x.P50Ms) + " / " + fmtNum(x.P99Ms) + " / " + fmtMs(x.MaxMs)
		}))
		row("    rows read / written, all CPU µs per read", ret(func(r *Returning) string {
			x := g.of(r)
			rd, okR := x.Cost[cost.RowsRead]
			wr, okW := x.Cost[cost.RowsWritten]
			cpu, okC := x.Cost.AllCPU()
			if !okR || !okW || !okC {
				return Dash
			}
			return fmtNum(rd) + " / " + fmtNum(wr) + ", " + fmtNum(cpu)
		}))
		row("    completeness of the page", ret(func(r *Returning) string {
			x := g.of(r)
			return fmtShare(x.Completeness()) + " of " + fmtInt(x.Expected) + "; " + fmtInt(x.Complete) + " of " + fmtInt(x.Reads) + " pages whole"
		}))
	}
}
