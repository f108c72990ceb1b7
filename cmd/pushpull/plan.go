package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/plan"
	"github.com/pushpull/pushpull/loadgen/recommend"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/results"
)

// calibrationScale and calibrationDuration are the counted runs
// --calibrate makes: the candidates at a tenth of the paper's size, on the
// uniform and the power-law graphs, every phase counted; then the
// candidates' traffic at calibrationLowRate operations a second, well
// below saturation, for each server's idle CPU and the wake-ups
// (results.Calibration.Idle and Wake).
const (
	calibrationScale    = "0.1"
	calibrationDuration = "2s"
	calibrationLowRate  = "100"
)

const planLong = `plan answers "which design, and how many servers?" for a feed at the
size you name, in seconds and without running it: it computes, for every
candidate design, the work an operation asks of the servers (rows read and
written in MariaDB, memcached keys, Redis commands, statements, round
trips, shard calls) from your workload and each design's cost model, what
that costs in CPU on this machine (a calibration fitted on counted runs),
and so the servers it needs at your peak rate: database, cache and
application cores, cache memory, storage, database nodes (Vitess shards
when more than one, with the rate one shard serves), the p99 latency, and
for the asynchronous designs the fan-out lag. The verdict is the cheapest
design to run that meets --slo and --freshness, by the rule recommend uses
(docs/recommend.md), with its margin; docs/plan.md gives the equations and
how well they match measurement.

Describe the workload:
  size        --users (default 1,000,000), --avg-followees (mean follows per
              user, default 42.9)
  graph       --graph uniform (everyone alike), powerlaw (follower counts a
              power law of exponent --in-exponent, followee counts of
              --out-exponent, as on Twitter), or edges:FILE (a follow graph
              "a b" per line, taken as a sample: each of its users stands
              for users/its users, with the same counts)
  activity    --activity uniform or skewed (who posts and reads grows with
              followers: --post-exponent, --read-exponent); --active-share,
              the share of users who read at all
  traffic     at peak, operations per second: --newest-per-sec,
              --older-per-sec, --posts-per-sec, --follows-per-sec (follows
              and unfollows); or --rate with --mix's proportions
  pages       --page (entries, default 20), --older-depth (mean depth of an
              older page, in pages, default 3.5)
  retention   --retention (messages kept: posts/s × this), or
              --messages-per-user (default 100)
  objective   --slo (p99, default 50ms), --freshness (how late a post may
              reach its followers; default no bound)
  machines    --node-cores, --node-memory-gb, --node-disk-gb (default 16
              cores, 64 GB, 2,000 GB), --utilization (share of cores filled
              at peak, default 0.5), --rtt (a round trip, default 200µs)
  prices      --price-core, --price-memory-gb, --price-disk-gb (default 1,
              0.125, 0.005: relative to a core)

The CPU figures come from --calibration (default: the one --calibrate
saved on this machine, else the one built in for this machine's
processor, else builtin:amd-epyc, fitted on five validations of an
AMD EPYC; builtin:NAME picks one of those built in, amd-epyc-first the
first machine's; make your own with --calibrate, about
thirteen minutes of counted runs, or --calibrate-from with bench --cost
runs you have; a plan whose calibration was made on another processor
says so): CPU per row, key, command, statement,
round trip and entry a mailbox rebuild writes, and each design's CPU factors, its measured CPU over those
units' per kind of operation and mix (the CPU factor column; 1 for a
design the calibration did not run), and, when its runs measured them,
each server's idle CPU and the CPU of waking the processes a round trip
passes below saturation (from runs at a planned rate: bench --cost
--rate R, recommend's runs, or rate searches), which a low rate's
servers need beside the work, and, from the steps of rate searches (bench
--cost --find-rate), how much of the time each process still sleeps as
the cores fill, which the highest rate within the objective carries,
and per design what its traffic costs at a planned rate over its closed
loop (the open factor, which every planned rate carries) and the busy
share of the cores at which its throughput stopped rising (the
saturation share, which the highest rate carries); and the rows a
second one connection reads running statements back to back, the pace
of selective's flusher when a counted run outruns it,
which a check of runs takes. --check DIR,... sets the model against saved
runs and prints and plots predicted against measured: for every design
and phase of counted runs (pushpull bench --cost --mix default) the rows,
keys and commands and the CPU per operation, then by run and phase the
median over the designs of measured over predicted CPU (a run whose
machine cost more or less in every phase shows there); for every design
of runs that searched for their highest rate within the objective (bench
--find-rate) that rate, predicted for the run's workload, mix, objective
and CPUs, with the application and every server sharing the cores, and
the CPU per operation predicted there, wake-ups included; runs of one
design on one workload given together are one measurement repeated, and
the check also sets the prediction against the median of their rates
and shows how far they spread. --validate makes such a check here from
nothing: the designs' (--models) mix at 100 operations a second, then
for each design on the uniform and the powerlaw graph a counted run with
a rate search at each of --validate-scales, one right after the other
(so a design's runs meet the machine at the same speed), a calibration
fitted on the runs at all but the last scale, and the runs at the
last, which it has not seen, checked against it; the runs, the
calibration and the check are saved under --out/validation/<time>.
Calibrated at two scales or more, each design's CPU factors also take
their growth with the data, where the runs show one clearer than their
spread. At the default scales (1,000
and 3,000 users) and phases of 2 s the candidates take about an hour;
0.1,0.2,0.3 about a third more. --validate-repeat N makes each held-out
run N times, one right after the other, and the check sets each
design's prediction against the median of its N rates and prints how
far they spread: on a machine that does not repeat itself, that spread
bounds how closely any prediction can be checked (each repeat adds about
half an hour for the candidates). --validate --calibration C checks a
calibration you have (a directory, a file, or builtin:NAME) against runs
made here without fitting one: only the held-out runs, at the one scale
--validate-scales gives (default 0.3), each design on both graphs, about
half an hour for the candidates; that is the check of a plan made on
this machine with C. --set gives the database of every run
--validate or --calibrate makes a mariadbd option over the sandbox's:
--set thread_handling=one-thread-per-connection runs it with MariaDB's own
default instead of the sandbox's thread pool, and shows the stalls a
thread per connection has under the rate searches' 64 operations in
flight on a small box (see docs/plan.md).

A bad flag or workload is refused (exit 2) before anything is computed
or run.`

func newPlanCmd() *cobra.Command {
	var (
		w                               plan.Workload
		graph, activity                 string
		postExp, readExp                float64
		rate                            float64
		mixSpec                         string
		options                         []string
		calibration, out                string
		calibrate, validate             bool
		calibrateFrom, check            []string
		validateScales                  string
		validateDuration                time.Duration
		validateRepeat                  int
		sets                            []string
		quiet                           bool
		priceCore, priceMemory, priceGB float64
	)
	cmd := &cobra.Command{
		Use:   "plan [flags]",
		Short: "Plan a feed at its real size: each design's work per operation, the servers it needs, its latency and fan-out lag, and the cheapest that meets the objective",
		Long:  planLong,
		Example: `  pushpull plan --users 10000000 --graph powerlaw --newest-per-sec 300000 --posts-per-sec 6000 --slo 100ms --freshness 5s
  pushpull plan --users 100000 --rate 2000 --mix newest=80,older=10,post=8,follow=1,unfollow=1
  pushpull plan --users 5000000 --graph edges:sample.txt --newest-per-sec 20000 --posts-per-sec 400
  pushpull plan --calibrate                                   # counted runs here, then saved as the calibration
  pushpull plan --check results/runs/A,results/runs/B          # predicted against measured
  pushpull plan --validate                                    # calibrate at 1,000 users, predict and measure 3,000 (about an hour)`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			modes := 0
			for _, on := range []bool{calibrate, len(calibrateFrom) > 0, len(check) > 0, validate} {
				if on {
					modes++
				}
			}
			if modes > 1 {
				return usagef("--calibrate, --calibrate-from, --check and --validate go one at a time")
			}
			if !validate && (f.Changed("validate-scales") || f.Changed("validate-duration") || f.Changed("validate-repeat")) {
				return usagef("--validate-scales, --validate-duration and --validate-repeat go with --validate")
			}
			if len(sets) > 0 {
				if !validate && !calibrate {
					return usagef("--set goes with --validate or --calibrate: it is an option of the database their runs start")
				}
				if _, err := parseSettings(sets); err != nil {
					return err
				}
			}
			if validate {
				v := validation{given: validateScales, phase: validateDuration, repeat: validateRepeat, models: w.Models, slo: w.SLO, sets: sets, out: out, quiet: quiet}
				if f.Changed("calibration") {
					// A calibration to check, not to fit: the held-out
					// runs alone, at the one scale given (else the
					// default's held-out one).
					cal, err := loadCalibration(calibration)
					if err != nil {
						return err
					}
					v.cal = cal
					if !f.Changed("validate-scales") {
						v.given = validateScales[strings.LastIndex(validateScales, ",")+1:]
					}
				}
				if err := v.check(); err != nil {
					return err
				}
				return v.run(cmd)
			}
			if calibrate || len(calibrateFrom) > 0 {
				if strings.HasPrefix(calibration, builtinPrefix) {
					return usagef("--calibration %s: a built-in calibration is not saved over; name a directory", calibration)
				}
				dirs := calibrateFrom
				if calibrate {
					var err error
					if dirs, err = calibrationRuns(cmd, sets); err != nil {
						return err
					}
				}
				runs, err := loadRuns(dirs)
				if err != nil {
					return err
				}
				cal, err := plan.Calibrate(runs, runSources(runs, dirs))
				if err != nil {
					return &usageError{err}
				}
				dest := calibration
				if dest == "" {
					dest = defaultCalibrationDir()
				}
				if err := results.SaveCalibration(dest, cal); err != nil {
					return err
				}
				if !quiet {
					if err := results.WriteCalibration(stdout, cal); err != nil {
						return err
					}
				}
				fmt.Fprintf(stderr, "saved %s\n", filepath.Join(dest, results.CalibrationFile))
				return nil
			}
			cal, err := loadCalibration(calibration)
			if err != nil {
				return err
			}
			if len(check) > 0 {
				runs, err := loadRuns(check)
				if err != nil {
					return err
				}
				c, err := plan.Check(runs, runSources(runs, check), cal, commandLine(cmd))
				if err != nil {
					return &usageError{err}
				}
				dir := results.RunDir(filepath.Join(out, "check"), c.CreatedAt)
				if err := results.SavePlanCheck(dir, c); err != nil {
					return err
				}
				if !quiet {
					if err := results.WritePlanCheck(stdout, c); err != nil {
						return err
					}
				}
				fmt.Fprintf(stderr, "saved %s/{%s,%s,%s}\n", dir, results.PlanCheckFile, results.PlanCheckTableFile, results.PlanCheckPNGFile)
				return nil
			}
			// A plan. A zero left in the Workload means its default, so
			// a zero given on the command line is refused here.
			for _, name := range []string{"users", "avg-followees", "active-share", "page", "older-depth", "messages-per-user",
				"slo", "node-cores", "node-memory-gb", "node-disk-gb", "utilization", "rtt"} {
				if fl := f.Lookup(name); fl.Changed {
					if v, err := strconv.ParseFloat(strings.TrimRight(fl.Value.String(), "smµnh"), 64); err == nil && v == 0 {
						return &usageError{&plan.InputError{Field: name, Value: fl.Value.String(), Reason: "want a value above 0 (leave the flag out for its default)"}}
					}
				}
			}
			perOp := false
			for _, name := range []string{"newest-per-sec", "older-per-sec", "posts-per-sec", "follows-per-sec"} {
				perOp = perOp || f.Changed(name)
			}
			switch {
			case perOp && (f.Changed("rate") || f.Changed("mix")):
				return usagef("give the rates per operation (--newest-per-sec, ...) or --rate with --mix, not both")
			case f.Changed("mix") && !f.Changed("rate"):
				return usagef("--mix goes with --rate")
			case f.Changed("rate"):
				if rate <= 0 {
					return &usageError{&plan.InputError{Field: "rate", Value: strconv.FormatFloat(rate, 'g', -1, 64), Reason: "want operations per second above 0"}}
				}
				mix, err := workload.ParseMix(mixSpec)
				if err != nil {
					return &usageError{fmt.Errorf("--mix: %w", err)}
				}
				w.NewestPerSec = rate * mix.Share(workload.OpNewest)
				w.OlderPerSec = rate * mix.Share(workload.OpOlder)
				w.PostsPerSec = rate * mix.Share(workload.OpPost)
				w.FollowsPerSec = rate * (mix.Share(workload.OpFollow) + mix.Share(workload.OpUnfollow))
			case !perOp:
				return usagef("give the planned rates: --newest-per-sec, --posts-per-sec, ... or --rate (with --mix)")
			}
			if g, file, ok := strings.Cut(graph, ":"); ok && g == dataset.GraphEdges {
				el, err := dataset.ReadEdgeList(file, dataset.SelfFollowsSkip)
				if err != nil {
					return &usageError{fmt.Errorf("--graph: %w", err)}
				}
				w.Graph, w.EdgeList = dataset.GraphEdges, el
				if !f.Changed("avg-followees") {
					w.AvgFollowees = el.AvgFollowees()
				}
			} else {
				w.Graph = graph
			}
			w.Activity = dataset.Activity{Mode: activity}
			if f.Changed("post-exponent") || f.Changed("read-exponent") {
				w.Activity.PostExponent, w.Activity.ReadExponent = postExp, readExp
			}
			w.Prices = results.Prices{Core: priceCore, MemoryGB: priceMemory, DiskGB: priceGB}
			opts, err := parseOptions(options)
			if err != nil {
				return err
			}
			w.Options = opts
			if f.Changed("models") && len(w.Models) == 0 {
				return usagef("--models: name at least one")
			}
			p, err := plan.Make(w, cal, commandLine(cmd))
			var ie *plan.InputError
			if errors.As(err, &ie) {
				return &usageError{err}
			}
			if err != nil {
				return err
			}
			if note := plan.CalibrationNote(cal, results.LocalCPUModel()); note != "" {
				p.Assumptions = append(p.Assumptions, note)
				fmt.Fprintln(stderr, "note: "+note)
			}
			dir := results.RunDir(out, p.CreatedAt)
			if err := results.SavePlan(dir, p); err != nil {
				return err
			}
			if !quiet {
				if err := results.WritePlan(stdout, p); err != nil {
					return err
				}
			}
			fmt.Fprintf(stderr, "computed in %s; saved %s/{%s,%s}\n", time.Duration(p.Seconds*float64(time.Second)).Round(time.Millisecond), dir, results.PlanFile, results.PlanTableFile)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&w.Users, "users", 1_000_000, "users of the service")
	f.Float64Var(&w.AvgFollowees, "avg-followees", dataset.PaperSpec().AvgFollowees, "follows per user on average (an edge file's own by default)")
	f.StringVar(&graph, "graph", dataset.GraphUniform, "follow graph: uniform, powerlaw, or edges:FILE (a sample of the real graph)")
	f.Float64Var(&w.InExponent, "in-exponent", dataset.DefaultInExponent, "--graph powerlaw: exponent of the follower-count distribution")
	f.Float64Var(&w.OutExponent, "out-exponent", dataset.DefaultOutExponent, "--graph powerlaw: exponent of the followee-count distribution")
	f.StringVar(&activity, "activity", "", "uniform or skewed (posts and reads grow with followers); default skewed for powerlaw and edges, uniform otherwise")
	f.Float64Var(&postExp, "post-exponent", dataset.DefaultPostExponent, "--activity skewed: posts grow as (1+followers)^this")
	f.Float64Var(&readExp, "read-exponent", dataset.DefaultReadExponent, "--activity skewed: reads grow as (1+followers)^this")
	f.Float64Var(&w.ActiveShare, "active-share", 1, "share of users who read at all (the reads are theirs)")
	f.Float64Var(&w.NewestPerSec, "newest-per-sec", 0, "newest pages read per second at peak")
	f.Float64Var(&w.OlderPerSec, "older-per-sec", 0, "older pages read per second at peak")
	f.Float64Var(&w.PostsPerSec, "posts-per-sec", 0, "posts per second at peak")
	f.Float64Var(&w.FollowsPerSec, "follows-per-sec", 0, "follows and unfollows per second at peak (half each)")
	f.Float64Var(&rate, "rate", 0, "operations per second at peak, shared out by --mix (instead of the rates per operation)")
	f.StringVar(&mixSpec, "mix", workload.DefaultMixSpec, "--rate's proportions")
	f.IntVar(&w.Page, "page", plan.DefaultPage, "entries a page shows")
	f.Float64Var(&w.OlderDepth, "older-depth", plan.DefaultOlderDepth, "mean depth of an older page, in pages")
	f.DurationVar(&w.Retention, "retention", 0, "how long messages are kept (posts/s × this are kept); 0: --messages-per-user")
	f.Float64Var(&w.MessagesPerUser, "messages-per-user", plan.DefaultMessagesPerUser, "messages kept per user, without --retention")
	f.DurationVar(&w.SLO, "slo", plan.DefaultSLO, "the objective: p99 latency of the traffic")
	f.DurationVar(&w.Freshness, "freshness", 0, "how late a post may reach its followers' timelines (p99); 0: no bound")
	f.Float64Var(&w.Node.Cores, "node-cores", plan.DefaultNode.Cores, "cores of a server")
	f.Float64Var(&w.Node.MemoryGB, "node-memory-gb", plan.DefaultNode.MemoryGB, "memory of a server, GB")
	f.Float64Var(&w.Node.DiskGB, "node-disk-gb", plan.DefaultNode.DiskGB, "disk of a server, GB")
	f.Float64Var(&w.Utilization, "utilization", recommend.Utilization, "share of a server's cores filled at peak")
	f.DurationVar(&w.RTT, "rtt", plan.DefaultRTT, "one round trip between servers")
	f.Float64Var(&priceCore, "price-core", results.DefaultPrices.Core, "price of a core")
	f.Float64Var(&priceMemory, "price-memory-gb", results.DefaultPrices.MemoryGB, "price of a GB of memory")
	f.Float64Var(&priceGB, "price-disk-gb", results.DefaultPrices.DiskGB, "price of a GB of disk")
	f.StringArrayVar(&options, "option", nil, "model option, name=value (repeatable), given to every planned model that declares it")
	f.StringSliceVar(&w.Models, "models", nil, "designs to plan, comma-separated (default: recommend's candidates: "+strings.Join(recommend.Candidates(), ",")+")")
	f.StringVar(&calibration, "calibration", "", "directory (or file) of the calibration to use, to save with --calibrate, or to check with --validate, or builtin:NAME for one built in ("+strings.Join(plan.BuiltInCalibrations(), ", ")+"; default: "+defaultCalibrationDir()+" if saved there, else the one built in for this machine's processor, else "+plan.ReferenceCalibration+")")
	f.BoolVar(&calibrate, "calibrate", false, "measure a calibration here: counted runs of the candidates at scale "+calibrationScale+" on the uniform and the powerlaw graph (about ten minutes), fitted and saved")
	f.StringSliceVar(&calibrateFrom, "calibrate-from", nil, "fit the calibration on these saved runs (pushpull bench --cost directories) instead")
	f.BoolVar(&validate, "validate", false, "validate the model here: calibrate on counted runs with rate searches at all but the last of --validate-scales, then predict and measure the last, on the uniform and the powerlaw graph, and save the runs, the calibration and the check under --out/validation (--models: the designs; --slo: the rate searches' objective); with --calibration, check that one instead: the runs at the one scale of --validate-scales alone")
	f.StringVar(&validateScales, "validate-scales", "0.1,0.3", "--validate: the scales calibrated at and last the larger one held out, relative to the paper's size, increasing (with --calibration: the one scale measured, default the last of these)")
	f.DurationVar(&validateDuration, "validate-duration", 2*time.Second, "--validate: each counted phase and each step of a rate search")
	f.IntVar(&validateRepeat, "validate-repeat", 1, "--validate: the held-out runs made this many times each, one right after the other; the check sets each prediction against the median of a design's runs, and shows how far they spread")
	f.StringArrayVar(&sets, "set", nil, "--validate, --calibrate: a mariadbd option for the sandbox of each of their runs, key=value (repeatable), e.g. --set thread_handling=one-thread-per-connection")
	f.StringSliceVar(&check, "check", nil, "set the model against these saved runs (bench --cost: work and CPU per operation; bench --find-rate: highest rate within the objective) and save the table and plot under --out/check")
	f.StringVar(&out, "out", "results/plans", "directory under which the plan's (or the check's) directory is made")
	f.BoolVar(&quiet, "quiet", false, "print no table (the files are still saved)")
	return cmd
}

// defaultCalibrationDir is where --calibrate saves and plans look first.
func defaultCalibrationDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "pushpull", "calibration")
	}
	return filepath.Join("results", "calibration")
}

// builtinPrefix names a built-in calibration in --calibration.
const builtinPrefix = "builtin:"

// loadCalibration reads the calibration at path (builtin:NAME: that one
// built in), else the one saved by --calibrate on this machine, else the
// one built in for this machine (plan.DefaultCalibration).
func loadCalibration(path string) (*results.Calibration, error) {
	if name, ok := strings.CutPrefix(path, builtinPrefix); ok {
		if c := plan.BuiltInCalibration(name); c != nil {
			return c, nil
		}
		return nil, &usageError{fmt.Errorf("--calibration: no calibration %q is built in (built in: %s%s)",
			name, builtinPrefix, strings.Join(plan.BuiltInCalibrations(), ", "+builtinPrefix))}
	}
	if path != "" {
		c, err := results.LoadCalibration(path)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--calibration: %w", err)}
		}
		return c, nil
	}
	if c, err := results.LoadCalibration(defaultCalibrationDir()); err == nil {
		return c, nil
	}
	return plan.DefaultCalibration(), nil
}

// loadRuns reads saved runs.
func loadRuns(dirs []string) ([]*results.Result, error) {
	var runs []*results.Result
	for _, d := range dirs {
		r, err := results.Load(d)
		if err != nil {
			return nil, &usageError{err}
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// runSources names runs by their command and directory.
func runSources(runs []*results.Result, dirs []string) []string {
	var out []string
	for i, r := range runs {
		out = append(out, fmt.Sprintf("%s (%s, %s)", r.Command, dirs[i], r.StartedAt.UTC().Format("2006-01-02 15:04 UTC")))
	}
	return out
}

// calibrationRuns makes the runs of --calibrate, with pushpull bench and
// pushpull recommend, each with the mariadbd options sets (--set), and
// returns their directories.
func calibrationRuns(cmd *cobra.Command, sets []string) ([]string, error) {
	tmp, err := os.MkdirTemp("", "pushpull-calibrate-")
	if err != nil {
		return nil, err
	}
	models := strings.Join(recommend.Candidates(), ",")
	var dirs []string
	for _, graph := range []string{dataset.GraphUniform, dataset.GraphPowerLaw} {
		dir, err := calibrationRun(cmd, filepath.Join(tmp, graph), "on the "+graph+" graph",
			withSets(sets, "bench", "--cost", "--scale", calibrationScale, "--graph", graph, "--mix", "default",
				"--duration", calibrationDuration, "--extra-duration", calibrationDuration, "--models", models)...)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, dir)
	}
	dir, err := calibrationRun(cmd, filepath.Join(tmp, "low-rate"), "at "+calibrationLowRate+" operations a second",
		withSets(sets, "recommend", "--scale", calibrationScale, "--rate", calibrationLowRate, "--duration", calibrationDuration, "--models", models)...)
	if err != nil {
		return nil, err
	}
	return append(dirs, dir), nil
}

// withSets is args followed by a --set for each of sets.
func withSets(sets []string, args ...string) []string {
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return args
}

// calibrationRun runs pushpull with args and --out out, and returns the
// directory of the one run it saved there; what names the run in errors.
func calibrationRun(cmd *cobra.Command, out, what string, args ...string) (string, error) {
	return runPushpull(cmd, out, "calibration run "+what, args...)
}

// runPushpull runs pushpull with args and --out out, announced on stderr
// as what, and returns the directory of the one run it saved there.
func runPushpull(cmd *cobra.Command, out, what string, args ...string) (string, error) {
	args = append(args, "--out", out)
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: pushpull %s\n", what, strings.Join(args, " "))
	if code := execute(cmd.Context(), args, cmd.ErrOrStderr(), cmd.ErrOrStderr(), os.Getenv); code != exitOK {
		return "", fmt.Errorf("%s failed (exit %d)", what, code)
	}
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 1 {
		return "", fmt.Errorf("%s saved no run in %s", what, out)
	}
	return filepath.Join(out, entries[0].Name()), nil
}
