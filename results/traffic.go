package results

import (
	"slices"
	"strings"

	"github.com/pushpull/pushpull/internal/cost"
)

// Loop kinds of Traffic.Loop.
const (
	// LoopClosed: a fixed number of workers, each starting an operation
	// when its previous one returns. Latency runs from the actual start.
	LoopClosed = "closed"
	// LoopOpen: operations start on a planned schedule whatever the store
	// does (package loadgen/openloop). Latency runs from the intended
	// start, so waiting for a busy store is part of it.
	LoopOpen = "open"
)

// Traffic is a model's phase of mixed traffic, the workload a production
// feed faces: newest pages, older pages, posts, follows and unfollows in
// the proportions Mix gives, measured per operation type.
type Traffic struct {
	// Mix is the proportions, as the --mix flag takes them, e.g.
	// "newest=76,older=20,post=2,follow=1,unfollow=1". Its order is the
	// order operations are reported in.
	Mix string `json:"mix"`
	// Loop is LoopClosed or LoopOpen.
	Loop string `json:"loop"`
	// Workers are the closed loop's workers, or the open loop's bound on
	// operations in flight.
	Workers int `json:"workers"`
	// Total is every operation of the phase, Ops each type's, by the
	// names of Mix. In an open loop their latencies run from the intended
	// start.
	Total Phase            `json:"total"`
	Ops   map[string]Phase `json:"ops"`
	// Open is set for an open loop.
	Open *OpenLoop `json:"open_loop,omitempty"`
	// Search is set when the run searched for the highest rate that holds
	// the latency objective.
	Search *RateSearch `json:"rate_search,omitempty"`
	// Visibility is what a probe beside the phase measured: how soon and
	// how completely posts showed, how soon deletes took effect.
	Visibility *Visibility `json:"visibility,omitempty"`
	// Undone counts the traffic's unfollows of edges its follows had
	// added (package loadgen/workload's Churn.Undone); nil in runs that
	// predate it.
	Undone *Undone `json:"undone,omitempty"`
}

// Undone is how many of a traffic's unfollows had removed an edge one of
// its follows added, at three points: when its measured stretch began
// (the warm-up's), when it ended, and after the rate search and the
// follow graph's restore (all of the traffic's). A store that marks an
// unfollow until the edge is followed again (push-redis's tombstones)
// keeps a mark of each.
type Undone struct {
	AtStart int64 `json:"at_start"`
	AtEnd   int64 `json:"at_end"`
	Total   int64 `json:"total"`
}

// Searched reports whether the traffic searched for its highest rate
// within the latency objective: Search.BestPerSec is then a figure (0 when
// no step held).
func (t *Traffic) Searched() bool { return t != nil && t.Search != nil && len(t.Search.Steps) > 0 }

// fmtBestRate formats a search's best rate (RateSearch.BestPerSec): "none
// held" when no step held.
func fmtBestRate(perSec float64) string {
	if perSec <= 0 {
		return "none held"
	}
	return fmtRate(perSec, "ops/s")
}

// BestStep is the step that ran at the search's best rate, if one held.
func (s *RateSearch) BestStep() (RateStep, bool) {
	if s.BestPerSec <= 0 {
		return RateStep{}, false
	}
	for _, st := range s.Steps {
		if st.Held && st.RatePerSec == s.BestPerSec {
			return st, true
		}
	}
	return RateStep{}, false
}

// OpNames are the operation types of Mix, in its order.
func (t *Traffic) OpNames() []string {
	var out []string
	for part := range strings.SplitSeq(t.Mix, ",") {
		name, _, _ := strings.Cut(part, "=")
		if name = strings.TrimSpace(name); name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, k := range sortedKeys(t.Ops) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// OpenLoop is what an open-loop phase adds to its latencies: how the store
// kept up with the plan. Saturation is reported, never hidden: operations
// that started late are counted with how late, and those that never
// started (Missed) are counted too.
type OpenLoop struct {
	Arrivals string `json:"arrivals"` // "poisson" or "constant"
	// RatePerSec is the planned rate; OfferedPerSec what the plan asked
	// for in the measured stretch (RatePerSec give or take the Poisson
	// noise); AchievedPerSec the rate operations completed at.
	RatePerSec     float64 `json:"rate_per_sec"`
	OfferedPerSec  float64 `json:"offered_per_sec"`
	AchievedPerSec float64 `json:"achieved_per_sec"`
	// Scheduled = Started + Missed; Late of the started began more than
	// a millisecond behind their intended start.
	Scheduled int64 `json:"scheduled"`
	Started   int64 `json:"started"`
	Late      int64 `json:"late"`
	Missed    int64 `json:"missed"`
	// How late operations started, over all started ones, in ms.
	LateP50Ms float64 `json:"late_p50_ms"`
	LateP99Ms float64 `json:"late_p99_ms"`
	LateMaxMs float64 `json:"late_max_ms"`
	// Service is the service time (from the actual start) of all
	// operations: what the store took once asked.
	Service      Phase `json:"service"`
	PeakInFlight int64 `json:"peak_in_flight"`
	PeakBacklog  int64 `json:"peak_backlog"`
	// Saturated: operations were missed, or completed at under 90% of
	// the offered rate. The latencies then describe a store past its
	// capacity.
	Saturated bool `json:"saturated"`
	// StealShare is the share of the machine's CPU time, all its CPUs,
	// that a hypervisor gave other machines over the measured stretch
	// and the drain (0 to 1): time charged to no process, in which
	// operations that wanted a CPU waited. Absent where it could not be
	// read, and from results that predate it.
	StealShare *float64 `json:"steal_share,omitempty"`
}

// RateSearch is the highest rate at which the mixed traffic's p99 latency,
// from intended starts, stayed within an objective: BG's SoAR rating,
// found by short open-loop steps.
type RateSearch struct {
	SLOMs float64 `json:"slo_p99_ms"`
	// BestPerSec is the highest planned rate that held; 0 when none did.
	BestPerSec  float64    `json:"best_rate_per_sec"`
	StartPerSec float64    `json:"start_rate_per_sec"`
	StepSeconds float64    `json:"step_seconds"`
	Steps       []RateStep `json:"steps"`
}

// RateStep is one step of a RateSearch.
type RateStep struct {
	RatePerSec     float64 `json:"rate_per_sec"`
	OfferedPerSec  float64 `json:"offered_per_sec"`
	AchievedPerSec float64 `json:"achieved_per_sec"`
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
	P999Ms         float64 `json:"p999_ms"`
	Errors         int64   `json:"errors"`
	Late           int64   `json:"late"`
	Missed         int64   `json:"missed"`
	Held           bool    `json:"held"`
	// Retry marks a step that re-ran a rate that had failed, to tell a
	// failure of the rate from a transient one (the search's Confirm, or
	// a Disturbed step just before it); when it held, the earlier step at
	// that rate no longer bounds the search.
	Retry bool `json:"retry,omitempty"`
	// StealShare is the share of the machine's CPU time a hypervisor
	// took over the step (as OpenLoop.StealShare); Disturbed marks a step
	// that failed while it exceeded the search's bound
	// (openloop.SearchConfig.MaxSteal): its failure did not count, and
	// the next step re-ran its rate.
	StealShare *float64 `json:"steal_share,omitempty"`
	Disturbed  bool     `json:"disturbed,omitempty"`
	// Ops are each operation type's figures in the step, by the names of
	// the traffic's mix: the latency-against-offered-rate curve of each
	// type. Absent from results that predate them.
	Ops map[string]RateOp `json:"ops,omitempty"`
	// Counted is what the design's store counted about its own work over
	// the step (timeline.Counting, by counter name: the fences it paid,
	// the state it rebuilt, the reads that fell back...), from the step's
	// start to its drain's end; absent for a store that counts nothing and
	// from results that predate it.
	Counted map[string]int64 `json:"counted,omitempty"`
	// Cost is what an operation of the step cost the servers and the
	// client (as a phase's Phase.Cost), from the step's start to its
	// drain's end; CPU is each process's CPU a second over the step
	// (ProcessCPUOf): together, over the steps, the CPU a process needs
	// against the offered rate. Both absent when the run did not measure
	// costs, and from results that predate them.
	Cost cost.Cost   `json:"cost,omitempty"`
	CPU  *ProcessCPU `json:"cpu_per_sec,omitempty"`
	// SettleS is how long the search waited before the step for the box
	// to settle: its processes back near the run's idle CPU, the
	// background work of the step before finished; Unsettled that it had
	// not after the wait's bound, and the step ran anyway. Both absent for
	// the first step, a run that measured no costs and results that
	// predate them.
	SettleS   float64 `json:"settle_s,omitempty"`
	Unsettled bool    `json:"unsettled,omitempty"`
}

// RateOp is one operation type's share of a RateStep: its completed
// operations' rate and latencies from intended starts.
type RateOp struct {
	Ops       int64   `json:"ops"`
	Errors    int64   `json:"errors"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
}
