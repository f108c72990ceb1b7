package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/push/async"
	"github.com/pushpull/pushpull/results"
)

// TestBurstRisesAndRecovers runs a burst phase on a real MariaDB for
// push-async and pull-merge, each in a run of its own: one operation in
// flight at most, and a burst in 0.1 s between two stretches at 20/s of
// as many operations as one connection serves in about a second (measured
// first, by a closed loop of one worker), so that a backlog of about a
// second forms whatever the machine's speed, with or without the race
// detector. The p99 of the operations planned during the burst is over
// the objective; once the backlog has drained, latency comes back within
// it, well before the schedule ends. The celebrity's posts are all made,
// by the most followed author; push-async's fan-out lag is measured bucket
// by bucket; the buckets account for every planned operation; and the
// table, the CSV and the plot show the phase. A rate search's steps keep
// each operation type's figures.
func TestBurstRisesAndRecovers(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.002)
	if err != nil {
		t.Fatal(err)
	}
	// Far above what one operation takes on a busy machine, far below
	// what a second's worth of queued operations wait.
	const slo = 200 * time.Millisecond
	var res *results.Result
	for _, name := range []string{async.ModelName, pull.ModelName(pull.StrategyMerge)} {
		base := BenchConfig{DSN: testserver.DSN(t), Force: true, Spec: spec, Scale: 0.002, Models: []string{name}, Progress: io.Discard}
		if testing.Verbose() {
			base.Progress = os.Stderr
		}
		// One worker's time per operation, now.
		mix := workload.DefaultMix()
		cal := base
		cal.TrafficOnly, cal.Mix, cal.Ops, cal.Concurrency = true, &mix, 200, 1
		calRes, err := RunBench(context.Background(), cal)
		if err != nil {
			t.Fatal(err)
		}
		p50 := calRes.Model(name).Traffic.Total.P50Ms
		burst := min(max(int(1000/max(p50, 0.001)), 300), 50_000)
		schedule, err := openloop.ParseSchedule(fmt.Sprintf("20:1s,%d:100ms,20:12s", 10*burst))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %.3f ms an operation, a burst of %d", name, p50, burst)
		cfg := base
		cfg.Ops, cfg.MaxInFlight, cfg.SLO = 40, 1, slo
		cfg.Burst = &BurstConfig{Schedule: schedule, CelebrityPosts: 5}
		// A short rate search, for its figures per operation type.
		cfg.FindRate, cfg.SearchSteps, cfg.StepDuration = true, 2, 200*time.Millisecond
		var progress bytes.Buffer
		cfg.Progress = io.MultiWriter(&progress, base.Progress)
		r, err := RunBench(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		phasesInOrder(t, progress.String())
		for _, f := range r.Failures {
			if !strings.Contains(f, "harness") { // forty no-ops are too few to time it
				t.Fatalf("failure: %s", f)
			}
		}
		m := r.Model(name)
		bu := m.Burst
		if bu == nil {
			t.Fatalf("%s: no burst phase", name)
		}
		t.Logf("%s: p99 %.1f / %.1f / %.1f ms, recovered %v after %.2fs; %+v", name, bu.Before.P99Ms, bu.During.P99Ms, bu.After.P99Ms, bu.Recovered, bu.RecoveryS, bu.Celebrity)
		if bu.StartS != 1 || bu.EndS < 1.1 || bu.WindowS != 13.1 || len(bu.Series) != 53 {
			t.Fatalf("%s: burst from %v to %v s of %v s, %d buckets", name, bu.StartS, bu.EndS, bu.WindowS, len(bu.Series))
		}
		var planned int64
		for _, p := range bu.Series {
			planned += p.Ops + p.Errors + p.Missed
		}
		if planned != bu.Open.Scheduled || bu.Total.Ops+bu.Total.Errors != bu.Open.Started {
			t.Fatalf("%s: the buckets hold %d of %d planned operations", name, planned, bu.Open.Scheduled)
		}
		if bu.During.Ops < int64(burst)/2 || bu.During.P99Ms <= bu.SLOMs {
			t.Fatalf("%s: %d operations during the burst, p99 %.2f ms: no backlog against an objective of %v", name, bu.During.Ops, bu.During.P99Ms, slo)
		}
		if !bu.Recovered || bu.RecoveryS > bu.WindowS-bu.EndS-BurstHold.Seconds() || bu.After.Ops == 0 {
			t.Fatalf("%s: not recovered within the schedule: %v after %.2fs", name, bu.Recovered, bu.RecoveryS)
		}
		for _, st := range m.Traffic.Search.Steps {
			var n int64
			for _, op := range st.Ops {
				n += op.Ops
			}
			if st.Ops["newest"].Ops == 0 || st.Ops["newest"].P99Ms <= 0 || n == 0 || n > int64(math.Round(st.OfferedPerSec*0.2)) {
				t.Fatalf("%s: a search step at %.0f/s has %d operations by type: %+v", name, st.RatePerSec, n, st.Ops)
			}
		}
		c := bu.Celebrity
		if c == nil || c.Posts != 5 || c.Errors != 0 || c.Followers == 0 || c.AtS < 1 {
			t.Fatalf("%s: the celebrity's posts: %+v", name, c)
		}
		var most int
		d := mustData(t, spec)
		for u := 1; u <= r.Dataset.Users; u++ {
			most = max(most, len(d.Followers(uint32(u))))
		}
		if c.Followers != most {
			t.Fatalf("%s: the celebrity has %d followers, the most followed %d", name, c.Followers, most)
		}
		lagPosts := int64(0)
		for _, p := range bu.Series {
			lagPosts += p.LagPosts
		}
		if (bu.Lag != nil) != (name == async.ModelName) || bu.Lag != nil && lagPosts < 5 {
			t.Fatalf("%s: fan-out lag %+v over %d posts", name, bu.Lag, lagPosts)
		}
		if res == nil {
			res = r
		}
	}
	var table strings.Builder
	if err := results.WriteTable(&table, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"burst (open loop on a schedule)", "recovery to p99 ≤ 200 ms", "recovery to fan-out lag ≤ 1,000 ms", "feed quality"} { // push-async's run
		if !strings.Contains(table.String(), want) {
			t.Fatalf("the table lacks %q:\n%s", want, table.String())
		}
	}
	dir := t.TempDir()
	if err := results.Save(dir, res); err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(filepath.Join(dir, results.CSVFile))
	if err != nil || !strings.Contains(string(csv), async.ModelName+",burst_during,") {
		t.Fatalf("the CSV has no burst rows: %v\n%s", err, csv)
	}
	if fi, err := os.Stat(filepath.Join(dir, results.BurstPNGFile)); err != nil || fi.Size() == 0 {
		t.Fatalf("no burst plot: %v", err)
	}
	back, err := results.Load(dir)
	if err != nil || back.Model(async.ModelName).Burst == nil || len(back.Model(async.ModelName).Burst.Series) != 53 {
		t.Fatalf("the burst does not survive a save and a load: %v", err)
	}
}

func mustData(t *testing.T, spec dataset.Spec) *dataset.Dataset {
	t.Helper()
	d, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestBurstConfigRefused: schedules in which nothing bursts, that end in
// their burst, or leave too little after it, are refused before anything
// runs, as *ConfigError.
func TestBurstConfigRefused(t *testing.T) {
	parse := func(s string) openloop.RateSchedule {
		sc, err := openloop.ParseSchedule(s)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	for _, c := range []BurstConfig{
		{Schedule: parse("300:10s")},
		{Schedule: parse("300:10s,300:10s")},
		{Schedule: parse("300:10s,100:5s,300:10s")},
		{Schedule: parse("300:10s,3000:5s")},
		{Schedule: parse("300:10s,3000:5s,300:1500ms")},
		{Schedule: parse("300:10s,3000:5s,300:5s,3000:1s")},
		{Schedule: parse("300:10s,3000:5s,300:10s"), CelebrityPosts: -1},
		{Schedule: parse("300:10s,3000:5s,300:10s"), CelebrityPosts: MaxCelebrityPosts + 1},
		{Schedule: parse("300:10s,3000:5s,300:10s"), LagSLO: -time.Second},
		{Schedule: openloop.RateSchedule{{Rate: 0, Duration: time.Second}, {Rate: 10, Duration: time.Second}}},
	} {
		var ce *ConfigError
		if err := c.Check(); !errors.As(err, &ce) {
			t.Errorf("%v: %v, want a *ConfigError", c, err)
		}
		cfg := BenchConfig{DSN: "nowhere", Spec: dataset.PaperSpec(), Burst: &c}
		if _, err := RunBench(context.Background(), cfg); !errors.As(err, &ce) {
			t.Errorf("RunBench with %v: %v, want a *ConfigError", c, err)
		}
	}
	for _, c := range []BurstConfig{
		{Schedule: parse("300:10s,3000:5s,300:10s")},
		{Schedule: parse("300:10s,300:10s"), CelebrityPosts: 20},
		{Schedule: parse("300:10s,1000:2s,3000:2s,100:2s")},
	} {
		if err := c.Check(); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
}
