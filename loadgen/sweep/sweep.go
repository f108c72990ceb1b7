// Package sweep runs the benchmark once per value of one parameter, so that
// a team choosing a feed design sees how each design's rate, latency, data
// size and cost per operation grow as its service grows: with the number
// of users and messages, the followees per user (pull's read cost), one
// author's followers (push's post cost), or the traffic's share of reads.
//
// Each point is a whole loadgen.RunBench on a fresh dataset and, unless the
// base configuration names a server, a fresh sandbox, so that no point
// inherits another's buffer pool or caches. The points run in the order
// given. What a point would need beyond the machine is not attempted: the
// push family's mailbox holds one row per message and follower, so at 10x
// the paper's messages it is 429 million rows; models whose mailbox would
// exceed Config.MaxMailboxRows are skipped at that point and the sweep
// says so.
package sweep

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	schema "github.com/pushpull/pushpull/sql"
)

// Param is a parameter a sweep varies.
type Param string

// The parameters.
const (
	// Scale multiplies users and messages together, as the benchmark's
	// --scale does (followees per user stay).
	Scale Param = "scale"
	// Messages multiplies the messages only: the same users and graph,
	// a longer history.
	Messages Param = "messages"
	// Followees sets every user's followee count exactly (a uniform
	// graph with Spec.Followees): what a pull read merges.
	Followees Param = "followees"
	// Followers sets the followers of one author, user 1 (Spec.Celebrity),
	// and makes every post of the workload theirs (dataset.ActivityCelebrity):
	// what a push post fans out to.
	Followers Param = "followers"
	// ReadShare sets the share of reads in the mixed traffic: reads keep
	// the default mix's newest:older proportions, writes its
	// post:follow:unfollow ones.
	ReadShare Param = "read-share"
	// Option stands for "option:NAME", which sets the model option NAME
	// (registry.Config.Options, bench's --option NAME=VALUE) to each
	// value, a number: hybrid's threshold, push-capped's cap. As bench's
	// --option, it goes to the measured models that declare it; one that
	// none declares, or a value one of them does not take (a fraction for
	// an integer option, a number out of its bounds), stops the sweep
	// before anything runs.
	Option Param = OptionPrefix + "NAME"
)

// OptionPrefix begins a parameter that varies a model option.
const OptionPrefix = "option:"

// Params lists the parameters in the order --help shows them.
var Params = []Param{Scale, Messages, Followees, Followers, ReadShare, Option}

// OptionName is the model option p varies, or "" when p varies none.
func (p Param) OptionName() string {
	name, ok := strings.CutPrefix(string(p), OptionPrefix)
	if !ok {
		return ""
	}
	return name
}

// Label is what the parameter's values are, for axes and tables.
func (p Param) Label() string {
	switch p {
	case Scale:
		return "size (x the paper's 10,000 users and 1,000,000 messages)"
	case Messages:
		return "messages (x the base run's)"
	case Followees:
		return "followees per user"
	case Followers:
		return "followers of the posting author"
	case ReadShare:
		return "share of reads in the traffic"
	}
	if name := p.OptionName(); name != "" {
		return "model option " + name
	}
	return string(p)
}

// Help says in a line what varying p does.
func (p Param) Help() string {
	switch p {
	case Scale:
		return "users and messages together, as factors of the paper's (--scale is the base)"
	case Messages:
		return "messages only, as factors of the base run's (users and graph stay)"
	case Followees:
		return "every user follows exactly this many authors (uniform graph)"
	case Followers:
		return "user 1 has exactly this many followers and writes every post of the workload"
	case ReadShare:
		return "share of reads (0 to 1, exclusive) in the mixed traffic phase, which it turns on"
	case Option:
		return "a model option that takes numbers (e.g. option:threshold for hybrid, option:cap for a capped push mailbox; pushpull --help lists them)"
	}
	return ""
}

// ParseParam returns the parameter named s, or a *ValueError.
func ParseParam(s string) (Param, error) {
	if name := Param(s).OptionName(); name != "" || strings.HasPrefix(s, OptionPrefix) {
		if !validOptionName(name) {
			return "", &ValueError{Param: s, Reason: "want option:NAME, NAME a model option such as threshold or cap"}
		}
		return Param(s), nil
	}
	for _, p := range Params {
		if string(p) == s && p != Option {
			return p, nil
		}
	}
	names := make([]string, len(Params))
	for i, p := range Params {
		names[i] = string(p)
	}
	return "", &ValueError{Param: s, Reason: "unknown parameter; want one of " + strings.Join(names, ", ")}
}

// validOptionName reports whether name can be a model option's: lower
// case letters, digits, '-' and '_'.
func validOptionName(name string) bool {
	if name == "" || name == "NAME" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// ValueError reports a parameter or a value a sweep cannot run, before
// anything runs.
type ValueError struct {
	Param  string
	Value  string // "" when the parameter itself is wrong
	Reason string
	// Err is the cause, if any: for an option, a *registry.OptionError.
	Err error
}

func (e *ValueError) Unwrap() error { return e.Err }

func (e *ValueError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("sweep %s: %s", e.Param, e.Reason)
	}
	return fmt.Sprintf("sweep %s = %s: %s", e.Param, e.Value, e.Reason)
}

// DefaultMaxMailboxRows bounds the push family's mailbox at a point: 200
// million rows are about 9 GB on disk and 8 minutes of loading on the
// 2-core machine the reference figures come from.
const DefaultMaxMailboxRows = 200_000_000

// Config is a sweep.
type Config struct {
	// Bench is the run at every point before the parameter is applied;
	// Bench.Spec is already scaled by Bench.Scale.
	Bench loadgen.BenchConfig
	// Base is Bench.Spec before scaling, which Scale's values scale.
	Base   dataset.Spec
	Param  Param
	Values []float64
	// MaxMailboxRows: a model whose load writes the whole mailbox
	// (fullMailbox) is skipped at a point whose mailbox would hold more
	// rows; 0 means DefaultMaxMailboxRows.
	MaxMailboxRows int64
	Command        string
	// Progress receives a line per point, and each run's own progress.
	Progress io.Writer
}

// point is one value's run.
type point struct {
	value   float64
	cfg     loadgen.BenchConfig
	skipped map[string]string
}

// plan checks every value and derives its run, so that a bad value stops
// the sweep before anything runs.
func plan(cfg Config) ([]point, error) {
	if len(cfg.Values) == 0 {
		return nil, &ValueError{Param: string(cfg.Param), Reason: "no values to sweep"}
	}
	if _, err := ParseParam(string(cfg.Param)); err != nil {
		return nil, err
	}
	if cfg.MaxMailboxRows <= 0 {
		cfg.MaxMailboxRows = DefaultMaxMailboxRows
	}
	models := cfg.Bench.Models
	if models == nil {
		models = loadgen.DefaultBenchModels()
	}
	var measured []registry.Model
	for _, name := range models {
		m, err := registry.Lookup(name)
		if err != nil {
			return nil, err
		}
		measured = append(measured, m)
	}
	var pts []point
	for i, v := range cfg.Values {
		val := strconv.FormatFloat(v, 'g', -1, 64)
		bad := func(format string, args ...any) error {
			return &ValueError{Param: string(cfg.Param), Value: val, Reason: fmt.Sprintf(format, args...)}
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, bad("not a number")
		}
		if slices.Contains(cfg.Values[:i], v) {
			return nil, bad("given twice")
		}
		b := cfg.Bench
		b.Models = slices.Clone(models)
		spec := b.Spec
		switch cfg.Param {
		case Scale:
			if !(v > 0) {
				return nil, bad("want a factor above 0")
			}
			s, err := cfg.Base.Scaled(v)
			if err != nil {
				return nil, bad("%v", err)
			}
			spec, b.Scale = s, v
		case Messages:
			if !(v > 0) {
				return nil, bad("want a factor above 0")
			}
			spec.Messages = int(math.Round(float64(spec.Messages) * v))
		case Followees, Followers:
			if v != math.Trunc(v) || v < 1 {
				return nil, bad("want a whole number of users, at least 1")
			}
			if v > float64(spec.Users-1) {
				return nil, bad("the dataset has %d users, so at most %d", spec.Users, spec.Users-1)
			}
			if cfg.Param == Followees {
				spec.Followees = int(v)
			} else {
				spec.Celebrity = int(v)
				spec.Activity = dataset.Activity{Mode: dataset.ActivityCelebrity}
			}
		case ReadShare:
			if !(v > 0 && v < 1) {
				return nil, bad("want a share between 0 and 1, exclusive")
			}
			mix, err := ReadShareMix(v)
			if err != nil {
				return nil, bad("%v", err)
			}
			b.Mix = &mix
		default: // an option: ParseParam allowed no other
			if v == math.Trunc(v) && math.Abs(v) < 1e15 {
				val = strconv.FormatFloat(v, 'f', -1, 64) // 1000000, not 1e+06
			}
			name := cfg.Param.OptionName()
			if err := registry.CheckShared(measured, map[string]string{name: val}); err != nil {
				return nil, &ValueError{Param: string(cfg.Param), Value: val, Reason: err.Error(), Err: err}
			}
			b.Options = maps.Clone(b.Options)
			if b.Options == nil {
				b.Options = map[string]string{}
			}
			b.Options[name] = val
		}
		if err := spec.Validate(); err != nil {
			return nil, bad("%v", err)
		}
		b.Spec = spec
		p := point{value: v, cfg: b}
		var full []string // the models that would hold the whole mailbox
		for _, m := range measured {
			if fullMailbox[m.Schema] {
				full = append(full, m.Name)
			}
		}
		if len(full) > 0 {
			rows, err := mailboxRows(spec)
			if err != nil {
				return nil, bad("%v", err)
			}
			if rows > cfg.MaxMailboxRows {
				why := fmt.Sprintf("its mailbox would hold %.1f million rows, more than the limit of %.1f million (about %.0f GB on disk)",
					float64(rows)/1e6, float64(cfg.MaxMailboxRows)/1e6, float64(rows)*bytesPerMailboxRow/1e9)
				p.skipped = map[string]string{}
				for _, name := range full {
					p.skipped[name] = why
				}
				p.cfg.Models = slices.DeleteFunc(slices.Clone(b.Models), func(name string) bool { return slices.Contains(full, name) })
			}
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// fullMailbox are the schemas whose bulk load writes a mailbox row per
// message and follower: push's, and those built on it that may keep every
// row (compressed pages, hybrid on a graph without celebrities, push-active
// when most users read, selective when most edges are pushed).
// push-capped loads each user's newest entries only.
var fullMailbox = map[schema.Model]bool{
	schema.Push: true, schema.PushCompressed: true, schema.Hybrid: true, schema.PushActive: true, schema.Selective: true,
}

// bytesPerMailboxRow is what a mailbox row takes on disk, primary key and
// page overhead included, as measured on the paper's dataset (1.85 GB on
// disk for 42.9 million rows, evidence).
const bytesPerMailboxRow = 43

// mailboxRows is the number of rows spec's push mailbox holds. It
// generates the dataset, which RunBench does again; it is called only for
// points that measure a model of fullMailbox.
func mailboxRows(spec dataset.Spec) (int64, error) {
	d, err := dataset.Generate(spec)
	if err != nil {
		return 0, err
	}
	return d.MailboxRows(), nil
}

// ReadShareMix is the default mix (workload.DefaultMix) with reads making up
// share of it: newest and older pages keep their proportion to each other,
// and so do posts, follows and unfollows.
func ReadShareMix(share float64) (workload.Mix, error) {
	def := workload.DefaultMix()
	reads := def.Share(workload.OpNewest) + def.Share(workload.OpOlder)
	var parts []string
	for _, op := range workload.MixOps {
		w := def.Share(op)
		if op == workload.OpNewest || op == workload.OpOlder {
			w *= share / reads
		} else {
			w *= (1 - share) / (1 - reads)
		}
		parts = append(parts, fmt.Sprintf("%s=%s", op, strconv.FormatFloat(w*100, 'g', 6, 64)))
	}
	return workload.ParseMix(strings.Join(parts, ","))
}

// Run runs the sweep: every value is checked first (a bad one is a
// *ValueError and nothing runs), then each point's benchmark runs in turn.
// A point whose run fails (an error, not a failed result) ends the sweep
// with that error; the points before it are returned with it, so that a
// caller can still save them.
func Run(ctx context.Context, cfg Config) (*results.Sweep, error) {
	pts, err := plan(cfg)
	if err != nil {
		return nil, err
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	s := &results.Sweep{
		Version: results.SweepFormatVersion, StartedAt: time.Now().UTC(), Command: cfg.Command,
		Param: string(cfg.Param), Label: cfg.Param.Label(), LogX: spansDecade(cfg.Values),
	}
	for i, p := range pts {
		fmt.Fprintf(progress, "\n=== sweep %s: point %d of %d, %s = %s (%s)\n", cfg.Param, i+1, len(pts),
			cfg.Param, strconv.FormatFloat(p.value, 'g', -1, 64), strings.Join(p.cfg.Models, ", "))
		for name, why := range p.skipped {
			fmt.Fprintf(progress, "skipping %s: %s\n", name, why)
			s.Notes = append(s.Notes, fmt.Sprintf("%s = %s: %s skipped: %s", cfg.Param, strconv.FormatFloat(p.value, 'g', -1, 64), name, why))
		}
		if len(p.cfg.Models) == 0 {
			s.Points = append(s.Points, results.SweepPoint{Value: p.value, Skipped: p.skipped})
			continue
		}
		b := p.cfg
		b.Progress = progress
		b.Command = cfg.Command
		r, err := loadgen.RunBench(ctx, b)
		if err != nil {
			s.FinishedAt = time.Now().UTC()
			return s, fmt.Errorf("sweep %s = %s: %w", cfg.Param, strconv.FormatFloat(p.value, 'g', -1, 64), err)
		}
		s.Points = append(s.Points, results.SweepPoint{Value: p.value, Skipped: p.skipped, Result: r})
	}
	s.FinishedAt = time.Now().UTC()
	return s, nil
}

// spansDecade reports whether positive values span a factor of 10 or more.
func spansDecade(vs []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vs {
		if !(v > 0) {
			return false
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	return hi >= 10*lo
}
