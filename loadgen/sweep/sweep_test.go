package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	schema "github.com/pushpull/pushpull/sql"

	_ "github.com/pushpull/pushpull/registry/all"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{}) }

// models returns the first registered model of the push schema and the
// first pull model that needs no memcached.
func models(t *testing.T) (push, pull string) {
	for _, m := range registry.Listed() {
		switch {
		case push == "" && m.Schema == schema.Push && m.Needs == registry.MariaDB:
			push = m.Name
		case pull == "" && m.Schema == schema.Pull && m.Needs == registry.MariaDB && !m.Bench.Slow:
			pull = m.Name
		}
	}
	if push == "" || pull == "" {
		t.Fatalf("no push (%q) or pull (%q) model", push, pull)
	}
	return push, pull
}

func baseConfig(t *testing.T, scale float64) Config {
	push, pull := models(t)
	base := dataset.PaperSpec()
	spec, err := base.Scaled(scale)
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Bench: loadgen.BenchConfig{DSN: testserver.DSN(t), Force: true, Spec: spec, Scale: scale,
			Models: []string{push, pull}, Ops: 30, Concurrency: 2},
		Base: base,
	}
}

// TestBadValues: every value is checked before anything runs, with a
// *ValueError that names it.
func TestBadValues(t *testing.T) {
	cfg := baseConfig(t, 0.002) // 20 users
	for _, c := range []struct {
		param  Param
		values []float64
		want   string
	}{
		{"nonsense", []float64{1}, "unknown parameter"},
		{Followees, nil, "no values"},
		{Followees, []float64{5, 20}, "at most 19"},
		{Followees, []float64{2.5}, "whole number"},
		{Followers, []float64{0}, "whole number"},
		{Scale, []float64{0.1, math.NaN()}, "not a number"},
		{Scale, []float64{-1}, "above 0"},
		{Messages, []float64{1, 1}, "given twice"},
		{ReadShare, []float64{0.5, 1}, "between 0 and 1"},
		{"option:", []float64{1}, "option:NAME"},
		{Option, []float64{1}, "option:NAME"},
		{"option:Threshold", []float64{1}, "option:NAME"},
		{"option:threshold", []float64{2.5}, "want an integer"},
		{"option:threshold", []float64{0}, "want an integer, at least 1"},
		{"option:threshhold", []float64{100}, `unknown option "threshhold"`},
		{"option:cap", []float64{100}, "valid: drowning, drowning_follows, threshold"},
	} {
		cfg.Param, cfg.Values = c.param, c.values
		cfg.Bench.Models = baseConfig(t, 0.002).Bench.Models
		if c.param.OptionName() != "" {
			cfg.Bench.Models = append(cfg.Bench.Models, "hybrid") // the only model measured with an option
		}
		cfg.Bench.DSN = "nobody:nothing@tcp(127.0.0.1:1)/" // nothing may connect
		_, err := Run(context.Background(), cfg)
		var ve *ValueError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want a ValueError saying %q", c.param, c.values, err, c.want)
		}
	}
}

// TestReadShareMix keeps the default mix's proportions within reads and
// within writes.
func TestReadShareMix(t *testing.T) {
	def := workload.DefaultMix()
	for _, share := range []float64{0.5, 0.9, 0.99} {
		m, err := ReadShareMix(share)
		if err != nil {
			t.Fatal(err)
		}
		reads := m.Share(workload.OpNewest) + m.Share(workload.OpOlder)
		if math.Abs(reads-share) > 1e-3 {
			t.Errorf("share %v: reads are %v of %s", share, reads, m)
		}
		if got, want := m.Share(workload.OpNewest)/m.Share(workload.OpOlder), def.Share(workload.OpNewest)/def.Share(workload.OpOlder); math.Abs(got-want) > 1e-3 {
			t.Errorf("share %v: newest:older %v, want %v", share, got, want)
		}
		if got, want := m.Share(workload.OpPost)/m.Share(workload.OpFollow), def.Share(workload.OpPost)/def.Share(workload.OpFollow); math.Abs(got-want) > 1e-3 {
			t.Errorf("share %v: post:follow %v, want %v", share, got, want)
		}
	}
}

// TestFollowersSweep runs a sweep of one author's followers on a real
// MariaDB: push's rows written per post follow the author's followers
// (one mailbox row each), pull's stay flat; a point whose mailbox is over
// the limit runs without push and says why; the saved files load back.
func TestFollowersSweep(t *testing.T) {
	cfg := baseConfig(t, 0.02) // 200 users, 20,000 messages
	push, pull := models(t)
	cfg.Param, cfg.Values = Followers, []float64{10, 60, 150}
	// 20,000 messages x 42.9 followees is about 858,000 rows.
	cfg.MaxMailboxRows = 2_000_000
	var progress bytes.Buffer
	cfg.Progress = &progress
	s, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 3 {
		t.Fatalf("points %d", len(s.Points))
	}
	for _, p := range s.Points {
		// Thirty operations are too few to time the harness's no-op
		// store on a busy machine; nothing else may fail.
		for _, f := range p.Result.Failures {
			if !strings.Contains(f, "harness") {
				t.Errorf("followers %v: %s", p.Value, f)
			}
		}
		if p.Result.Dataset.MaxFollowers < int(p.Value) {
			t.Errorf("followers %v: the dataset's most followed has %d", p.Value, p.Result.Dataset.MaxFollowers)
		}
		pw := p.Result.Model(push).Submit.Cost[cost.RowsWritten]
		lw := p.Result.Model(pull).Submit.Cost[cost.RowsWritten]
		t.Logf("followers %v: rows written per post: %s %.1f, %s %.1f", p.Value, push, pw, pull, lw)
		// A post writes the message and one mailbox row per follower
		// (and the author's own), give or take secondary indexes.
		if pw < p.Value || pw > 3*(p.Value+2) {
			t.Errorf("followers %v: %s wrote %.1f rows per post", p.Value, push, pw)
		}
		if lw > 5 {
			t.Errorf("followers %v: %s wrote %.1f rows per post; pull should not fan out", p.Value, pull, lw)
		}
	}

	// Over the limit, push is left out, with the reason.
	cfg.Values = []float64{10}
	cfg.MaxMailboxRows = 1000
	s2, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := s2.Points[0]
	if p.Result.Model(push) != nil || p.Result.Model(pull) == nil || !strings.Contains(p.Skipped[push], "mailbox") || len(s2.Notes) != 1 {
		t.Fatalf("over the limit: models %v, skipped %v, notes %v", p.Result.Models, p.Skipped, s2.Notes)
	}

	dir := t.TempDir()
	if err := results.SaveSweep(dir, s); err != nil {
		t.Fatal(err)
	}
	for _, f := range results.SweepFiles {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() < 100 {
			t.Errorf("%s: %v", f, err)
		}
	}
	back, err := results.LoadSweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Param != string(Followers) || len(back.Points) != 3 || back.Points[2].Result.Model(push) == nil || !back.LogX {
		t.Errorf("loaded back: %+v", back)
	}
	csv, _ := os.ReadFile(filepath.Join(dir, results.SweepCSVFile))
	if !strings.Contains(string(csv), "followers,150,"+push+",submit,") {
		t.Errorf("sweep.csv lacks push's submission at 150 followers:\n%s", csv)
	}
}

// TestOptionSweep varies hybrid's threshold around the followers of the
// one author who posts: below them the author's posts are pulled and
// write no mailbox rows; above them they are fanned out.
func TestOptionSweep(t *testing.T) {
	cfg := baseConfig(t, 0.01) // 100 users, 10,000 messages
	const followers = 60
	cfg.Bench.Spec.Celebrity = followers
	cfg.Bench.Spec.Activity = dataset.Activity{Mode: dataset.ActivityCelebrity}
	cfg.Bench.Models = []string{"hybrid"}
	cfg.Param, cfg.Values = "option:threshold", []float64{followers / 2, 10 * followers}
	s, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 2 || s.Label != "model option threshold" {
		t.Fatalf("points %d, label %q", len(s.Points), s.Label)
	}
	var written []float64
	for _, p := range s.Points {
		m := p.Result.Model("hybrid")
		if m == nil {
			t.Fatalf("threshold %v: no hybrid", p.Value)
		}
		w := m.Submit.Cost[cost.RowsWritten]
		t.Logf("threshold %v: %.1f rows written per post", p.Value, w)
		written = append(written, w)
		if want := fmt.Sprintf("threshold=%v", p.Value); !strings.Contains(strings.Join(p.Result.Notes, "\n"), want) {
			t.Errorf("threshold %v: the run's notes do not say %s: %q", p.Value, want, p.Result.Notes)
		}
	}
	if written[0] > 10 || written[1] < followers {
		t.Errorf("rows written per post: %.1f pulled (threshold %v), %.1f pushed (threshold %v): want few, then one per follower at least",
			written[0], s.Points[0].Value, written[1], s.Points[1].Value)
	}
}
