package results

import (
	"fmt"
	"strings"

	"github.com/pushpull/pushpull/internal/cost"
)

// Burst is a model's burst phase (bench --burst): its mixed traffic in an
// open loop whose planned rate follows a schedule of stages, such as a
// base rate, ten times that for 5 s, and the base rate again, with, if
// asked, a burst of posts by the most followed author as the first stage
// ends. It records the p99 latency (from intended starts) before, during
// and after the burst, and how long latency, and the fan-out lag of a
// store that applies posts later, took to come back within their
// objectives once it ended.
type Burst struct {
	// Schedule is the stages, as --burst takes them.
	Schedule string `json:"schedule"`
	// WindowS is the measured stretch (the schedule's length); StartS
	// and EndS bound the burst within it, in seconds from its start: from
	// the end of the first stage to the end of the last stage above the
	// first's rate, or to the celebrity's last acknowledged post if that
	// came later.
	WindowS float64 `json:"window_s"`
	StartS  float64 `json:"burst_start_s"`
	EndS    float64 `json:"burst_end_s"`
	// BucketMs is the length of the series' points; HoldMs how long a
	// figure must stay within its objective for it to have recovered.
	BucketMs float64 `json:"bucket_ms"`
	HoldMs   float64 `json:"hold_ms"`
	// SLOMs is the objective of latency (p99 of a bucket's operations),
	// LagSLOMs that of the fan-out lag (p99 of the posts applied in a
	// bucket).
	SLOMs    float64 `json:"slo_p99_ms"`
	LagSLOMs float64 `json:"lag_slo_p99_ms"`
	// Total is every measured operation, with the phase's cost; Before,
	// During and After those planned to start before, in and after the
	// burst (by bucket).
	Total  Phase `json:"total"`
	Before Phase `json:"before"`
	During Phase `json:"during"`
	After  Phase `json:"after"`
	// Recovered: latency came back within SLOMs after the burst, in
	// RecoveryS seconds from its end (see openloop.Recovery); else it
	// had not within the measured stretch.
	Recovered bool    `json:"recovered"`
	RecoveryS float64 `json:"recovery_s"`
	// Lag is set for a store that measures its fan-out lag
	// (timeline.Lagging).
	Lag *BurstLag `json:"lag,omitempty"`
	// Celebrity is set when the most followed author posted in a burst.
	Celebrity *BurstCelebrity `json:"celebrity,omitempty"`
	// Open is how the open loop kept up with its plan over the whole
	// schedule.
	Open OpenLoop `json:"open_loop"`
	// Series is the measured stretch bucket by bucket.
	Series []BurstPoint `json:"series"`
}

// BurstLag is the fan-out lag through a burst: from a post's
// acknowledgement to its last follower's mailbox row, of the posts whose
// fan-out finished in each bucket.
type BurstLag struct {
	BeforeP99Ms float64 `json:"before_p99_ms"`
	DuringP99Ms float64 `json:"during_p99_ms"`
	AfterP99Ms  float64 `json:"after_p99_ms"`
	MaxMs       float64 `json:"max_ms"`
	Recovered   bool    `json:"recovered"`
	RecoveryS   float64 `json:"recovery_s"`
	// SettleS is how long the store then took to apply what was still
	// queued when the measured stretch ended.
	SettleS float64 `json:"settle_s"`
}

// BurstCelebrity is the most followed author's burst of posts.
type BurstCelebrity struct {
	Author    int64 `json:"author"`
	Followers int   `json:"followers"`
	Posts     int64 `json:"posts"`
	Errors    int64 `json:"errors"`
	// AtS is when the posts began, from the start of the measured
	// stretch; SpanMs from then to the last one's acknowledgement.
	AtS    float64 `json:"at_s"`
	SpanMs float64 `json:"span_ms"`
	// Each post's latency.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// BurstPoint is one bucket of a burst: the operations planned to start in
// it and the fan-out lag of the posts applied in it.
type BurstPoint struct {
	AtS    float64 `json:"at_s"`
	Ops    int64   `json:"ops"`
	Errors int64   `json:"errors"`
	Missed int64   `json:"missed"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	// LagPosts is how many posts finished their fan-out in the bucket,
	// LagP99Ms their lag.
	LagPosts int64   `json:"lag_posts,omitempty"`
	LagP99Ms float64 `json:"lag_p99_ms,omitempty"`
}

// BaseHeld reports whether latency held its objective before the burst:
// if it did not, the store was never within it, and a recovery time
// means nothing.
func (b *Burst) BaseHeld() bool { return !b.Before.HasLatency() || b.Before.P99Ms <= b.SLOMs }

// BaseHeld reports whether the fan-out lag held its objective before the
// burst (lagSLO ms), or no fan-out finished then.
func (l *BurstLag) BaseHeld(lagSLO float64) bool { return l.BeforeP99Ms <= lagSLO }

// overBefore is what the table says in place of a recovery time when the
// objective did not hold before the burst.
const overBefore = "over before it"

// recovery is b's latency recovery as the table writes it.
func (b *Burst) recovery() string {
	if !b.BaseHeld() {
		return overBefore
	}
	return fmtRecovery(b.Recovered, b.RecoveryS, b.WindowS, b.EndS)
}

// lagRecovery is b's fan-out lag recovery as the table writes it, Dash
// without one.
func (b *Burst) lagRecovery() string {
	switch {
	case b.Lag == nil:
		return Dash
	case !b.Lag.BaseHeld(b.LagSLOMs):
		return overBefore
	}
	return fmtRecovery(b.Lag.Recovered, b.Lag.RecoveryS, b.WindowS, b.EndS)
}

// recoveryPhrase is a recovery as a plot's legend says it.
func recoveryPhrase(cell string) string {
	switch {
	case cell == overBefore:
		return "over the objective before the burst"
	case strings.HasPrefix(cell, "not "):
		return cell
	}
	return "recovered in " + cell
}

// fmtRecovery is a recovery time, or that there was none within the
// stretch after the burst.
func fmtRecovery(recovered bool, seconds, window, end float64) string {
	if !recovered {
		return "not within " + fmtSeconds(window-end)
	}
	return fmtSeconds(seconds)
}

// HasBursts reports whether any model of r has a burst phase.
func (r *Result) HasBursts() bool {
	for i := range r.Models {
		if r.Models[i].Burst != nil {
			return true
		}
	}
	return false
}

// burstRows are the rows of the burst phase beyond its totals.
func burstRows(ms []Model, row func(label string, cell func(m *Model) string)) {
	var slo, lagSLO float64
	lag, celeb := false, false
	for i := range ms {
		if bu := ms[i].Burst; bu != nil {
			slo, lagSLO = bu.SLOMs, bu.LagSLOMs
			lag = lag || bu.Lag != nil
			celeb = celeb || bu.Celebrity != nil
		}
	}
	burst := func(cell func(bu *Burst) string) func(m *Model) string {
		return func(m *Model) string {
			if m.Burst == nil {
				return Dash
			}
			return cell(m.Burst)
		}
	}
	row("  schedule (ops/s:length)", burst(func(bu *Burst) string { return bu.Schedule }))
	row("  p99 before / during / after", burst(func(bu *Burst) string {
		return fmtP99(bu.Before) + " / " + fmtP99(bu.During) + " / " + fmtP99(bu.After) + " ms"
	}))
	row("  recovery to p99 ≤ "+fmtMs(slo), burst(func(bu *Burst) string { return bu.recovery() }))
	row("  offered / achieved, missed", burst(func(bu *Burst) string {
		return fmtNum(bu.Open.OfferedPerSec) + " / " + fmtRate(bu.Open.AchievedPerSec, "ops/s") + ", " + fmtInt(bu.Open.Missed)
	}))
	if lag {
		lagCell := func(cell func(l *BurstLag, bu *Burst) string) func(m *Model) string {
			return burst(func(bu *Burst) string {
				if bu.Lag == nil {
					return Dash
				}
				return cell(bu.Lag, bu)
			})
		}
		row("  fan-out lag p99 before / during / after", lagCell(func(l *BurstLag, _ *Burst) string {
			return fmtNum(l.BeforeP99Ms) + " / " + fmtNum(l.DuringP99Ms) + " / " + fmtMs(l.AfterP99Ms)
		}))
		row("  recovery to fan-out lag ≤ "+fmtMs(lagSLO), lagCell(func(_ *BurstLag, bu *Burst) string { return bu.lagRecovery() }))
	}
	if celeb {
		row("  celebrity's posts: posts, p99, all acknowledged after", burst(func(bu *Burst) string {
			c := bu.Celebrity
			if c == nil {
				return Dash
			}
			return fmtInt(c.Posts) + ", " + fmtMs(c.P99Ms) + ", " + fmtMs(c.SpanMs)
		}))
	}
}

// fmtP99 is a phase's p99 latency, or a dash without one.
func fmtP99(p Phase) string {
	if !p.HasLatency() {
		return Dash
	}
	return fmtNum(p.P99Ms)
}

// qualityGrid is one row per model of what a reader of a feed notices,
// beside what it costs: a delete's cost, post-to-visible time,
// completeness and recovery from a burst; nil when the run measured none
// of them.
func qualityGrid(r *Result) *grid {
	has := false
	for i := range r.Models {
		m := &r.Models[i]
		has = has || m.Burst != nil || m.Deletes != nil || m.Traffic != nil && m.Traffic.Visibility != nil
	}
	if !has {
		return nil
	}
	g := &grid{}
	g.add("feed quality", "rows deleted per delete", "celebrity delete gone (ms)", "post-to-visible p99", "completeness", "burst recovery: p99", "fan-out lag")
	for i := range r.Models {
		m := &r.Models[i]
		cells := []string{m.Name, Dash, Dash, Dash, Dash, Dash, Dash}
		if d := m.Deletes; d != nil {
			if v, ok := d.Phase.Cost[cost.RowsDeleted]; ok {
				cells[1] = fmtNum(v)
			}
			if d.Celebrity != nil {
				cells[2] = fmtNum(d.Celebrity.GoneMs)
			}
		}
		if m.Traffic != nil && m.Traffic.Visibility != nil {
			v := m.Traffic.Visibility
			if v.Total.Visible > 0 {
				cells[3] = fmtMs(v.Total.P99Ms)
			}
			if v.Total.Visible+v.Total.Missing > 0 {
				cells[4] = fmtShare(v.Total.Completeness())
			}
		}
		if bu := m.Burst; bu != nil {
			cells[5], cells[6] = bu.recovery(), bu.lagRecovery()
		}
		g.add(cells...)
	}
	return g
}

// burstHeading says what the burst phase's objectives were.
func burstHeading(r *Result) string {
	for i := range r.Models {
		if bu := r.Models[i].Burst; bu != nil {
			return fmt.Sprintf("burst recovery: from the burst's end until the p99 of each %s of operations (by intended start) stays within %s for %s; fan-out lag likewise within %s",
				fmtMs(bu.BucketMs), fmtMs(bu.SLOMs), fmtMs(bu.HoldMs), fmtMs(bu.LagSLOMs))
		}
	}
	return ""
}
