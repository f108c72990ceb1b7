// Package recommend answers the question a team choosing a feed design
// comes with: for my workload (users, graph, share of reads, planned rate,
// latency objective), which design serves it at the lowest cost?
//
// It does not guess from a cost model: it measures. Run generates one
// dataset for the workload, loads it into every candidate design's
// database, and drives each candidate with the workload's mixed traffic in
// an open loop at the planned rate, latency counted from each operation's
// intended start (package openloop), so a design that cannot keep up shows
// its queue rather than hiding it. From what each showed, Decide picks the
// design by a rule simple enough to check by hand (see Decide). RunMap does
// the same over a grid of workloads, the share of reads against the skew of
// the graph and the users' activity, and records the design chosen in each
// cell: the decision map.
//
// The candidates are the registry's (Candidates): every model that keeps
// its data on a server, runs on MariaDB rather than Vitess, and is not slow
// by design; a model added to the registry is a candidate without a change
// here.
package recommend

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// Candidates are the models a recommendation measures unless told: every
// listed model (base models and the variants they offer, in the registry's
// order) that keeps its data on a server (a store that forgets everything
// when its process exits serves no feed), is not on Vitess (which needs a
// cluster of its own; a run measures one server), and is not slow by design
// (registry.Bench.Slow: a baseline whose every read scans far more than
// the others', never the answer).
func Candidates() []string {
	var out []string
	for _, m := range registry.Listed() {
		if IsCandidate(m) {
			out = append(out, m.Name)
		}
	}
	return out
}

// IsCandidate reports whether m is among Candidates.
func IsCandidate(m registry.Model) bool {
	return m.Persistent() && !m.OnVitess() && !m.Bench.Slow
}

// InputError reports a workload or a setting a recommendation cannot run
// with, before anything runs.
type InputError struct {
	Field, Value, Reason string
}

func (e *InputError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("recommend: %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("recommend: %s %s: %s", e.Field, e.Value, e.Reason)
}

// Config is a recommendation's workload and how to measure it.
type Config struct {
	// Bench is the run: its Spec (already scaled, Scale recorded) is the
	// workload's dataset, Mix its traffic, Rate the planned rate, SLO the
	// objective, Duration each candidate's measured time, Models the
	// candidates (nil means Candidates). Run sets TrafficOnly.
	Bench loadgen.BenchConfig
	// Bound, if set, is a bound on freshness and completeness that a
	// candidate must hold too (see Bound); the run's probe
	// (Bench.Probe) measures them.
	Bound Bound
	// Command is the command line, for the record.
	Command string
	// Progress receives the run's progress; nil for none.
	Progress io.Writer
}

// check reports the first setting Run cannot work with as an *InputError,
// and returns the models to measure.
func (c Config) check() ([]string, error) {
	b := c.Bench
	if !(b.Rate > 0) || math.IsInf(b.Rate, 0) {
		return nil, &InputError{"rate", fmtFloat(b.Rate), "a recommendation measures at a planned rate: want operations per second above 0"}
	}
	if b.SLO <= 0 {
		return nil, &InputError{"slo", b.SLO.String(), "want a p99 latency above 0"}
	}
	if b.Mix == nil {
		return nil, &InputError{Field: "mix", Reason: "a recommendation needs the traffic's proportions"}
	}
	if b.Mix.Share(workload.OpNewest)+b.Mix.Share(workload.OpOlder) <= 0 && b.Mix.Share(workload.OpPost) <= 0 {
		return nil, &InputError{"mix", b.Mix.String(), "no reads and no posts: nothing tells the designs apart"}
	}
	if c.Bound.Fresh < 0 {
		return nil, &InputError{"fresh", c.Bound.Fresh.String(), "want a post-to-visible p99 above 0, or 0 for no bound"}
	}
	if !(c.Bound.Completeness >= 0 && c.Bound.Completeness <= 1) {
		return nil, &InputError{"completeness", fmtFloat(c.Bound.Completeness), "want a share of pages from 0 (no bound) to 1"}
	}
	if c.Bound.Set() && b.Probe == nil {
		return nil, &InputError{Field: "fresh", Reason: "a bound on freshness or completeness needs the probe that measures them (--probe-every above 0)"}
	}
	if b.FindRate {
		return nil, &InputError{Field: "find-rate", Reason: "a recommendation measures at the planned rate; bench --find-rate searches each model's highest"}
	}
	if b.Vitess {
		return nil, &InputError{Field: "vitess", Reason: "the candidates run on one MariaDB"}
	}
	if err := b.Spec.Validate(); err != nil {
		return nil, &InputError{Field: "dataset", Reason: err.Error()}
	}
	models := b.Models
	if models == nil {
		models = Candidates()
	}
	if len(models) == 0 {
		return nil, &InputError{Field: "models", Reason: "no models to compare"}
	}
	for i, name := range models {
		m, err := registry.Lookup(name)
		if err != nil {
			return nil, &InputError{Field: "models", Reason: err.Error()}
		}
		if m.OnVitess() {
			return nil, &InputError{"models", name, "runs on Vitess; a recommendation measures the models on MariaDB"}
		}
		if !m.Persistent() {
			return nil, &InputError{"models", name, "keeps its data in process memory only: not a design that can serve a feed"}
		}
		if slices.Contains(models[:i], name) {
			return nil, &InputError{"models", name, "named twice"}
		}
	}
	return models, nil
}

// Check reports, as an *InputError, the first setting of c that Run would
// refuse, without running anything.
func Check(c Config) error {
	_, err := c.check()
	return err
}

// Run measures the workload of cfg on every candidate and decides. It
// checks cfg first (an *InputError, and nothing runs), then runs one
// benchmark of the traffic phase only (loadgen.BenchConfig.TrafficOnly):
// one dataset, loaded once into each candidate's database, each candidate
// measured in turn for Duration after Warmup, in an open loop at the
// planned rate. A run that fails (an error, not a failed result) returns
// the error and no recommendation.
func Run(ctx context.Context, cfg Config) (*results.Recommendation, error) {
	models, err := cfg.check()
	if err != nil {
		return nil, err
	}
	b := cfg.Bench
	b.Models, b.TrafficOnly = models, true
	b.Command, b.Progress = cfg.Command, cfg.Progress
	r, err := loadgen.RunBench(ctx, b)
	if err != nil {
		return nil, err
	}
	return FromRunWithin(r, models, b.Rate, b.SLO, cfg.Bound), nil
}

// Bound is a bound on freshness and completeness: a design cheaper than
// another but whose posts show later, or on fewer pages, than the service
// accepts does not win. The zero Bound bounds nothing.
type Bound struct {
	// Fresh bounds the post-to-visible p99 of the posts the probe
	// watched; 0 for no bound.
	Fresh time.Duration
	// Completeness is the least share of watched pages that showed a
	// watched post within the probe's timeout, and that no longer showed
	// a deleted one after it; 0 for no bound.
	Completeness float64
}

// Set reports whether b bounds anything.
func (b Bound) Set() bool { return b.Fresh > 0 || b.Completeness > 0 }

// Check says how c misses b ("" when it holds it): not measured, its
// post-to-visible p99 over b.Fresh, or its completeness, or the share of
// pages that dropped a deleted post, under b.Completeness.
func (b Bound) Check(c results.Candidate) string {
	if !b.Set() {
		return ""
	}
	f := c.Freshness
	if f == nil || f.Pages == 0 {
		return "freshness not measured"
	}
	switch {
	case b.Fresh > 0 && f.VisibleP99Ms > ms(b.Fresh):
		return fmt.Sprintf("posts visible in p99 %s ms > %s ms", fmtFloat(round2(f.VisibleP99Ms)), fmtFloat(ms(b.Fresh)))
	case b.Completeness > 0 && f.Completeness < b.Completeness:
		return fmt.Sprintf("%s%% of pages showed the post < %s%%", fmtFloat(round2(100*f.Completeness)), fmtFloat(100*b.Completeness))
	case b.Completeness > 0 && 1-f.DeletedShown < b.Completeness:
		return fmt.Sprintf("%s%% of pages still showed a deleted post", fmtFloat(round2(100*f.DeletedShown)))
	}
	return ""
}

// FromRun is FromRunWithin with no bound on freshness or completeness.
func FromRun(r *results.Result, models []string, rate float64, slo time.Duration) *results.Recommendation {
	return FromRunWithin(r, models, rate, slo, Bound{})
}

// FromRunWithin builds the recommendation from a run whose models'
// traffic was measured in an open loop at rate: the evidence of each of
// models, in that order, judged against slo and bound, and the verdict.
func FromRunWithin(r *results.Result, models []string, rate float64, slo time.Duration, bound Bound) *results.Recommendation {
	rec := &results.Recommendation{
		Version: results.RecommendationFormatVersion, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Command: r.Command, Run: r,
		Workload: results.Workload{
			Users: r.Dataset.Users, Messages: r.Dataset.Messages, Graph: r.Dataset.Graph, Activity: r.Dataset.Activity,
			RatePerSec: rate, SLOMs: ms(slo), Scale: r.Dataset.Scale,
			FreshMs: ms(bound.Fresh), MinCompleteness: bound.Completeness,
		},
	}
	var cands []results.Candidate
	for _, name := range models {
		c := results.Candidate{Model: name}
		if m := r.Model(name); m != nil {
			c = Evidence(m)
			if t := m.Traffic; t != nil && rec.Workload.Mix == "" {
				rec.Workload.Mix = t.Mix
				rec.Workload.ReadShare = readShare(t.Mix)
			}
		}
		c.OutOfBound = bound.Check(c)
		cands = append(cands, c)
	}
	for i := range cands {
		if m := r.Model(cands[i].Model); m != nil && m.Traffic != nil {
			if res, ok := ResourcesOf(m.Traffic.Total.Cost, rate, cands[i].Size()); ok {
				run := results.DefaultPrices.Of(res)
				cands[i].Resources, cands[i].RunCost = &res, &run
			}
		}
	}
	rec.Candidates, rec.Verdict = Decide(cands, rate, slo)
	return rec
}

// Utilization is the share of a server's cores a design may fill at the
// planned rate: the rest is headroom that keeps queues short. Resources
// are sized to it.
const Utilization = 0.5

// ResourcesOf is what serving rate operations per second needs, from the
// CPU time per operation of each process that a phase measured (its cost
// counters: the database's, memcached's and Redis's, and this process's
// for the application) with every server filled to Utilization, and
// size bytes of data on disk. Memory is not measured by a run and is
// left 0. ok is false when the database's CPU was not measured (a run on
// a server it did not start).
func ResourcesOf(c cost.Cost, rate float64, size int64) (r results.Resources, ok bool) {
	db, ok := c[cost.DBCPU]
	if !ok {
		return results.Resources{}, false
	}
	cores := func(us float64) float64 { return rate * us / 1e6 / Utilization }
	return results.Resources{
		DBCores: cores(db), CacheCores: cores(c[cost.MCCPU] + c[cost.RDCPU]), AppCores: cores(c[cost.CPU]),
		StorageGB: float64(size) / 1e9,
	}, true
}

// Evidence is what model m's traffic phase showed, unjudged.
func Evidence(m *results.Model) results.Candidate {
	c := results.Candidate{Model: m.Name, DataBytes: m.DataBytes, DiskBytes: m.DiskBytes}
	t := m.Traffic
	if t == nil {
		return c
	}
	c.Ops, c.Errors = t.Total.Ops, t.Total.Errors
	c.P50Ms, c.P99Ms = t.Total.P50Ms, t.Total.P99Ms
	c.AchievedPerSec = t.Total.OpsPerSec
	if o := t.Open; o != nil {
		c.OfferedPerSec, c.AchievedPerSec, c.Missed = o.OfferedPerSec, o.AchievedPerSec, o.Missed
	}
	read, okR := t.Total.Cost[cost.RowsRead]
	written, okW := t.Total.Cost[cost.RowsWritten]
	if okR && okW {
		c.Costed, c.RowsReadPerOp, c.RowsWrittenPerOp = true, read, written
	}
	if g, ok := t.Total.Cost[cost.MCGets]; ok {
		c.MemcachedGetsPerOp = &g
	}
	if v, ok := t.Total.Cost[cost.MCSets]; ok {
		c.MemcachedSetsPerOp = &v
	}
	if v, ok := t.Total.Cost[cost.RDCommands]; ok {
		c.RedisCommandsPerOp = &v
	}
	if v, ok := t.Total.Cost.AllCPU(); ok {
		c.CPUPerOpUs = &v
	}
	if v := t.Visibility; v != nil && v.Total.Pages > 0 {
		c.Freshness = &results.Freshness{Pages: v.Total.Pages, VisibleP99Ms: v.Total.P99Ms, VisibleMaxMs: v.Total.MaxMs,
			Completeness: v.Total.Completeness(), DeletedShown: v.DeletedShownShare()}
	}
	return c
}

// MaxErrorRate is the share of failed operations above which a candidate
// does not hold the objective, whatever its latency: the benchmark's own
// limit for a phase (workload.MaxErrorRate).
const MaxErrorRate = workload.MaxErrorRate

// TieShare is how close two costs must be to count as equal: within 5% of
// the lower, about what two runs of one model differ by at these lengths.
const TieShare = 0.05

// Judge reports whether c held the objective slo at the planned rate, and
// if not, why. A candidate holds it when all of these are true:
//
//   - it was measured: at least one operation succeeded;
//   - at most MaxErrorRate of its operations failed (a failure answers
//     fast, and must not pass for a fast answer);
//   - it kept up with the plan: no operation was left unstarted and it
//     completed at least openloop.SaturationShare of the offered rate (a
//     store that falls behind has a queue that grows without bound, even
//     if the measured stretch was too short for its p99 to show it);
//   - its p99 latency, from intended starts, is at most slo;
//   - it holds the workload's bound on freshness and completeness, if
//     any (Bound.Check, recorded in OutOfBound).
func Judge(c results.Candidate, slo time.Duration) (held bool, why string) {
	switch {
	case c.Ops == 0:
		return false, "not measured"
	case c.ErrorRate() > MaxErrorRate:
		return false, fmt.Sprintf("%.1f%% errors", 100*c.ErrorRate())
	case c.Missed > 0 || (c.OfferedPerSec > 0 && c.AchievedPerSec < openloop.SaturationShare*c.OfferedPerSec):
		return false, fmt.Sprintf("fell behind: %s of %s ops/s", fmtFloat(math.Round(c.AchievedPerSec)), fmtFloat(math.Round(c.OfferedPerSec)))
	case c.P99Ms > ms(slo):
		return false, fmt.Sprintf("p99 %s ms > %s ms", fmtFloat(round2(c.P99Ms)), fmtFloat(ms(slo)))
	case c.OutOfBound != "":
		return false, c.OutOfBound
	}
	return true, ""
}

// Decide judges every candidate (Judge) and chooses the design that serves
// the workload at the lowest cost within the objective (Rank). It returns
// the judged candidates, in the order given, and the verdict.
func Decide(cands []results.Candidate, rate float64, slo time.Duration) ([]results.Candidate, results.Verdict) {
	judged := slices.Clone(cands)
	for i := range judged {
		judged[i].Held, judged[i].Why = Judge(judged[i], slo)
	}
	return judged, Rank(judged, rate, slo)
}

// Rank chooses, among judged candidates (Held and Why set, by Judge or by
// a plan's prediction), the design that serves the workload at the lowest
// cost within the objective. The rule, the same for a measured
// recommendation and for a capacity plan (package loadgen/plan):
//
//  1. Only a candidate that held the objective can be chosen: one over it
//     never wins, however cheap.
//  2. Among those, the cost is what the design costs to run at the
//     planned rate (results.Candidate.RunCost): the cores of its database,
//     caches and application, its memory and its storage, weighed by
//     prices (results.Prices). A row of MariaDB and a key of memcached
//     count by the CPU they cost, not alike. When a candidate that held
//     has no run cost (the run measured no CPU: a server it did not
//     start), every candidate is ranked by items instead: rows read and
//     written plus memcached keys plus Redis commands per operation
//     (results.Candidate.CostPerOp), shown beside the cost either way.
//  3. Costs within TieShare of the lowest are a tie. A tie goes to the
//     smaller data size (on disk when measured, else data plus index),
//     then to the lower p99, then to the name first in the order given.
//  4. A candidate whose cost is not known ranks after every one whose
//     cost is, by the same tie-breakers.
//  5. When none held, there is no design to recommend; Closest names the
//     one that came nearest: fewest errors over the limit first, then
//     the lowest p99 latency relative to the objective among those.
//
// rate is the planned rate, for the verdict's line. The verdict's Ranking
// lists the candidates that held, best first.
func Rank(judged []results.Candidate, rate float64, slo time.Duration) results.Verdict {
	var held []int
	for i := range judged {
		if judged[i].Held {
			held = append(held, i)
		}
	}
	costOf := rankCost(judged, held)
	costText := func(c results.Candidate) string { return costText(c, costOf) }
	var v results.Verdict
	sloText := fmtFloat(ms(slo)) + " ms"
	rateText := fmtFloat(rate)
	if len(held) == 0 {
		v.Closest = closest(judged)
		v.Reason = fmt.Sprintf("no design holds p99 ≤ %s at %s ops/s", sloText, rateText)
		if v.Closest != "" {
			c := find(judged, v.Closest)
			v.Reason += fmt.Sprintf("; closest: %s (%s, %s ops/s achieved)", c.Model, c.Why, fmtFloat(math.Round(c.AchievedPerSec)))
		}
		return v
	}
	// The lowest measured cost sets the tie band.
	low := math.Inf(1)
	for _, i := range held {
		if c := costOf(judged[i]); !math.IsNaN(c) {
			low = min(low, c)
		}
	}
	band := func(c results.Candidate) int { // 0: in the tie band, 1: dearer, 2: not costed
		switch x := costOf(c); {
		case math.IsNaN(x):
			return 2
		case x <= low*(1+TieShare) || x-low < 1e-9:
			return 0
		}
		return 1
	}
	order := slices.Clone(held)
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := judged[a], judged[b]
		if bx, by := band(x), band(y); bx != by {
			return bx - by
		} else if bx == 1 && costOf(x) != costOf(y) {
			return cmp.Compare(costOf(x), costOf(y))
		}
		if x.Size() != y.Size() {
			return cmp.Compare(x.Size(), y.Size())
		}
		if x.P99Ms != y.P99Ms {
			return cmp.Compare(x.P99Ms, y.P99Ms)
		}
		return a - b
	})
	for _, i := range order {
		v.Ranking = append(v.Ranking, judged[i].Model)
	}
	best := judged[order[0]]
	v.Best = best.Model
	v.Reason = fmt.Sprintf("%s: the lowest cost that holds p99 ≤ %s at %s ops/s: %s (p99 %s ms)",
		best.Model, sloText, rateText, costText(best), fmtFloat(round2(best.P99Ms)))
	var tied []string
	for _, i := range order[1:] {
		if c := judged[i]; band(c) == 0 && band(best) == 0 {
			tied = append(tied, fmt.Sprintf("%s %s", c.Model, costText(c)))
		}
	}
	switch {
	case len(tied) > 0:
		v.Reason += fmt.Sprintf("; tied within %.0f%% with %s, and %s", 100*TieShare, strings.Join(tied, ", "), tieBreak(best, judged[order[1]]))
	case len(order) > 1:
		next := judged[order[1]]
		v.Reason += fmt.Sprintf("; next: %s, %s", next.Model, costText(next))
	default:
		v.Reason += "; the only design that held"
	}
	var over []string
	for _, c := range judged {
		if !c.Held && !math.IsNaN(costOf(c)) && !math.IsNaN(costOf(best)) && costOf(c) < costOf(best) {
			over = append(over, fmt.Sprintf("%s (%s)", c.Model, c.Why))
		}
	}
	if len(over) > 0 {
		v.Reason += "; cheaper but over the objective: " + strings.Join(over, ", ")
	}
	return v
}

// rankCost is the figure Rank ranks by: the run cost when every candidate
// that held has one, else the items per operation.
func rankCost(cands []results.Candidate, held []int) func(results.Candidate) float64 {
	for _, i := range held {
		if cands[i].RunCost == nil {
			return results.Candidate.CostPerOp
		}
	}
	return results.Candidate.Cost
}

// tieBreak says what set a apart from b, tied in cost.
func tieBreak(a, b results.Candidate) string {
	switch {
	case a.Size() != b.Size():
		return fmt.Sprintf("has less data (%s against %s)", mbText(a.Size()), mbText(b.Size()))
	case a.P99Ms != b.P99Ms:
		return fmt.Sprintf("a lower p99 (%s ms against %s ms)", fmtFloat(round2(a.P99Ms)), fmtFloat(round2(b.P99Ms)))
	}
	return "comes first in the order given"
}

// closest is the candidate that came nearest to holding: measured before
// unmeasured, errors within the limit before over it, then lowest p99;
// "" when none was measured.
func closest(cs []results.Candidate) string {
	best := -1
	key := func(c results.Candidate) (int, float64) {
		switch {
		case c.Ops == 0:
			return 2, 0
		case c.ErrorRate() > MaxErrorRate:
			return 1, c.ErrorRate()
		}
		return 0, c.P99Ms
	}
	for i, c := range cs {
		if c.Ops == 0 {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		kc, vc := key(c)
		kb, vb := key(cs[best])
		if kc < kb || kc == kb && vc < vb {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return cs[best].Model
}

func find(cs []results.Candidate, name string) results.Candidate {
	for _, c := range cs {
		if c.Model == name {
			return c
		}
	}
	return results.Candidate{}
}

// costText is c's cost as the verdict states it: the run cost, when
// ranked by it, then the items per operation.
func costText(c results.Candidate, costOf func(results.Candidate) float64) string {
	items := itemsText(c)
	if c.RunCost != nil && !math.IsNaN(costOf(c)) && costOf(c) == c.Cost() {
		return fmt.Sprintf("costs %s to run (%s cores, %s GB stored), %s", fmtFloat(round2(c.Cost())),
			fmtFloat(round2(c.Resources.Cores())), fmtFloat(round2(c.Resources.StorageGB)), items)
	}
	return items
}

// itemsText is c's items per operation.
func itemsText(c results.Candidate) string {
	if !c.Costed {
		return "cost not measured"
	}
	if k, r := c.MemcachedKeysPerOp(), c.RedisCommands(); k > 0 || r > 0 {
		var beside []string
		if k > 0 {
			beside = append(beside, fmtFloat(round2(k))+" memcached keys")
		}
		if r > 0 {
			beside = append(beside, fmtFloat(round2(r))+" Redis commands")
		}
		return fmt.Sprintf("%s items/op (%s rows read, %s written, %s)", fmtFloat(round2(c.CostPerOp())),
			fmtFloat(round2(c.RowsReadPerOp)), fmtFloat(round2(c.RowsWrittenPerOp)), strings.Join(beside, ", "))
	}
	return fmt.Sprintf("%s rows/op (%s read, %s written)", fmtFloat(round2(c.CostPerOp())), fmtFloat(round2(c.RowsReadPerOp)), fmtFloat(round2(c.RowsWrittenPerOp)))
}

func mbText(n int64) string { return fmtFloat(round2(float64(n)/1e6)) + " MB" }

// readShare is the share of newest and older pages in a mix's text.
func readShare(mix string) float64 {
	m, err := workload.ParseMix(mix)
	if err != nil {
		return 0
	}
	return m.Share(workload.OpNewest) + m.Share(workload.OpOlder)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func round2(v float64) float64 {
	if math.Abs(v) >= 100 {
		return math.Round(v)
	}
	return math.Round(v*100) / 100
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
