package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/results"
)

// TestBenchSmall runs the whole benchmark at 1% of the paper's scale on its
// own sandbox, and checks that its JSON parses, holds every model with
// non-zero rates, and was saved, and that report re-renders it.
//
// It judges no speed: the run's own goals and its harness check
// (results.Judge) do, in the output of every `pushpull bench`. A second of
// no-op reads in a -race build on a busy machine may well fall short of
// HarnessOverPush times push's reads, and the run then fails on that
// alone (exit 1, everything saved); the test accepts that failure, and
// only when the figures printed beside it bear it out.
func TestBenchSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MariaDB sandbox and runs the benchmark")
	}
	out := t.TempDir()
	profile := filepath.Join(out, "cpu.pprof")
	r := run(t, nil, "bench", "--scale", "0.01", "--duration", "1s", "--warmup", "100ms",
		"--json", "--out", out, "--set", "innodb_buffer_pool_size=256M", "--set", "innodb_log_file_size=128M",
		"--cpu-profile", profile)
	if r.code != 0 && (r.code != 1 || !strings.Contains(r.stderr, "the run failed")) {
		t.Fatalf("bench: %v", r)
	}
	if b, err := os.ReadFile(profile); err != nil || len(b) < 100 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("--cpu-profile wrote no gzipped profile (%d bytes): %v", len(b), err)
	}
	var res results.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bench --json printed no JSON: %v\n%s", err, r.stdout)
	}
	if res.Dataset.Users != 100 || res.Dataset.Messages != 10000 || res.Dataset.AvgFollowees < 42 || res.Dataset.AvgFollowees > 44 {
		t.Fatalf("dataset %+v", res.Dataset)
	}
	want := loadgen.DefaultBenchModels()
	if len(res.Models) != len(want) {
		t.Fatalf("%d models, want %v", len(res.Models), want)
	}
	for i, m := range res.Models {
		if m.Name != want[i] {
			t.Fatalf("model %d is %q, want %q", i, m.Name, want[i])
		}
		phases := map[string]results.Phase{"submit": m.Submit, "retrieve": m.Retrieve, "retrieve_older": m.RetrieveOlder}
		if m.Base != "" {
			if !m.RetrieveOlder.Skipped || m.Mixed == nil {
				t.Fatalf("%s: older pages %+v (want skipped: they pass through), mixed %v", m.Name, m.RetrieveOlder, m.Mixed)
			}
			delete(phases, "retrieve_older")
			phases["mixed"] = *m.Mixed
			for _, k := range []string{"hit_ratio", "mixed_hit_ratio", "ttl_hit_ratio", "ttl_mixed_ops_per_sec"} {
				if !(m.Extra[k] > 0) {
					t.Fatalf("%s: %s = %v in %v", m.Name, k, m.Extra[k], m.Extra)
				}
			}
			if m.Mixed.OpsPerSec == m.Extra["ttl_mixed_ops_per_sec"] {
				t.Fatalf("%s: the invalidate and ttl mixed phases report the same rate %v: one overwrote the other", m.Name, m.Mixed.OpsPerSec)
			}
			if m.Extra["ttl_max_staleness_ms"] > m.Extra["ttl_ms"] || m.Extra["ttl_ms"] != 1000 {
				t.Fatalf("%s: staleness %v ms beyond the TTL of %v ms", m.Name, m.Extra["ttl_max_staleness_ms"], m.Extra["ttl_ms"])
			}
		}
		for name, p := range phases {
			if p.OpsPerSec <= 0 || p.Ops <= 0 || p.Errors != 0 || p.P50Ms <= 0 {
				t.Fatalf("%s %s: %+v", m.Name, name, p)
			}
		}
		switch m.Name {
		case "pull-union", "pull-merge":
			if !(m.Extra["rows_per_page"] > 0) {
				t.Fatalf("%s: rows per page not reported: %v", m.Name, m.Extra)
			}
		case "pull-recent", "pull-active":
			// Once warm, a page needs no database row: the followees
			// come from the process, the ids from memcached and the
			// bodies from the message cache; the first read of each
			// user's followees counts a few. That holds while memcached
			// answers: a read it fails (slow to answer on a loaded
			// machine, say) falls back to the database and counts its
			// rows, as it should. So the bound applies to a run whose
			// figures report no cache error.
			rows, ok := m.Extra["rows_per_page"]
			cacheErrors, counted := m.Extra["cache_errors"]
			if !ok || rows < 0 || !counted || cacheErrors < 0 {
				t.Fatalf("%s: rows per page %v (reported: %v), cache errors %v (reported: %v): %v", m.Name, rows, ok, cacheErrors, counted, m.Extra)
			}
			if cacheErrors == 0 && rows > 43 {
				t.Fatalf("%s: rows per page %v with no cache error, want 0 to 43: %v", m.Name, rows, m.Extra)
			}
			if cacheErrors > 0 {
				t.Logf("%s: %v cache errors, so rows per page (%v) are not bounded: reads fell back to the database", m.Name, cacheErrors, rows)
			}
			if r := m.Extra["followee_hit_ratio"]; !(r > 0 && r <= 1) || m.Extra["list_hit_ratio"] <= 0 {
				t.Fatalf("%s: followee and list hit ratios not reported: %v", m.Name, m.Extra)
			}
		}
		if m.DataBytes <= 0 || m.DiskBytes <= 0 {
			t.Fatalf("%s: data %d bytes, disk %d bytes", m.Name, m.DataBytes, m.DiskBytes)
		}
	}
	push, pull := res.Model("push"), res.Model("pull-sp")
	if push.DataBytes <= pull.DataBytes {
		t.Fatalf("push data %d bytes not above pull's %d: the mailbox is missing", push.DataBytes, pull.DataBytes)
	}
	// The run started its own MariaDB, so the cost of a post includes
	// that server's CPU; the cached models' include memcached's.
	if c := push.Submit.Cost; !(c[cost.DBCPU] > 0) {
		t.Fatalf("push's posts: no database server CPU in %v", c)
	}
	if m := res.Model("push+memcache"); m == nil || m.Mixed == nil || !(m.Mixed.Cost[cost.MCCPU] > 0) {
		t.Fatalf("push+memcache: no memcached CPU in its mixed phase: %+v", m)
	}
	if res.Harness == nil || !(res.Harness.OpsPerSec > 0) || res.Harness.Ops <= 0 || res.Harness.Errors != 0 {
		t.Fatalf("harness %+v", res.Harness)
	}
	// The harness check is the run's, not the test's: its failure must
	// be recorded exactly when the figures fall short of it.
	slow := res.Harness.OpsPerSec < results.HarnessOverPush*push.Retrieve.OpsPerSec
	var harnessFailures int
	for _, f := range res.Failures {
		if strings.Contains(f, "harness") {
			harnessFailures++
		} else {
			t.Errorf("failure: %s", f)
		}
	}
	if slow != (harnessFailures == 1) || harnessFailures > 1 {
		t.Fatalf("harness %.0f ops/s against push's %.0f reads/s (%vx needed): %d harness failures recorded: %v",
			res.Harness.OpsPerSec, push.Retrieve.OpsPerSec, results.HarnessOverPush, harnessFailures, res.Failures)
	}
	if slow {
		t.Logf("the run failed its harness check, as its figures say: %v", res.Failures)
	}
	if (r.code == 1) != res.Failed() {
		t.Fatalf("exit %d with failures %v", r.code, res.Failures)
	}
	if res.MemcacheGet == nil || !(res.MemcacheGet.OpsPerSec > 0) {
		t.Fatalf("raw memcached gets: %+v", res.MemcacheGet)
	}
	goals := map[string]bool{}
	for _, g := range res.Goals {
		goals[g.Name] = true
		if !(g.Value > 0) || g.Met != (g.Value >= g.Target) {
			t.Fatalf("goal %+v", g)
		}
	}
	if len(goals) != 6 {
		t.Fatalf("goals %+v, want the cache's three and the fast pull's three", res.Goals)
	}
	if res.Environment.Durability != results.Durable || res.Environment.InnoDB["innodb_flush_log_at_trx_commit"] != "1" {
		t.Fatalf("environment %+v", res.Environment)
	}
	if !strings.Contains(r.stderr, "loaded") || !strings.Contains(r.stderr, "ops/s") {
		t.Fatalf("no progress on stderr:\n%s", r.stderr)
	}

	dirs, _ := filepath.Glob(filepath.Join(out, "*", results.JSONFile))
	if len(dirs) != 1 {
		t.Fatalf("saved results: %v", dirs)
	}
	dir := filepath.Dir(dirs[0])
	for _, f := range []string{results.CSVFile, results.PNGFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	rep := run(t, nil, "report", dir)
	if rep.code != 0 || !strings.Contains(rep.stdout, "pull-naive") || !strings.Contains(rep.stdout, "timelines/s") {
		t.Fatalf("report: %v", rep)
	}
	cmp := run(t, nil, "report", dir, dir)
	if cmp.code != 0 || !strings.Contains(cmp.stdout, "1.00x") {
		t.Fatalf("report of two runs: %v", cmp)
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--scale", "0"},
		{"bench", "--scale", "-1"},
		{"bench", "--models", "push,gossip"},
		{"bench", "--models", "push+gossip"},
		{"bench", "--models", "memory+memcache"},
		{"bench", "--slow-cap", "0s"},
		{"bench", "--graph", "ring"},
		{"bench", "--concurrency", "0"},
		{"bench", "--duration", "0s"},
		{"bench", "--read-ratio", "1.5"},
		{"bench", "--durability", "maybe"},
		{"bench", "--set", "nonsense"},
		{"bench", "--dsn", "root@tcp(127.0.0.1:1)/", "--set", "innodb_buffer_pool_size=1G"},
		{"bench", "--followees", "-3"},
		{"bench", "--ops", "-1"},
		{"bench", "--memcache", "nonsense"},
		{"bench", "--memcache", "127.0.0.1:11211"},   // without --dsn
		{"bench", "--dsn", "root@tcp(127.0.0.1:1)/"}, // the default models need --memcache
		{"bench", "--dsn", "root@tcp(127.0.0.1:1)/", "--models", "push+memcache"},
		{"bench", "--cache-ttl", "0s"},
		{"bench", "--extra-duration", "-1s"},
		{"bench", "--load-cache-size", "0"},
		{"report"},
		{"report", "a", "b", "c"},
	} {
		if r := run(t, nil, args...); r.code != 2 {
			t.Errorf("%q: exit %d, want 2 (usage)\n%s", args, r.code, r.stderr)
		}
	}
	if r := run(t, nil, "bench", "--cpu-profile", filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.pprof")); r.code != 1 || !strings.Contains(r.stderr, "--cpu-profile") || strings.Contains(r.stderr, "sandbox") {
		t.Errorf("a profile that cannot be written should stop the run before it starts: %v", r)
	}
	if r := run(t, nil, "report", filepath.Join(t.TempDir(), "nothing")); r.code != 1 || !strings.Contains(r.stderr, "nothing") {
		t.Errorf("report of a missing run: %v", r)
	}
}

// TestLoadCacheFlags: the load cache is on by default, in
// $PUSHPULL_CACHE_DIR when set, and off with --no-load-cache.
func TestLoadCacheFlags(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PUSHPULL_CACHE_DIR", dir)
	for _, c := range []struct {
		args  []string
		dir   string
		bytes int64
	}{
		{nil, dir, 16 << 30},
		{[]string{"--load-cache", "/elsewhere", "--load-cache-size", "0.5"}, "/elsewhere", 1 << 29},
		{[]string{"--no-load-cache"}, "", 0},
	} {
		cmd := &cobra.Command{}
		var b benchFlags
		b.register(cmd.Flags())
		if err := cmd.Flags().Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if err := b.check(cmd); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if b.cfg.LoadCache != c.dir || b.cfg.LoadCacheBytes != c.bytes {
			t.Errorf("%q: load cache %q of %d bytes, want %q of %d", c.args, b.cfg.LoadCache, b.cfg.LoadCacheBytes, c.dir, c.bytes)
		}
	}
}
