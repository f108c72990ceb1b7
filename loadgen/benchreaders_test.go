package loadgen

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline/counter"
)

// tinyBench is a bench config at a tiny powerlaw scale on the package's
// test servers, one operation count per phase.
func tinyBench(t *testing.T, models []string, options map[string]string) BenchConfig {
	spec, err := dataset.PaperSpec().Scaled(0.005)
	if err != nil {
		t.Fatal(err)
	}
	spec.Graph = dataset.GraphPowerLaw
	cfg := BenchConfig{
		DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Force: true,
		Spec: spec, Scale: 0.005, Models: models, Ops: 100, Options: options, Progress: io.Discard,
	}
	if testing.Verbose() {
		cfg.Progress = os.Stderr
	}
	return cfg
}

// TestReturningStudy: with a window shorter than the absence, push-active
// and push-redis rebuild every returning user's timeline at their first
// read, and the page shows everything they missed; the steady users
// cause no rebuild; push, which writes to everyone, rebuilds nothing and
// is complete too.
func TestReturningStudy(t *testing.T) {
	cfg := tinyBench(t, []string{"push", "push-active", "push-redis"}, map[string]string{OptionWindow: "1s"})
	cfg.Returning = &workload.ReturningConfig{Users: 5, Absence: 2500 * time.Millisecond, PostsPerUser: 8}
	res, err := RunBench(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range cfg.Models {
		m := res.Model(name)
		if m == nil || m.Returning == nil {
			t.Fatalf("%s: no returning study", name)
		}
		r := m.Returning
		if r.Posts != 40 || r.Dormant.Reads != 5 || r.Steady.Reads != 5 || r.Dormant.Expected == 0 {
			t.Fatalf("%s: %+v", name, r)
		}
		for what, g := range map[string]results.ReturnReads{"dormant": r.Dormant, "steady": r.Steady} {
			if g.Completeness() != 1 || g.Complete != g.Reads {
				t.Errorf("%s, %s users: completeness %v, %d of %d pages whole", name, what, g.Completeness(), g.Complete, g.Reads)
			}
		}
		rebuilds, counted := r.Dormant.Counters[counter.Rebuilds+"_per_op"]
		mm, _ := registry.Lookup(name)
		declares := false
		for _, o := range mm.Options {
			declares = declares || o.Name == OptionWindow
		}
		switch {
		case declares && (!counted || rebuilds != 1):
			t.Errorf("%s: %v rebuilds per returning user's first read, want 1", name, rebuilds)
		case declares && r.Steady.Counters[counter.Rebuilds+"_per_op"] != 0:
			t.Errorf("%s: steady users' reads rebuilt %v times a read", name, r.Steady.Counters[counter.Rebuilds+"_per_op"])
		case !declares && counted && rebuilds != 0:
			t.Errorf("%s: %v rebuilds", name, rebuilds)
		}
	}
}

// TestDrowningBench: a dataset with drowning readers gets its phase of
// their pages, and the probe reports their pages apart; push with option
// drowning_follows reads their pages by pull, every one showing the
// watched posts.
func TestDrowningBench(t *testing.T) {
	cfg := tinyBench(t, []string{"push"}, map[string]string{"drowning_follows": "20"})
	cfg.Spec.Drowning = dataset.Drowning{Share: 0.1, Followees: 45}
	mix, err := workload.ParseMix("newest=50,post=50")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Mix = &mix
	cfg.Probe = &workload.ProbeConfig{Every: time.Millisecond, Followers: 2, Seed: 1}
	res, err := RunBench(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Model("push")
	if m.Extra["drowning_pages_per_sec"] <= 0 || m.Extra["drowning_rows_read_per_page"] <= 0 {
		t.Errorf("drowning readers' pages: %v/s, %v rows each", m.Extra["drowning_pages_per_sec"], m.Extra["drowning_rows_read_per_page"])
	}
	v := m.Traffic.Visibility
	if v.Drowning == nil || v.Drowning.Pages == 0 || v.Drowning.Missing != 0 || v.Drowning.Visible == 0 {
		t.Fatalf("drowning readers' watched pages: %+v", v.Drowning)
	}
	if res.Dataset.GraphParams["drowning_readers"] != 5 {
		t.Errorf("recorded %v drowning readers, want 5", res.Dataset.GraphParams["drowning_readers"])
	}
}
