// Package openloop drives operations at a planned rate, free of coordinated
// omission.
//
// A closed loop (package loadgen/workload's RunPhase) starts an operation
// only when the previous one on its worker has returned, so a store that
// stalls also stalls the load: the operations that would have arrived
// during the stall are never issued, and their waiting is never measured.
// wrk2 calls this coordinated omission; its fix, which Java YCSB
// (measurement.interval=intended) and scylla-bench also use, is to plan
// every operation's intended start time in advance and measure latency
// from it.
//
// Run does that. A schedule (Poisson or constant arrivals at Config.Rate)
// fixes each operation's intended start as an offset from the start of the
// run, computed from the start and never from the clock at the time of the
// previous operation. A fixed pool of Config.Workers goroutines takes the
// planned operations in order; a free worker sleeps until its operation's
// intended start, and a worker that takes an operation whose time has
// already passed (all workers were busy) starts it at once and counts it
// as late. Nothing is dropped and nothing waits for the store to catch up:
// the plan keeps advancing, and the time an operation spent waiting for a
// worker is part of its latency. Each operation records two times:
//
//   - latency, from the intended start to the end: what a user arriving on
//     schedule would have waited (the headline figure);
//   - service time, from the actual start to the end: what the store took
//     once asked.
//
// When the measured stretch of the plan ends, the workers finish the
// operations already due (the backlog) for at most Config.Drain; those
// still not started then are counted as missed, never silently left out.
// A go ticker is not used for the plan: time.Ticker drops ticks for a slow
// receiver, which is coordinated omission in the driver itself.
//
// The planned rate may change during a run: Config.Schedule lays stages of
// their own rates end to end (a base rate, a burst, the base rate again),
// and Config.Bucket cuts the measured stretch into buckets by intended
// start, so that Result.Series shows latency through the burst; Recovery
// reads from such a series how long it took to come back within an
// objective.
//
// FindRate searches, over short runs, for the highest rate whose p99
// latency stays within an objective, as BG's SoAR rating does.
package openloop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pushpull/pushpull/internal/hostcpu"
)

// Op performs one operation and says which kind it was, as an index into
// Config.Kinds (0 when there is one kind).
type Op func(ctx context.Context) (kind int, err error)

// Defaults of Config.
const (
	// DefaultWorkers bounds the operations in flight: generous next to a
	// closed loop's 8 workers, so that the pool is rarely what saturates,
	// yet bounded, so that a stalled store cannot pile up goroutines and
	// connections without limit (the failure go-ycsb's issue 26 reports).
	DefaultWorkers = 64
	// DefaultLateAfter is how much after its intended start an operation
	// may start before it counts as late: above the timer slack of a
	// sleeping goroutine, far below a queue's wait.
	DefaultLateAfter = time.Millisecond
	// MinDrain is the shortest drain: the backlog gets at least this long
	// after the measured stretch to start.
	MinDrain = time.Second
)

// Config describes one open-loop run.
type Config struct {
	Name     string
	Rate     float64  // planned operations per second, > 0
	Arrivals Arrivals // "" means Poisson
	// Workers is the most operations in flight at once; 0 means
	// DefaultWorkers.
	Workers int
	Warmup  time.Duration // planned but unmeasured time first
	// Duration is the measured stretch of the plan; ignored when Ops > 0.
	Duration time.Duration
	// Ops, if > 0, measures exactly this many planned operations instead.
	Ops int64
	// Drain is how long after the measured stretch the backlog may still
	// start; 0 means the measured stretch's length, at least MinDrain.
	Drain time.Duration
	// LateAfter: 0 means DefaultLateAfter.
	LateAfter time.Duration
	// Kinds names the kinds Op reports; nil means one kind, "op".
	Kinds []string
	Seed  uint64 // of the arrival times
	// Progress receives a row per second: offered and achieved rate, in
	// flight, backlog, late starts, p99. nil for none.
	Progress io.Writer
	// OnMeasure, if set, is called when the measured stretch begins.
	OnMeasure func()
	// Schedule, if set, replaces Rate and Duration: the measured stretch
	// follows these stages, and the warm-up runs at the first stage's
	// rate. Ops must then be 0.
	Schedule RateSchedule
	// Bucket, if > 0, cuts the measured stretch into buckets this long,
	// by intended start, and Result.Series gives each one's operations:
	// how latency moved through a burst.
	Bucket time.Duration
}

// stages is the schedule c plans, warm-up included.
func (c Config) stages() RateSchedule {
	if len(c.Schedule) == 0 {
		return RateSchedule{{Rate: c.Rate, Duration: c.Warmup + c.Duration}}
	}
	out := append(RateSchedule{}, c.Schedule...)
	out[0].Duration += c.Warmup
	return out
}

// MaxBuckets bounds the buckets of Result.Series.
const MaxBuckets = 100_000

// ConfigError reports an invalid setting.
type ConfigError struct {
	Field  string
	Value  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("open loop: %s %s: %s", e.Field, e.Value, e.Reason)
}

// MaxWorkers bounds Config.Workers.
const MaxWorkers = 4096

// Check reports the first invalid setting of c as a *ConfigError.
func (c Config) Check() error {
	bad := func(field string, v any, reason string) error {
		return &ConfigError{Field: field, Value: fmt.Sprint(v), Reason: reason}
	}
	if len(c.Schedule) > 0 {
		if err := c.Schedule.Check(); err != nil {
			return err
		}
		if c.Ops != 0 {
			return bad("ops", c.Ops, "a schedule of steps sets the measured stretch; want 0")
		}
		c.Rate, c.Duration = c.Schedule[0].Rate, c.Schedule.Duration()
		if n := c.Schedule.Ops() + c.Rate*c.Warmup.Seconds(); n > MaxPlanned {
			return bad("schedule", c.Schedule, fmt.Sprintf("plans more than %d operations in one run; shorten it", MaxPlanned))
		}
	}
	if c.Bucket < 0 || c.Bucket > 0 && c.Duration/c.Bucket > MaxBuckets {
		return bad("bucket", c.Bucket, fmt.Sprintf("want 0 for none, or a length that cuts the measured stretch into at most %d buckets", MaxBuckets))
	}
	switch {
	case !(c.Rate > 0) || c.Rate > 1e9:
		return bad("rate", c.Rate, "want operations per second above 0 (and at most 1e9)")
	case c.Workers < 0 || c.Workers > MaxWorkers:
		return bad("workers", c.Workers, fmt.Sprintf("want 1 to %d (0 for %d)", MaxWorkers, DefaultWorkers))
	case c.Ops < 0:
		return bad("ops", c.Ops, "want a count above 0, or 0 to run for the duration")
	case c.Ops == 0 && c.Duration <= 0:
		return bad("duration", c.Duration, "want a measured stretch above 0, or a count of operations")
	case len(c.Schedule) == 0 && planned(c.Rate, c.Warmup, c.Duration, c.Ops) > MaxPlanned:
		return bad("rate", c.Rate, fmt.Sprintf("plans more than %d operations in one run; shorten it", MaxPlanned))
	case c.Warmup < 0 || c.Drain < 0 || c.LateAfter < 0:
		return bad("warmup, drain or late-after", fmt.Sprintf("%v, %v, %v", c.Warmup, c.Drain, c.LateAfter), "must not be negative")
	}
	if c.Arrivals != "" {
		if _, err := ParseArrivals(string(c.Arrivals)); err != nil {
			return err
		}
	}
	return nil
}

// Stats are the measured operations of one kind (or of all).
type Stats struct {
	Name   string
	Ops    int64 // successful
	Errors int64
	// Latency (from the intended start) and Service time (from the actual
	// start) of the successful operations, in microseconds.
	Latency, Service *hdrhistogram.Histogram
}

// Result is what an open-loop run measured. Only operations planned in the
// measured stretch count.
type Result struct {
	Name     string
	Rate     float64 // planned
	Arrivals Arrivals
	Workers  int
	// Window is the measured stretch of the plan, in seconds, and
	// Scheduled the operations planned in it.
	Window    float64
	Scheduled int64
	// Started counts those that started, Late those that started more
	// than LateAfter behind their intended time, and Missed those that
	// had not started when the drain ended (Scheduled = Started + Missed).
	Started, Late, Missed int64
	// Lateness is the actual start minus the intended start of every
	// started operation, in microseconds.
	Lateness *hdrhistogram.Histogram
	// Seconds runs from the start of the measured stretch to the end of
	// the last measured operation (at least Window): the denominator of
	// the achieved rate.
	Seconds float64
	Total   Stats
	Kinds   []Stats
	// PeakInFlight and PeakBacklog are the most operations running at
	// once, and the most due but not started, that the run saw.
	PeakInFlight, PeakBacklog int64
	SampleErrors              []string
	// Schedule is the schedule the run followed, nil for one rate.
	Schedule RateSchedule
	// Series is the measured stretch in buckets of Config.Bucket, by
	// intended start; nil without buckets.
	Series []Bucket
	// Steal is the share of the machine's CPU time (all its CPUs) that
	// a hypervisor took for other machines from the start of the
	// measured stretch to the run's end (package hostcpu); StealKnown is
	// false where it could not be read. Stolen time is charged to no
	// process: operations that wanted a CPU meanwhile waited for it.
	Steal      float64
	StealKnown bool
}

// Bucket is the measured operations planned to start within one stretch
// of a run (Config.Bucket).
type Bucket struct {
	// At is the bucket's start, from the start of the measured stretch.
	At time.Duration
	// Ops succeeded, Errors failed, Missed never started.
	Ops, Errors, Missed int64
	// Latency of the successful operations from their intended starts,
	// in microseconds, at two significant digits.
	Latency *hdrhistogram.Histogram
}

// OfferedPerSec is the rate the plan asked for in the measured stretch.
func (r Result) OfferedPerSec() float64 {
	if r.Window <= 0 {
		return 0
	}
	return float64(r.Scheduled) / r.Window
}

// AchievedPerSec is the rate at which measured operations completed.
func (r Result) AchievedPerSec() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Total.Ops+r.Total.Errors) / r.Seconds
}

// ErrorRate is failed ÷ completed measured operations.
func (r Result) ErrorRate() float64 {
	if n := r.Total.Ops + r.Total.Errors; n > 0 {
		return float64(r.Total.Errors) / float64(n)
	}
	return 0
}

// SaturationShare is how far the achieved rate may fall below the offered
// one before a run counts as saturated.
const SaturationShare = 0.9

// Saturated reports whether the store fell behind the plan: operations
// were missed, or completed markedly slower than they were planned.
func (r Result) Saturated() bool {
	return r.Missed > 0 || r.AchievedPerSec() < SaturationShare*r.OfferedPerSec()
}

// NewHistogram returns a histogram of microseconds from 1 µs to 5 minutes
// at 3 significant digits, the range every latency here is recorded in.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, maxMicros, 3)
}

const maxMicros = int64(5 * time.Minute / time.Microsecond)

func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := min(max(d.Microseconds(), 1), maxMicros)
	h.RecordValue(us)
}

// recorder collects the measured operations of a run. One mutex guards it:
// an open loop runs at rates a store can serve, thousands per second, not
// the millions per second that would make the lock matter, and histograms
// per worker and kind would cost megabytes per run.
type recorder struct {
	mu       sync.Mutex
	total    Stats
	kinds    []Stats
	lateness *hdrhistogram.Histogram
	late     int64
	interval *hdrhistogram.Histogram // latency since the last progress row
	samples  []string
	lastEnd  time.Time
	// series, when the run has buckets, by intended start from measured.
	series   []Bucket
	bucket   time.Duration
	measured time.Time
}

func newRecorder(kinds []string, bucket, window time.Duration, measured time.Time) *recorder {
	r := &recorder{
		total:    Stats{Name: "all", Latency: NewHistogram(), Service: NewHistogram()},
		lateness: NewHistogram(), interval: NewHistogram(), bucket: bucket, measured: measured,
	}
	if bucket > 0 {
		n := int((window + bucket - 1) / bucket)
		for i := range max(n, 1) {
			r.series = append(r.series, Bucket{At: time.Duration(i) * bucket, Latency: hdrhistogram.New(1, maxMicros, 2)})
		}
	}
	for _, k := range kinds {
		r.kinds = append(r.kinds, Stats{Name: k, Latency: NewHistogram(), Service: NewHistogram()})
	}
	return r
}

func (r *recorder) add(kind int, intended, start, end time.Time, lateAfter time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lateBy := start.Sub(intended)
	record(r.lateness, lateBy)
	if lateBy > lateAfter {
		r.late++
	}
	if end.After(r.lastEnd) {
		r.lastEnd = end
	}
	if kind < 0 || kind >= len(r.kinds) {
		kind = 0
	}
	k := &r.kinds[kind]
	b := r.bucketOf(intended)
	if err != nil {
		if b != nil {
			b.Errors++
		}
		r.total.Errors++
		k.Errors++
		if len(r.samples) < 5 {
			r.samples = append(r.samples, err.Error())
		}
		return
	}
	r.total.Ops++
	k.Ops++
	for _, h := range []*hdrhistogram.Histogram{r.total.Latency, k.Latency, r.interval} {
		record(h, end.Sub(intended))
	}
	record(r.total.Service, end.Sub(start))
	record(k.Service, end.Sub(start))
	if b != nil {
		b.Ops++
		record(b.Latency, end.Sub(intended))
	}
}

// bucketOf is the bucket of an operation planned at intended, nil without
// buckets.
func (r *recorder) bucketOf(intended time.Time) *Bucket {
	if len(r.series) == 0 {
		return nil
	}
	i := int(intended.Sub(r.measured) / r.bucket)
	return &r.series[min(max(i, 0), len(r.series)-1)]
}

// Run drives newOp's operations on the plan c describes. newOp is called
// once per worker, so that each can keep its own state (a random source)
// without locks. It returns when every measured operation has completed or
// been counted missed, or when ctx ends (with ctx's error).
func Run(ctx context.Context, c Config, newOp func(worker int) Op) (Result, error) {
	if err := c.Check(); err != nil {
		return Result{}, err
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Arrivals == "" {
		c.Arrivals = Poisson
	}
	if c.LateAfter == 0 {
		c.LateAfter = DefaultLateAfter
	}
	if len(c.Kinds) == 0 {
		c.Kinds = []string{"op"}
	}
	var sched *schedule
	if c.Ops > 0 {
		sched = plan(c.Rate, c.Arrivals, c.Seed, c.Warmup, 0, c.Ops)
	} else {
		sched = planStages(c.stages(), c.Arrivals, c.Seed, c.Warmup, 0)
	}
	drain := c.Drain
	if drain == 0 {
		drain = max(sched.window(), MinDrain)
	}
	var started, startedMeasured, done atomic.Int64
	var inFlight, peakInFlight atomic.Int64

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ops := make([]Op, c.Workers)
	for w := range ops {
		ops[w] = newOp(w)
	}
	t0 := time.Now()
	rec := newRecorder(c.Kinds, c.Bucket, sched.window(), t0.Add(c.Warmup))
	var wg sync.WaitGroup
	for w := range c.Workers {
		op := ops[w]
		wg.Go(func() {
			timer := time.NewTimer(time.Hour)
			timer.Stop()
			for {
				at, measured, ok := sched.claim()
				if !ok {
					return
				}
				intended := t0.Add(at)
				if d := time.Until(intended); d > 0 {
					timer.Reset(d)
					select {
					case <-timer.C:
					case <-runCtx.Done():
						timer.Stop()
						return
					}
				}
				start := time.Now()
				started.Add(1)
				if measured {
					startedMeasured.Add(1)
				}
				n := inFlight.Add(1)
				for p := peakInFlight.Load(); n > p && !peakInFlight.CompareAndSwap(p, n); p = peakInFlight.Load() {
				}
				kind, err := op(runCtx)
				finish := time.Now()
				inFlight.Add(-1)
				done.Add(1)
				if runCtx.Err() != nil {
					return // cut off: neither a result nor a failure
				}
				if measured {
					rec.add(kind, intended, start, finish, c.LateAfter, err)
				}
			}
		})
	}
	workersDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(workersDone)
	}()

	rep := progress{w: c.Progress, name: c.Name, sched: sched, rec: rec, t0: t0,
		started: &started, done: &done, inFlight: &inFlight, last: t0}
	var peakBacklog int64
	sample := func(now time.Time) {
		peakBacklog = max(peakBacklog, int64(sched.due(now.Sub(t0)))-started.Load())
	}
	measureAt := time.NewTimer(c.Warmup)
	defer measureAt.Stop()
	drainEnd := time.NewTimer(time.Until(t0.Add(c.Warmup + sched.window() + drain)))
	defer drainEnd.Stop()
	tick := time.NewTicker(time.Second) // progress only: the plan keeps its own time
	defer tick.Stop()
	var hostBefore hostcpu.Times
	hostErr := errors.New("the measured stretch did not start")
loop:
	for {
		select {
		case <-measureAt.C:
			hostBefore, hostErr = hostcpu.Read()
			if c.OnMeasure != nil {
				c.OnMeasure()
			}
		case <-drainEnd.C:
			sched.stopped.Store(true)
		case now := <-tick.C:
			sample(now)
			rep.row(now)
		case <-workersDone:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	sched.stopped.Store(true)
	cancelled := ctx.Err()
	if cancelled != nil {
		cancel()
	}
	<-workersDone
	var hostAfter hostcpu.Times
	if hostErr == nil {
		hostAfter, hostErr = hostcpu.Read()
	}

	res := Result{
		Name: c.Name, Rate: c.Rate, Arrivals: c.Arrivals, Workers: c.Workers,
		Window: sched.window().Seconds(), Scheduled: int64(sched.scheduled()),
		Started: startedMeasured.Load(), PeakInFlight: peakInFlight.Load(), PeakBacklog: max(peakBacklog, 0),
	}
	res.Missed = res.Scheduled - res.Started
	if hostErr == nil {
		res.Steal, res.StealKnown = hostcpu.Share(hostBefore, hostAfter)
	}
	rec.mu.Lock()
	res.Late, res.Lateness, res.Total, res.Kinds = rec.late, rec.lateness, rec.total, rec.kinds
	res.SampleErrors = append(res.SampleErrors, rec.samples...)
	sort.Strings(res.SampleErrors)
	res.Seconds = max(rec.lastEnd.Sub(t0.Add(c.Warmup)).Seconds(), res.Window)
	if len(rec.series) > 0 {
		for _, at := range sched.unclaimed() {
			rec.bucketOf(t0.Add(at)).Missed++
		}
		res.Series = rec.series
	}
	rec.mu.Unlock()
	if len(c.Schedule) > 0 {
		res.Schedule = append(RateSchedule{}, c.Schedule...)
	}
	if cancelled != nil {
		return res, fmt.Errorf("open loop %s: %w", c.Name, cancelled)
	}
	return res, nil
}

// progress prints one row per second.
type progress struct {
	w                        io.Writer
	name                     string
	sched                    *schedule
	rec                      *recorder
	t0, last                 time.Time
	started, done, inFlight  *atomic.Int64
	lastDue, lastDone, lateN int64
}

func (p *progress) row(now time.Time) {
	if p.w == nil {
		return
	}
	due, done := int64(p.sched.due(now.Sub(p.t0))), p.done.Load()
	p.rec.mu.Lock()
	p99 := float64(p.rec.interval.ValueAtQuantile(99)) / 1000
	p.rec.interval.Reset()
	late := p.rec.late
	p.rec.mu.Unlock()
	secs := now.Sub(p.last).Seconds()
	fmt.Fprintf(p.w, "  %-22s offered %8.0f/s   achieved %8.0f/s   in flight %4d   backlog %6d   late %6d   p99 %8.2f ms\n",
		p.name, float64(due-p.lastDue)/secs, float64(done-p.lastDone)/secs, p.inFlight.Load(),
		max(due-p.started.Load(), 0), late-p.lateN, p99)
	p.last, p.lastDue, p.lastDone, p.lateN = now, due, done, late
}
