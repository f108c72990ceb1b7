package loadgen

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
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
		mix := workload.DefaultMix()
		cfg := BenchConfig{
			DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Force: true,
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
			if tr.Mix != workload.DefaultMixSpec || (tr.Loop == results.LoopOpen) != open || tr.Total.Ops+tr.Total.Errors != 40 {
				t.Fatalf("%s: traffic %+v", name, tr)
			}
			var sum int64
			for _, op := range workload.MixOps {
				sum += tr.Ops[op].Ops + tr.Ops[op].Errors
			}
			if sum != 40 || tr.Ops[workload.OpNewest].Ops == 0 || !tr.Ops[workload.OpNewest].HasLatency() {
				t.Fatalf("%s: per-operation figures %+v", name, tr.Ops)
			}
			if c := tr.Total.Cost; c == nil || c[cost.Ops] != 40 || !(c[cost.CPU] > 0) {
				t.Fatalf("%s: traffic cost %v", name, c)
			}
			// The unfollows of edges the traffic's follows had added,
			// counted as they grow (workload's TestChurnCountsUndoneFollows
			// checks the count).
			if u := tr.Undone; u == nil || !(0 <= u.AtStart && u.AtStart <= u.AtEnd && u.AtEnd <= u.Total) {
				t.Fatalf("%s: undone follows %+v", name, u)
			}
			// The followers the measured posts went to (workload's
			// TestAudienceCountsPostedAuthors checks the count): every
			// user of this graph has some.
			if tr.Ops[workload.OpPost].Ops > 0 != (tr.Total.PostAudience > 0) {
				t.Fatalf("%s: traffic of %d posts to %.1f followers each", name, tr.Ops[workload.OpPost].Ops, tr.Total.PostAudience)
			}
			// And the messages of its follows' and unfollows' followees
			// (workload's TestChurnCountsFolloweeMessages; package plan's
			// TestPushFollowsOnPowerLawAgainstCountedRun takes them):
			// none without a follow or an unfollow.
			if churned := tr.Ops[workload.OpFollow].Ops + tr.Ops[workload.OpUnfollow].Ops; churned == 0 && tr.Total.FolloweeMessages != 0 {
				t.Fatalf("%s: traffic of %d follows and unfollows of followees of %.1f messages each", name, churned, tr.Total.FolloweeMessages)
			}
			if m.Submit.Ops > 0 != (m.Submit.PostAudience > 0) {
				t.Fatalf("%s: %d posts to %.1f followers each", name, m.Submit.Ops, m.Submit.PostAudience)
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
			if mm, _ := registry.Lookup(name); m.Base != "" || !mm.Persistent() || mm.Needs&(registry.Memcached|registry.Redis) != 0 {
				continue // reads from memory, memcached or Redis
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

// TestBenchRefusesBadTraffic: a bad traffic setting is refused before the
// run starts anything.
func TestBenchRefusesBadTraffic(t *testing.T) {
	spec, _ := dataset.PaperSpec().Scaled(0.002)
	for _, cfg := range []BenchConfig{
		{Rate: -1}, {MaxInFlight: -3}, {SLO: -time.Second}, {SearchSteps: -1}, {Confirm: -2}, {Confirm: MaxConfirm + 1}, {MaxSteal: -0.01}, {MaxSteal: 1.5}, {MaxSteal: math.NaN()}, {StepDuration: -time.Second},
		{Rate: 10, Arrivals: "bursty"}, {Mix: &workload.Mix{}},
	} {
		cfg.DSN, cfg.Spec = "root@tcp(127.0.0.1:1)/", spec
		_, err := RunBench(context.Background(), cfg)
		var ce *ConfigError
		var oe *openloop.ConfigError
		var me *workload.MixError
		if !errors.As(err, &ce) && !errors.As(err, &oe) && !errors.As(err, &me) {
			t.Errorf("%+v: got %v, want a typed error", cfg, err)
		}
	}
}

// TestBenchRefusesUnknownOptions: an option that no measured model
// declares, or a value one that declares it does not take, is refused
// before the run starts anything; an option some model declares is not.
func TestBenchRefusesUnknownOptions(t *testing.T) {
	spec, _ := dataset.PaperSpec().Scaled(0.002)
	models := DefaultBenchModels()
	for opts, want := range map[string]error{"cpa=20": registry.ErrUnknownOption, "concurrency=0": registry.ErrBadOption, "concurrency=": registry.ErrBadOption} {
		name, v, _ := strings.Cut(opts, "=")
		cfg := BenchConfig{DSN: "root@tcp(127.0.0.1:1)/", Spec: spec, Models: models, Options: map[string]string{name: v}}
		_, err := RunBench(context.Background(), cfg)
		var oe *registry.OptionError
		if !errors.As(err, &oe) || !errors.Is(err, want) {
			t.Errorf("--option %s: got %v, want a *registry.OptionError matching %v", opts, err, want)
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

// TestRateSearchStepsStartWarm: each step of a rate search of a design
// whose reads are measured warm (push-redis) starts, like its traffic
// phase, after every user's newest page was read: the step before, or the
// traffic phase's end, may have left its state cold (a fence paid, every
// feed to rebuild), which the step would otherwise measure instead of the
// rate. Each step records what the store counted over it, so that such a
// step shows.
func TestRateSearchStepsStartWarm(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.01)
	if err != nil {
		t.Fatal(err)
	}
	mix := workload.DefaultMix()
	var progress bytes.Buffer
	cfg := BenchConfig{
		DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Force: true,
		Spec: spec, Scale: 0.01, Models: []string{"push-redis"}, Mix: &mix, TrafficOnly: true,
		Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond, Concurrency: 2, Progress: &progress,
		FindRate: true, SLO: 50 * time.Millisecond, StepDuration: 200 * time.Millisecond, SearchSteps: 3,
	}
	res, err := RunBench(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	m := res.Model("push-redis")
	if m == nil || m.Traffic == nil || m.Traffic.Search == nil || len(m.Traffic.Search.Steps) == 0 {
		t.Fatalf("no rate search: %+v\n%s", m, progress.String())
	}
	_, search, ok := strings.Cut(progress.String(), "search push-redis")
	if !ok {
		t.Fatalf("no search in the progress:\n%s", progress.String())
	}
	warm, steps := 0, 0
	for line := range strings.Lines(search) {
		switch {
		case strings.Contains(line, "warmed: 100 newest pages"):
			warm++
		case strings.HasPrefix(line, "phase push-redis/slo@"):
			if warm != steps+1 {
				t.Errorf("step %d began after %d warm-ups: %s", steps+1, warm, line)
			}
			steps++
		}
	}
	if steps != len(m.Traffic.Search.Steps) {
		t.Errorf("%d steps in the progress, %d in the result:\n%s", steps, len(m.Traffic.Search.Steps), search)
	}
	for i, st := range m.Traffic.Search.Steps {
		// Every step but the first waited for the box to settle, at
		// least one look at its CPU (settleBox).
		if i == 0 && (st.SettleS != 0 || st.Unsettled) {
			t.Errorf("the first step waited %.2fs to settle (unsettled %v)", st.SettleS, st.Unsettled)
		}
		if i > 0 && st.SettleS < SettleWindow.Seconds() {
			t.Errorf("step %d waited %.3fs for the box to settle, less than one look at its CPU", i+1, st.SettleS)
		}
		_, fences := st.Counted[counter.Fences]
		_, rebuilds := st.Counted[counter.Rebuilds]
		if !fences || !rebuilds || st.Counted[counter.FeedPages] <= 0 {
			t.Errorf("step %d counted %v; want push-redis's fences, rebuilds and the pages its feeds served", i+1, st.Counted)
		}
	}
}

// TestRateSearchStartsWithReadersActive: a rate search of push-active,
// whose reads are measured cold but build the mailboxes of the readers
// they make active (Bench.WarmSearch), starts after every user's newest
// page was read once: its first step rebuilds no mailbox, where after a
// short traffic phase at 500 users most readers had not read yet and
// the first steps would measure their rebuilds instead of the rate.
func TestRateSearchStartsWithReadersActive(t *testing.T) {
	spec, err := dataset.PaperSpec().Scaled(0.05) // 500 users
	if err != nil {
		t.Fatal(err)
	}
	mix := workload.DefaultMix()
	var progress bytes.Buffer
	cfg := BenchConfig{
		DSN: testserver.DSN(t), Force: true, Spec: spec, Scale: 0.05, Models: []string{"push-active"}, Mix: &mix, TrafficOnly: true,
		Duration: 100 * time.Millisecond, Warmup: 50 * time.Millisecond, Concurrency: 2, Progress: &progress,
		FindRate: true, SLO: 50 * time.Millisecond, StepDuration: 300 * time.Millisecond, SearchSteps: 2,
	}
	res, err := RunBench(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	m := res.Model("push-active")
	if m == nil || m.Traffic == nil || m.Traffic.Search == nil || len(m.Traffic.Search.Steps) == 0 {
		t.Fatalf("no rate search: %+v\n%s", m, progress.String())
	}
	_, search, _ := strings.Cut(progress.String(), "search push-active")
	warmed, _, ok := strings.Cut(search, "phase push-active/slo@")
	if !ok || !strings.Contains(warmed, "warmed: 500 newest pages") {
		t.Errorf("the search's first step did not follow a read of every user's newest page:\n%s", progress.String())
	}
	first := m.Traffic.Search.Steps[0]
	if n, ok := first.Counted[counter.Rebuilds]; !ok || n != 0 {
		t.Errorf("the first step counted %d rebuilds (%v); want none, every reader active", n, first.Counted)
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
	mix := workload.DefaultMix()
	var progress bytes.Buffer
	cfg := BenchConfig{
		DSN: testserver.DSN(t), Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Force: true,
		Spec: spec, Scale: 0.05, Models: models, Mix: &mix, Rate: 150, TrafficOnly: true,
		Duration: time.Second, Warmup: 100 * time.Millisecond, Concurrency: 2, Progress: &progress,
	}
	res, err := RunBench(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if n := strings.Count(progress.String(), "warmed: 500 newest pages"); n != len(models) {
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

// TestReleaseIdleConnections: a design's traffic and rate search leave its
// pool holding as many idle connections as were ever in flight (up to the
// run's bound, 64), and a run keeps every design's store open to its end:
// nineteen designs' pools held more than a server's 1,000 connections,
// and the last designs' traffic failed with "Too many connections".
// releaseIdle closes a pool's idle connections and leaves it working.
func TestReleaseIdleConnections(t *testing.T) {
	ctx := context.Background()
	m, err := registry.Lookup("push")
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Open(ctx, registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.(timeline.DBHolder).DB()
	var wg sync.WaitGroup
	conns := make(chan *sql.Conn, 20)
	for range 20 {
		wg.Go(func() {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			conns <- c
		})
	}
	wg.Wait()
	close(conns)
	for c := range conns {
		c.Close()
	}
	if idle := db.Stats().Idle; idle < 20 {
		t.Fatalf("%d idle connections after 20 at once, want 20", idle)
	}
	releaseIdle(s)
	if idle := db.Stats().Idle; idle != 0 {
		t.Fatalf("%d idle connections after releaseIdle", idle)
	}
	if _, err := s.Timeline(ctx, 1, timeline.Query{}); err != nil {
		t.Fatal(err)
	}
	if idle := db.Stats().Idle; idle != 1 {
		t.Fatalf("%d idle connections after a page, want the pool to keep 1 again", idle)
	}
}

// TestTrafficPostsSpreadOverAuthors: the posts of a run's traffic land in
// the database of the design that made them, where every design measured
// later on that database reads them, so they must be spread over the
// authors as the activity spreads independent draws. Two designs on one
// database, each with a traffic phase and a rate search of posts only (a
// few hundred posts on 500 users):
// the authors who posted are nearly as many as independent draws of the
// run's posts would reach. Were every phase and every step of the search
// to draw the same operations again, the same few authors would post over
// and over, and a pull design measured after them would read their piles
// (pull-merge's traffic read 322 rows per operation after the other pull
// designs' rate searches against 162 alone, at 3,000 users).
func TestTrafficPostsSpreadOverAuthors(t *testing.T) {
	var shared []registry.Model
	for _, m := range notOnVitess(registry.Listed()) {
		if m.Needs != registry.MariaDB || !m.Persistent() {
			continue
		}
		if len(shared) == 0 || m.Database == shared[0].Database {
			shared = append(shared, m)
		}
		if len(shared) == 2 {
			break
		}
	}
	if len(shared) < 2 {
		t.Fatalf("no two listed designs share a database: %v", shared)
	}
	spec, err := dataset.PaperSpec().Scaled(0.05) // 500 users
	if err != nil {
		t.Fatal(err)
	}
	if spec.Activity.Mode == dataset.ActivitySkewed {
		t.Fatalf("activity %s: the test counts authors of uniform draws", spec.Activity)
	}
	mix, err := workload.ParseMix("post=1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := BenchConfig{
		DSN: testserver.DSN(t), Force: true, Spec: spec, Scale: 0.05, Models: registry.Names(shared),
		Mix: &mix, TrafficOnly: true, Rate: 400, Ops: 100, Warmup: 50 * time.Millisecond,
		FindRate: true, SearchSteps: 2, StepDuration: 150 * time.Millisecond, Progress: io.Discard,
	}
	if _, err := RunBench(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: testserver.DSN(t), Database: shared[0].Database, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	// The dataset's messages are ids 1 to len(Authors); the traffic's
	// come after them.
	var posts, authors int64
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT author_id) FROM messages WHERE id > ?`,
		len(d.Authors)).Scan(&posts, &authors); err != nil {
		t.Fatal(err)
	}
	users := float64(len(d.Followees))
	expect := users * (1 - math.Pow(1-1/users, float64(posts)))
	t.Logf("%s: %d posts by %d authors; independent draws reach %.0f on average", strings.Join(cfg.Models, ", "), posts, authors, expect)
	if posts < 2*cfg.Ops {
		t.Fatalf("%d posts: fewer than the two traffic phases' %d", posts, 2*cfg.Ops)
	}
	if float64(authors) < 0.9*expect {
		t.Errorf("the run's %d posts are by %d authors, where independent draws reach %.0f: phases and steps posted as the same authors", posts, authors, expect)
	}
}

// TestTrafficOlderCursorsAreFresh: a design's traffic pages down from
// cursors walked on its own store as its traffic begins. Cursors walked
// once, by the first design read on a database, lie below every post the
// designs measured in between made, and a pull design's first step reads
// each followee's messages above its cursor: pull-merge's older pages read
// 209 rows in that step after pull-active's and pull-recent's rate
// searches, 138 alone (1,000 users).
func TestTrafficOlderCursorsAreFresh(t *testing.T) {
	ctx := context.Background()
	var m registry.Model
	for _, c := range notOnVitess(registry.Listed()) {
		if c.Needs == registry.MariaDB && c.Persistent() {
			m = c
			break
		}
	}
	s, err := m.Open(ctx, registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	spec, err := dataset.PaperSpec().Scaled(0.005) // 50 users
	if err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	b := &bench{cfg: BenchConfig{Spec: spec, Concurrency: 2}, data: d, open: map[string]timeline.Store{m.Name: s}}
	if _, err := b.olderPool(ctx, m); err != nil {
		t.Fatal(err)
	}
	// Another design's traffic on the database: a post by every user.
	for u := range len(d.Followees) {
		if _, err := s.Post(ctx, timeline.UserID(u+1), "later"); err != nil {
			t.Fatal(err)
		}
	}
	pool, err := b.olderPool(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, o := range pool {
		if o.Depth != 2 {
			continue
		}
		p, err := s.Timeline(ctx, o.User, timeline.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if o.Cursor != p.Next {
			t.Fatalf("%s: user %d's cursor to page 2 is %s, where the page now leads to %s", m.Name, o.User, o.Cursor, p.Next)
		}
		checked++
	}
	if checked == 0 {
		t.Fatalf("%s: no cursor to a page 2 among %d", m.Name, len(pool))
	}
}

// TestSearchResultKeepsRetries: a step that re-ran a failed rate is marked
// in the saved search, and the best rate is the search's.
func TestSearchResultKeepsRetries(t *testing.T) {
	sr := openloop.SearchResult{Best: 1000, Steps: []openloop.Step{
		{Rate: 1000, Held: false}, {Rate: 500, Held: true}, {Rate: 1000, Held: true, Retry: true},
		{Rate: 2000, Held: false, Disturbed: true, Result: openloop.Result{Steal: 0.12, StealKnown: true}},
		{Rate: 2000, Held: true, Retry: true, Result: openloop.Result{StealKnown: true}},
	}}
	got := searchResult(50*time.Millisecond, 2*time.Second, 1000, sr)
	if got.BestPerSec != 1000 || len(got.Steps) != 5 {
		t.Fatalf("search %+v", got)
	}
	for i, want := range []bool{false, false, true, false, true} {
		if got.Steps[i].Retry != want {
			t.Errorf("step %d: retry %v, want %v", i, got.Steps[i].Retry, want)
		}
		if got.Steps[i].Disturbed != (i == 3) {
			t.Errorf("step %d: disturbed %v", i, got.Steps[i].Disturbed)
		}
	}
	// The steal is saved where it was read, as a measured 0 too, and
	// left out where it was not.
	if got.Steps[0].StealShare != nil || got.Steps[3].StealShare == nil || *got.Steps[3].StealShare != 0.12 || got.Steps[4].StealShare == nil || *got.Steps[4].StealShare != 0 {
		t.Errorf("steal shares %v, %v, %v", got.Steps[0].StealShare, got.Steps[3].StealShare, got.Steps[4].StealShare)
	}
	b, err := json.Marshal(got.Steps[3])
	if err != nil || !strings.Contains(string(b), `"steal_share":0.12`) || !strings.Contains(string(b), `"disturbed":true`) {
		t.Errorf("saved step %s, %v", b, err)
	}
}
