package loadgen

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
)

// TestDeletesAndVisibilityEveryModel runs, for every registered model at
// a tiny scale, traffic that posts and deletes with a probe watching it,
// then the delete study: every model shows every watched post on every
// watched page, and no page shows a deleted message once the store has
// settled, neither the traffic's, the study's nor the celebrity's (also
// while posts arrive, for a design measured at half its post rate); the
// deletes are counted and costed.
func TestDeletesAndVisibilityEveryModel(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.002)
	if err != nil {
		t.Fatal(err)
	}
	spec.Graph = dataset.GraphPowerLaw
	mix, err := workload.ParseMix("newest=50,post=35,delete=15")
	if err != nil {
		t.Fatal(err)
	}
	cfg := BenchConfig{
		DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Force: true,
		Spec: spec, Scale: 0.002, Models: registry.Names(notOnVitess(registry.Listed())), Ops: 200, Mix: &mix,
		Probe:   &workload.ProbeConfig{Every: time.Millisecond, Followers: 2, Seed: 1},
		Deletes: 20, Progress: io.Discard,
	}
	if testing.Verbose() {
		cfg.Progress = os.Stderr
	}
	res, err := RunBench(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Failures {
		if !strings.Contains(f, "harness") {
			t.Errorf("failure: %s", f)
		}
	}
	for _, name := range cfg.Models {
		m := res.Model(name)
		if m == nil || m.Traffic == nil || m.Traffic.Visibility == nil || m.Deletes == nil {
			t.Fatalf("%s: no traffic, visibility or delete study: %+v", name, m)
		}
		v := m.Traffic.Visibility
		if v.Total.Posts == 0 || v.Total.Visible == 0 || v.Total.Missing != 0 || v.Errors != 0 {
			t.Errorf("%s: watched posts %+v, %d errors %v", name, v.Total, v.Errors, v.SampleErrors)
		}
		if v.StillShown != 0 || v.DeletedShown != 0 || v.TrafficDeletes == 0 || v.DeletedChecked == 0 {
			t.Errorf("%s: deletes watched %d (%d pages still showing), traffic deletes %d (%d of %d checked pages showing)",
				name, v.Deletes, v.StillShown, v.TrafficDeletes, v.DeletedShown, v.DeletedChecked)
		}
		d := m.Deletes
		if d.Phase.Ops != 20 || d.Phase.Errors != 0 || d.StillShown != 0 || d.Checked == 0 {
			t.Errorf("%s: delete study %+v", name, d)
		}
		if c := d.Celebrity; c == nil || c.Followers == 0 || c.Checked != c.Followers || c.StillShown != 0 ||
			c.Watched != min(c.Followers, 20) || c.WatchedStillShown != 0 {
			t.Errorf("%s: celebrity delete %+v", name, c)
		}
		mm, _ := registry.Lookup(name)
		if c := d.CelebrityUnderLoad; mm.Bench.Has(registry.PhaseHalfRate) != (c != nil) || c != nil && (c.Checked != c.Followers || c.StillShown != 0) {
			t.Errorf("%s: celebrity delete at half the post rate %+v", name, c)
		}
		if mm.Persistent() && mm.Needs&registry.Redis == 0 && !(d.Phase.Cost[cost.RowsDeleted] >= 1) {
			t.Errorf("%s: %v rows deleted per delete", name, d.Phase.Cost[cost.RowsDeleted])
		}
	}
}
