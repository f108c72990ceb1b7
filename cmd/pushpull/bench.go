package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

func newBenchCmd() *cobra.Command {
	var (
		bf               benchFlags
		out, cpuProfile  string
		asJSON, showCost bool
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
  pushpull bench --find-rate --slo 50ms --models {push},{pull}
  pushpull bench --http --models {push},{pull}  # the HTTP API's overhead
  pushpull bench --graph powerlaw --mix newest=70,older=15,post=10,delete=3,follow=1,unfollow=1 --rate 400 --deletes 500
  pushpull bench --graph powerlaw --burst 300:10s,3000:5s,300:10s --celebrity-posts 20 --models {push},{pull}`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bf.check(cmd); err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			// Ctrl-C or a TERM ends the run through its context, so that
			// the sandbox it started is stopped and removed.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg := bf.cfg
			cfg.Command, cfg.Progress = commandLine(cmd), stderr
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			r, err := loadgen.RunBench(ctx, cfg)
			if err := stopProfile(); err != nil {
				fmt.Fprintf(stderr, "--cpu-profile: %v\n", err)
			} else if cpuProfile != "" {
				fmt.Fprintf(stderr, "saved the CPU profile of this process in %s (go tool pprof %s)\n", cpuProfile, cpuProfile)
			}
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
				if showCost || cfg.Mix != nil {
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
			if r.HasBursts() {
				files = append(files, results.BurstPNGFile)
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
	bf.register(f)
	f.BoolVar(&bf.withVitess, "vitess", false, "also start a Vitess cluster and measure the models on Vitess, with the tablet calls, round trips, commits, savepoints and sequence calls per operation, and after the phases each operation alone (the shards it touched) (default --models then: each model on Vitess after the same model on MariaDB: "+strings.Join(loadgen.VitessBenchModels(), ",")+")")
	f.IntVar(&bf.shards, "shards", 2, "with --vitess, shards per keyspace")
	f.BoolVar(&bf.http, "http", false, "also read each model's newest pages through the HTTP API of pushpull serve (a server in this process on a loopback port), as long as the phase in process, and set the two side by side")
	f.StringVar(&out, "out", "results/runs", "directory under which the run's result directory is made")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON on stdout instead of the table (progress stays on stderr)")
	f.BoolVar(&showCost, "cost", false, "also print the cost per operation of every phase (always saved in result.json)")
	f.StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile of this process (the load generator and the stores' client side, not the servers) over the whole run to this file, for go tool pprof")
	return cmd
}

// startCPUProfile starts a CPU profile of this process into path, and
// returns what stops it and closes the file; path "" profiles nothing.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// benchSpec is the dataset --graph names, before the flags that tune it:
// the paper's, or, for edges:FILE, the file's graph with the paper's 100
// messages per user (read now, so that a bad file stops the run before it
// starts a server or touches a database).
func benchSpec(f *pflag.FlagSet, graph, selfFollows string) (dataset.Spec, error) {
	spec := dataset.PaperSpec()
	if f.Changed("in-exponent") || f.Changed("out-exponent") {
		if graph != dataset.GraphPowerLaw {
			return spec, usagef("--in-exponent and --out-exponent go with --graph %s", dataset.GraphPowerLaw)
		}
	}
	file, isEdges := strings.CutPrefix(graph, dataset.GraphEdges+":")
	if f.Changed("self-follows") && !isEdges {
		return spec, usagef("--self-follows goes with --graph %s:FILE", dataset.GraphEdges)
	}
	if !isEdges {
		if graph == dataset.GraphEdges {
			return spec, usagef("--graph %s needs a file: --graph %s:FILE", graph, graph)
		}
		spec.Graph = graph
		return spec, nil
	}
	var self dataset.SelfFollows
	switch selfFollows {
	case "reject":
		self = dataset.SelfFollowsReject
	case "skip":
		self = dataset.SelfFollowsSkip
	default:
		return spec, usagef("--self-follows %q: want reject or skip", selfFollows)
	}
	if file == "" {
		return spec, usagef("--graph %s: needs a file name after the colon", graph)
	}
	for _, name := range []string{"avg-followees", "followees", "zipf-s"} {
		if f.Changed(name) {
			return spec, usagef("--%s does not go with --graph %s:FILE: the file fixes who follows whom", name, dataset.GraphEdges)
		}
	}
	el, err := dataset.ReadEdgeList(file, self)
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
  mixed            reads and posts, when --read-ratio is given; each page
                   read is checked for posts acknowledged before it began
                   and missing from it (stale pages)

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
                 delete=W in SPEC deletes, by its author, a message the
                 traffic posted (a mix with delete needs post).
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
                 against the offered rate, over all operations and per
                 operation type. About 20 s per model.
  --http         after each model's newest-page phase, the same phase
                 through the HTTP API that pushpull serve serves (a server
                 in this process on a loopback port, one keep-alive
                 connection per worker, statuses decoded from JSON), and a
                 table of newest pages/s over HTTP against in process, with
                 the goal that HTTP keeps at least half.
  --probe-every D  with traffic (on by default, 500ms; 0 for none): at most
                 one of its posts and one of its deletes per D are watched
                 by reading --probe-followers (3) followers' newest pages
                 until the post shows or the deleted post is gone. Reported:
                 post-to-visible p50/p99/max in ms from the post's
                 acknowledgement, by the author's follower count;
                 completeness, the share of pages that showed the post
                 within --visible-timeout (5s); delete-to-gone p50/p99/max
                 in ms; and deleted posts still shown after settling.
  --deletes N    per model, N deletes in a phase of their own (deletes/s,
                 latency, rows and keys per delete), then the delete of a
                 post by the most followed author: ms until gone from every
                 timeline (the delete plus the settle after it), and every
                 follower's page read to check it is gone.
  --burst SCHEDULE  per model, after those, its traffic in an open loop
                 whose rate follows RATE:DURATION stages, e.g.
                 300:10s,3000:5s,300:10s: p99 latency before, during and
                 after the burst (from the first stage's end to the last
                 stage above its rate), and the time after it until each
                 250 ms's p99 stays within --slo for 2 s, and the fan-out
                 lag within --lag-slo (1s) for the designs that fan out
                 later; --celebrity-posts N has the most followed author
                 post N times as the first stage ends. burst.png plots
                 both through the phase.
  --cost         prints the cost per operation of every phase: rows read
                 and written, bytes written, memcached gets, sets and bytes
                 (the servers' own counters), and the CPU of the client,
                 memcached and (in the sandbox) MariaDB, with the
                 H (one fan-out row) and L (one followee probe) they imply.
                 Always saved in result.json; printed with --mix too.

Growth curves, the benchmark at several values of one parameter (users and
messages, followees per user, one author's followers, the share of reads),
have their own command: pushpull sweep --help. Which design serves a given
workload at a planned rate and latency objective at the lowest cost, and a
map of that choice over read share and skew: pushpull recommend --help.

--dsn runs against an existing server instead, in the models' databases
(%s), which it drops and re-creates; it refuses databases it did not create
unless --force. With --dsn, the models that use memcached need --memcache.

Models (see pushpull --help for what each does): %s.`,
		list(paper), list(extra), list(variants), list(offered), list(registry.Names(slowModels())), list(own),
		workload.DefaultMixSpec, strings.Join(benchDatabases(), ", "), strings.Join(registry.Names(registry.Listed()), ", "))
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
