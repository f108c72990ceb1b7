package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pushpull/pushpull/internal/tablecache"
	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// benchFlags are the flags that describe a benchmark run: the dataset, the
// server, the models, the phases and the traffic. bench and sweep share
// them; check turns them into a loadgen.BenchConfig.
type benchFlags struct {
	dsn, graph, durability     string
	memcacheList               string
	redis                      string
	activity, selfFollows      string
	inExponent, outExponent    float64
	postExponent, readExponent float64
	extraDuration, cacheTTL    time.Duration
	models                     []string
	set, options               []string
	duration, warmup, slowCap  time.Duration
	naiveCap                   time.Duration
	concurrency, followees     int
	ops                        int64
	scale, zipfS, readRatio    float64
	avgFollowees               float64
	seed                       int64
	force                      bool
	mixSpec, arrivals          string
	rate                       float64
	maxInFlight, searchSteps   int
	confirm                    int
	maxSteal                   float64
	findRate                   bool
	slo, step                  time.Duration
	withVitess                 bool
	http                       bool
	shards                     int
	loadCache                  string
	noLoadCache                bool
	loadCacheGiB               float64
	probeEvery, visibleTimeout time.Duration
	probePoll                  time.Duration
	probeFollowers, deletes    int
	burst                      string
	celebrityPosts             int
	lagSLO                     time.Duration
	readers                    readerFlags

	// Set by check.
	cfg  loadgen.BenchConfig
	base dataset.Spec // cfg.Spec before --scale
}

// register defines the flags on f.
func (b *benchFlags) register(f *pflag.FlagSet) {
	b.readers.register(f)
	f.StringVar(&b.dsn, "dsn", "", "existing server to use instead of a sandbox (the models' databases, "+strings.Join(benchDatabases(), " and ")+", are dropped and re-created)")
	f.BoolVar(&b.force, "force", false, "with --dsn, drop those databases even if pushpull did not create them")
	f.StringVar(&b.memcacheList, "memcache", "", "with --dsn, memcached servers (host:port, comma-separated) for "+strings.Join(needingMemcached(), ", "))
	f.StringVar(&b.redis, "redis", "", "with --dsn, a redis-server (host:port) for "+strings.Join(needing(registry.Redis), ", "))
	f.StringSliceVar(&b.models, "models", nil, "models to measure, comma-separated (default "+strings.Join(loadgen.DefaultBenchModels(), ",")+")")
	f.DurationVar(&b.duration, "duration", 10*time.Second, "measured time per phase of the paper's models")
	f.DurationVar(&b.extraDuration, "extra-duration", 2*time.Second, "measured time per phase of the other models (never longer than --duration)")
	f.DurationVar(&b.cacheTTL, "cache-ttl", time.Second, "page lifetime in the cached models' ttl-policy phase")
	f.Int64Var(&b.ops, "ops", 0, "if > 0, measure this many operations per phase instead of --duration")
	f.DurationVar(&b.warmup, "warmup", 500*time.Millisecond, "unmeasured time before each phase")
	f.DurationVar(&b.slowCap, "slow-cap", 3*time.Second, "cap on the phases of the models that are slow by design ("+strings.Join(registry.Names(slowModels()), ", ")+")")
	f.DurationVar(&b.naiveCap, "naive-cap", 3*time.Second, "old name of --slow-cap")
	f.MarkDeprecated("naive-cap", "use --slow-cap")
	f.IntVar(&b.concurrency, "concurrency", 8, "concurrent workers (connections) per phase")
	f.Float64Var(&b.scale, "scale", 1, "dataset size relative to the paper's (users and messages; followees per user stay)")
	f.Int64Var(&b.seed, "seed", 1, "seed of the dataset and of the workload's choices")
	f.StringVar(&b.graph, "graph", dataset.GraphUniform, "follow graph: uniform (the paper's), zipf (a few authors with very many followers), "+
		"powerlaw (follower and followee counts both heavy-tailed, as on Twitter), or edges:FILE (a real graph, one \"a b\" per line: a follows b)")
	f.Float64Var(&b.zipfS, "zipf-s", dataset.DefaultZipfS, "Zipf exponent for --graph zipf (> 1; larger is more skewed)")
	f.Float64Var(&b.inExponent, "in-exponent", dataset.DefaultInExponent, "--graph powerlaw: exponent of the follower-count distribution, P(d) ~ d^-exponent (Twitter 2009: 2.276)")
	f.Float64Var(&b.outExponent, "out-exponent", dataset.DefaultOutExponent, "--graph powerlaw: exponent of the followee-count distribution")
	f.StringVar(&b.selfFollows, "self-follows", "reject", "--graph edges: a line \"a a\" is an error (reject) or left out (skip)")
	f.StringVar(&b.activity, "activity", "", "how often users post and read: uniform (the paper's), skewed (rates grow with follower count), or celebrity (every post by the most followed user); default skewed for --graph powerlaw and edges, uniform otherwise")
	f.Float64Var(&b.postExponent, "post-exponent", dataset.DefaultPostExponent, "--activity skewed: a user posts at a rate proportional to (1+followers)^this (0 to 4)")
	f.Float64Var(&b.readExponent, "read-exponent", dataset.DefaultReadExponent, "--activity skewed: a user reads their timeline at a rate proportional to (1+followers)^this (0 to 4)")
	f.Float64Var(&b.avgFollowees, "avg-followees", 42.9, "average followees per user")
	f.IntVar(&b.followees, "followees", 0, "if > 0, every user follows exactly this many authors (overrides --avg-followees)")
	f.StringVar(&b.durability, "durability", results.Durable, "durable (innodb_flush_log_at_trx_commit=1, as MySQL ships) or relaxed (=2)")
	f.Float64Var(&b.readRatio, "read-ratio", 0, "if > 0, add a mixed phase with this share of newest-page reads (e.g. 0.9)")
	f.StringArrayVar(&b.options, "option", nil, optionUsage+"; given to every measured model that declares it (the others run with their defaults), and refused if none does")
	cacheDir, _ := tablecache.Dir() // "" (no cache) without a cache directory
	f.StringVar(&b.loadCache, "load-cache", cacheDir, "directory where a sandbox's load keeps the files of its large tables (the mailbox, the messages), so that the next run with the same dataset restores them in seconds instead of loading them (about 1.5 minutes at paper scale); default $PUSHPULL_CACHE_DIR, else /var/cache/pushpull/tables for root and the user's cache directory for others")
	f.BoolVar(&b.noLoadCache, "no-load-cache", false, "load every table, neither restoring from nor adding to --load-cache")
	f.Float64Var(&b.loadCacheGiB, "load-cache-size", float64(tablecache.DefaultMaxBytes>>30), "most GiB --load-cache holds; the least recently used entries go first (the paper-scale mailbox takes about 2)")
	f.StringArrayVar(&b.set, "set", nil, "mariadbd option for the sandbox, key=value (repeatable), e.g. --set innodb_buffer_pool_size=8G")
	f.StringVar(&b.mixSpec, "mix", "", "add a phase of production traffic per model in these proportions, e.g. "+workload.DefaultMixSpec+
		" (\"default\"); one more phase per model, as long as its others: about +1 min for the default models")
	f.Float64Var(&b.rate, "rate", 0, "drive the traffic phase in an open loop at this many operations/s (implies --mix default), latency from each intended start; the same length as --mix's phase")
	f.StringVar(&b.arrivals, "arrivals", string(openloop.Poisson), "open-loop arrivals: poisson (exponential gaps) or constant (evenly spaced)")
	f.IntVar(&b.maxInFlight, "max-in-flight", openloop.DefaultWorkers, "open loop: most operations in flight at once (workers); later ones wait and that wait counts as latency")
	// The steps of a default search: its bisection and its re-runs.
	const searchSteps = openloop.DefaultSearchSteps + openloop.DefaultConfirm
	f.BoolVar(&b.findRate, "find-rate", false, fmt.Sprintf("search each model for its highest rate at p99 ≤ --slo, in open-loop steps (implies --mix default); up to --search-steps steps of --step and --confirm re-runs, plus warm-up: about %v per model, %v more for the default models",
		time.Duration(searchSteps)*(loadgen.DefaultStepDuration+500*time.Millisecond), time.Duration(len(loadgen.DefaultBenchModels())*searchSteps)*(loadgen.DefaultStepDuration+500*time.Millisecond)))
	f.DurationVar(&b.slo, "slo", loadgen.DefaultSLO, "--find-rate's objective: p99 latency of the mixed traffic, from intended starts")
	f.DurationVar(&b.step, "step", loadgen.DefaultStepDuration, "--find-rate: measured length of each step")
	f.IntVar(&b.searchSteps, "search-steps", openloop.DefaultSearchSteps, "--find-rate: most steps per model (each halves the interval the best rate lies in)")
	f.IntVar(&b.confirm, "confirm", openloop.DefaultConfirm, fmt.Sprintf("--find-rate: where a search would end, re-run the lowest rate that failed, up to this many times per model (0 to %d; 0: never), each one more step: a re-run that holds shows the failure was a stall of the machine, not of the rate, and the search goes on above it", loadgen.MaxConfirm))
	f.Float64Var(&b.maxSteal, "max-steal", 100*openloop.DefaultMaxSteal, fmt.Sprintf("--find-rate: a step that fails while the hypervisor gave more than this percentage of the CPUs' time to other machines (steal, which no process is charged for), and not for want of capacity (it kept up with its plan within what was stolen), runs again at once, at most %d times per model; above 0, at most 100 (100: never). Each step's steal is saved in result.json", openloop.MaxStealReruns))
	f.DurationVar(&b.probeEvery, "probe-every", workload.DefaultProbeEvery, "with traffic (--mix, --rate, --find-rate): watch at most one post and one delete of the traffic per this interval, reading followers' newest pages until the post shows (post-to-visible time, ms, by the author's follower count; completeness, the share of pages that showed it) or the deleted post is gone (delete-to-gone time, ms); 0 watches nothing")
	f.IntVar(&b.probeFollowers, "probe-followers", workload.DefaultProbeFollowers, "--probe-every: followers' pages read per watched post or delete (1 to 100)")
	f.DurationVar(&b.visibleTimeout, "visible-timeout", workload.DefaultVisibleTimeout, "--probe-every: how long a page may take to show a post (else it is missing, lowering completeness) or to drop a deleted one (else it is still shown)")
	f.DurationVar(&b.probePoll, "probe-poll", workload.DefaultProbePoll, "--probe-every: pause between two reads of a watched page, the resolution of the times measured")
	f.StringVar(&b.burst, "burst", "", "add per model a burst phase: its mixed traffic (implies --mix default) in an open loop on this schedule of RATE:DURATION stages, e.g. 300:10s,3000:5s,300:10s; the burst runs from the end of the first stage to the end of the last stage above the first's rate, and the phase reports the p99 latency before, during and after it and the time after it until the p99 of each 250 ms stays within --slo for 2 s (and the fan-out lag within --lag-slo, for the designs that fan out later)")
	f.IntVar(&b.celebrityPosts, "celebrity-posts", 0, "--burst: the most followed author posts this many times as the schedule's first stage ends, --concurrency at once (a schedule whose rate never rises may then burst by these posts alone); 0 for none")
	f.DurationVar(&b.lagSLO, "lag-slo", loadgen.DefaultLagSLO, "--burst: the objective of the fan-out lag (p99 of the posts applied in each 250 ms) that a design that fans out later must come back within")
	f.IntVar(&b.deletes, "deletes", 0, "add per model a delete study: this many messages posted and then deleted in a phase of their own (deletes/s, latency in ms, rows and keys per delete), the share of them still shown after settling, and the delete of one post by the most followed author (ms until gone from every follower's timeline, pages still showing it); 0 for none, at most 1,000,000")
}

// setDefault changes a registered flag's default, as --help shows it.
func setDefault(f *pflag.FlagSet, name, value string) {
	fl := f.Lookup(name)
	if err := fl.Value.Set(value); err != nil {
		panic(fmt.Sprintf("flag --%s: default %q: %v", name, value, err))
	}
	fl.DefValue = value
}

// check validates the flags of cmd and sets b.cfg (without Command and
// Progress) and b.base. A bad flag is a usage error.
func (b *benchFlags) check(cmd *cobra.Command) error {
	if cmd.Flags().Changed("naive-cap") && !cmd.Flags().Changed("slow-cap") {
		b.slowCap = b.naiveCap
	}
	if err := checkDatabaseDSN(b.dsn); err != nil {
		return err
	}
	if b.withVitess && b.dsn != "" {
		return usagef("--vitess starts its own cluster beside a sandboxed MariaDB: leave out --dsn")
	}
	if b.withVitess && (b.shards < 1 || b.shards > 256) {
		return usagef("--shards %d: want 1 to 256", b.shards)
	}
	if f := cmd.Flags().Lookup("shards"); f != nil && f.Changed && !b.withVitess {
		return usagef("--shards goes with --vitess")
	}
	spec, err := benchSpec(cmd.Flags(), b.graph, b.selfFollows)
	if err != nil {
		return err
	}
	spec.Seed = b.seed
	spec.ZipfS = b.zipfS
	spec.Followees = b.followees
	if b.avgFollowees > 0 && spec.Graph != dataset.GraphEdges {
		spec.AvgFollowees = b.avgFollowees
	}
	if spec.Graph == dataset.GraphPowerLaw {
		spec.InExponent, spec.OutExponent = b.inExponent, b.outExponent
	}
	spec.Activity = dataset.Activity{Mode: b.activity, PostExponent: b.postExponent, ReadExponent: b.readExponent}
	skewed := b.activity == dataset.ActivitySkewed ||
		b.activity == "" && (spec.Graph == dataset.GraphPowerLaw || spec.Graph == dataset.GraphEdges)
	if !skewed && (cmd.Flags().Changed("post-exponent") || cmd.Flags().Changed("read-exponent")) {
		return usagef("--post-exponent and --read-exponent go with --activity %s (the default for --graph powerlaw and edges)", dataset.ActivitySkewed)
	}
	if err := b.readers.apply(&spec); err != nil {
		return err
	}
	if err := spec.Validate(); err != nil {
		return usagef("%v", err)
	}
	b.base = spec
	spec, err = spec.Scaled(b.scale)
	if err != nil {
		return usagef("--scale: %v", err)
	}
	for _, m := range b.models {
		if _, err := registry.Lookup(m); err != nil {
			return usagef("--models: %v", err)
		}
	}
	if b.duration <= 0 || b.warmup < 0 || b.slowCap <= 0 {
		return usagef("--duration and --slow-cap must be positive and --warmup not negative")
	}
	if b.ops < 0 {
		return usagef("--ops %d: want a positive count, or 0 to run each phase for --duration", b.ops)
	}
	if b.concurrency < 1 || b.concurrency > 1024 {
		return usagef("--concurrency %d: want 1..1024", b.concurrency)
	}
	if b.readRatio < 0 || b.readRatio >= 1 {
		return usagef("--read-ratio %g: want 0 (no mixed phase) or a share of reads below 1, e.g. 0.9", b.readRatio)
	}
	if b.durability != results.Durable && b.durability != results.Relaxed {
		return usagef("--durability %q: want %s or %s", b.durability, results.Durable, results.Relaxed)
	}
	settings, err := parseSettings(b.set)
	if err != nil {
		return err
	}
	if b.dsn != "" && len(settings) > 0 {
		return usagef("--set configures the sandbox; it cannot be used with --dsn")
	}
	options, err := parseOptions(b.options)
	if err != nil {
		return err
	}
	if b.extraDuration < 0 || b.cacheTTL <= 0 || b.cacheTTL > 30*24*time.Hour {
		return usagef("--extra-duration must not be negative, and --cache-ttl must be between 1ms and 720h")
	}
	var mix *workload.Mix
	if b.mixSpec != "" {
		m, err := workload.ParseMix(b.mixSpec)
		if err != nil {
			return &usageError{fmt.Errorf("--mix: %w", err)}
		}
		mix = &m
	}
	if b.rate < 0 || math.IsNaN(b.rate) || math.IsInf(b.rate, 0) {
		return &usageError{fmt.Errorf("--rate: %w", &loadgen.ConfigError{Field: "rate", Value: fmt.Sprint(b.rate), Reason: "want operations per second above 0, or 0 for a closed loop"})}
	}
	arr, err := openloop.ParseArrivals(b.arrivals)
	if err != nil {
		return &usageError{fmt.Errorf("--arrivals: %w", err)}
	}
	if b.maxInFlight < 1 || b.maxInFlight > openloop.MaxWorkers {
		return usagef("--max-in-flight %d: want 1..%d", b.maxInFlight, openloop.MaxWorkers)
	}
	if b.loadCacheGiB <= 0 {
		return usagef("--load-cache-size %g: want GiB above 0", b.loadCacheGiB)
	}
	if b.slo <= 0 || b.step <= 0 || b.searchSteps < 1 || b.searchSteps > 100 {
		return usagef("--slo and --step must be positive, and --search-steps 1..100")
	}
	if b.confirm < 0 || b.confirm > loadgen.MaxConfirm {
		return usagef("--confirm %d: want 0..%d re-runs", b.confirm, loadgen.MaxConfirm)
	}
	if !(b.maxSteal > 0 && b.maxSteal <= 100) {
		return usagef("--max-steal %g: want a percentage of the CPUs' time, above 0 and at most 100", b.maxSteal)
	}
	burst, err := b.checkBurst(cmd)
	if err != nil {
		return err
	}
	traffic := b.mixSpec != "" || b.rate > 0 || b.findRate || burst != nil
	for _, name := range []string{"probe-every", "probe-followers", "visible-timeout", "probe-poll"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed && !traffic {
			return usagef("--%s watches the traffic's writes: it goes with --mix, --rate or --find-rate", name)
		}
	}
	if b.probeEvery < 0 || b.probeEvery > 0 && b.probeEvery < time.Millisecond {
		return usagef("--probe-every %v: want 1ms or more, or 0 to watch nothing", b.probeEvery)
	}
	if b.probeFollowers < 1 || b.probeFollowers > 100 {
		return usagef("--probe-followers %d: want 1 to 100", b.probeFollowers)
	}
	if b.visibleTimeout < time.Millisecond || b.visibleTimeout > 10*time.Minute {
		return usagef("--visible-timeout %v: want 1ms to 10m", b.visibleTimeout)
	}
	if b.probePoll < 100*time.Microsecond || b.probePoll > b.visibleTimeout {
		return usagef("--probe-poll %v: want 100µs to --visible-timeout (%v)", b.probePoll, b.visibleTimeout)
	}
	if b.deletes < 0 || b.deletes > 1_000_000 {
		return usagef("--deletes %d: want 0 (no delete study) to 1000000", b.deletes)
	}
	var probe *workload.ProbeConfig
	if traffic && b.probeEvery > 0 {
		probe = &workload.ProbeConfig{Every: b.probeEvery, Followers: b.probeFollowers, Timeout: b.visibleTimeout, Poll: b.probePoll, Seed: b.seed}
	}
	servers, err := parseServers(b.memcacheList)
	if err != nil {
		return usagef("--memcache: %v", err)
	}
	if b.dsn == "" && len(servers) > 0 {
		return usagef("--memcache goes with --dsn; without it the sandbox starts its own memcached")
	}
	if b.dsn == "" && b.redis != "" {
		return usagef("--redis goes with --dsn; without it the sandbox starts its own redis-server")
	}
	var modelList []string
	if len(b.models) > 0 {
		modelList = b.models
	}
	measured := modelList
	if measured == nil {
		measured = loadgen.DefaultBenchModels()
		if b.withVitess {
			measured = loadgen.VitessBenchModels()
		}
	}
	var ms []registry.Model
	for _, name := range measured {
		m, err := registry.Lookup(name)
		if err != nil {
			return usagef("--models: %v", err)
		}
		ms = append(ms, m)
	}
	if err := registry.CheckShared(ms, options); err != nil {
		return &usageError{fmt.Errorf("--option: %w", err)}
	}
	if b.dsn != "" && len(servers) == 0 {
		for _, m := range ms {
			if m.Needs&registry.Memcached != 0 {
				return usagef("--model %s keeps data in memcached: with --dsn, pass --memcache host:port (or choose --models without it)", m.Name)
			}
		}
	}
	if b.dsn != "" && b.redis == "" {
		for _, m := range ms {
			if m.Needs&registry.Redis != 0 {
				return usagef("--model %s keeps data in Redis: with --dsn, pass --redis host:port (or choose --models without it)", m.Name)
			}
		}
	}
	b.cfg = loadgen.BenchConfig{
		DSN: b.dsn, Force: b.force, Models: modelList, Spec: spec, Scale: b.scale,
		Duration: b.duration, ExtraDuration: b.extraDuration, Ops: b.ops, Warmup: b.warmup, SlowCap: b.slowCap, Concurrency: b.concurrency,
		Memcache: servers, Redis: b.redis, CacheTTL: b.cacheTTL,
		ReadRatio: b.readRatio, Durability: b.durability, Settings: settings, Options: options,
		Mix: mix, Rate: b.rate, Arrivals: arr, MaxInFlight: b.maxInFlight,
		FindRate: b.findRate, SLO: b.slo, StepDuration: b.step, SearchSteps: b.searchSteps,
		Confirm: confirmOf(b.confirm), MaxSteal: b.maxSteal / 100,
		Vitess: b.withVitess, Shards: b.shards, HTTP: b.http, Probe: probe, Deletes: b.deletes, Burst: burst,
	}
	if !b.noLoadCache {
		b.cfg.LoadCache, b.cfg.LoadCacheBytes = b.loadCache, int64(b.loadCacheGiB*(1<<30))
	}
	return b.readers.configure(cmd.Flags(), &b.cfg)
}

// checkBurst reads --burst and the flags that go with it: nil without
// --burst, and a usage error for a bad schedule or a flag without it.
func (b *benchFlags) checkBurst(cmd *cobra.Command) (*loadgen.BurstConfig, error) {
	if b.burst == "" {
		for _, name := range []string{"burst", "celebrity-posts", "lag-slo"} {
			if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
				if name == "burst" {
					return nil, usagef("--burst: want a schedule of RATE:DURATION stages, e.g. 300:10s,3000:5s,300:10s")
				}
				return nil, usagef("--%s goes with --burst", name)
			}
		}
		return nil, nil
	}
	schedule, err := openloop.ParseSchedule(b.burst)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--burst: %w", err)}
	}
	if b.celebrityPosts < 0 || b.celebrityPosts > loadgen.MaxCelebrityPosts {
		return nil, usagef("--celebrity-posts %d: want 0 to %d", b.celebrityPosts, loadgen.MaxCelebrityPosts)
	}
	if b.lagSLO <= 0 {
		return nil, usagef("--lag-slo %v: want a lag above 0", b.lagSLO)
	}
	c := &loadgen.BurstConfig{Schedule: schedule, CelebrityPosts: b.celebrityPosts, LagSLO: b.lagSLO}
	if err := c.Check(); err != nil {
		return nil, &usageError{fmt.Errorf("--burst: %w", err)}
	}
	return c, nil
}

// confirmOf is --confirm as BenchConfig.Confirm, where 0 means the
// default and -1 none.
func confirmOf(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
