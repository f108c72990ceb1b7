package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/loadgen/recommend"
	"github.com/pushpull/pushpull/loadgen/sweep"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// Recommend defaults: a dataset small enough to generate and load in
// seconds, and a phase per candidate long enough for a few thousand
// operations at the default rate.
const (
	recommendScale    = "0.1"
	recommendDuration = "3s"
	recommendWarmup   = "500ms"
	recommendRate     = "300"
	mapScale          = "0.05"
	mapDuration       = "2s"
	mapReadShares     = "0.5,0.9,0.99"
	mapSkews          = "uniform,powerlaw:2.5,powerlaw:2.1"
)

// recommendIgnored are bench flags that mean nothing to a recommendation:
// it measures the traffic phase alone, every candidate for --duration, at
// the planned rate.
var recommendIgnored = []string{"extra-duration", "read-ratio", "find-rate", "step", "search-steps", "confirm", "max-steal", "cache-ttl", "slow-cap", "naive-cap",
	"burst", "celebrity-posts", "lag-slo"}

// mapSets are the flags the decision map sets itself, per cell.
var mapSets = []string{"graph", "mix", "read-share", "activity", "in-exponent", "out-exponent", "zipf-s", "post-exponent", "read-exponent", "self-follows"}

func newRecommendCmd() *cobra.Command {
	var (
		bf         benchFlags
		users      int
		readShare  float64
		out        string
		quiet      bool
		asMap      bool
		mapShares  []float64
		mapSkewsIn []string
		fresh      time.Duration
		complete   float64
	)
	cmd := &cobra.Command{
		Use:   "recommend [flags]",
		Short: "Measure the designs on your workload at your planned rate and say which serves it at the lowest cost within your latency objective",
		Long:  recommendLong(),
		Example: `  pushpull recommend --rate 300 --slo 50ms                      # 1,000 users, uniform graph, the default mix
  pushpull recommend --users 2000 --graph powerlaw --read-share 0.95 --rate 500 --slo 20ms
  pushpull recommend --graph edges:my-follows.txt --mix newest=80,older=10,post=8,follow=1,unfollow=1 --rate 200
  pushpull recommend --models {push},{pull} --rate 1000
  pushpull recommend --graph powerlaw --rate 300 --fresh 1s --completeness 0.99
  pushpull recommend --map --read-shares 0.5,0.9,0.99 --skews uniform,powerlaw:2.5,powerlaw:2.1 --rate 300`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			for _, name := range recommendIgnored {
				if f.Changed(name) {
					return usagef("--%s does not apply to recommend: it measures each candidate's traffic for --duration at the planned --rate", name)
				}
			}
			if f.Changed("users") {
				if f.Changed("scale") {
					return usagef("--users sets the scale; leave out --scale")
				}
				if users < 2 || users > dataset.MaxUsers {
					return usagef("--users %d: want 2 to %d", users, dataset.MaxUsers)
				}
				bf.scale = float64(users) / float64(dataset.PaperSpec().Users)
			}
			if fresh < 0 || fresh > 10*time.Minute {
				return usagef("--fresh %v: want a post-to-visible p99 up to 10m, or 0 for no bound", fresh)
			}
			if !(complete >= 0 && complete <= 1) {
				return usagef("--completeness %g: want a share from 0 (no bound) to 1, e.g. 0.99", complete)
			}
			if (fresh > 0 || complete > 0) && bf.probeEvery == 0 {
				return usagef("--fresh and --completeness are measured by the probe: leave --probe-every above 0")
			}
			if asMap {
				if f.Changed("fresh") || f.Changed("completeness") {
					return usagef("--fresh and --completeness do not go with --map")
				}
				for _, name := range mapSets {
					if f.Changed(name) {
						return usagef("--%s does not go with --map: each cell sets the graph and the mix from --skews and --read-shares", name)
					}
				}
			} else {
				for _, name := range []string{"read-shares", "skews"} {
					if f.Changed(name) {
						return usagef("--%s goes with --map", name)
					}
				}
				if f.Changed("read-share") {
					if f.Changed("mix") {
						return usagef("--read-share builds the mix; leave out --mix")
					}
					mix, err := sweep.ReadShareMix(readShare)
					if err != nil || !(readShare > 0 && readShare < 1) {
						return &usageError{fmt.Errorf("--read-share: %w", &recommend.InputError{Field: "read-share", Value: strconv.FormatFloat(readShare, 'g', -1, 64), Reason: "want a share of reads between 0 and 1, exclusive"})}
					}
					bf.mixSpec = mix.String()
				}
				if bf.mixSpec == "" {
					bf.mixSpec = workload.DefaultMixSpec
				}
			}
			if !f.Changed("models") {
				bf.models = recommend.Candidates()
			}
			if err := bf.check(cmd); err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if asMap {
				var skews []recommend.Skew
				for _, s := range mapSkewsIn {
					sk, err := recommend.ParseSkew(s)
					if err != nil {
						return &usageError{err}
					}
					skews = append(skews, sk)
				}
				mc := recommend.MapConfig{Bench: bf.cfg, ReadShares: mapShares, Skews: skews, Command: commandLine(cmd), Progress: stderr}
				if err := recommend.CheckMap(mc); err != nil {
					return &usageError{err}
				}
				return runMap(cmd, mc, out, quiet)
			}
			rc := recommend.Config{Bench: bf.cfg, Bound: recommend.Bound{Fresh: fresh, Completeness: complete}, Command: commandLine(cmd), Progress: stderr}
			if err := recommend.Check(rc); err != nil {
				return &usageError{err}
			}
			rec, err := recommend.Run(ctx, rc)
			var ie *recommend.InputError
			if errors.As(err, &ie) {
				return &usageError{err}
			}
			if err != nil {
				return withHint(err)
			}
			dir := results.RunDir(out, rec.StartedAt)
			if err := results.SaveRecommendation(dir, rec); err != nil {
				return err
			}
			if !quiet {
				fmt.Fprintln(cmd.OutOrStdout())
				if err := results.WriteRecommendation(cmd.OutOrStdout(), rec); err != nil {
					return err
				}
			}
			for _, fl := range rec.Run.Failures {
				fmt.Fprintf(stderr, "note: %s\n", fl)
			}
			fmt.Fprintf(stderr, "saved %s/{%s,%s,%s,...}\n", dir, results.RecommendationJSONFile, results.RecommendationTableFile, results.JSONFile)
			return nil
		},
	}
	f := cmd.Flags()
	bf.register(f)
	setDefault(f, "scale", recommendScale)
	setDefault(f, "duration", recommendDuration)
	setDefault(f, "warmup", recommendWarmup)
	setDefault(f, "rate", recommendRate)
	for _, name := range recommendIgnored {
		f.MarkHidden(name)
	}
	f.Lookup("models").Usage = "candidates to measure, comma-separated (default: every model on MariaDB that keeps its data on a server and is not slow by design: " + strings.Join(recommend.Candidates(), ",") + ")"
	f.Lookup("duration").Usage = "measured time of each candidate's traffic"
	f.Lookup("rate").Usage = "the planned rate, operations per second: every candidate is driven at it in an open loop, latency from each intended start"
	f.Lookup("slo").Usage = "the objective: p99 latency of the traffic at the planned rate, from intended starts"
	f.Lookup("mix").Usage = "the traffic's proportions, e.g. " + workload.DefaultMixSpec + " (the default)"
	f.IntVar(&users, "users", 0, "users in the dataset (sets --scale: users/10,000; messages 100 per user)")
	f.Float64Var(&readShare, "read-share", 0, "share of reads (newest and older pages) in the traffic, e.g. 0.95; the rest are posts, follows and unfollows in the default mix's proportions (instead of --mix)")
	f.DurationVar(&fresh, "fresh", 0, "a bound on freshness: a candidate whose watched posts took longer than this (p99, from the post's acknowledgement until a follower's newest page showed it; see --probe-every) does not hold, however cheap; 0 for no bound")
	f.Float64Var(&complete, "completeness", 0, "a bound on completeness, a share from 0 to 1: a candidate whose watched pages showed fewer of the watched posts within --visible-timeout, or of whose pages read after a delete more than 1-this still showed the deleted post, does not hold; 0 for no bound")
	f.StringVar(&out, "out", "results/recommend", "directory under which the run's directory is made")
	f.BoolVar(&quiet, "quiet", false, "print no table (the files are still saved)")
	f.BoolVar(&asMap, "map", false, "draw the decision map instead: a recommendation for every --skews and --read-shares pair (defaults then: --scale "+mapScale+", --duration "+mapDuration+")")
	f.Float64SliceVar(&mapShares, "read-shares", nil, "--map: the columns, shares of reads (default "+mapReadShares+")")
	f.Lookup("read-shares").DefValue = ""
	f.StringSliceVar(&mapSkewsIn, "skews", nil, "--map: the rows, least skewed first: uniform, powerlaw or powerlaw:EXPONENT (follower counts' power-law exponent; lower is more skewed) (default "+mapSkews+")")
	f.Lookup("skews").DefValue = "[]"
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if !asMap {
			return nil
		}
		// The map's own defaults, unless given.
		for name, v := range map[string]string{"scale": mapScale, "duration": mapDuration} {
			if !f.Changed(name) && !(name == "scale" && f.Changed("users")) {
				if err := f.Set(name, v); err != nil {
					return err
				}
			}
		}
		if !f.Changed("read-shares") {
			for _, s := range strings.Split(mapReadShares, ",") {
				v, _ := strconv.ParseFloat(s, 64)
				mapShares = append(mapShares, v)
			}
		}
		if !f.Changed("skews") {
			mapSkewsIn = strings.Split(mapSkews, ",")
		}
		return nil
	}
	return cmd
}

// runMap runs the decision map, saves it and prints its grid.
func runMap(cmd *cobra.Command, mc recommend.MapConfig, out string, quiet bool) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m, runErr := recommend.RunMap(ctx, mc)
	var ie *recommend.InputError
	if errors.As(runErr, &ie) {
		return &usageError{runErr}
	}
	if m == nil || len(m.Cells) == 0 {
		return withHint(runErr)
	}
	if err := saveLongRun(cmd, results.RunDir(out, m.StartedAt), results.DecisionMapFiles,
		func(dir string) error { return results.SaveDecisionMap(dir, m) },
		func(w io.Writer) { writeMapTable(w, m) }, quiet); err != nil {
		return errors.Join(runErr, err)
	}
	return withHint(runErr)
}

// writeMapTable prints the map as a grid: a row per skew, a column per
// read share, the design chosen in each cell and its rows per operation.
func writeMapTable(w io.Writer, m *results.DecisionMap) {
	fmt.Fprintf(w, "best design at %s ops/s within p99 ≤ %s ms (cost: rows read + written, memcached keys and Redis commands per operation)\n",
		strconv.FormatFloat(m.RatePerSec, 'g', -1, 64), strconv.FormatFloat(m.SLOMs, 'g', -1, 64))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "skew \\ reads\t")
	for _, s := range m.ReadShares {
		fmt.Fprintf(tw, "%s%%\t", strconv.FormatFloat(100*s, 'g', 4, 64))
	}
	fmt.Fprintln(tw)
	for _, sk := range m.Skews {
		fmt.Fprintf(tw, "%s\t", sk)
		for _, s := range m.ReadShares {
			c := m.Cell(sk, s)
			cell := results.Dash
			switch {
			case c == nil:
			case c.Verdict.Best != "":
				cell = c.Verdict.Best
				for _, cand := range c.Candidates {
					if cand.Model == c.Verdict.Best && cand.Costed {
						cell += fmt.Sprintf(" (%.1f)", cand.CostPerOp())
					}
				}
			default:
				cell = "none; closest " + c.Verdict.Closest
			}
			fmt.Fprintf(tw, "%s\t", cell)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, c := range m.Cells {
		fmt.Fprintf(w, "%s, %s%% reads: %s\n", c.Skew, strconv.FormatFloat(100*c.ReadShare, 'g', 4, 64), c.Verdict.Reason)
	}
}

func recommendLong() string {
	n := len(recommend.Candidates())
	d, _ := time.ParseDuration(recommendDuration)
	w, _ := time.ParseDuration(recommendWarmup)
	md, _ := time.ParseDuration(mapDuration)
	perRun := time.Duration(n) * (d + w)
	perCell := time.Duration(n) * (md + w)
	shares := len(strings.Split(mapReadShares, ","))
	skews := len(strings.Split(mapSkews, ","))
	return fmt.Sprintf(`recommend answers "which design should serve my feed?" by measuring, not
guessing. Describe the workload: its size (--users or --scale), its follow
graph (--graph uniform, zipf, powerlaw, or edges:FILE for your own), its
traffic (--read-share, or --mix for every operation's share), the rate you
plan for (--rate, operations per second) and your latency objective (--slo,
the p99 from each operation's intended start). recommend generates one
dataset, loads it into every candidate's database on one private MariaDB (and
memcached and Redis, for the models that use them), and drives each candidate in turn with
that traffic in an open loop at the planned rate, for --duration after
--warmup. Then it decides by the rule that docs/recommend.md states: a
candidate holds the objective when at most %s of its operations failed, it
kept up with the plan (at least %s of the offered rate completed) and its
p99 is within --slo; of those, the one that costs least to run wins: the
cores its database, caches and application need at the planned rate (from
the CPU each spent per operation, every server filled to half) plus its data
on disk, at relative prices; costs within %s of each other are a tie. Without
CPU figures (--dsn) the items per operation decide: rows read and written in
MariaDB plus keys got and set in memcached plus commands Redis ran.
pushpull plan applies the same rule at your real size, without running.

--fresh D and --completeness F add a bound on correctness in time, measured
by the probe beside each candidate's traffic (--probe-every): a candidate
holds only if the traffic's watched posts showed in their authors'
followers' newest pages within D at the p99 (ms from the post's
acknowledgement), at least F of the watched pages showed them, and at most
1-F of the pages read after a delete still showed the deleted post. A
cheaper design that is late or incomplete beyond the bound does not win.

It prints a row per candidate (held or not and why, p99 at the planned rate,
achieved rate, errors, rows read and written and memcached keys per
operation, items, the CPU of this process, memcached, Redis and MariaDB per
operation when it started the servers itself, data size, cores and cost to
run) and a one-line verdict with the figures that decided it, or, when none holds,
which came closest. Progress goes to stderr.

The candidates are every registered model on MariaDB that keeps its data on a
server and is not slow by design; --models chooses others. %d now:
%s

With the defaults (--scale %s: 1,000 users and 100,000 messages, --duration
%s, --warmup %s) a run takes about %v of measuring, plus a minute or so to
start the servers and load the data into the candidates' %d databases:
about %v in all, more on a busy machine.

It is saved under --out as <UTC timestamp>/recommendation.json (the
candidates, the verdict and the whole run), recommendation.txt (the table),
and the run's own result.json, result.csv, result.png and degrees.png, as
bench saves them.

--map draws the decision map instead: a recommendation in every cell of a
grid, the share of reads (--read-shares, columns) against the skew of the
graph and of the users' activity (--skews, rows: uniform, the paper's graph
with everyone alike, or powerlaw:E, follower counts a power law of exponent E
with users posting and reading in proportion to their followers; a lower E
is more skewed), every cell at the same --rate and --slo, on a fresh dataset
and a fresh sandbox. It saves decision-map.png (each cell coloured by the
design chosen there), decision-map.csv (a row per cell and candidate) and
decision-map.json, and prints the grid. Its defaults are --scale %s,
--duration %s, --read-shares %s and
--skews %s: %d cells of about %v of measuring plus
half a minute to a minute of loading each, about %v in all.

A bad flag or workload is refused (exit 2) before anything runs, and nothing
is saved. Ctrl-C or SIGTERM ends the run and stops the servers it started.`,
		percent(recommend.MaxErrorRate), percent(openloop.SaturationShare), percent(recommend.TieShare),
		n, "  "+strings.Join(wrap(strings.Join(recommend.Candidates(), ", "), 74), "\n  "), recommendScale, recommendDuration, recommendWarmup,
		perRun.Round(time.Second), candidateDatabases(), (perRun + 75*time.Second).Round(time.Minute),
		mapScale, mapDuration, mapReadShares, mapSkews, shares*skews, perCell.Round(time.Second),
		(time.Duration(shares*skews) * (perCell + 45*time.Second)).Round(time.Minute))
}

// percent formats a share as a percentage: 0.05 is "5%".
func percent(share float64) string {
	return strconv.FormatFloat(100*share, 'g', 4, 64) + "%"
}

// candidateDatabases counts the databases the default candidates live in:
// each is loaded once per run.
func candidateDatabases() int {
	seen := map[string]bool{}
	for _, name := range recommend.Candidates() {
		if m, err := registry.Lookup(name); err == nil {
			seen[m.Database] = true
		}
	}
	return len(seen)
}
