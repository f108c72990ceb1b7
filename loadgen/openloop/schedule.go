package openloop

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"time"
)

// Arrivals is how intended start times are spaced.
type Arrivals string

const (
	// Poisson spaces arrivals by independent exponential gaps of mean
	// 1/rate: many independent users, each acting on their own, as
	// LinkBench's request rate and wrk2's exponential mode model them.
	// It is the default because bursts are what queues form behind.
	Poisson Arrivals = "poisson"
	// Constant spaces arrivals exactly 1/rate apart (wrk2's default).
	Constant Arrivals = "constant"
)

// ParseArrivals reads "poisson" or "constant"; "" means Poisson.
func ParseArrivals(s string) (Arrivals, error) {
	switch a := Arrivals(s); a {
	case "":
		return Poisson, nil
	case Poisson, Constant:
		return a, nil
	}
	return "", &ConfigError{Field: "arrivals", Value: s, Reason: fmt.Sprintf("want %s or %s", Poisson, Constant)}
}

// MaxPlanned bounds the operations one run may plan (warm-up included):
// the plan is kept in memory, 8 bytes an operation.
const MaxPlanned = 20_000_000

// schedule is the plan of intended start times, as offsets from the start
// of a run, made in full before the run begins: the n-th operation's time
// never depends on when, or whether, the store answered the ones before.
// Every offset is computed from the start (a sum of drawn gaps, or n/rate),
// never as "the clock now plus a gap".
type schedule struct {
	at        []time.Duration // ascending
	firstMeas int             // index of the first measured arrival
	end       time.Duration   // the end of the measured stretch
	measured  time.Duration   // its start

	claimed atomic.Int64 // arrivals handed to workers
	stopped atomic.Bool  // the drain is over: hand out nothing more
}

// plan makes the schedule: arrivals from 0 at rate, those from measureFrom
// on measured, up to end, or, when ops > 0, exactly ops measured ones (end
// is then the time the next one would have come).
func plan(rate float64, arrivals Arrivals, seed uint64, measureFrom, end time.Duration, ops int64) *schedule {
	return planStages([]Stage{{Rate: rate, Duration: end}}, arrivals, seed, measureFrom, ops)
}

// planStages makes the schedule of stages laid end to end from 0: within a
// stage, arrivals at its rate from its start (Poisson's gaps are memoryless,
// so a gap cut by the stage's end is drawn again at the next stage's rate);
// those from measureFrom on measured. With ops > 0 the (only) stage never
// ends: exactly ops arrivals are measured, and end is the time the next
// one would have come.
func planStages(stages []Stage, arrivals Arrivals, seed uint64, measureFrom time.Duration, ops int64) *schedule {
	s := &schedule{firstMeas: -1, measured: measureFrom}
	rng := rand.New(rand.NewPCG(seed, 0x0be11))
	var from time.Duration // the stage's start
	for _, st := range stages {
		until := from + st.Duration
		sum := 0.0 // seconds since from
		for i := 0; ; i++ {
			var off time.Duration
			if arrivals == Constant {
				off = from + time.Duration(float64(i)/st.Rate*1e9)
			} else {
				sum += rng.ExpFloat64() / st.Rate
				off = from + time.Duration(sum*1e9)
			}
			if s.firstMeas < 0 && off >= measureFrom {
				s.firstMeas = len(s.at)
			}
			if ops > 0 && s.firstMeas >= 0 && int64(len(s.at)-s.firstMeas) == ops {
				s.end = off
				return s
			}
			if ops <= 0 && off >= until {
				break
			}
			s.at = append(s.at, off)
		}
		from = until
	}
	if s.firstMeas < 0 {
		s.firstMeas = len(s.at)
	}
	s.end = from
	return s
}

// planned estimates how many arrivals a plan would hold, to refuse one too
// large to keep before making it.
func planned(rate float64, warmup, duration time.Duration, ops int64) float64 {
	if ops > 0 {
		return float64(ops) + rate*warmup.Seconds()
	}
	return rate * (warmup + duration).Seconds()
}

// claim hands the next arrival to a worker: its offset and whether it is
// measured. ok is false when the plan is done or stopped.
func (s *schedule) claim() (at time.Duration, measured, ok bool) {
	if s.stopped.Load() {
		return 0, false, false
	}
	i := s.claimed.Add(1) - 1
	if i >= int64(len(s.at)) {
		return 0, false, false
	}
	return s.at[i], s.firstMeas >= 0 && int(i) >= s.firstMeas, true
}

// unclaimed are the offsets of the measured arrivals no worker took.
func (s *schedule) unclaimed() []time.Duration {
	from := max(int(min(s.claimed.Load(), int64(len(s.at)))), s.firstMeas)
	if s.firstMeas < 0 || from >= len(s.at) {
		return nil
	}
	return s.at[from:]
}

// due is the number of arrivals whose intended start is at or before now.
func (s *schedule) due(now time.Duration) int {
	return sort.Search(len(s.at), func(i int) bool { return s.at[i] > now })
}

// scheduled is the number of measured arrivals.
func (s *schedule) scheduled() int {
	if s.firstMeas < 0 {
		return 0
	}
	return len(s.at) - s.firstMeas
}

// window is the length of the measured stretch.
func (s *schedule) window() time.Duration { return s.end - s.measured }
