package openloop

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// SearchConfig describes a search for the highest rate that holds a latency
// objective.
type SearchConfig struct {
	// SLO is the objective: the p99 latency (from the intended start) of
	// all operations of a step must not exceed it.
	SLO time.Duration
	// Start is the first rate tried, in operations per second: an
	// estimate, such as a closed loop's throughput.
	Start float64
	// MaxSteps bounds the runs; 0 means DefaultSearchSteps.
	MaxSteps int
	// Precision ends the search once the rate that failed is within this
	// share above the rate that held; 0 means DefaultPrecision.
	Precision float64
	// MaxErrorRate is the share of failed operations above which a step
	// does not hold; 0 means none may fail.
	MaxErrorRate float64
	// MinRate: the search gives up below it; 0 means 1 operation/s.
	MinRate float64
	// Confirm is how many times the search may re-run the lowest rate
	// that failed when it would otherwise end below it, to tell a
	// failure of the rate from a transient one of the machine: a stall
	// of a few tens of milliseconds anywhere in a step is its p99. A
	// re-run that holds overturns the failure, and the search goes on
	// above it. 0 means DefaultConfirm; -1 means none.
	Confirm int
	// MaxSteal is the share of the machine's CPU time a hypervisor may
	// take during a step (Result.Steal) for its failure to count: a step
	// that fails while more was stolen is marked Step.Disturbed and run
	// again at once, at most MaxStealReruns times in a search (not
	// counted in MaxSteps), unless it fell behind its plan by more than
	// the stolen time explains: an overloaded step fails for its rate.
	// 0 means DefaultMaxSteal; 1 never re-runs; a share below 0 or above
	// 1 is a *ConfigError.
	MaxSteal float64
}

// Defaults of SearchConfig.
const (
	DefaultSearchSteps = 8
	DefaultPrecision   = 0.1
	DefaultConfirm     = 1
	// DefaultMaxSteal: a step that failed while a twentieth of the
	// CPUs' time went to other machines runs again. On a shared virtual
	// machine here, 10-second windows had a median of 1.3 % stolen and
	// reached 36 %.
	DefaultMaxSteal = 0.05
	// MaxStealReruns bounds the steps a search runs again for steal.
	MaxStealReruns = 2
)

// Step is one run of a search.
type Step struct {
	Rate     float64 // planned
	Offered  float64 // planned in the measured stretch, per second
	Achieved float64
	// Latencies of all operations from their intended starts, in ms.
	P50Ms, P99Ms, P999Ms float64
	Errors, Late, Missed int64
	Held                 bool
	// Retry marks a step that re-ran a rate that had failed
	// (SearchConfig.Confirm, or a Disturbed step just before it).
	Retry bool
	// Disturbed marks a step that failed while a hypervisor took more
	// than SearchConfig.MaxSteal of the CPUs' time (Result.Steal): its
	// failure did not count, and the next step ran its rate again.
	Disturbed bool
	Result    Result
}

// SearchResult is the outcome of a search.
type SearchResult struct {
	// Best is the highest rate that held the objective; 0 if none did.
	Best  float64
	Steps []Step // in the order run
}

// Held reports whether a run held the objective: every planned operation
// started before the drain ended, few enough failed, and the p99 latency
// from the intended start is within the SLO.
func (c SearchConfig) Held(r Result) bool {
	if r.Missed > 0 || r.Total.Ops == 0 || r.ErrorRate() > c.MaxErrorRate {
		return false
	}
	return time.Duration(r.Total.Latency.ValueAtQuantile(99))*time.Microsecond <= c.SLO
}

// FindRate searches for the highest rate that holds c.SLO, running step at
// each rate it tries. From c.Start it doubles the rate until a step fails
// (or halves it until one holds), then bisects between the best rate that
// held and the lowest that failed until they are within c.Precision, or
// c.MaxSteps steps have run. Where it would end, it re-runs the lowest
// rate that failed, up to c.Confirm times in all (not counted in
// c.MaxSteps): if the re-run holds, that rate held, and the search goes
// on between it and the next rate that failed above it, or doubles when
// none did. A step that fails while a hypervisor took more than
// c.MaxSteal of the machine's CPU time, and not for want of capacity
// (stolen), is Disturbed: it is run again at once, at most MaxStealReruns
// times in a search, and only the re-run counts. Each step is a whole
// open-loop run, drained, so that no backlog carries over into the next.
func FindRate(ctx context.Context, c SearchConfig, step func(ctx context.Context, rate float64) (Result, error)) (SearchResult, error) {
	if c.SLO <= 0 {
		return SearchResult{}, &ConfigError{Field: "slo", Value: c.SLO.String(), Reason: "want a latency above 0"}
	}
	if !(c.Start > 0) || math.IsInf(c.Start, 0) {
		return SearchResult{}, &ConfigError{Field: "start", Value: fmt.Sprint(c.Start), Reason: "want a rate above 0"}
	}
	if c.MaxSteps == 0 {
		c.MaxSteps = DefaultSearchSteps
	}
	if c.MaxSteps < 1 {
		return SearchResult{}, &ConfigError{Field: "steps", Value: fmt.Sprint(c.MaxSteps), Reason: "want at least 1"}
	}
	switch {
	case c.Confirm == 0:
		c.Confirm = DefaultConfirm
	case c.Confirm == -1:
		c.Confirm = 0
	case c.Confirm < -1:
		return SearchResult{}, &ConfigError{Field: "confirm", Value: fmt.Sprint(c.Confirm), Reason: "want 0 or more re-runs, or -1 for none"}
	}
	switch {
	case c.MaxSteal == 0:
		c.MaxSteal = DefaultMaxSteal
	case !(c.MaxSteal > 0 && c.MaxSteal <= 1):
		return SearchResult{}, &ConfigError{Field: "max-steal", Value: fmt.Sprint(c.MaxSteal), Reason: "want a share of the CPUs' time, 0 to 1"}
	}
	if c.Precision <= 0 {
		c.Precision = DefaultPrecision
	}
	if c.MinRate <= 0 {
		c.MinRate = 1
	}
	var out SearchResult
	lo := 0.0              // best held
	var failed []float64   // the rates that failed and were not overturned
	hi := func() float64 { // the lowest of them
		if len(failed) == 0 {
			return math.Inf(1)
		}
		return slices.Min(failed)
	}
	// why a step runs its rate again, if it does
	const (
		first   = iota
		confirm // SearchConfig.Confirm
		steal   // the step before was Disturbed
	)
	rate, retry := c.Start, first
	steps, confirms, steals := 0, 0, 0
	for {
		r, err := step(ctx, rate)
		if err != nil {
			return out, err
		}
		s := Step{Rate: rate, Offered: r.OfferedPerSec(), Achieved: r.AchievedPerSec(),
			Errors: r.Total.Errors, Late: r.Late, Missed: r.Missed, Held: c.Held(r), Retry: retry != first, Result: r}
		if h := r.Total.Latency; h != nil && h.TotalCount() > 0 {
			v := h.ValueAtPercentiles([]float64{50, 99, 99.9})
			s.P50Ms, s.P99Ms, s.P999Ms = float64(v[50])/1000, float64(v[99])/1000, float64(v[99.9])/1000
		}
		if retry == first {
			steps++
		}
		if !s.Held && stolen(r, c.MaxSteal) && steals < MaxStealReruns {
			// The machine's failure, maybe: run the rate again at
			// once, for the same reason as this step if it was a
			// re-run itself.
			s.Disturbed = true
			out.Steps = append(out.Steps, s)
			steals++
			if retry == first {
				retry = steal
			}
			continue
		}
		out.Steps = append(out.Steps, s)
		switch {
		case s.Held:
			lo = max(lo, rate)
			if retry == confirm { // the failure at rate is overturned
				i := slices.Index(failed, rate)
				failed = slices.Delete(failed, i, i+1)
			}
		case retry == confirm: // the failure stands: the search ends here
			out.Best = lo
			return out, nil
		default:
			failed = append(failed, rate)
		}
		retry = first
		end := steps >= c.MaxSteps
		switch h := hi(); {
		case math.IsInf(h, 1):
			rate *= 2
		case lo == 0:
			rate /= 2
			if rate < c.MinRate {
				return out, nil
			}
		case h <= lo*(1+c.Precision):
			end = true
		default:
			rate = (lo + h) / 2
		}
		if !end {
			continue
		}
		if h := hi(); confirms < c.Confirm && lo > 0 && h > lo && !math.IsInf(h, 1) {
			rate, retry = h, confirm
			confirms++
			continue
		}
		out.Best = lo
		return out, nil
	}
}

// stolen reports whether a step that failed may have failed for the
// hypervisor rather than for its rate: more than max of the machine's CPU
// time was stolen during it, and its operations kept up with the plan
// within what was stolen (none missed, and they completed at no less than
// SaturationShare of the offered rate less the stolen share). A step that
// fell further behind was overloaded whatever was stolen.
func stolen(r Result, max float64) bool {
	return r.StealKnown && r.Steal > max && r.Missed == 0 && r.AchievedPerSec() >= (SaturationShare-r.Steal)*r.OfferedPerSec()
}
