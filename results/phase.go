package results

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pushpull/pushpull/internal/cost"
)

// Phase is the outcome of one timed phase: a fixed time (or count) of load
// against one model. Latencies are per operation, in milliseconds: from the
// operation's start in a closed loop, from its intended start in an open
// one (Traffic.Loop).
type Phase struct {
	Ops       int64   `json:"ops"`    // successful operations
	Errors    int64   `json:"errors"` // failed operations, not in Ops nor in the latencies
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Ms     float64 `json:"p50_ms"`
	P90Ms     float64 `json:"p90_ms"`
	P99Ms     float64 `json:"p99_ms"`
	P999Ms    float64 `json:"p999_ms"`
	MaxMs     float64 `json:"max_ms"`
	Skipped   bool    `json:"skipped,omitempty"`
	// WarmupOps are the operations a closed-loop phase ran in its
	// unmeasured warm-up (0 in runs that predate the count).
	WarmupOps int64 `json:"warmup_ops,omitempty"`
	// PostAudience is the mean follower count, in the dataset's graph, of
	// the authors of the phase's measured posts (package loadgen/workload's
	// Audience): 0 when it made none, or in runs that predate the count.
	PostAudience float64 `json:"post_audience,omitempty"`
	// FolloweeMessages is the mean number of messages, in the dataset, of
	// the followees of the phase's measured follows and unfollows (package
	// loadgen/workload's Churn.FolloweeMessages): what push backfills or
	// removes for each. 0 when it made none, or in runs that predate the
	// count.
	FolloweeMessages float64 `json:"followee_messages,omitempty"`
	// Cost is what an operation cost the servers and the client, when
	// measured.
	Cost cost.Cost `json:"cost,omitempty"`
}

// Ran reports whether the phase was run at all. A phase that ran but whose
// every operation failed did run: its rate of 0 is a real figure.
func (p Phase) Ran() bool { return !p.Skipped && (p.Ops > 0 || p.Errors > 0) }

// HasLatency reports whether the latency figures mean anything: they are
// taken over successful operations only.
func (p Phase) HasLatency() bool { return !p.Skipped && p.Ops > 0 }

// PhaseFromHistogram builds a Phase from a latency histogram whose values are
// microseconds, as the load generator records them. ops and errors are passed
// in rather than taken from the histogram because a recorder may drop values
// out of its range; the count of operations must not silently shrink with it.
// A nil or empty histogram gives zero latencies.
func PhaseFromHistogram(h *hdrhistogram.Histogram, ops, errors int64, seconds float64) Phase {
	p := Phase{Ops: ops, Errors: errors, Seconds: seconds}
	if seconds > 0 {
		p.OpsPerSec = float64(ops) / seconds
	}
	if h == nil || h.TotalCount() == 0 {
		return p
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	v := h.ValueAtPercentiles([]float64{50, 90, 99, 99.9})
	p.P50Ms = ms(v[50])
	p.P90Ms = ms(v[90])
	p.P99Ms = ms(v[99])
	p.P999Ms = ms(v[99.9])
	p.MaxMs = ms(h.Max())
	return p
}

// phaseRef names one of a model's phases, in the order they are reported.
type phaseRef struct {
	key   string // as in JSON and CSV
	label string // as in the table
	unit  string // what one operation is
	get   func(*Model) *Phase
}

var phaseRefs = []phaseRef{
	{"submit", "submission", "msg/s", func(m *Model) *Phase { return &m.Submit }},
	{"retrieve", "retrieval, newest page", "timelines/s", func(m *Model) *Phase { return &m.Retrieve }},
	{"retrieve_older", "retrieval, older page", "timelines/s", func(m *Model) *Phase { return &m.RetrieveOlder }},
	{"mixed", "mixed load", "ops/s", func(m *Model) *Phase { return m.Mixed }},
	{"traffic", "mixed traffic", "ops/s", func(m *Model) *Phase {
		if m.Traffic == nil {
			return nil
		}
		return &m.Traffic.Total
	}},
	{"delete", "deletes (own phase)", "deletes/s", func(m *Model) *Phase {
		if m.Deletes == nil {
			return nil
		}
		return &m.Deletes.Phase
	}},
	{"burst", "burst (open loop on a schedule)", "ops/s", func(m *Model) *Phase {
		if m.Burst == nil {
			return nil
		}
		return &m.Burst.Total
	}},
}
