package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// graphBench runs a short benchmark of push and pull-sp on the package's
// test server and returns its result and stderr.
func graphBench(t *testing.T, args ...string) (*results.Result, string, string) {
	t.Helper()
	out := t.TempDir()
	args = append([]string{"bench", "--dsn", testserver.DSN(t), "--force", "--models", "push,pull-sp",
		"--duration", "200ms", "--warmup", "50ms", "--json", "--out", out}, args...)
	r := run(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("%q: %v", args, r)
	}
	var res results.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bench --json printed no JSON: %v\n%s", err, r.stdout)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*", results.DegreesPNGFile))
	if len(dirs) != 1 {
		t.Fatalf("degree plots saved: %v", dirs)
	}
	return &res, r.stderr, filepath.Dir(dirs[0])
}

// TestBenchPowerLaw runs the benchmark at a tiny scale on the powerlaw
// graph: the run records and prints the degree figures, draws users by
// activity, and the push database holds the fan-out of the skewed authors.
func TestBenchPowerLaw(t *testing.T) {
	res, stderr, _ := graphBench(t, "--graph", "powerlaw", "--scale", "0.01")
	d := res.Dataset
	if d.Users != 100 || d.Edges != 4290 || !strings.HasPrefix(d.Graph, "powerlaw(in=2.3, out=2.5)") ||
		d.GraphParams["in_exponent"] != 2.3 || d.Activity != "skewed(post=0.5, read=0.5)" {
		t.Fatalf("dataset %+v", d)
	}
	if !d.HasDegrees() || d.MaxFollowers < 3*d.P50Followers || d.P99Followers < d.P50Followers || d.MaxFollowees < d.P99Followees {
		t.Fatalf("degree figures %+v", d)
	}
	want := fmt.Sprintf("degrees: followers per user max %s, p99 %s, p50 %s;", commasOf(d.MaxFollowers), commasOf(d.P99Followers), commasOf(d.P50Followers))
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "activity: skewed") {
		t.Fatalf("progress lacks %q:\n%s", want, stderr)
	}
	// Authors by post rate: more mailbox rows than a uniform draw's
	// messages times mean followers.
	if uniform := int64(d.Messages) * d.Edges / int64(d.Users); d.MailboxRows < uniform*11/10 {
		t.Fatalf("%d mailbox rows, uniform authors would give about %d", d.MailboxRows, uniform)
	}
	// The submission phase has posted since the load.
	counted := testserver.CountRows(t, pushDatabase(t), "mailbox", "follows")
	if counted["mailbox"] < d.MailboxRows || counted["follows"] != d.Edges {
		t.Fatalf("push database holds %v, dataset %+v", counted, d)
	}
	for _, tl := range res.Load.Tables {
		if tl.Table == "mailbox" && tl.Rows != d.MailboxRows {
			t.Fatalf("loaded %d mailbox rows, dataset %d", tl.Rows, d.MailboxRows)
		}
	}
	for _, m := range res.Models {
		if m.Retrieve.Errors != 0 || !(m.Retrieve.OpsPerSec > 0) || !(m.Submit.OpsPerSec > 0) {
			t.Fatalf("%s: %+v", m.Name, m)
		}
	}
}

// TestBenchEdges runs the benchmark on a graph read from a file, then
// checks that a bad file stops a run before it touches a database.
func TestBenchEdges(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "follows.txt")
	var b strings.Builder
	b.WriteString("# a follows b\n")
	for u := 0; u < 60; u++ {
		for _, v := range []int{(u + 1) % 60, (u + 7) % 60, 0} {
			if v != u {
				fmt.Fprintf(&b, "%d\t%d\n", 1000+u, 1000+v)
			}
		}
	}
	if err := os.WriteFile(good, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res, _, _ := graphBench(t, "--graph", "edges:"+good, "--scale", "0.5")
	d := res.Dataset
	if d.Users != 60 || d.Messages != 3000 || d.Edges != 177 || d.GraphFile != good ||
		d.Graph != "edges(follows.txt)" || d.MaxFollowers != 59 || !strings.HasPrefix(d.Activity, "skewed") {
		t.Fatalf("dataset %+v", d)
	}
	pushDB := pushDatabase(t)
	before := testserver.CountRows(t, pushDB, "follows", "messages", "mailbox")

	for name, text := range map[string]string{
		"letters.txt": "1 2\n2 x\n",
		"self.txt":    "1 2\n\n3 3\n",
		"fields.txt":  "1 2 3\n",
		"empty.txt":   "# nothing\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, nil, "bench", "--dsn", testserver.DSN(t), "--force", "--models", "push,pull-sp", "--graph", "edges:"+path)
		if r.code != 2 || !strings.Contains(r.stderr, "edge list "+path) {
			t.Errorf("%s: exit %d, want 2 with the file named:\n%s", name, r.code, r.stderr)
		}
		if name != "empty.txt" && !strings.Contains(r.stderr, ", line ") {
			t.Errorf("%s: the error names no line:\n%s", name, r.stderr)
		}
		if after := testserver.CountRows(t, pushDB, "follows", "messages", "mailbox"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("%s: the push database changed from %v to %v", name, before, after)
		}
	}
	r := run(t, nil, "bench", "--graph", "edges:"+filepath.Join(dir, "self.txt"), "--self-follows", "skip", "--scale", "0")
	if r.code != 2 || strings.Contains(r.stderr, "edge list") {
		t.Errorf("with self-follows skipped the file is good and --scale 0 the error: %v", r)
	}
}

// pushDatabase is the push model's database, which bench fills.
func pushDatabase(t *testing.T) string {
	t.Helper()
	for _, m := range registry.Models() {
		if m.Family == registry.FamilyPush && m.Persistent() && m.Base == "" {
			return m.Database
		}
	}
	t.Fatal("no push model registered")
	return ""
}

func commasOf(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestBenchGraphFlags: the new flags' mistakes are usage errors.
func TestBenchGraphFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--graph", "edges"},
		{"bench", "--graph", "edges:"},
		{"bench", "--graph", "powerlaw", "--in-exponent", "1.2"},
		{"bench", "--graph", "powerlaw", "--out-exponent", "12"},
		{"bench", "--graph", "powerlaw", "--followees", "10"},
		{"bench", "--in-exponent", "2.5"}, // without powerlaw
		{"bench", "--activity", "bursty"},
		{"bench", "--activity", "skewed", "--post-exponent", "-1"},
		{"bench", "--post-exponent", "1"}, // uniform activity by default on the uniform graph
		{"bench", "--graph", "powerlaw", "--activity", "uniform", "--read-exponent", "1"},
		{"bench", "--self-follows", "skip"},
		{"bench", "--graph", "edges:x.txt", "--self-follows", "maybe"},
		{"bench", "--graph", "edges:x.txt", "--avg-followees", "10"},
	} {
		if r := run(t, nil, args...); r.code != 2 {
			t.Errorf("%q: exit %d, want 2 (usage)\n%s", args, r.code, r.stderr)
		}
	}
}
