package loadgen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
)

// TestTrafficEveryModel runs the mixed traffic, with per-operation
// figures and costs, for every registered model at a tiny scale in a
// closed loop; then for two models in an open loop, with a short rate
// search.
func TestTrafficEveryModel(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.002)
	if err != nil {
		t.Fatal(err)
	}
	pushModel := registry.Models()[0].Name // the reference sorts first
	for _, m := range registry.Models() {
		if m.Family == registry.FamilyPush {
			pushModel = m.Name
			break
		}
	}
	cached := registry.Offered(memcache.Variant)[0].Name
	for _, open := range []bool{false, true} {
		mix := DefaultMix()
		cfg := BenchConfig{
			DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Force: true,
			Spec: spec, Scale: 0.002, Models: registry.Names(notOnVitess(registry.Listed())), Ops: 40, Mix: &mix,
		}
		if open {
			cfg.Models = []string{pushModel, cached}
			cfg.Rate, cfg.FindRate, cfg.SearchSteps, cfg.StepDuration = 300, true, 3, 200*time.Millisecond
		}
		var progress bytes.Buffer
		cfg.Progress = &progress
		if testing.Verbose() {
			cfg.Progress = io.MultiWriter(&progress, os.Stderr)
		}
		start := time.Now()
		res, err := RunBench(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		phasesInOrder(t, progress.String())
		t.Logf("open loop %v: %v", open, time.Since(start))
		for _, f := range res.Failures {
			// Forty no-op operations are too few to time the harness.
			if !strings.Contains(f, "harness") {
				t.Fatalf("failure: %s", f)
			}
		}
		for _, name := range cfg.Models {
			m := res.Model(name)
			if m == nil || m.Traffic == nil {
				t.Fatalf("%s: no traffic (%v)", name, m)
			}
			tr := m.Traffic
			if tr.Mix != DefaultMixSpec || (tr.Loop == results.LoopOpen) != open || tr.Total.Ops+tr.Total.Errors != 40 {
				t.Fatalf("%s: traffic %+v", name, tr)
			}
			var sum int64
			for _, op := range MixOps {
				sum += tr.Ops[op].Ops + tr.Ops[op].Errors
			}
			if sum != 40 || tr.Ops[OpNewest].Ops == 0 || !tr.Ops[OpNewest].HasLatency() {
				t.Fatalf("%s: per-operation figures %+v", name, tr.Ops)
			}
			if c := tr.Total.Cost; c == nil || c[cost.Ops] != 40 || !(c[cost.CPU] > 0) {
				t.Fatalf("%s: traffic cost %v", name, c)
			}
			if c := m.Retrieve.Cost; c == nil || c[cost.Ops] != 40 {
				t.Fatalf("%s: retrieval cost %v", name, c)
			}
			if open {
				if tr.Open == nil || tr.Open.Scheduled != 40 || tr.Open.Service.Ops != tr.Total.Ops {
					t.Fatalf("%s: open loop %+v", name, tr.Open)
				}
				if s := tr.Search; s == nil || len(s.Steps) == 0 || len(s.Steps) > 3 || s.SLOMs != 50 || s.StartPerSec <= 0 {
					t.Fatalf("%s: rate search %+v", name, s)
				}
			}
			if mm, _ := registry.Lookup(name); m.Base != "" || !mm.Persistent() || mm.Needs&registry.Memcached != 0 {
				continue // reads from memory or memcached
			}
			if !(m.Retrieve.Cost[cost.RowsRead] > 0) || !(m.Submit.Cost[cost.RowsWritten] >= 1) {
				t.Fatalf("%s: rows read per page %v, written per post %v", name, m.Retrieve.Cost, m.Submit.Cost)
			}
		}
	}
}

// phasesInOrder requires of a run's progress that every phase that reads
// while it writes (traffic, mixed) starts before the first submission: a
// submission's burst of posts would change the dataset they read.
func phasesInOrder(t *testing.T, progress string) {
	t.Helper()
	var phases []string
	for line := range strings.Lines(progress) {
		if name, ok := strings.CutPrefix(line, "phase "); ok {
			phases = append(phases, strings.Fields(name)[0])
		}
	}
	firstSubmit := slices.IndexFunc(phases, func(p string) bool { return strings.HasSuffix(p, "/submit") })
	if firstSubmit < 0 {
		t.Fatalf("no submission phase in %v", phases)
	}
	for _, p := range phases[firstSubmit:] {
		if strings.HasSuffix(p, "/traffic") || strings.HasSuffix(p, "/mixed") {
			t.Fatalf("phase %s runs after a submission: %v", p, phases)
		}
	}
}

// edgeStore is a Store that keeps only the follow graph.
type edgeStore struct {
	timeline.Store
	mu    sync.Mutex
	edges map[edge]bool
	fail  bool
}

func (s *edgeStore) Follow(_ context.Context, a, b timeline.UserID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("refused")
	}
	s.edges[edge{uint32(a), uint32(b)}] = true
	return nil
}

func (s *edgeStore) Unfollow(_ context.Context, a, b timeline.UserID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("refused")
	}
	delete(s.edges, edge{uint32(a), uint32(b)})
	return nil
}

// TestChurnKeepsTheGraph: concurrent follows and unfollows in equal
// numbers leave the graph within a few edges of the dataset's, never touch
// one edge twice at once, and Restore makes it the dataset's again, even
// after failed operations.
func TestChurnKeepsTheGraph(t *testing.T) {
	d, err := dataset.Generate(dataset.Spec{Users: 200, Messages: 10, AvgFollowees: 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	s := &edgeStore{edges: map[edge]bool{}}
	d.EachFollow(func(a, b uint32) error { s.edges[edge{a, b}] = true; return nil })
	want := len(s.edges)
	c := NewChurn(d)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(9, uint64(w)))
			for i := range 500 {
				op := c.Follow
				if (i+w)%2 == 0 {
					op = c.Unfollow
				}
				if err := op(ctx, s, rng); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if drift := c.Drift(); drift > 16 {
		t.Errorf("the graph drifted by %d edges after 4,000 balanced operations", drift)
	}
	if n := len(s.edges); n < want-16 || n > want+16 {
		t.Errorf("%d edges, the dataset has %d", n, want)
	}
	// A run of follows only adds edges; failures are not recorded.
	rng := rand.New(rand.NewPCG(1, 1))
	for range 50 {
		c.Follow(ctx, s, rng)
	}
	s.fail = true
	for range 10 {
		if err := c.Unfollow(ctx, s, rng); err == nil {
			t.Fatal("a refused unfollow succeeded")
		}
	}
	s.fail = false
	if err := c.Restore(ctx, s); err != nil {
		t.Fatal(err)
	}
	if len(s.edges) != want || c.Drift() != 0 {
		t.Fatalf("after Restore: %d edges, drift %d; the dataset has %d", len(s.edges), c.Drift(), want)
	}
	for e := range s.edges {
		if !c.inDataset(e) {
			t.Fatalf("edge %v is not the dataset's", e)
		}
	}
}

func TestParseMix(t *testing.T) {
	m, err := ParseMix(" newest=80, older=10,post=8,follow=1,unfollow=1 ")
	if err != nil {
		t.Fatal(err)
	}
	if m.String() != "newest=80,older=10,post=8,follow=1,unfollow=1" || m.Share(OpPost) != 0.08 {
		t.Fatalf("%s, post share %v", m, m.Share(OpPost))
	}
	if d, _ := ParseMix("default"); d.String() != DefaultMixSpec || d.Share(OpNewest)+d.Share(OpOlder) < 0.9 {
		t.Fatalf("default mix %s", d)
	}
	// pick follows the weights.
	counts := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		counts[MixOps[m.pick(rng.Float64())]]++
	}
	if counts[OpNewest] < 79000 || counts[OpNewest] > 81000 || counts[OpFollow] < 800 || counts[OpFollow] > 1200 {
		t.Fatalf("picked %v", counts)
	}
	if only, _ := ParseMix("post=1"); only.pick(0.999) != 2 || only.pick(0) != 2 {
		t.Fatal("a one-operation mix picked another")
	}
	for _, bad := range []string{"", "newest", "newest=", "newest=-1", "newest=NaN", "newest=Inf", "newest=1,newest=2",
		"read=1", "newest=0,post=0", "newest=1;post=1"} {
		_, err := ParseMix(bad)
		var me *MixError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), "mix") {
			t.Errorf("%q: got %v, want a *MixError", bad, err)
		}
	}
}

// TestBenchRefusesBadTraffic: a bad traffic setting is refused before the
// run starts anything.
func TestBenchRefusesBadTraffic(t *testing.T) {
	spec, _ := dataset.PaperSpec().Scaled(0.002)
	for _, cfg := range []BenchConfig{
		{Rate: -1}, {MaxInFlight: -3}, {SLO: -time.Second}, {SearchSteps: -1}, {StepDuration: -time.Second},
		{Rate: 10, Arrivals: "bursty"}, {Mix: &Mix{}},
	} {
		cfg.DSN, cfg.Spec = "root@tcp(127.0.0.1:1)/", spec
		_, err := RunBench(context.Background(), cfg)
		var ce *ConfigError
		var oe *openloop.ConfigError
		var me *MixError
		if !errors.As(err, &ce) && !errors.As(err, &oe) && !errors.As(err, &me) {
			t.Errorf("%+v: got %v, want a typed error", cfg, err)
		}
	}
}

// whoStore records whose timelines are read and who posts.
type whoStore struct {
	timeline.Store
	mu             sync.Mutex
	readers, posts map[timeline.UserID]int
}

func (w *whoStore) Timeline(ctx context.Context, u timeline.UserID, q timeline.Query) (timeline.Page, error) {
	if q.Before == "" {
		w.mu.Lock()
		w.readers[u]++
		w.mu.Unlock()
	}
	return w.Store.Timeline(ctx, u, q)
}

func (w *whoStore) Post(ctx context.Context, u timeline.UserID, body string) (timeline.Message, error) {
	w.mu.Lock()
	w.posts[u]++
	w.mu.Unlock()
	return w.Store.Post(ctx, u, body)
}

// TestTrafficFollowsActivity: the mixed traffic draws the readers of its
// newest pages and the authors of its posts by the dataset's activity, so
// under skewed activity the most followed users read and post far more
// often than a uniform draw would make them.
func TestTrafficFollowsActivity(t *testing.T) {
	spec := dataset.Spec{Users: 2000, Messages: 20_000, AvgFollowees: 20, Graph: dataset.GraphPowerLaw, Seed: 3,
		Activity: dataset.Activity{Mode: dataset.ActivitySkewed, PostExponent: 1, ReadExponent: 1}}
	d, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	in := d.Stats().Followers
	var meanIn float64
	for _, f := range in {
		meanIn += float64(f)
	}
	meanIn /= float64(len(in))

	w := &whoStore{Store: timeline.NewMemory(), readers: map[timeline.UserID]int{}, posts: map[timeline.UserID]int{}}
	mix, err := ParseMix("newest=50,post=50")
	if err != nil {
		t.Fatal(err)
	}
	op := Traffic(w, d, mix, nil, NewChurn(d), 1)(0)
	for range 20_000 {
		if _, err := op(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Under exponent 1 a user is drawn in proportion to 1+followers, so
	// the drawn users average E[f(1+f)]/E[1+f] followers: far above the
	// mean on a power-law graph.
	var sq float64
	for _, f := range in {
		sq += float64(f) * float64(1+f)
	}
	want := sq / float64(len(in)) / (1 + meanIn)
	for name, drawn := range map[string]map[timeline.UserID]int{"readers": w.readers, "authors": w.posts} {
		var sum, n float64
		for u, c := range drawn {
			sum += float64(c) * float64(in[u-1])
			n += float64(c)
		}
		got := sum / n
		t.Logf("%s: %.0f draws average %.1f followers (mean %.1f, expected %.1f)", name, n, got, meanIn, want)
		if got < 0.7*want || got > 1.3*want {
			t.Errorf("%s average %.1f followers, want about %.1f (a uniform draw gives %.1f)", name, got, want, meanIn)
		}
	}
}

// notOnVitess leaves out the models on Vitess: this package's tests start
// no Vitess cluster (registry/all's do).
func notOnVitess(ms []registry.Model) []registry.Model {
	var out []registry.Model
	for _, m := range ms {
		if !m.OnVitess() {
			out = append(out, m)
		}
	}
	return out
}

// followStore counts the followees of the follows made through it.
type followStore struct {
	timeline.Store
	mu        sync.Mutex
	followees map[timeline.UserID]int
}

func (f *followStore) Follow(ctx context.Context, a, b timeline.UserID) error {
	f.mu.Lock()
	f.followees[b]++
	f.mu.Unlock()
	return f.Store.Follow(ctx, a, b)
}

// TestFollowsPreferThePopular: under skewed activity a follow of the
// mixed traffic picks its followee in proportion to 1+followers
// (preferential attachment, as people follow on a real service), so the
// followees average E[f(1+f)]/E[1+f] followers, far above the mean; under
// uniform activity they are drawn uniformly, as in the paper's workload.
func TestFollowsPreferThePopular(t *testing.T) {
	for _, c := range []struct {
		mode    string
		popular bool
	}{{dataset.ActivitySkewed, true}, {dataset.ActivityUniform, false}} {
		spec := dataset.Spec{Users: 2000, Messages: 2_000, AvgFollowees: 20, Graph: dataset.GraphPowerLaw, Seed: 5,
			Activity: dataset.Activity{Mode: c.mode}}
		d, err := dataset.Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		in := d.Stats().Followers
		var mean, weighted, weights float64
		for _, f := range in {
			mean += float64(f)
			w := float64(1+f) * (1 - float64(f)/float64(spec.Users))
			weighted += w * float64(f)
			weights += w
		}
		mean /= float64(len(in))
		want := mean
		if c.popular {
			want = weighted / weights
		}
		fs := &followStore{Store: timeline.NewMemory(), followees: map[timeline.UserID]int{}}
		churn := NewChurn(d)
		rng := rand.New(rand.NewPCG(1, 2))
		for range 1000 {
			if err := churn.Follow(context.Background(), fs, rng); err != nil {
				t.Fatal(err)
			}
		}
		var sum, n float64
		for u, k := range fs.followees {
			sum += float64(k) * float64(in[u-1])
			n += float64(k)
		}
		got := sum / n
		t.Logf("%s: %.0f follows' followees average %.1f followers (mean %.1f, expected %.1f)", c.mode, n, got, mean, want)
		if n < 900 || got < 0.7*want || got > 1.3*want {
			t.Errorf("%s: %.0f follows, followees average %.1f followers, want about %.1f", c.mode, n, got, want)
		}
	}
}

// TestTrafficOnlyIsWarm: a run of the traffic phase alone (what a
// recommendation runs) measures the models whose reads are measured warm
// (Bench.WarmReads) warm too, as the full benchmark's traffic does after
// its read phases: every user's newest page is read first, so the traffic
// does not spend itself building what a running service already holds.
func TestTrafficOnlyIsWarm(t *testing.T) {
	var models []string
	for _, m := range notOnVitess(registry.Listed()) {
		if m.Bench.WarmReads && !m.Bench.Has(registry.PhaseCacheMixed) && m.Persistent() {
			models = append(models, m.Name)
		}
	}
	if len(models) == 0 {
		t.Fatal("no model reads warm")
	}
	spec, err := dataset.PaperSpec().Scaled(0.05) // 500 users: most of them read once or not at all
	if err != nil {
		t.Fatal(err)
	}
	mix := DefaultMix()
	var progress bytes.Buffer
	cfg := BenchConfig{
		DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Force: true,
		Spec: spec, Scale: 0.05, Models: models, Mix: &mix, Rate: 150, TrafficOnly: true,
		Duration: time.Second, Warmup: 100 * time.Millisecond, Concurrency: 2, Progress: &progress,
	}
	res, err := RunBench(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if n := strings.Count(progress.String(), "warmed memcached: 500 newest pages"); n != len(models) {
		t.Errorf("%d warm-ups for %d models %v:\n%s", n, len(models), models, progress.String())
	}
	measured := 0
	for _, name := range models {
		m := res.Model(name)
		if m == nil || m.Traffic == nil || m.Traffic.Total.Ops == 0 {
			t.Fatalf("%s: no traffic: %+v", name, m)
		}
		builds, ok := m.Extra["traffic_index_builds_per_op"]
		t.Logf("%s: %v index builds per operation (reported: %v)", name, builds, ok)
		if ok {
			measured++
			// Cold, nearly every read is a reader's first and builds.
			if builds > 0.2 {
				t.Errorf("%s: %.2f index builds per operation of the traffic: measured cold", name, builds)
			}
		}
	}
	if measured == 0 {
		t.Errorf("none of %v reports its index builds", models)
	}
}

// cursorStore records which cursor of each user's page at each depth its
// reads returned last, and counts the older reads that used it and those
// that used an earlier one.
type cursorStore struct {
	timeline.Store
	mu           sync.Mutex
	depth        map[userCursor]int            // a cursor returned for a user: the depth of the page it leads to
	latest       map[userDepth]timeline.Cursor // the cursor last returned for a user's page at a depth
	fresh, stale int
}

type userCursor struct {
	u timeline.UserID
	c timeline.Cursor
}

type userDepth struct {
	u timeline.UserID
	d int
}

func (s *cursorStore) Timeline(ctx context.Context, u timeline.UserID, q timeline.Query) (timeline.Page, error) {
	p, err := s.Store.Timeline(ctx, u, q)
	if err != nil {
		return p, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := 1
	if q.Before != "" {
		d = s.depth[userCursor{u, q.Before}]
		if s.latest[userDepth{u, d}] == q.Before {
			s.fresh++
		} else {
			s.stale++
		}
	}
	if p.Next != "" {
		s.depth[userCursor{u, p.Next}] = d + 1
		s.latest[userDepth{u, d + 1}] = p.Next
	}
	return p, nil
}

// TestTrafficOlderPagesFollowReads: an older page of the mixed traffic
// continues from the cursor the traffic's latest read of the page before
// it returned, not from one walked before the phase, which new posts
// would push ever deeper (an index that keeps a user's newest entries
// then cannot prove the page, the longer the phase the more often).
func TestTrafficOlderPagesFollowReads(t *testing.T) {
	ctx := context.Background()
	d, err := dataset.Generate(dataset.Spec{Users: 20, Messages: 2_000, AvgFollowees: 8, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	s := &cursorStore{Store: timeline.NewMemory(), depth: map[userCursor]int{}, latest: map[userDepth]timeline.Cursor{}}
	if err := d.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	pool, err := CollectOlderPages(ctx, s, d, 20, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := ParseMix("newest=40,older=40,post=20")
	if err != nil {
		t.Fatal(err)
	}
	op := Traffic(s, d, mix, pool, NewChurn(d), 1)(0)
	for range 5_000 {
		if _, err := op(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("older reads from the latest cursor: %d, from an earlier one: %d", s.fresh, s.stale)
	if s.stale > 0 || s.fresh < 1_000 {
		t.Errorf("%d older reads continued from an earlier cursor than the latest read returned (%d from the latest)", s.stale, s.fresh)
	}
}
