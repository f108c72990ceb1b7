package results

import "fmt"

// GoalHTTPOverInProcess: every model's newest pages read through the HTTP
// API (bench --http) against the same phase in process, in one run.
const GoalHTTPOverInProcess = 0.5

// httpGrid sets each model's newest pages read through the HTTP API
// (Model.RetrieveHTTP: package httpapi's server in the benchmark's
// process, read by its Client) against the same phase in process: rates,
// their ratio and latencies; nil when the run measured none.
func httpGrid(r *Result) *grid {
	g := &grid{}
	g.add("through HTTP", "newest/s in process", "newest/s over HTTP", "HTTP : in process",
		"p50 in process", "p50 over HTTP", "p99 in process", "p99 over HTTP")
	rows := 0
	for i := range r.Models {
		m := &r.Models[i]
		h := m.RetrieveHTTP
		if h == nil || !h.Ran() {
			continue
		}
		in := &m.Retrieve
		g.add(m.Name, fmtNum(in.OpsPerSec), fmtNum(h.OpsPerSec), fmtRatio(ratio(h.OpsPerSec, in.OpsPerSec)),
			fmtMs(in.P50Ms), fmtMs(h.P50Ms), fmtMs(in.P99Ms), fmtMs(h.P99Ms))
		rows++
	}
	if rows == 0 {
		return nil
	}
	return g
}

// judgeHTTP records the goal of the HTTP API: the lowest ratio of a
// model's newest pages over HTTP to its newest pages in process.
func (r *Result) judgeHTTP() {
	var worst *Model
	low := 0.0
	for i := range r.Models {
		m := &r.Models[i]
		if m.RetrieveHTTP == nil || !m.RetrieveHTTP.Ran() || !m.Retrieve.Ran() || m.Retrieve.OpsPerSec <= 0 {
			continue
		}
		if v := m.RetrieveHTTP.OpsPerSec / m.Retrieve.OpsPerSec; worst == nil || v < low {
			worst, low = m, v
		}
	}
	if worst == nil {
		return
	}
	r.Goals = append(r.Goals, Goal{
		Name: "newest pages over HTTP / in process (the lowest model)", Value: low, Target: GoalHTTPOverInProcess,
		Met:    low >= GoalHTTPOverInProcess,
		Detail: fmt.Sprintf("%s %.0f/s over HTTP, %.0f/s in process", worst.Name, worst.RetrieveHTTP.OpsPerSec, worst.Retrieve.OpsPerSec),
	})
}
