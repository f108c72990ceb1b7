package workload

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The workload driver is a closed loop: Workers goroutines each run one
// operation after another as fast as the store answers. Latencies go into a
// histogram per worker (no shared lock on the hot path) and are merged at
// the end; a reporter prints one row per second from interval histograms.
// A closed loop measures how fast a store answers, not how long users wait
// at a given load: package openloop drives operations at a planned rate
// for that.

// Op is one operation. It runs on one worker goroutine; the Clock lets it
// exclude set-up work from the latency it reports.
type Op func(ctx context.Context, c *Clock) error

// Clock is an operation's stopwatch.
type Clock struct {
	start time.Time
	kind  int
}

// Restart discards the time spent so far in this operation: what comes
// after is what is measured.
func (c *Clock) Restart() { c.start = time.Now() }

// SetKind says which of PhaseConfig.Kinds this operation is.
func (c *Clock) SetKind(kind int) { c.kind = kind }

// PhaseConfig describes one phase of a workload.
type PhaseConfig struct {
	Name     string
	Workers  int           // concurrent workers; 0 means 8
	Warmup   time.Duration // run unmeasured first
	Duration time.Duration // measured time; ignored when Ops > 0
	Ops      int64         // stop after this many measured operations instead
	// Progress receives a row per second (ops/s, p50, p99, errors); nil
	// for none.
	Progress io.Writer
	// OnMeasure, if set, is called when the warm-up ends and measuring
	// begins, e.g. to snapshot a store's counters. No operation runs while
	// it does: the warm-up's last operations finish first, and the
	// measured ones start after it returns, so that what servers count
	// from OnMeasure to the phase's end is the measured operations' work.
	OnMeasure func()
	// Kinds, if set, names the kinds of operation a phase mixes (each
	// operation says its own with Clock.SetKind); PhaseResult.Kinds then
	// holds each kind's figures.
	Kinds []string
}

// PhaseResult is what a phase measured.
type PhaseResult struct {
	Name    string
	Ops     int64   // successful measured operations
	Errors  int64   // failed measured operations
	Seconds float64 // measured wall time
	// WarmupOps are the operations that ran in the warm-up, unmeasured,
	// failed ones too.
	WarmupOps int64
	// Latency of successful operations, in microseconds.
	Latency *hdrhistogram.Histogram
	// SampleErrors holds the first few distinct error messages.
	SampleErrors []string
	// Kinds are the figures of each of PhaseConfig.Kinds, in its order.
	Kinds []KindResult
}

// KindResult is the part of a phase that one kind of operation took.
type KindResult struct {
	Name        string
	Ops, Errors int64
	Latency     *hdrhistogram.Histogram // successful operations, µs
}

// kindRecorder collects the figures of each kind under one lock: mixed
// phases run at a store's rates, thousands per second, where the lock does
// not matter, and one histogram per worker and kind would cost megabytes.
type kindRecorder struct {
	mu    sync.Mutex
	kinds []KindResult
}

func newKindRecorder(names []string) *kindRecorder {
	r := &kindRecorder{}
	for _, n := range names {
		r.kinds = append(r.kinds, KindResult{Name: n, Latency: newHistogram()})
	}
	return r
}

func (r *kindRecorder) add(kind int, us int64, err error) {
	if r == nil || kind < 0 || kind >= len(r.kinds) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := &r.kinds[kind]
	if err != nil {
		k.Errors++
		return
	}
	k.Ops++
	k.Latency.RecordValue(us)
}

// OpsPerSec is the measured throughput.
func (r PhaseResult) OpsPerSec() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Seconds
}

// ErrorRate is failed ÷ all measured operations.
func (r PhaseResult) ErrorRate() float64 {
	if r.Ops+r.Errors == 0 {
		return 0
	}
	return float64(r.Errors) / float64(r.Ops+r.Errors)
}

// MaxErrorRate is the share of failed operations above which a phase, and
// the run, counts as failed.
const MaxErrorRate = 0.01

func newHistogram() *hdrhistogram.Histogram {
	// 1 µs to 5 minutes at 3 significant digits.
	return hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
}

type worker struct {
	ops, errs atomic.Int64
	total     *hdrhistogram.Histogram // only this worker touches it

	mu       sync.Mutex // guards interval, shared with the reporter
	interval *hdrhistogram.Histogram

	errMu   sync.Mutex
	samples []string
}

// RunPhase runs newOp's operations on cfg.Workers workers; newOp is called
// once per worker so that each can keep its own state (random source,
// cursors) without locks.
func RunPhase(ctx context.Context, cfg PhaseConfig, newOp func(worker int) Op) (PhaseResult, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Ops <= 0 && cfg.Duration <= 0 {
		return PhaseResult{}, fmt.Errorf("phase %s: neither a duration nor an operation count", cfg.Name)
	}
	workers := make([]*worker, cfg.Workers)
	ops := make([]Op, cfg.Workers)
	for i := range workers {
		workers[i] = &worker{total: newHistogram(), interval: newHistogram()}
		ops[i] = newOp(i)
	}

	var kinds *kindRecorder
	if len(cfg.Kinds) > 0 {
		kinds = newKindRecorder(cfg.Kinds)
	}
	var measuring atomic.Bool
	// gate holds operations back while OnMeasure runs: each operation
	// holds it shared, and the start of measuring holds it alone.
	var gate sync.RWMutex
	var budget atomic.Int64 // measured ops left when cfg.Ops > 0
	var warm atomic.Int64   // operations of the warm-up
	budget.Store(cfg.Ops)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()

	var wg sync.WaitGroup
	for i, w := range workers {
		op := ops[i]
		wg.Go(func() {
			var c Clock
			for runCtx.Err() == nil {
				gate.RLock()
				counted := measuring.Load()
				if counted && cfg.Ops > 0 && budget.Add(-1) < 0 {
					gate.RUnlock()
					return // the others finish the operations they hold
				}
				c.Restart()
				err := op(runCtx, &c)
				gate.RUnlock()
				if !counted {
					warm.Add(1)
					continue
				}
				if err != nil {
					if runCtx.Err() != nil {
						return // cut off by the end of the phase: not a failure
					}
					w.errs.Add(1)
					w.sample(err)
					kinds.add(c.kind, 0, err)
					continue
				}
				us := max(time.Since(c.start).Microseconds(), 1)
				kinds.add(c.kind, us, nil)
				w.total.RecordValue(us)
				w.mu.Lock()
				w.interval.RecordValue(us)
				w.mu.Unlock()
				w.ops.Add(1)
			}
		})
	}

	workersDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(workersDone)
	}()

	if cfg.Warmup > 0 {
		select {
		case <-time.After(cfg.Warmup):
		case <-ctx.Done():
		}
	}
	gate.Lock()
	if cfg.OnMeasure != nil {
		cfg.OnMeasure()
	}
	measuring.Store(true)
	gate.Unlock()
	start := time.Now()
	var deadline <-chan time.Time
	if cfg.Ops <= 0 {
		deadline = time.After(cfg.Duration)
	}
	tick := time.NewTicker(time.Second)
	rep := reporter{w: cfg.Progress, name: cfg.Name, workers: workers, last: start}
loop:
	for {
		select {
		case <-deadline:
			break loop
		case <-workersDone: // the operation count is reached
			break loop
		case <-runCtx.Done():
			break loop
		case now := <-tick.C:
			rep.row(now)
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	stop()
	<-workersDone

	res := PhaseResult{Name: cfg.Name, Seconds: elapsed.Seconds(), WarmupOps: warm.Load(), Latency: newHistogram()}
	seen := map[string]bool{}
	for _, w := range workers {
		res.Ops += w.ops.Load()
		res.Errors += w.errs.Load()
		res.Latency.Merge(w.total)
		for _, s := range w.samples {
			if !seen[s] && len(res.SampleErrors) < 5 {
				seen[s] = true
				res.SampleErrors = append(res.SampleErrors, s)
			}
		}
	}
	sort.Strings(res.SampleErrors)
	if kinds != nil {
		res.Kinds = kinds.kinds
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("phase %s: %w", cfg.Name, err)
	}
	return res, nil
}

func (w *worker) sample(err error) {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if len(w.samples) < 5 {
		w.samples = append(w.samples, err.Error())
	}
}

// reporter prints one progress row per second.
type reporter struct {
	w         io.Writer
	name      string
	workers   []*worker
	last      time.Time
	lastOps   int64
	lastErrs  int64
	intervalH *hdrhistogram.Histogram
}

func (r *reporter) row(now time.Time) {
	if r.w == nil {
		return
	}
	if r.intervalH == nil {
		r.intervalH = newHistogram()
	}
	r.intervalH.Reset()
	var ops, errs int64
	for _, w := range r.workers {
		ops += w.ops.Load()
		errs += w.errs.Load()
		w.mu.Lock()
		r.intervalH.Merge(w.interval)
		w.interval.Reset()
		w.mu.Unlock()
	}
	secs := now.Sub(r.last).Seconds()
	fmt.Fprintf(r.w, "  %-22s %9.0f ops/s   p50 %8.2f ms   p99 %8.2f ms   errors %d\n",
		r.name, float64(ops-r.lastOps)/secs,
		float64(r.intervalH.ValueAtQuantile(50))/1000, float64(r.intervalH.ValueAtQuantile(99))/1000,
		errs-r.lastErrs)
	r.last, r.lastOps, r.lastErrs = now, ops, errs
}
