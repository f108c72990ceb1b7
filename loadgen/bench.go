package loadgen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/sandbox"
	"github.com/pushpull/pushpull/internal/stores"
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
	// Models to measure, from stores.SQLModels; nil means all.
	Models []string
	Spec   Spec
	Scale  float64 // already applied to Spec; recorded in the result

	Duration    time.Duration // measured time per phase
	Ops         int64         // if > 0, measure this many operations per phase instead
	Warmup      time.Duration // unmeasured time before each phase
	NaiveCap    time.Duration // pull-naive's phases are capped at this
	Concurrency int           // workers per phase
	ReadRatio   float64       // > 0 adds a mixed phase with this share of reads
	Durability  string        // results.Durable or results.Relaxed
	// Settings override the sandbox's mariadbd options.
	Settings map[string]string

	Command  string    // the command line, for the record
	Progress io.Writer // progress and per-second rows; nil for none
}

// Databases the benchmark uses on a server.
const (
	BenchPushDB = "pushpull_push"
	BenchPullDB = "pushpull_pull"
)

func (c *BenchConfig) defaults() {
	if c.Models == nil {
		c.Models = stores.SQLModels
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.NaiveCap <= 0 {
		c.NaiveCap = 3 * time.Second
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
}

// RunBench generates the dataset, loads it, measures every model, and
// returns the result. A result whose Failures are non-empty is returned
// with a nil error: its numbers are still worth saving.
func RunBench(ctx context.Context, cfg BenchConfig) (*results.Result, error) {
	cfg.defaults()
	if cfg.Durability != results.Durable && cfg.Durability != results.Relaxed {
		return nil, fmt.Errorf("durability %q: want %q or %q", cfg.Durability, results.Durable, results.Relaxed)
	}
	for _, m := range cfg.Models {
		if !contains(stores.SQLModels, m) {
			return nil, fmt.Errorf("unknown model %q (want some of %s)", m, strings.Join(stores.SQLModels, ", "))
		}
	}
	logf := func(format string, args ...any) { fmt.Fprintf(cfg.Progress, format+"\n", args...) }
	res := &results.Result{Version: results.FormatVersion, StartedAt: time.Now().UTC(), Command: cfg.Command}

	// The dataset.
	t0 := time.Now()
	d, err := Generate(cfg.Spec)
	if err != nil {
		return nil, err
	}
	st := d.Stats()
	logf("dataset: %s (generated in %.1fs)", st, time.Since(t0).Seconds())
	res.Dataset = results.Dataset{
		Users: st.Users, Messages: st.Messages, AvgFollowees: st.AvgFollowees, Seed: cfg.Spec.Seed,
		Graph: graphName(cfg.Spec), Edges: st.Edges, MaxFollowees: st.MaxFollowees, MaxFollowers: st.MaxFollowers,
		MailboxRows: st.MailboxRows, Scale: cfg.Scale,
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
		logf("starting a sandboxed MariaDB ...")
		sb, err = sandbox.Start(ctx, sandbox.Options{MariaDB: true, Settings: settings})
		if err != nil {
			return nil, err
		}
		defer sb.Stop()
		dsn = sb.DSN
		logf("sandbox: %s", sb.Dir)
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

	// Fresh databases, loaded pull first, then push.
	needPush := contains(cfg.Models, stores.Push)
	needPull := len(cfg.Models) > 1 || !needPush
	var targets []Target
	open := map[string]timeline.Store{}
	defer func() {
		for _, s := range open {
			s.Close()
		}
	}()
	for _, t := range []struct {
		model, db, name string
		need, mailbox   bool
	}{{stores.PullSP, BenchPullDB, "pull", needPull, false}, {stores.Push, BenchPushDB, "push", needPush, true}} {
		if !t.need {
			continue
		}
		if err := recreate(ctx, admin, t.db, cfg.Force); err != nil {
			return nil, err
		}
		s, err := stores.Open(ctx, t.model, stores.Config{DSN: dsn, Database: t.db, MaxConns: cfg.Concurrency * 8})
		if err != nil {
			return nil, err
		}
		open[t.name] = s
		targets = append(targets, Target{Name: t.name, DB: dbOf(s), Mailbox: t.mailbox})
	}
	logf("loading ...")
	if res.Load, err = Load(ctx, d, targets, cfg.Progress); err != nil {
		return nil, err
	}
	logf("loaded in %.1fs", res.Load.Seconds)
	sizes := map[string][2]int64{}
	for _, t := range targets {
		db := map[string]string{"push": BenchPushDB, "pull": BenchPullDB}[t.Name]
		data, disk, err := dataSize(ctx, admin, db, sb != nil)
		if err != nil {
			return nil, err
		}
		sizes[t.Name] = [2]int64{data, disk}
		logf("%s database: %s data+index, %s on disk", t.Name, mb(data), mb(disk))
	}

	// The harness's own ceiling.
	phase := func(name string, dur time.Duration, newOp func(int) Op) (results.Phase, error) {
		length := dur.String()
		if cfg.Ops > 0 {
			length = fmt.Sprintf("%d ops", cfg.Ops)
		}
		logf("phase %s (%s, %d workers)", name, length, cfg.Concurrency)
		pr, err := RunPhase(ctx, PhaseConfig{Name: name, Workers: cfg.Concurrency, Warmup: cfg.Warmup, Duration: dur, Ops: cfg.Ops, Progress: cfg.Progress}, newOp)
		if err != nil {
			return results.Phase{}, err
		}
		p := results.PhaseFromHistogram(pr.Latency, pr.Ops, pr.Errors, pr.Seconds)
		logf("  = %s: %.0f ops/s, p50 %.2f ms, p99 %.2f ms, %d errors", name, p.OpsPerSec, p.P50Ms, p.P99Ms, p.Errors)
		if pr.ErrorRate() > MaxErrorRate {
			res.Failures = append(res.Failures, fmt.Sprintf("%s: %.1f%% of operations failed (over %.0f%%), e.g. %s",
				name, 100*pr.ErrorRate(), 100*MaxErrorRate, strings.Join(pr.SampleErrors, "; ")))
		}
		return p, nil
	}
	harness, err := phase("harness/noop", min(cfg.Duration, 2*time.Second), NewestPage(Noop{}, st.Users, cfg.Spec.Seed))
	if err != nil {
		return nil, err
	}
	res.Harness = &harness

	// Reads first, for every model, while the data is as loaded; then
	// writes.
	for _, name := range cfg.Models {
		s, ok := open[family(name)]
		if name != stores.Push && name != stores.PullSP {
			if s, err = stores.Open(ctx, name, stores.Config{DSN: dsn, Database: BenchPullDB, MaxConns: cfg.Concurrency * 8}); err != nil {
				return nil, err
			}
			open[name] = s
			ok = true
		}
		if !ok {
			return nil, fmt.Errorf("model %s: no store", name)
		}
		dur, sample := cfg.Duration, 400
		if name == stores.PullNaive {
			dur, sample = min(cfg.Duration, cfg.NaiveCap), 40
		}
		m := results.Model{Name: name, DataBytes: sizes[family(name)][0], DiskBytes: sizes[family(name)][1]}
		if m.Retrieve, err = phase(name+"/retrieve", dur, NewestPage(s, st.Users, cfg.Spec.Seed)); err != nil {
			return nil, err
		}
		pool, err := CollectOlderPages(ctx, s, st.Users, sample, cfg.Concurrency, cfg.Spec.Seed)
		switch {
		case errors.Is(err, ErrNoOlderPages):
			m.RetrieveOlder.Skipped = true
			res.Notes = append(res.Notes, name+": no timeline has a second page; older-page retrieval not measured")
		case err != nil:
			return nil, err
		default:
			if m.RetrieveOlder, err = phase(name+"/retrieve-older", dur, OlderPages(s, pool, cfg.Spec.Seed)); err != nil {
				return nil, err
			}
		}
		res.Models = append(res.Models, m)
	}
	// Submission is the same code for every pull strategy (one INSERT):
	// measure it once per database and report it for each pull model.
	var pullSubmit *results.Phase
	for i := range res.Models {
		m := &res.Models[i]
		if family(m.Name) == "pull" && pullSubmit != nil {
			m.Submit = *pullSubmit
			continue
		}
		if m.Submit, err = phase(family(m.Name)+"/submit", cfg.Duration, Submit(open[family(m.Name)], d, cfg.Spec.Seed)); err != nil {
			return nil, err
		}
		if family(m.Name) == "pull" {
			pullSubmit = &m.Submit
			res.Notes = append(res.Notes, "submission is measured once on the pull database and shown for every pull strategy: posting is the same single INSERT for all of them")
		}
	}
	if cfg.ReadRatio > 0 {
		for i := range res.Models {
			m := &res.Models[i]
			p, err := phase(m.Name+"/mixed", cfg.Duration, Mixed(open[storeKey(m.Name)], d, cfg.ReadRatio, cfg.Spec.Seed))
			if err != nil {
				return nil, err
			}
			m.Mixed = &p
		}
	}
	if push := res.Model(stores.Push); push != nil && push.Retrieve.OpsPerSec > 0 && harness.OpsPerSec < 20*push.Retrieve.OpsPerSec {
		res.Failures = append(res.Failures, fmt.Sprintf("the harness ran a no-op store at only %.0f ops/s, under 20x push retrieval (%.0f/s): it would be measuring itself",
			harness.OpsPerSec, push.Retrieve.OpsPerSec))
	}
	res.FinishedAt = time.Now().UTC()
	return res, nil
}

func storeKey(model string) string {
	if model == stores.Push || model == stores.PullSP {
		return family(model)
	}
	return model
}

func family(model string) string {
	if model == stores.Push {
		return "push"
	}
	return "pull"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func graphName(s Spec) string {
	g := s.Graph
	if g == "" {
		g = GraphUniform
	}
	if g == GraphZipf {
		zs := s.ZipfS
		if zs == 0 {
			zs = DefaultZipfS
		}
		g = fmt.Sprintf("zipf(s=%g)", zs)
	}
	if s.Followees > 0 {
		g += fmt.Sprintf(", %d followees each", s.Followees)
	}
	return g
}

func dbOf(s timeline.Store) *sql.DB {
	return s.(interface{ DB() *sql.DB }).DB()
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
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		Sandbox: sandboxed, Concurrency: cfg.Concurrency, PhaseSeconds: cfg.Duration.Seconds(),
		GitCommit: gitCommit(), InnoDB: map[string]string{},
	}
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
