package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

func newBenchCmd() *cobra.Command {
	var (
		dsn, graph, durability, out string
		memcacheList                string
		activity, selfFollows       string
		inExponent, outExponent     float64
		postExponent, readExponent  float64
		extraDuration, cacheTTL     time.Duration
		models                      []string
		set                         []string
		duration, warmup, slowCap   time.Duration
		naiveCap                    time.Duration
		concurrency, followees      int
		ops                         int64
		scale, zipfS, readRatio     float64
		avgFollowees                float64
		seed                        int64
		force, asJSON               bool
		mixSpec, arrivals           string
		rate                        float64
		maxInFlight, searchSteps    int
		findRate, showCost          bool
		withVitess                  bool
		shards                      int
		slo, step                   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "Reproduce the paper's push-versus-pull benchmark and save the results",
		Long:  benchLong(),
		Example: `  pushpull bench                          # the paper's benchmark, about 5 minutes
  pushpull bench --scale 0.1 --duration 3s  # a quick look
  pushpull bench --graph zipf --models {push},{pull}
  pushpull bench --graph powerlaw --scale 0.1 --models {push},{pull}
  pushpull bench --graph edges:twitter_combined.txt --models {pull}
  pushpull bench --durability relaxed --read-ratio 0.9
  pushpull bench --json > result.json
  pushpull bench --mix default --cost       # production traffic per model, and what each operation costs
  pushpull bench --mix newest=80,older=10,post=8,follow=1,unfollow=1 --rate 2000
  pushpull bench --find-rate --slo 50ms --models {push},{pull}`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("naive-cap") && !cmd.Flags().Changed("slow-cap") {
				slowCap = naiveCap
			}
			if err := checkDatabaseDSN(dsn); err != nil {
				return err
			}
			if withVitess && dsn != "" {
				return usagef("--vitess starts its own cluster beside a sandboxed MariaDB: leave out --dsn")
			}
			if shards < 1 || shards > 256 {
				return usagef("--shards %d: want 1 to 256", shards)
			}
			if cmd.Flags().Changed("shards") && !withVitess {
				return usagef("--shards goes with --vitess")
			}
			spec, err := benchSpec(cmd.Flags(), graph, selfFollows)
			if err != nil {
				return err
			}
			spec.Seed = seed
			spec.ZipfS = zipfS
			spec.Followees = followees
			if avgFollowees > 0 && spec.Graph != loadgen.GraphEdges {
				spec.AvgFollowees = avgFollowees
			}
			if spec.Graph == loadgen.GraphPowerLaw {
				spec.InExponent, spec.OutExponent = inExponent, outExponent
			}
			spec.Activity = loadgen.Activity{Mode: activity, PostExponent: postExponent, ReadExponent: readExponent}
			skewed := activity == loadgen.ActivitySkewed ||
				activity == "" && (spec.Graph == loadgen.GraphPowerLaw || spec.Graph == loadgen.GraphEdges)
			if !skewed && (cmd.Flags().Changed("post-exponent") || cmd.Flags().Changed("read-exponent")) {
				return usagef("--post-exponent and --read-exponent go with --activity %s (the default for --graph powerlaw and edges)", loadgen.ActivitySkewed)
			}
			if err := spec.Validate(); err != nil {
				return usagef("%v", err)
			}
			spec, err = spec.Scaled(scale)
			if err != nil {
				return usagef("--scale: %v", err)
			}
			for _, m := range models {
				if _, err := registry.Lookup(m); err != nil {
					return usagef("--models: %v", err)
				}
			}
			if duration <= 0 || warmup < 0 || slowCap <= 0 {
				return usagef("--duration and --slow-cap must be positive and --warmup not negative")
			}
			if ops < 0 {
				return usagef("--ops %d: want a positive count, or 0 to run each phase for --duration", ops)
			}
			if concurrency < 1 || concurrency > 1024 {
				return usagef("--concurrency %d: want 1..1024", concurrency)
			}
			if readRatio < 0 || readRatio >= 1 {
				return usagef("--read-ratio %g: want 0 (no mixed phase) or a share of reads below 1, e.g. 0.9", readRatio)
			}
			if durability != results.Durable && durability != results.Relaxed {
				return usagef("--durability %q: want %s or %s", durability, results.Durable, results.Relaxed)
			}
			settings, err := parseSettings(set)
			if err != nil {
				return err
			}
			if dsn != "" && len(settings) > 0 {
				return usagef("--set configures the sandbox; it cannot be used with --dsn")
			}
			if extraDuration < 0 || cacheTTL <= 0 || cacheTTL > 30*24*time.Hour {
				return usagef("--extra-duration must not be negative, and --cache-ttl must be between 1ms and 720h")
			}
			var mix *loadgen.Mix
			if mixSpec != "" {
				m, err := loadgen.ParseMix(mixSpec)
				if err != nil {
					return &usageError{fmt.Errorf("--mix: %w", err)}
				}
				mix = &m
			}
			if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
				return &usageError{fmt.Errorf("--rate: %w", &loadgen.ConfigError{Field: "rate", Value: fmt.Sprint(rate), Reason: "want operations per second above 0, or 0 for a closed loop"})}
			}
			arr, err := openloop.ParseArrivals(arrivals)
			if err != nil {
				return &usageError{fmt.Errorf("--arrivals: %w", err)}
			}
			if maxInFlight < 1 || maxInFlight > openloop.MaxWorkers {
				return usagef("--max-in-flight %d: want 1..%d", maxInFlight, openloop.MaxWorkers)
			}
			if slo <= 0 || step <= 0 || searchSteps < 1 || searchSteps > 100 {
				return usagef("--slo and --step must be positive, and --search-steps 1..100")
			}
			servers, err := parseServers(memcacheList)
			if err != nil {
				return usagef("--memcache: %v", err)
			}
			if dsn == "" && len(servers) > 0 {
				return usagef("--memcache goes with --dsn; without it the sandbox starts its own memcached")
			}
			var modelList []string
			if len(models) > 0 {
				modelList = models
			}
			if dsn != "" && len(servers) == 0 {
				need := modelList
				if need == nil {
					need = loadgen.DefaultBenchModels()
				}
				for _, name := range need {
					if m, err := registry.Lookup(name); err == nil && m.Needs&registry.Memcached != 0 {
						return usagef("--model %s keeps data in memcached: with --dsn, pass --memcache host:port (or choose --models without it)", name)
					}
				}
			}
			stderr := cmd.ErrOrStderr()
			// Ctrl-C or a TERM ends the run through its context, so that
			// the sandbox it started is stopped and removed.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			r, err := loadgen.RunBench(ctx, loadgen.BenchConfig{
				DSN: dsn, Force: force, Models: modelList, Spec: spec, Scale: scale,
				Duration: duration, ExtraDuration: extraDuration, Ops: ops, Warmup: warmup, SlowCap: slowCap, Concurrency: concurrency,
				Memcache: servers, CacheTTL: cacheTTL,
				ReadRatio: readRatio, Durability: durability, Settings: settings,
				Mix: mix, Rate: rate, Arrivals: arr, MaxInFlight: maxInFlight,
				FindRate: findRate, SLO: slo, StepDuration: step, SearchSteps: searchSteps,
				Vitess: withVitess, Shards: shards,
				Command: commandLine(cmd), Progress: stderr,
			})
			if err != nil {
				return withHint(err)
			}
			dir := results.RunDir(out, r.StartedAt)
			if err := results.Save(dir, r); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(cmd.OutOrStdout())
				if err := results.WriteTable(cmd.OutOrStdout(), r); err != nil {
					return err
				}
				if showCost || mix != nil {
					fmt.Fprintln(cmd.OutOrStdout())
					if err := results.WriteCostTable(cmd.OutOrStdout(), r); err != nil {
						return err
					}
				}
			}
			files := []string{results.JSONFile, results.CSVFile, results.PNGFile}
			if r.HasRateSearch() {
				files = append(files, results.RatePNGFile)
			}
			if r.Dataset.HasDegrees() {
				files = append(files, results.DegreesPNGFile)
			}
			fmt.Fprintf(stderr, "saved %s/{%s}\n", dir, strings.Join(files, ","))
			if r.Failed() {
				return fmt.Errorf("the run failed:\n  %s", strings.Join(r.Failures, "\n  "))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "dsn", "", "existing server to use instead of a sandbox (the models' databases, "+strings.Join(benchDatabases(), " and ")+", are dropped and re-created)")
	f.BoolVar(&force, "force", false, "with --dsn, drop those databases even if pushpull did not create them")
	f.StringVar(&memcacheList, "memcache", "", "with --dsn, memcached servers (host:port, comma-separated) for "+strings.Join(needingMemcached(), ", "))
	f.StringSliceVar(&models, "models", nil, "models to measure, comma-separated (default "+strings.Join(loadgen.DefaultBenchModels(), ",")+")")
	f.DurationVar(&duration, "duration", 10*time.Second, "measured time per phase of the paper's models")
	f.DurationVar(&extraDuration, "extra-duration", 3*time.Second, "measured time per phase of the other models (never longer than --duration)")
	f.DurationVar(&cacheTTL, "cache-ttl", time.Second, "page lifetime in the cached models' ttl-policy phase")
	f.Int64Var(&ops, "ops", 0, "if > 0, measure this many operations per phase instead of --duration")
	f.DurationVar(&warmup, "warmup", 500*time.Millisecond, "unmeasured time before each phase")
	f.DurationVar(&slowCap, "slow-cap", 3*time.Second, "cap on the phases of the models that are slow by design ("+strings.Join(registry.Names(slowModels()), ", ")+")")
	f.DurationVar(&naiveCap, "naive-cap", 3*time.Second, "old name of --slow-cap")
	f.MarkDeprecated("naive-cap", "use --slow-cap")
	f.IntVar(&concurrency, "concurrency", 8, "concurrent workers (connections) per phase")
	f.Float64Var(&scale, "scale", 1, "dataset size relative to the paper's (users and messages; followees per user stay)")
	f.Int64Var(&seed, "seed", 1, "seed of the dataset and of the workload's choices")
	f.StringVar(&graph, "graph", loadgen.GraphUniform, "follow graph: uniform (the paper's), zipf (a few authors with very many followers), "+
		"powerlaw (follower and followee counts both heavy-tailed, as on Twitter), or edges:FILE (a real graph, one \"a b\" per line: a follows b)")
	f.Float64Var(&zipfS, "zipf-s", loadgen.DefaultZipfS, "Zipf exponent for --graph zipf (> 1; larger is more skewed)")
	f.Float64Var(&inExponent, "in-exponent", loadgen.DefaultInExponent, "--graph powerlaw: exponent of the follower-count distribution, P(d) ~ d^-exponent (Twitter 2009: 2.276)")
	f.Float64Var(&outExponent, "out-exponent", loadgen.DefaultOutExponent, "--graph powerlaw: exponent of the followee-count distribution")
	f.StringVar(&selfFollows, "self-follows", "reject", "--graph edges: a line \"a a\" is an error (reject) or left out (skip)")
	f.StringVar(&activity, "activity", "", "how often users post and read: uniform (the paper's), or skewed (rates grow with follower count); default skewed for --graph powerlaw and edges, uniform otherwise")
	f.Float64Var(&postExponent, "post-exponent", loadgen.DefaultPostExponent, "--activity skewed: a user posts at a rate proportional to (1+followers)^this (0 to 4)")
	f.Float64Var(&readExponent, "read-exponent", loadgen.DefaultReadExponent, "--activity skewed: a user reads their timeline at a rate proportional to (1+followers)^this (0 to 4)")
	f.Float64Var(&avgFollowees, "avg-followees", 42.9, "average followees per user")
	f.IntVar(&followees, "followees", 0, "if > 0, every user follows exactly this many authors (overrides --avg-followees)")
	f.StringVar(&durability, "durability", results.Durable, "durable (innodb_flush_log_at_trx_commit=1, as MySQL ships) or relaxed (=2)")
	f.Float64Var(&readRatio, "read-ratio", 0, "if > 0, add a mixed phase with this share of newest-page reads (e.g. 0.9)")
	f.StringArrayVar(&set, "set", nil, "mariadbd option for the sandbox, key=value (repeatable), e.g. --set innodb_buffer_pool_size=8G")
	f.BoolVar(&withVitess, "vitess", false, "also start a Vitess cluster and measure the models on Vitess (default --models then: each model on Vitess after the same model on MariaDB: "+strings.Join(loadgen.VitessBenchModels(), ",")+")")
	f.IntVar(&shards, "shards", 2, "with --vitess, shards per keyspace")
	f.StringVar(&out, "out", "results/runs", "directory under which the run's result directory is made")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON on stdout instead of the table (progress stays on stderr)")
	f.BoolVar(&showCost, "cost", false, "also print the cost per operation of every phase (always saved in result.json)")
	f.StringVar(&mixSpec, "mix", "", "add a phase of production traffic per model in these proportions, e.g. "+loadgen.DefaultMixSpec+
		" (\"default\"); one more phase per model, as long as its others: about +1 min for the default models")
	f.Float64Var(&rate, "rate", 0, "drive the traffic phase in an open loop at this many operations/s (implies --mix default), latency from each intended start; the same length as --mix's phase")
	f.StringVar(&arrivals, "arrivals", string(openloop.Poisson), "open-loop arrivals: poisson (exponential gaps) or constant (evenly spaced)")
	f.IntVar(&maxInFlight, "max-in-flight", openloop.DefaultWorkers, "open loop: most operations in flight at once (workers); later ones wait and that wait counts as latency")
	f.BoolVar(&findRate, "find-rate", false, fmt.Sprintf("search each model for its highest rate at p99 ≤ --slo, in open-loop steps (implies --mix default); up to --search-steps steps of --step plus warm-up: about %v per model, %v more for the default models",
		time.Duration(openloop.DefaultSearchSteps)*(loadgen.DefaultStepDuration+500*time.Millisecond), time.Duration(len(loadgen.DefaultBenchModels())*openloop.DefaultSearchSteps)*(loadgen.DefaultStepDuration+500*time.Millisecond)))
	f.DurationVar(&slo, "slo", loadgen.DefaultSLO, "--find-rate's objective: p99 latency of the mixed traffic, from intended starts")
	f.DurationVar(&step, "step", loadgen.DefaultStepDuration, "--find-rate: measured length of each step")
	f.IntVar(&searchSteps, "search-steps", openloop.DefaultSearchSteps, "--find-rate: most steps per model (each halves the interval the best rate lies in)")
	return cmd
}

// benchSpec is the dataset --graph names, before the flags that tune it:
// the paper's, or, for edges:FILE, the file's graph with the paper's 100
// messages per user (read now, so that a bad file stops the run before it
// starts a server or touches a database).
func benchSpec(f *pflag.FlagSet, graph, selfFollows string) (loadgen.Spec, error) {
	spec := loadgen.PaperSpec()
	if f.Changed("in-exponent") || f.Changed("out-exponent") {
		if graph != loadgen.GraphPowerLaw {
			return spec, usagef("--in-exponent and --out-exponent go with --graph %s", loadgen.GraphPowerLaw)
		}
	}
	file, isEdges := strings.CutPrefix(graph, loadgen.GraphEdges+":")
	if f.Changed("self-follows") && !isEdges {
		return spec, usagef("--self-follows goes with --graph %s:FILE", loadgen.GraphEdges)
	}
	if !isEdges {
		if graph == loadgen.GraphEdges {
			return spec, usagef("--graph %s needs a file: --graph %s:FILE", graph, graph)
		}
		spec.Graph = graph
		return spec, nil
	}
	var self loadgen.SelfFollows
	switch selfFollows {
	case "reject":
		self = loadgen.SelfFollowsReject
	case "skip":
		self = loadgen.SelfFollowsSkip
	default:
		return spec, usagef("--self-follows %q: want reject or skip", selfFollows)
	}
	if file == "" {
		return spec, usagef("--graph %s: needs a file name after the colon", graph)
	}
	for _, name := range []string{"avg-followees", "followees", "zipf-s"} {
		if f.Changed(name) {
			return spec, usagef("--%s does not go with --graph %s:FILE: the file fixes who follows whom", name, loadgen.GraphEdges)
		}
	}
	el, err := loadgen.ReadEdgeList(file, self)
	if err != nil {
		return spec, &usageError{fmt.Errorf("--graph: %w", err)}
	}
	return el.Spec(), nil
}

// commandLine reconstructs the command for the record, from the flags that
// were set.
func commandLine(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name == "dsn" {
			parts = append(parts, "--dsn=…") // may hold a password
			return
		}
		parts = append(parts, "--"+f.Name+"="+f.Value.String())
	})
	return strings.Join(parts, " ")
}

func checkDatabaseDSN(dsn string) error {
	if dsn == "" {
		return nil
	}
	f := serverFlags{getenv: os.Getenv, dsn: dsn}
	_, err := f.resolveDSN()
	return err
}

// benchLong is bench's description; what it says of the models comes from
// the registry.
func benchLong() string {
	var paper, extra, variants, own []string
	for _, name := range loadgen.DefaultBenchModels() {
		m, err := registry.Lookup(name)
		if err != nil {
			continue
		}
		switch {
		case m.Variant != "":
			variants = append(variants, name)
		case m.Bench.Paper:
			paper = append(paper, name)
		default:
			extra = append(extra, name)
		}
		if m.Bench.OwnSubmission && m.Variant == "" {
			own = append(own, name)
		}
	}
	var offered []string
	for _, m := range registry.Listed() {
		if m.Variant != "" && !m.Bench.Default {
			offered = append(offered, m.Name)
		}
	}
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf(`bench reproduces the benchmark of "Implementing Timeline in Web Services"
(Kazuho Oku, 2008) and prints its table with our figures beside the paper's.

With no flags it starts a private MariaDB in a temporary directory, generates
the paper's dataset (10,000 users, 1,000,000 messages, 42.9 followees per user
on average, a uniform random follow graph), bulk-loads it into each model's
database, and measures every model in turn with a closed loop of
--concurrency workers:

  retrieval        the newest page (20 messages) of a random user's timeline
  retrieval, older a page 2 to 5 pages deep, through the cursor (keyset paging)
  submission       a message by a random author
  mixed            reads and posts, when --read-ratio is given

The paper's models: %s.
Further models measured by default: %s.
Models with a cache in front of the newest page: %s (on request: %s).
For the cached models the run also measures the hit ratio, a mixed phase of
90%% reads under the invalidate policy, the same under the ttl policy with the
staleness of every page served, and plain memcached gets of a page-sized
value for comparison. The table ends with the goals these figures are set
against (cached reads 5x push; the best pull model 10x the paper's pull).

The dataset can be other than the paper's: --graph zipf gives a few authors
very many followers; --graph powerlaw makes follower counts a power law
(exponent --in-exponent, 2.3 by default: Twitter's in 2009 was 2.276) and
followee counts heavy-tailed too (--out-exponent), still 42.9 followees per
user on average, so that at 10,000 users the top authors have thousands of
followers; --graph edges:FILE reads a real follow graph, one "a b" per line
meaning a follows b (SNAP's format: ids any non-negative integers, '#'
comments), with 100 messages per user (--scale scales the messages only).
With the last two, users also post and read at rates that grow with their
follower count, (1+followers)^--post-exponent and ^--read-exponent
(--activity skewed; --activity uniform draws users uniformly, as the paper
does), and the loaded messages' authors follow the post rates. The run
prints the follower and followee counts' max, p99 and p50 and saves their
distributions as degrees.png.

Each phase runs --warmup unmeasured, then --duration measured for the
paper's models (those slow by design, %s, are capped at --slow-cap) and
--extra-duration for the others, or --ops operations. Progress and one row
per second go to stderr. Submission is measured once per database for the
models that post alike; %s also update memcached when they post and are
measured on their own.

The run is saved under --out as <UTC timestamp>/result.json, result.csv,
result.png (bar charts of the paper's three figures) and degrees.png (the
degree distributions on log-log axes). It fails (exit 1) when
a phase's error rate exceeds 1%%, or when the harness itself, driving a no-op
store, is not at least 20x faster than push retrieval. Ctrl-C or SIGTERM ends
the run early (nothing is saved) and stops the sandbox it started.

Studies beyond the paper's table, each under its own flags (the default run
stays the paper's, about 5 minutes):

  --mix SPEC     production traffic: after each model's write phases, one
                 phase of newest pages, older pages, posts, follows and
                 unfollows in the proportions SPEC gives, with rate,
                 p50/p99/p99.9/max latency and errors per operation type.
                 "default" is %s:
                 read-heavy, as Twitter's and Instagram's feeds are. Follows and unfollows undo each other, and the
                 graph is restored after the phase. About 1 minute more.
  --rate R       that phase in an open loop: operations start on a plan of
                 R per second (Poisson arrivals, or --arrivals constant),
                 at most --max-in-flight at once, and latency runs from each
                 operation's planned start, so a slow store cannot hide its
                 queue (coordinated omission). Late and never-started
                 operations are counted; one row per second shows offered
                 and achieved rate, in flight and backlog.
  --find-rate    then, per model, the highest rate whose p99 stays within
                 --slo (50ms), searched in open-loop steps of --step from
                 the traffic phase's rate; rate.png plots p50 and p99
                 against the offered rate. About 20 s per model.
  --cost         prints the cost per operation of every phase: rows read
                 and written, bytes written, memcached gets, sets and bytes
                 (the servers' own counters) and the client's CPU, with the
                 H (one fan-out row) and L (one followee probe) they imply.
                 Always saved in result.json; printed with --mix too.

--dsn runs against an existing server instead, in the models' databases
(%s), which it drops and re-creates; it refuses databases it did not create
unless --force. With --dsn, the models that use memcached need --memcache.

Models (see pushpull --help for what each does): %s.`,
		list(paper), list(extra), list(variants), list(offered), list(registry.Names(slowModels())), list(own),
		loadgen.DefaultMixSpec, strings.Join(benchDatabases(), ", "), strings.Join(registry.Names(registry.Listed()), ", "))
}

// slowModels are the registered models whose phases --slow-cap caps.
func slowModels() []registry.Model {
	var out []registry.Model
	for _, m := range registry.Models() {
		if m.Bench.Slow {
			out = append(out, m)
		}
	}
	return out
}

// benchDatabases are the default databases of the registered models.
func benchDatabases() []string {
	var out []string
	for _, m := range registry.Models() {
		if m.Persistent() && !m.OnVitess() && !slices.Contains(out, m.Database) {
			out = append(out, m.Database)
		}
	}
	return out
}
