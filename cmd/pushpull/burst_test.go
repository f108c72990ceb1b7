package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/results"
)

// TestBenchBadBurstFlags: every bad burst flag is a usage error (exit 2)
// that names it, starts nothing and writes nothing.
func TestBenchBadBurstFlags(t *testing.T) {
	out := t.TempDir()
	for _, args := range [][]string{
		{"--burst", ""}, {"--burst", "300"}, {"--burst", "300:10s;3000:5s"}, {"--burst", "300:10s,3000:0s,300:5s"},
		{"--burst", "-300:10s,3000:5s,300:5s"}, {"--burst", "300:10s,3000:5s,300:5s,"}, {"--burst", "300/m:10s,3000:5s,300:5s"},
		{"--burst", "300:10s"}, {"--burst", "300:10s,300:10s"}, {"--burst", "300:10s,3000:5s"},
		{"--burst", "300:10s,3000:5s,300:1500ms"},
		{"--burst", "300:10s,3000:5s,300:5s", "--celebrity-posts", "-1"},
		{"--burst", "300:10s,3000:5s,300:5s", "--celebrity-posts", "1000000"},
		{"--burst", "300:10s,3000:5s,300:5s", "--lag-slo", "0s"},
		{"--celebrity-posts", "5"}, {"--lag-slo", "2s"},
	} {
		r := run(t, nil, append([]string{"bench", "--out", out}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, args[len(args)-2]) {
			t.Errorf("%q: exit %d, want 2 (usage) naming the flag\n%s", args, r.code, r.stderr)
		}
	}
	// A recommendation measures the traffic phase alone: no burst.
	if r := run(t, nil, "recommend", "--out", out, "--burst", "300:10s,3000:5s,300:5s"); r.code != 2 || !strings.Contains(r.stderr, "--burst") {
		t.Errorf("recommend --burst: exit %d, want 2 naming the flag\n%s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("bad flags wrote %d entries", len(entries))
	}
}

// TestBenchBurst runs --burst end to end at a tiny scale on the test
// server: the burst's rows in the table, the feed-quality table, and
// burst.png beside result.json.
func TestBenchBurst(t *testing.T) {
	out := t.TempDir()
	r := run(t, nil, "bench", "--dsn", testserver.DSN(t), "--force", "--models", "push",
		"--scale", "0.002", "--duration", "200ms", "--warmup", "0s", "--out", out,
		"--burst", "50:500ms,2000:250ms,50:2500ms", "--celebrity-posts", "3")
	if r.code != 0 && !strings.Contains(r.stderr, "harness") {
		t.Fatalf("bench: %v", r)
	}
	for _, want := range []string{"burst (open loop on a schedule)", "p99 before / during / after", "recovery to p99 ≤ 50.0 ms",
		"celebrity's posts", "feed quality", "burst recovery: p99"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the output lacks %q:\n%s", want, r.stdout)
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "*", results.BurstPNGFile))
	if len(files) != 1 || !strings.Contains(r.stderr, results.BurstPNGFile) {
		t.Fatalf("burst plots %v; stderr:\n%s", files, r.stderr)
	}
	res, err := results.Load(filepath.Dir(files[0]))
	if err != nil {
		t.Fatal(err)
	}
	bu := res.Models[0].Burst
	if bu == nil || bu.Schedule != "50:500ms,2000:250ms,50:2.5s" || bu.Celebrity == nil || bu.Celebrity.Posts != 3 {
		t.Fatalf("burst %+v", bu)
	}
}
