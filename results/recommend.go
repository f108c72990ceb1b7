package results

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// RecommendationFormatVersion is the format of a saved Recommendation.
const RecommendationFormatVersion = 1

// Recommendation is the answer to "which design serves my workload?": the
// candidate models measured on one dataset, each in an open loop at the
// planned rate, what each showed, and the design chosen from that evidence
// (package loadgen/recommend says how). Run is the whole benchmark run the
// evidence comes from.
type Recommendation struct {
	Version    int       `json:"version"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Command    string    `json:"command"`
	Workload   Workload  `json:"workload"`
	// Candidates are in the order they were named, each judged against
	// the objective (Held, Why).
	Candidates []Candidate `json:"candidates"`
	Verdict    Verdict     `json:"verdict"`
	Run        *Result     `json:"run,omitempty"`
}

// Workload is what a recommendation was asked for.
type Workload struct {
	Users    int    `json:"users"`
	Messages int    `json:"messages"`
	Graph    string `json:"graph"`
	Activity string `json:"activity"`
	// Mix is the traffic's proportions, ReadShare its share of reads
	// (newest and older pages).
	Mix       string  `json:"mix"`
	ReadShare float64 `json:"read_share"`
	// RatePerSec is the planned rate, SLOMs the objective: p99 latency
	// from intended starts.
	RatePerSec float64 `json:"rate_per_sec"`
	SLOMs      float64 `json:"slo_ms"`
	Scale      float64 `json:"scale"`
	// FreshMs and MinCompleteness are the bound on freshness and
	// completeness a candidate had to hold too (0 for none): its posts'
	// post-to-visible p99, and the share of watched pages that showed a
	// post (and, of those read after a delete, that no longer showed it).
	FreshMs         float64 `json:"fresh_ms,omitempty"`
	MinCompleteness float64 `json:"min_completeness,omitempty"`
}

// Candidate is what one model showed at the planned rate.
type Candidate struct {
	Model string `json:"model"`
	// Held: the model served the planned rate within the objective (see
	// loadgen/recommend.Judge); Why says why not.
	Held bool   `json:"held"`
	Why  string `json:"why,omitempty"`
	// Ops and Errors are the measured operations that succeeded and
	// failed; P50Ms and P99Ms their latency from intended starts.
	Ops    int64   `json:"ops"`
	Errors int64   `json:"errors"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	// OfferedPerSec is the rate the plan offered in the measured stretch,
	// AchievedPerSec what completed; Missed the operations never started.
	OfferedPerSec  float64 `json:"offered_per_sec"`
	AchievedPerSec float64 `json:"achieved_per_sec"`
	Missed         int64   `json:"missed"`
	// Costed: the cost counters were read for the phase, and
	// RowsReadPerOp and RowsWrittenPerOp are measurements.
	Costed           bool    `json:"costed"`
	RowsReadPerOp    float64 `json:"rows_read_per_op"`
	RowsWrittenPerOp float64 `json:"rows_written_per_op"`
	// MemcachedGetsPerOp and MemcachedSetsPerOp are the keys asked of
	// and stored in memcached per operation (its cmd_get and cmd_set),
	// when the run had memcached; part of CostPerOp.
	MemcachedGetsPerOp *float64 `json:"mc_gets_per_op,omitempty"`
	MemcachedSetsPerOp *float64 `json:"mc_sets_per_op,omitempty"`
	// RedisCommandsPerOp is the commands Redis ran per operation (those
	// its scripts ran included), when the run had Redis; part of
	// CostPerOp, each command touching one key as a memcached get does.
	RedisCommandsPerOp *float64 `json:"rd_commands_per_op,omitempty"`
	// CPUPerOpUs is the CPU time of the benchmark process, memcached and
	// the database server together per operation, in microseconds
	// (Cost.AllCPU), when the run started the database server itself.
	// It is evidence the verdict does not rank by: it depends on what
	// shares the machine, and it is noisier than the counts.
	CPUPerOpUs *float64 `json:"cpu_all_us_per_op,omitempty"`
	// DataBytes and DiskBytes are the model's database's, as loaded
	// (models that share a database show the same).
	DataBytes int64 `json:"data_bytes"`
	DiskBytes int64 `json:"disk_bytes"`
	// Resources are what the model needs to serve the planned rate (see
	// loadgen/recommend.ResourcesOf), and RunCost their price: what the
	// verdict ranks by. Absent when the run measured no CPU.
	Resources *Resources `json:"resources,omitempty"`
	RunCost   *float64   `json:"run_cost,omitempty"`
	// Freshness is what the probe measured of the traffic's posts and
	// deletes; nil when it watched none.
	Freshness *Freshness `json:"freshness,omitempty"`
	// OutOfBound, when not empty, says how the candidate missed the
	// workload's bound on freshness or completeness; it then does not
	// hold the objective.
	OutOfBound string `json:"out_of_bound,omitempty"`
}

// Cost is the cost the decision ranks by: RunCost, NaN when not known.
func (c Candidate) Cost() float64 {
	if c.RunCost == nil {
		return math.NaN()
	}
	return *c.RunCost
}

// Freshness is a candidate's correctness in time: the post-to-visible
// p99 and maximum of the posts the probe watched, in ms, the share of
// the watched pages that showed them (Completeness), and the share of
// pages read after a delete that still showed the post (DeletedShown).
// Pages is the pages watched for posts.
type Freshness struct {
	Pages        int64   `json:"pages"`
	VisibleP99Ms float64 `json:"visible_p99_ms"`
	VisibleMaxMs float64 `json:"visible_max_ms"`
	Completeness float64 `json:"completeness"`
	DeletedShown float64 `json:"deleted_shown"`
}

// ErrorRate is Errors over all measured operations.
func (c Candidate) ErrorRate() float64 {
	if n := c.Ops + c.Errors; n > 0 {
		return float64(c.Errors) / float64(n)
	}
	return 0
}

// RowsPerOp is rows read plus rows written per operation, MariaDB's
// share of CostPerOp; NaN when not measured.
func (c Candidate) RowsPerOp() float64 {
	if !c.Costed {
		return math.NaN()
	}
	return c.RowsReadPerOp + c.RowsWrittenPerOp
}

// MemcachedKeysPerOp is the keys got and set in memcached per operation,
// 0 without memcached.
func (c Candidate) MemcachedKeysPerOp() float64 {
	var n float64
	for _, v := range []*float64{c.MemcachedGetsPerOp, c.MemcachedSetsPerOp} {
		if v != nil {
			n += *v
		}
	}
	return n
}

// RedisCommands is the commands Redis ran per operation, 0 without Redis.
func (c Candidate) RedisCommands() float64 {
	if c.RedisCommandsPerOp == nil {
		return 0
	}
	return *c.RedisCommandsPerOp
}

// CostPerOp is the cost the decision ranks by: the items the servers
// touched per operation, rows read and written in MariaDB plus keys got
// and set in memcached plus commands Redis ran (a design that serves
// reads from memcached or Redis moves work there, it does not make it
// free); NaN when not measured.
func (c Candidate) CostPerOp() float64 {
	return c.RowsPerOp() + c.MemcachedKeysPerOp() + c.RedisCommands()
}

// Size is the data size the decision breaks ties by: on disk when
// measured, else data plus index.
func (c Candidate) Size() int64 {
	if c.DiskBytes > 0 {
		return c.DiskBytes
	}
	return c.DataBytes
}

// Verdict is the design chosen, or none.
type Verdict struct {
	// Best is the model chosen, "" when none held the objective; Closest
	// is then the one that came nearest.
	Best    string `json:"best,omitempty"`
	Closest string `json:"closest,omitempty"`
	// Reason is the verdict in a line, with the figures that decided it.
	Reason string `json:"reason"`
	// Ranking lists the models that held the objective, best first.
	Ranking []string `json:"ranking,omitempty"`
}

// Candidate returns the candidate named model, or nil.
func (r *Recommendation) Candidate(model string) *Candidate {
	for i := range r.Candidates {
		if r.Candidates[i].Model == model {
			return &r.Candidates[i]
		}
	}
	return nil
}

// File names inside a recommendation's directory, beside the run's own
// (Save's result.json, result.csv, result.png, degrees.png).
const (
	RecommendationJSONFile  = "recommendation.json"
	RecommendationTableFile = "recommendation.txt"
)

// WriteRecommendation prints the workload, a row per candidate (held or
// not, p99 and rate at the planned rate, errors, rows read and written per
// operation, data size) and the verdict.
func WriteRecommendation(w io.Writer, r *Recommendation) error {
	wl := r.Workload
	fmt.Fprintf(w, "workload: %s users, %s messages, %s graph, %s activity\n", fmtInt(int64(wl.Users)), fmtInt(int64(wl.Messages)), wl.Graph, wl.Activity)
	fmt.Fprintf(w, "traffic:  %s (%.0f%% reads), open loop at %s ops/s planned, objective p99 ≤ %s from intended starts\n\n",
		wl.Mix, 100*wl.ReadShare, fmtNum(wl.RatePerSec), fmtMs(wl.SLOMs))
	mc, rd, cpu, fresh := false, false, false, false
	for _, c := range r.Candidates {
		fresh = fresh || c.Freshness != nil
		mc = mc || c.MemcachedGetsPerOp != nil
		rd = rd || c.RedisCommandsPerOp != nil
		cpu = cpu || c.CPUPerOpUs != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "model\theld SLO\tp99\tachieved\terrors\trows read/op\trows written/op\t"
	if mc {
		head += "memcached keys/op\t"
	}
	if rd {
		head += "redis cmds/op\t"
	}
	head += "items/op\t"
	if cpu {
		head += "CPU/op, all\t"
	}
	head += "data size\t"
	run := false
	for _, c := range r.Candidates {
		run = run || c.RunCost != nil
	}
	if run {
		head += "cores\tcost to run\t"
	}
	if fresh {
		head += "visible p99\tcomplete\t"
	}
	fmt.Fprintln(tw, head)
	for _, c := range r.Candidates {
		held := "yes"
		if !c.Held {
			held = "no: " + c.Why
		}
		p99 := Dash
		if c.Ops > 0 {
			p99 = fmtMs(c.P99Ms)
		}
		read, written, total := Dash, Dash, Dash
		if c.Costed {
			read, written, total = fmtNum(c.RowsReadPerOp), fmtNum(c.RowsWrittenPerOp), fmtNum(c.CostPerOp())
		}
		mark := ""
		if c.Model == r.Verdict.Best {
			mark = " ◀"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s/s\t%s\t%s\t%s\t", c.Model, mark, held, p99, fmtNum(c.AchievedPerSec),
			fmtInt(c.Errors), read, written)
		if mc {
			keys := Dash
			if c.MemcachedGetsPerOp != nil || c.MemcachedSetsPerOp != nil {
				keys = fmtNum(c.MemcachedKeysPerOp())
			}
			fmt.Fprintf(tw, "%s\t", keys)
		}
		if rd {
			cmds := Dash
			if c.RedisCommandsPerOp != nil {
				cmds = fmtNum(*c.RedisCommandsPerOp)
			}
			fmt.Fprintf(tw, "%s\t", cmds)
		}
		fmt.Fprintf(tw, "%s\t", total)
		if cpu {
			us := Dash
			if c.CPUPerOpUs != nil {
				us = fmtNum(*c.CPUPerOpUs) + " µs"
			}
			fmt.Fprintf(tw, "%s\t", us)
		}
		fmt.Fprintf(tw, "%s\t", fmtBytes(c.Size()))
		if run {
			cores, price := Dash, Dash
			if c.RunCost != nil && c.Resources != nil {
				cores, price = fmtNum(c.Resources.Cores()), fmtNum(*c.RunCost)
			}
			fmt.Fprintf(tw, "%s\t%s\t", cores, price)
		}
		if fresh {
			if f := c.Freshness; f != nil {
				fmt.Fprintf(tw, "%s\t%s\t", fmtMs(f.VisibleP99Ms), fmtShare(min(f.Completeness, 1-f.DeletedShown)))
			} else {
				fmt.Fprintf(tw, "%s\t%s\t", Dash, Dash)
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if run {
		fmt.Fprintln(w, "\ncost to run, which the verdict ranks by, is the cores the database, the caches and the application need at the planned rate (their measured CPU per operation, each server filled to half its cores) plus the data on disk, at the default prices (docs/recommend.md).")
		fmt.Fprintln(w, "items/op, shown beside, is rows read + written in MariaDB plus keys got + set in memcached plus commands Redis ran, per operation (the servers' own counters).")
	} else {
		fmt.Fprintln(w, "\nitems/op, which the verdict ranks by when the run measured no CPU, is rows read + written in MariaDB plus keys got + set in memcached plus commands Redis ran, per operation (the servers' own counters).")
	}
	if fresh {
		fmt.Fprintln(w, "visible p99 is the time from a watched post's acknowledgement until its author's followers' newest pages showed it; complete the share of watched pages that showed the post in time and, after a delete, no longer showed it.")
	}
	if wl.FreshMs > 0 || wl.MinCompleteness > 0 {
		fmt.Fprintf(w, "bound: %s\n", boundText(wl))
	}
	if cpu {
		fmt.Fprintln(w, "CPU/op, all is the CPU time of this process, memcached, Redis and MariaDB together per operation, on this machine.")
	}
	_, err := fmt.Fprintf(w, "verdict: %s\n", r.Verdict.Reason)
	return err
}

// boundText says the workload's bound on freshness and completeness.
func boundText(wl Workload) string {
	var parts []string
	if wl.FreshMs > 0 {
		parts = append(parts, "post-to-visible p99 ≤ "+fmtMs(wl.FreshMs))
	}
	if wl.MinCompleteness > 0 {
		parts = append(parts, "completeness ≥ "+fmtShare(wl.MinCompleteness))
	}
	return strings.Join(parts, ", ") + "; a candidate outside it does not hold, however cheap"
}

// SaveRecommendation creates dir and writes r there: recommendation.json,
// recommendation.txt (WriteRecommendation), and the run it comes from as
// Save writes a run. Non-finite figures are saved as 0 (JSON has no NaN).
func SaveRecommendation(dir string, r *Recommendation) error {
	return saveDoc(recommendationDoc, dir, r)
}

// recommendationDoc saves and loads a recommendation.
var recommendationDoc = docKind[Recommendation]{
	name: "recommendation", jsonFile: RecommendationJSONFile, version: RecommendationFormatVersion,
	versionOf: func(r *Recommendation) *int { return &r.Version },
	prepare: func(r *Recommendation) *Recommendation {
		c := *r
		c.StartedAt, c.FinishedAt = c.StartedAt.UTC(), c.FinishedAt.UTC()
		c.Candidates = finiteCandidates(r.Candidates)
		if r.Run != nil {
			c.Run = sanitized(r.Run)
		}
		return &c
	},
	derived: func(dir string, r *Recommendation) error {
		if err := writeFile(dir, RecommendationTableFile, func(w io.Writer) error { return WriteRecommendation(w, r) }); err != nil {
			return err
		}
		if r.Run != nil {
			return saveDocFiles(resultDoc, dir, r.Run)
		}
		return nil
	},
	upgrade: func(r *Recommendation) error {
		if r.Version != RecommendationFormatVersion {
			return fmt.Errorf("format version %d, want %d", r.Version, RecommendationFormatVersion)
		}
		if r.Run != nil {
			return upgrade(r.Run)
		}
		return nil
	},
}

// finiteCandidates returns a copy of cs with non-finite figures set to 0.
func finiteCandidates(cs []Candidate) []Candidate {
	out := make([]Candidate, len(cs))
	for i, c := range cs {
		for _, p := range []**float64{&c.MemcachedGetsPerOp, &c.MemcachedSetsPerOp, &c.CPUPerOpUs} {
			if *p != nil {
				v := zeroIfNotFinite(**p)
				*p = &v
			}
		}
		for _, v := range []*float64{&c.P50Ms, &c.P99Ms, &c.OfferedPerSec, &c.AchievedPerSec, &c.RowsReadPerOp, &c.RowsWrittenPerOp} {
			*v = zeroIfNotFinite(*v)
		}
		out[i] = c
	}
	return out
}

// LoadRecommendation reads the recommendation saved in dir (or the path of
// its recommendation.json).
func LoadRecommendation(dir string) (*Recommendation, error) {
	return loadDoc(recommendationDoc, dir)
}
