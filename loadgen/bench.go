// Package loadgen runs the push-vs-pull home-timeline benchmark
// (RunBench, as BenchConfig describes it) and records it as a
// results.Result. Its parts are packages of their own: loadgen/dataset
// generates the dataset, loadgen/load bulk-loads it into the models'
// databases, loadgen/workload holds the operations, the mixed traffic and
// the closed-loop driver that measures them, and loadgen/openloop drives
// operations at a planned rate. This package orchestrates them: it starts
// the sandbox (or uses the servers it is given), loads, opens every model,
// runs its phases in order (reads, then the phases that read while they
// write, then submissions), measures their costs, the fan-out lag of the
// stores that post later and the staleness of cached pages, the recovery
// from a burst of traffic (BurstConfig), compares
// cached reads with raw memcached gets (MemcacheGet), and turns what the
// phases measured into results documents. Packages loadgen/sweep and
// loadgen/recommend run it over many points.
package loadgen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/sandbox"
	"github.com/pushpull/pushpull/internal/vitess"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// BenchConfig describes one run of the paper's benchmark.
type BenchConfig struct {
	// DSN of an existing server; "" starts a sandbox.
	DSN string
	// Force lets the run drop and reuse databases it did not create.
	Force bool
	// Models to measure, by registry name; nil means DefaultBenchModels.
	Models []string
	Spec   dataset.Spec
	Scale  float64 // already applied to Spec; recorded in the result

	Duration time.Duration // measured time per phase of the paper's models
	// ExtraDuration is the measured time per phase of the models beyond
	// the paper's four (registry.Bench.Paper), so that the default run
	// fits in five minutes; 0 means 2s. Never longer than Duration.
	ExtraDuration time.Duration
	Ops           int64         // if > 0, measure this many operations per phase instead
	Warmup        time.Duration // unmeasured time before each phase
	SlowCap       time.Duration // slow models' phases (registry.Bench.Slow) are capped at this; 0 means 3s
	Concurrency   int           // workers per phase
	ReadRatio     float64       // > 0 adds a mixed phase with this share of reads
	Durability    string        // results.Durable or results.Relaxed
	// LoadCache is the directory of the load cache (load.Options.Cache,
	// package tablecache), "" for none. Only a sandbox's load uses it.
	LoadCache string
	// LoadCacheBytes bounds the cache's size; 0 means
	// tablecache.DefaultMaxBytes.
	LoadCacheBytes int64
	// Settings override the sandbox's mariadbd options.
	Settings map[string]string
	// Options are model options (registry.Config.Options), such as a
	// mailbox cap or a follower threshold, given to every measured model
	// that declares them (registry.Model.OwnOptions); the others run with
	// their defaults. An option that none of the measured models declares,
	// or a value one that declares it does not take, is an
	// *registry.OptionError before anything runs (registry.CheckShared).
	// The result's notes record which models took which.
	Options map[string]string
	// Memcache lists memcached servers for the models that need them when
	// DSN is set; a sandbox starts its own memcached.
	Memcache []string
	// Redis is a redis-server (host:port) for the models that need one,
	// with DSN; without DSN the sandbox starts its own.
	Redis string
	// CacheTTL is the page lifetime of the cached models' ttl-policy
	// phase; 0 means memcache.DefaultTTL.
	CacheTTL time.Duration
	// CacheReadRatio is the share of reads in the cached models' mixed
	// phases; 0 means 0.9.
	CacheReadRatio float64

	// Mix, if set, adds for every model, after the read phases and before
	// any submission (see bench.writes), a phase of mixed traffic in these
	// proportions (see workload.Traffic), measured per operation type and as long
	// as the model's other phases. Rate or
	// FindRate without a Mix use workload.DefaultMix.
	Mix *workload.Mix
	// Rate, if > 0, drives the traffic in an open loop at this many
	// operations per second (package openloop) instead of a closed loop
	// of Concurrency workers.
	Rate float64
	// Arrivals spaces the open loop's operations; "" means Poisson.
	Arrivals openloop.Arrivals
	// MaxInFlight bounds the open loop's operations in flight; 0 means
	// openloop.DefaultWorkers. The stores' connection pools are sized to
	// match.
	MaxInFlight int
	// FindRate adds, after each model's traffic phase, a search for the
	// highest rate whose p99 latency holds SLO (openloop.FindRate),
	// starting from the traffic phase's achieved rate.
	FindRate bool
	// SLO is the search's objective; 0 means DefaultSLO.
	SLO time.Duration
	// StepDuration is the measured length of each search step; 0 means
	// DefaultStepDuration.
	StepDuration time.Duration
	// SearchSteps bounds the steps per model; 0 means
	// openloop.DefaultSearchSteps.
	SearchSteps int
	// Confirm is how many times a search may re-run the lowest rate that
	// failed before it ends there (openloop.SearchConfig.Confirm): 0
	// means openloop.DefaultConfirm, -1 none.
	Confirm int
	// MaxSteal is the share of the machine's CPU time a hypervisor may
	// take during a search's step for its failure to count
	// (openloop.SearchConfig.MaxSteal): a step that fails while more
	// was stolen runs again. 0 means openloop.DefaultMaxSteal; 1 never
	// re-runs.
	MaxSteal float64
	// Probe, if set, runs a workload.Probe beside every model's traffic
	// phase, over its measured stretch: posts whose visibility in their
	// authors' followers' newest pages it times, then deletes. The result
	// is the traffic's Visibility. Zero fields take the probe's defaults.
	Probe *workload.ProbeConfig
	// Deletes, if > 0, adds for every model, after its traffic phase, a
	// delete study (results.Deletes): this many messages posted and then
	// deleted in a phase of their own, measured for latency and cost, and
	// the delete of a post by the most followed author. Needs no Mix.
	Deletes int
	// Burst, if set, adds for every model, after its traffic phase (and
	// delete study), a burst phase of its mixed traffic on a rate
	// schedule (results.Burst). Without a Mix it uses
	// workload.DefaultMix.
	Burst *BurstConfig
	// Returning, if set, adds for every model, after its other write
	// phases, a returning-users study (workload.Returning,
	// results.Returning): dormant users who come back after
	// Returning.Absence, beside as many steady ones. Give the models
	// that stop writing to readers who do not read a shorter window
	// (Options, OptionWindow).
	Returning *workload.ReturningConfig

	// TrafficOnly measures each model's traffic phase and nothing else:
	// no harness, no read, submission, mixed or cache phases, no goals.
	// It needs a Mix (or Rate, which implies the default one). It is
	// what a run that compares the models on one workload at one planned
	// rate wants (package loadgen/recommend): every model is measured
	// for the same length, Duration, and each model's store is warmed
	// (Bench.WarmReads) and primed (timeline.Primer) as the read phase
	// would have left it.
	TrafficOnly bool

	// HTTP measures, after each model's newest-page phase, the same phase
	// through the HTTP API: a server of package httpapi in this process,
	// on a loopback port, serves the model's store, and the workers read
	// through httpapi.Client, one keep-alive connection each
	// (results.Model.RetrieveHTTP).
	HTTP bool

	// Vitess starts, beside the sandbox's MariaDB, a Vitess cluster of
	// Shards shards per keyspace (0 means 2) for the models on Vitess
	// (registry.Vitess); nil Models then means VitessBenchModels. It
	// needs the sandbox: DSN must be "".
	Vitess bool
	Shards int

	Command  string    // the command line, for the record
	Progress io.Writer // progress and per-second rows; nil for none
}

// VitessBenchModels are the models a run with Vitess measures unless told
// otherwise: every model on Vitess, each after the same model on MariaDB
// (its name without "@vitess"), which its figures are set against.
func VitessBenchModels() []string {
	var out []string
	for _, m := range registry.Models() {
		if !m.OnVitess() {
			continue
		}
		if plain, ok := strings.CutSuffix(m.Name, registry.VitessSuffix); ok {
			if _, err := registry.Lookup(plain); err == nil {
				out = append(out, plain)
			}
		}
		out = append(out, m.Name)
	}
	return out
}

// DefaultBenchModels are the models a run measures unless told otherwise:
// those whose registry entry says so (registry.Bench.Default), in the
// registry's order.
func DefaultBenchModels() []string {
	var out []string
	for _, m := range registry.Listed() {
		if m.Bench.Default {
			out = append(out, m.Name)
		}
	}
	return out
}

func (c *BenchConfig) defaults() {
	if c.Models == nil {
		c.Models = DefaultBenchModels()
		if c.Vitess {
			c.Models = VitessBenchModels()
		}
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.ExtraDuration <= 0 {
		c.ExtraDuration = 2 * time.Second
	}
	c.ExtraDuration = min(c.ExtraDuration, c.Duration)
	if c.CacheTTL <= 0 {
		c.CacheTTL = memcache.DefaultTTL
	}
	if c.CacheReadRatio <= 0 {
		c.CacheReadRatio = 0.9
	}
	if c.SlowCap <= 0 {
		c.SlowCap = 3 * time.Second
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.Durability == "" {
		c.Durability = results.Durable
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.TrafficOnly {
		c.ExtraDuration = c.Duration
	}
	if c.Mix == nil && (c.Rate > 0 || c.FindRate || c.Burst != nil) {
		m := workload.DefaultMix()
		c.Mix = &m
	}
	if c.Arrivals == "" {
		c.Arrivals = openloop.Poisson
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = openloop.DefaultWorkers
	}
	if c.SLO == 0 {
		c.SLO = DefaultSLO
	}
	if c.StepDuration == 0 {
		c.StepDuration = DefaultStepDuration
	}
	if c.SearchSteps == 0 {
		c.SearchSteps = openloop.DefaultSearchSteps
	}
}

// RunBench generates the dataset, loads it, measures every model, and
// returns the result. A result whose Failures are non-empty is returned
// with a nil error: its numbers are still worth saving.
func RunBench(ctx context.Context, cfg BenchConfig) (*results.Result, error) {
	if err := cfg.checkTraffic(); err != nil {
		return nil, err
	}
	cfg.defaults()
	if cfg.Durability != results.Durable && cfg.Durability != results.Relaxed {
		return nil, fmt.Errorf("durability %q: want %q or %q", cfg.Durability, results.Durable, results.Relaxed)
	}
	if cfg.Vitess && cfg.DSN != "" {
		return nil, errors.New("a run with Vitess starts its own cluster beside a sandboxed MariaDB: leave out the DSN")
	}
	if cfg.Shards < 0 || cfg.Shards > 256 {
		return nil, fmt.Errorf("%d shards: want 1 to 256", cfg.Shards)
	}
	needMemcache, needRedis := false, false
	var models []registry.Model
	var memcached []string
	for _, name := range cfg.Models {
		m, err := registry.Lookup(name)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(models, func(x registry.Model) bool { return x.Name == name }) {
			return nil, fmt.Errorf("model %s named twice", name)
		}
		if m.OnVitess() && !cfg.Vitess {
			return nil, fmt.Errorf("model %s runs on Vitess: ask for a Vitess cluster (--vitess)", name)
		}
		models = append(models, m)
		if m.Needs&registry.Memcached != 0 {
			needMemcache = true
			memcached = append(memcached, name)
		}
		if m.Needs&registry.Redis != 0 {
			needRedis = true
			if cfg.DSN != "" && cfg.Redis == "" {
				return nil, fmt.Errorf("model %s keeps data in Redis: name a server with --redis (or leave out --dsn to use a sandbox)", name)
			}
		}
	}
	if len(models) == 0 {
		return nil, errors.New("no models to measure")
	}
	if err := registry.CheckShared(models, cfg.Options); err != nil {
		return nil, err
	}
	if cfg.TrafficOnly && cfg.Mix == nil {
		return nil, errors.New("a run of the traffic phase only needs a mix or a rate")
	}
	if cfg.CacheReadRatio >= 1 {
		return nil, fmt.Errorf("cache read ratio %g: want a share of reads below 1", cfg.CacheReadRatio)
	}
	if needMemcache && cfg.DSN != "" && len(cfg.Memcache) == 0 {
		return nil, fmt.Errorf("models %s keep data in memcached: name servers with --memcache (or leave out --dsn to use a sandbox)", strings.Join(memcached, ", "))
	}
	logf := func(format string, args ...any) { fmt.Fprintf(cfg.Progress, format+"\n", args...) }
	res := &results.Result{Version: results.FormatVersion, StartedAt: time.Now().UTC(), Command: cfg.Command}

	// The dataset.
	t0 := time.Now()
	d, err := dataset.Generate(cfg.Spec)
	if err != nil {
		return nil, err
	}
	st := d.Stats()
	followees, followers := results.DegreesOf(st.Followees), results.DegreesOf(st.Followers)
	logf("dataset: %s (generated in %.1fs)", st, time.Since(t0).Seconds())
	logf("degrees: %s", degreeString(followees, followers))
	spec := d.Spec // with its defaults filled in
	logf("activity: %s", spec.Activity)
	res.Dataset = results.Dataset{
		Users: st.Users, Messages: st.Messages, AvgFollowees: st.AvgFollowees, Seed: spec.Seed,
		Graph: graphName(spec), GraphParams: graphParams(spec), Edges: st.Edges,
		Activity: spec.Activity.String(), MailboxRows: st.MailboxRows, Scale: cfg.Scale,
	}
	if spec.EdgeList != nil {
		res.Dataset.GraphFile = spec.EdgeList.Source
		if el := spec.EdgeList; el.Duplicates > 0 || el.SelfFollows > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("the edge list %s repeated %d follows and had %d self-follows, left out",
				el.Source, el.Duplicates, el.SelfFollows))
		}
	}
	if spec.Activity.Mode == dataset.ActivitySkewed {
		res.Dataset.ActivityParams = map[string]float64{
			"post_exponent": spec.Activity.PostExponent, "read_exponent": spec.Activity.ReadExponent,
		}
	}
	res.Dataset.SetDegrees(followees, followers)
	res.Dataset.PostAudience, res.Dataset.ReadFollowees = d.WorkloadMeans()
	if dr := spec.Drowning; dr.Share > 0 {
		if res.Dataset.GraphParams == nil {
			res.Dataset.GraphParams = map[string]float64{}
		}
		res.Dataset.GraphParams["drowning_readers"] = float64(len(d.DrowningReaders()))
		res.Dataset.GraphParams["drowning_followees"] = float64(min(dr.Followees, spec.Users-1))
		logf("drowning readers: %d, each following %d", len(d.DrowningReaders()), min(dr.Followees, spec.Users-1))
	}

	// The server.
	dsn := cfg.DSN
	var sb *sandbox.Sandbox
	if dsn == "" {
		settings := map[string]string{}
		if cfg.Durability == results.Relaxed {
			settings["innodb_flush_log_at_trx_commit"] = "2"
		}
		for k, v := range cfg.Settings {
			settings[k] = v
		}
		servers := []string{"MariaDB"}
		if needMemcache {
			servers = append(servers, "memcached")
		}
		if needRedis {
			servers = append(servers, "Redis")
		}
		logf("starting a sandboxed %s ...", strings.Join(servers, " and "))
		if cfg.Vitess {
			logf("starting a Vitess cluster (a minute or so; the first time, Vitess is built first) ...")
		}
		opts := sandbox.Options{MariaDB: true, Memcached: needMemcache, Redis: needRedis, Settings: settings, Vitess: cfg.Vitess, Shards: cfg.Shards}
		if cfg.Vitess {
			// The same server settings on both sides: what differs is
			// Vitess.
			opts.VitessSettings = sandbox.DefaultSettings()
			maps.Copy(opts.VitessSettings, settings)
		}
		sb, err = sandbox.Start(ctx, opts)
		if err != nil {
			return nil, err
		}
		defer sb.Stop()
		dsn = sb.DSN
		logf("sandbox: %s", sb.Dir)
		if cfg.Vitess {
			logf("vtgate: %s, %d shards per keyspace", sb.VtgateDSN, sb.Shards)
			res.Vitess = &results.Vitess{Version: vitess.Version, Shards: sb.Shards}
		}
	}
	admin, err := mysqlx.Open(ctx, mysqlx.Options{DSN: dsn, Database: "mysql", MaxConns: 2})
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if res.Environment, err = environment(ctx, admin, cfg, sb != nil); err != nil {
		return nil, err
	}
	if cfg.DSN != "" && cfg.Durability == results.Relaxed && res.Environment.InnoDB["innodb_flush_log_at_trx_commit"] == "1" {
		return nil, errors.New("--durability relaxed on your own server: set innodb_flush_log_at_trx_commit=2 there; pushpull does not change a server's global settings")
	}

	b := &bench{cfg: cfg, res: res, dsn: dsn, data: d, users: st.Users, logf: logf, models: models,
		open: map[string]timeline.Store{}, fresh: map[string][]timeline.Store{},
		traffic: map[string]timeline.Store{}}
	defer b.closeAll()
	if sb != nil && sb.MemcacheAddr != "" {
		b.memcache = []string{sb.MemcacheAddr}
	} else {
		b.memcache = cfg.Memcache
	}
	if sb != nil {
		// The models on Vitess reach vtgate as the others reach MariaDB:
		// over a unix socket, so that the two differ in what is behind
		// the socket, not in the transport.
		b.vtgate, b.vtgateStatus = sb.VtgateDSN, sb.VtgateStatus
		if sb.VtgateSocketDSN != "" {
			b.vtgate = sb.VtgateSocketDSN
		}
		b.redis = sb.RedisAddr
	} else {
		b.redis = cfg.Redis
	}
	b.meter = cost.NewMeter(admin, b.memcache)
	if b.redis != "" {
		b.meter.WithRedis(b.redis)
	}
	if sb != nil && sb.MariaDB() != nil {
		b.meter.WithDatabaseProcess(sb.MariaDB().Pid())
	}
	if sb != nil && sb.VtgateDSN != "" {
		// The cluster's own processes, so that an operation on Vitess
		// shows its CPU on each: the client, vtcombo and mysqld.
		vtcombo, mysqld, err := sb.VitessPids()
		if err != nil {
			return nil, err
		}
		b.meter.WithProcess(cost.VtcomboCPU, vtcombo).WithProcess(cost.VitessDBCPU, mysqld)
	}
	if len(cfg.Options) > 0 {
		res.Notes = append(res.Notes, "model options: "+registry.OptionsTaken(models, cfg.Options))
	}
	if cfg.DSN != "" {
		res.Notes = append(res.Notes, "the cost figures are deltas of the servers' global counters: on a server given by --dsn they include any other work it did meanwhile")
	}
	if err := b.run(ctx, admin, sb != nil); err != nil {
		return nil, err
	}
	res.FinishedAt = time.Now().UTC()
	return res, nil
}

// degreeString is a one-line summary of the degree distributions, e.g.
// "followers per user max 9,999, p99 385, p50 19; followees per user max
// 3,500, p99 287, p50 27".
func degreeString(followees, followers results.Degrees) string {
	f := func(name string, d results.Degrees) string {
		return fmt.Sprintf("%s per user max %s, p99 %s, p50 %s", name, dataset.Commas(int64(d.Max)), dataset.Commas(int64(d.P99)), dataset.Commas(int64(d.P50)))
	}
	return f("followers", followers) + "; " + f("followees", followees)
}

// graphName describes the graph of s (defaults filled in), e.g.
// "zipf(s=1.1)" or "powerlaw(in=2.3, out=2.5)".
func graphName(s dataset.Spec) string {
	g := s.Graph
	switch g {
	case dataset.GraphZipf:
		g = fmt.Sprintf("%s(s=%g)", g, s.ZipfS)
	case dataset.GraphPowerLaw:
		g = fmt.Sprintf("%s(in=%g, out=%g)", g, s.InExponent, s.OutExponent)
	case dataset.GraphEdges:
		g = fmt.Sprintf("%s(%s)", g, filepath.Base(s.EdgeList.Source))
	}
	if s.Followees > 0 {
		g += fmt.Sprintf(", %d followees each", s.Followees)
	}
	if s.Celebrity > 0 {
		g += fmt.Sprintf(", user 1 followed by %d", s.Celebrity)
	}
	return g
}

// graphParams are the generator's parameters of s by name.
func graphParams(s dataset.Spec) map[string]float64 {
	p := map[string]float64{}
	switch s.Graph {
	case dataset.GraphZipf:
		p["zipf_s"] = s.ZipfS
	case dataset.GraphPowerLaw:
		p["in_exponent"], p["out_exponent"] = s.InExponent, s.OutExponent
	}
	if s.Followees > 0 {
		p["followees"] = float64(s.Followees)
	}
	if s.Celebrity > 0 {
		p["celebrity_followers"] = float64(s.Celebrity)
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

func mb(n int64) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// recreate drops and re-creates a benchmark database, refusing one that
// pushpull did not create unless force.
func recreate(ctx context.Context, admin *sql.DB, name string, force bool) error {
	var n int
	if err := admin.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?`, name).Scan(&n); err != nil {
		return fmt.Errorf("prepare database %s: %w", name, err)
	}
	if n > 0 && !force {
		var tables, meta int
		if err := admin.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(table_name = 'pushpull_meta'), 0) FROM information_schema.tables WHERE table_schema = ?`, name).Scan(&tables, &meta); err != nil {
			return fmt.Errorf("prepare database %s: %w", name, err)
		}
		if tables > 0 && meta == 0 {
			return fmt.Errorf("prepare database %s: %w: it holds %d tables; pass --force to drop it", name, schema.ErrForeignDatabase, tables)
		}
	}
	if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
		return fmt.Errorf("prepare database %s: %w", name, err)
	}
	return nil
}

// dataSize is the database's data + index length after ANALYZE TABLE, and,
// when the server is local (sandboxed), the bytes its files take on disk.
func dataSize(ctx context.Context, admin *sql.DB, name string, local bool) (data, disk int64, err error) {
	if err := admin.QueryRowContext(ctx, `SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables WHERE table_schema = ?`, name).Scan(&data); err != nil {
		return 0, 0, fmt.Errorf("size of %s: %w", name, err)
	}
	if !local {
		return data, 0, nil
	}
	var datadir string
	if err := admin.QueryRowContext(ctx, `SELECT @@datadir`).Scan(&datadir); err != nil {
		return 0, 0, fmt.Errorf("size of %s: %w", name, err)
	}
	err = filepath.WalkDir(filepath.Join(datadir, name), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			disk += st.Blocks * 512 // allocated, not apparent, size
		} else {
			disk += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("size of %s on disk: %w", name, err)
	}
	return data, disk, nil
}

// environment records what the figures depend on.
func environment(ctx context.Context, admin *sql.DB, cfg BenchConfig, sandboxed bool) (results.Environment, error) {
	env := results.Environment{
		CPUs: runtime.NumCPU(), CPUModel: results.LocalCPUModel(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		Sandbox: sandboxed, Concurrency: cfg.Concurrency, PhaseSeconds: cfg.Duration.Seconds(),
		GitCommit: gitCommit(), InnoDB: map[string]string{},
	}
	warmup := cfg.Warmup.Seconds()
	env.WarmupSeconds = &warmup
	if err := admin.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&env.ServerVersion); err != nil {
		return env, fmt.Errorf("server version: %w", err)
	}
	for _, v := range []string{"innodb_flush_log_at_trx_commit", "innodb_buffer_pool_size", "innodb_log_file_size", "innodb_doublewrite", "innodb_flush_method"} {
		var val sql.NullString
		if err := admin.QueryRowContext(ctx, "SELECT @@"+v).Scan(&val); err == nil {
			env.InnoDB[v] = val.String
		}
	}
	env.Durability = results.Durable
	if env.InnoDB["innodb_flush_log_at_trx_commit"] != "1" {
		env.Durability = results.Relaxed
	}
	return env, nil
}

// gitCommit names the code that ran: the build's VCS stamp, else the
// checkout the command runs in.
func gitCommit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		commit += "-dirty"
	}
	return commit
}
