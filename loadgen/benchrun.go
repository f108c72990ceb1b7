package loadgen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/cache"
	"github.com/pushpull/pushpull/internal/stores"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
)

// bench is one run of RunBench once the dataset exists and the server is
// up: it loads the databases and measures the models.
type bench struct {
	cfg      BenchConfig
	res      *results.Result
	dsn      string
	memcache []string
	data     *Dataset
	users    int
	logf     func(format string, args ...any)

	open    map[string]timeline.Store // by model name, plus "load-push" and "load-pull"
	sizes   map[string][2]int64       // data and disk bytes by family
	opened  int                       // stores opened for write phases, for fresh cache namespaces
	harness results.Phase
}

func (b *bench) closeAll() {
	for _, s := range b.open {
		s.Close()
	}
}

func benchDatabase(model string) string {
	if results.Family(model) == "push" {
		return BenchPushDB
	}
	return BenchPullDB
}

// openModel opens a store of model on the benchmark's databases.
// namespace separates its memcached keys from other stores' of the same
// model (see the write phases).
func (b *bench) openModel(ctx context.Context, model, namespace string, policy cache.Policy) (timeline.Store, error) {
	cfg := stores.Config{
		DSN: b.dsn, Database: benchDatabase(model), MaxConns: b.cfg.Concurrency * 8,
		Memcache: b.memcache, Namespace: namespace, CachePolicy: policy,
	}
	if policy == cache.PolicyTTL {
		// Under invalidate the TTL only bounds staleness when an
		// invalidation fails; the package's default stays.
		cfg.CacheTTL = b.cfg.CacheTTL
	}
	return stores.Open(ctx, model, cfg)
}

// store returns the open store of model, opening it the first time.
func (b *bench) store(ctx context.Context, model string) (timeline.Store, error) {
	if s, ok := b.open[model]; ok {
		return s, nil
	}
	s, err := b.openModel(ctx, model, "", "")
	if err != nil {
		return nil, err
	}
	b.open[model] = s
	return s, nil
}

// freshStore opens a store of a cached model whose memcached keys nobody
// has used yet. The write phases need one: posts by other stores (the
// shared pull submission, another cached model) reach the database without
// bumping this store's generations, so a cache filled before them could
// serve pages that lack them.
func (b *bench) freshStore(ctx context.Context, model string, policy cache.Policy) (timeline.Store, error) {
	b.opened++
	s, err := b.openModel(ctx, model, fmt.Sprintf("w%d/", b.opened), policy)
	if err != nil {
		return nil, err
	}
	b.open[fmt.Sprintf("%s#%d", model, b.opened)] = s
	return s, nil
}

func (b *bench) duration(model string) time.Duration {
	switch {
	case model == stores.PullNaive:
		return min(b.cfg.Duration, b.cfg.NaiveCap)
	case slices.Contains(paperModels, model):
		return b.cfg.Duration
	}
	return b.cfg.ExtraDuration
}

// phase runs one measured phase and records a failure if too many of its
// operations failed. onMeasure, if not nil, runs when measuring begins.
func (b *bench) phase(ctx context.Context, name string, dur time.Duration, newOp func(int) Op, onMeasure func()) (results.Phase, error) {
	length := dur.String()
	if b.cfg.Ops > 0 {
		length = fmt.Sprintf("%d ops", b.cfg.Ops)
	}
	b.logf("phase %s (%s, %d workers)", name, length, b.cfg.Concurrency)
	pr, err := RunPhase(ctx, PhaseConfig{
		Name: name, Workers: b.cfg.Concurrency, Warmup: b.cfg.Warmup, Duration: dur, Ops: b.cfg.Ops,
		Progress: b.cfg.Progress, OnMeasure: onMeasure,
	}, newOp)
	if err != nil {
		return results.Phase{}, err
	}
	p := results.PhaseFromHistogram(pr.Latency, pr.Ops, pr.Errors, pr.Seconds)
	b.logf("  = %s: %.0f ops/s, p50 %.2f ms, p99 %.2f ms, %d errors", name, p.OpsPerSec, p.P50Ms, p.P99Ms, p.Errors)
	if pr.ErrorRate() > MaxErrorRate {
		b.res.Failures = append(b.res.Failures, fmt.Sprintf("%s: %.1f%% of operations failed (over %.0f%%), e.g. %s",
			name, 100*pr.ErrorRate(), 100*MaxErrorRate, strings.Join(pr.SampleErrors, "; ")))
	}
	return p, nil
}

func (b *bench) run(ctx context.Context, admin *sql.DB, local bool) error {
	if err := b.load(ctx, admin, local); err != nil {
		return err
	}
	var err error
	if b.harness, err = b.phase(ctx, "harness/noop", min(b.cfg.Duration, time.Second), NewestPage(Noop{}, b.users, b.cfg.Spec.Seed), nil); err != nil {
		return err
	}
	b.res.Harness = &b.harness

	// Reads first, for every model, while the data is as loaded; then
	// writes.
	for _, name := range b.cfg.Models {
		m, err := b.reads(ctx, name)
		if err != nil {
			return err
		}
		b.res.Models = append(b.res.Models, m)
	}
	if err := b.writes(ctx); err != nil {
		return err
	}
	if slices.ContainsFunc(b.cfg.Models, stores.Cached) {
		if err := b.rawGets(ctx); err != nil {
			return err
		}
	}
	b.goals()
	if push := b.res.Model(stores.Push); push != nil && push.Retrieve.OpsPerSec > 0 && b.harness.OpsPerSec < 20*push.Retrieve.OpsPerSec {
		b.res.Failures = append(b.res.Failures, fmt.Sprintf("the harness ran a no-op store at only %.0f ops/s, under 20x push retrieval (%.0f/s): it would be measuring itself",
			b.harness.OpsPerSec, push.Retrieve.OpsPerSec))
	}
	return nil
}

// load creates fresh databases and bulk-loads them, pull first, then push,
// and records their sizes.
func (b *bench) load(ctx context.Context, admin *sql.DB, local bool) error {
	needPush := slices.ContainsFunc(b.cfg.Models, func(m string) bool { return results.Family(m) == "push" })
	needPull := slices.ContainsFunc(b.cfg.Models, func(m string) bool { return results.Family(m) == "pull" })
	var targets []Target
	for _, t := range []struct {
		model, name   string
		need, mailbox bool
	}{{stores.PullSP, "pull", needPull, false}, {stores.Push, "push", needPush, true}} {
		if !t.need {
			continue
		}
		if err := recreate(ctx, admin, benchDatabase(t.model), b.cfg.Force); err != nil {
			return err
		}
		s, err := b.store(ctx, t.model)
		if err != nil {
			return err
		}
		targets = append(targets, Target{Name: t.name, DB: dbOf(s), Mailbox: t.mailbox})
	}
	b.logf("loading ...")
	var err error
	if b.res.Load, err = Load(ctx, b.data, targets, b.cfg.Progress); err != nil {
		return err
	}
	b.logf("loaded in %.1fs", b.res.Load.Seconds)
	b.sizes = map[string][2]int64{}
	for _, t := range targets {
		db := map[string]string{"push": BenchPushDB, "pull": BenchPullDB}[t.Name]
		data, disk, err := dataSize(ctx, admin, db, local)
		if err != nil {
			return err
		}
		b.sizes[t.Name] = [2]int64{data, disk}
		b.logf("%s database: %s data+index, %s on disk", t.Name, mb(data), mb(disk))
	}
	return nil
}

// counters snapshots what a store counts about its own work.
type counters struct {
	cache    cache.Stats
	pull     pull.Stats
	mcBytes  int64
	hasCache bool
	hasPull  bool
}

func (b *bench) snapshot(s timeline.Store, withMemory bool) counters {
	var c counters
	switch s := s.(type) {
	case *cache.Store:
		c.cache, c.hasCache = s.Stats(), true
	case *pull.Store:
		c.pull, c.hasPull = s.Stats(), true
	}
	if withMemory {
		c.mcBytes, _ = memcachedBytes(b.memcache)
	}
	return c
}

// reads measures model's retrieval of newest and older pages.
func (b *bench) reads(ctx context.Context, name string) (results.Model, error) {
	s, err := b.store(ctx, name)
	if err != nil {
		return results.Model{}, err
	}
	fam := results.Family(name)
	m := results.Model{Name: name, DataBytes: b.sizes[fam][0], DiskBytes: b.sizes[fam][1], Extra: map[string]float64{}}
	// Cursors for the older-page phase come from walking sample
	// timelines 2 to 5 pages deep; fewer for the slow models, whose walk
	// would otherwise take longer than their phase.
	dur, sample := b.duration(name), 400
	switch name {
	case stores.PullNaive:
		sample = 40
	case stores.PullClient:
		sample = 100
	}
	usesMemcache := stores.NeedsMemcache(name)
	startMem := b.snapshot(s, usesMemcache)
	if usesMemcache {
		// The figure wanted is a warm cache's, as a service would see
		// it: every user's newest page is read once first (for
		// pull-recent and pull-active, that builds every followed
		// author's list and the heavy followers' indexes, which a live
		// service's posts keep built). Without this a slow model
		// fills its cache during the phase and the rate measures the
		// filling.
		if err := b.warm(ctx, s); err != nil {
			return m, err
		}
		// pull-active: every author's hint targets, which a live
		// service's posts keep built as they keep the lists.
		if p, ok := s.(interface {
			PrimeHintTargets(context.Context, []timeline.UserID) error
		}); ok {
			authors := make([]timeline.UserID, b.users)
			for i := range authors {
				authors[i] = timeline.UserID(i + 1)
			}
			if err := p.PrimeHintTargets(ctx, authors); err != nil {
				return m, err
			}
		}
	}
	var before counters
	if m.Retrieve, err = b.phase(ctx, name+"/retrieve", dur, NewestPage(s, b.users, b.cfg.Spec.Seed), func() { before = b.snapshot(s, false) }); err != nil {
		return m, err
	}
	after := b.snapshot(s, usesMemcache)
	describeCounters(&m, "", before, after)
	if grown := after.mcBytes - startMem.mcBytes; usesMemcache && grown > 0 {
		// What this model's reads added to memcached: the cached pages,
		// or pull-recent's and pull-active's lists and indexes. (Other
		// items expiring meanwhile would make it an underestimate; none
		// expire this soon.)
		m.Extra["memcached_mb"] = float64(grown) / 1e6
	}
	if stores.Cached(name) {
		m.RetrieveOlder.Skipped = true
		b.res.Notes = append(b.res.Notes, fmt.Sprintf("%s: older pages pass through to %s uncached; not measured again", name, stores.Base(name)))
		return m, nil
	}
	pool, err := CollectOlderPages(ctx, s, b.users, sample, b.cfg.Concurrency, b.cfg.Spec.Seed)
	switch {
	case errors.Is(err, ErrNoOlderPages):
		m.RetrieveOlder.Skipped = true
		b.res.Notes = append(b.res.Notes, name+": no timeline has a second page; older-page retrieval not measured")
	case err != nil:
		return m, err
	default:
		if m.RetrieveOlder, err = b.phase(ctx, name+"/retrieve-older", dur, OlderPages(s, pool, b.cfg.Spec.Seed), nil); err != nil {
			return m, err
		}
	}
	return m, nil
}

// warm reads every user's newest page once, concurrently, unmeasured.
func (b *bench) warm(ctx context.Context, s timeline.Store) error {
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	next := make(chan timeline.UserID)
	for range b.cfg.Concurrency {
		g.Go(func() error {
			for u := range next {
				if _, err := s.Timeline(gctx, u, timeline.Query{}); err != nil {
					return fmt.Errorf("warm the cache: user %d: %w", u, err)
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(next)
		for u := 1; u <= b.users; u++ {
			select {
			case next <- timeline.UserID(u):
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	b.logf("  warmed memcached: %d newest pages read in %.1fs", b.users, time.Since(start).Seconds())
	return nil
}

// describeCounters turns the counters a store kept during a phase into
// the model's extra figures, named with prefix.
func describeCounters(m *results.Model, prefix string, before, after counters) {
	if after.hasCache {
		hits := float64(after.cache.Hits - before.cache.Hits)
		misses := float64(after.cache.Misses - before.cache.Misses)
		if hits+misses > 0 {
			m.Extra[prefix+"hit_ratio"] = hits / (hits + misses)
		}
		m.Extra[prefix+"cache_errors"] = float64(after.cache.Errors - before.cache.Errors)
	}
	if after.hasPull {
		if pages := after.pull.Pages - before.pull.Pages; pages > 0 {
			m.Extra[prefix+"rows_per_page"] = float64(after.pull.RowsRead-before.pull.RowsRead) / float64(pages)
		}
		hits, misses := after.pull.CacheHits-before.pull.CacheHits, after.pull.CacheMisses-before.pull.CacheMisses
		if hits+misses > 0 {
			m.Extra[prefix+"list_hit_ratio"] = float64(hits) / float64(hits+misses)
			m.Extra[prefix+"cache_errors"] = float64(after.pull.CacheErrors - before.pull.CacheErrors)
		}
		hits, misses = after.pull.FollowHits-before.pull.FollowHits, after.pull.FollowMisses-before.pull.FollowMisses
		if hits+misses > 0 {
			m.Extra[prefix+"followee_hit_ratio"] = float64(hits) / float64(hits+misses)
		}
		// pull-active: the share of pages its indexes served, and of the
		// indexed reads they could not prove (read from every list).
		indexed, short := after.pull.IndexReads-before.pull.IndexReads, after.pull.IndexFallbacks-before.pull.IndexFallbacks
		if pages := after.pull.Pages - before.pull.Pages; pages > 0 && after.pull.IndexBuilds > 0 {
			m.Extra[prefix+"indexed_page_ratio"] = float64(indexed) / float64(pages)
			if indexed+short > 0 {
				m.Extra[prefix+"index_fallback_ratio"] = float64(short) / float64(indexed+short)
			}
		}
	}
}

// writes measures submission, and the mixed phases.
//
// Order matters because the models share databases. pull-active goes
// first, then pull-recent: their memcached lists of recent ids follow only
// the posts made through a store that keeps them, and pull-active's
// indexes only the posts of a store that sends hints (pull-active's own),
// so neither may read after a store that does less has posted to the pull
// database. Submission is the same single INSERT for
// every other pull strategy, so it is measured once, through pull-sp's
// store, and shown for each. The cached models come last, each phase on a
// cache nobody has filled yet (see freshStore).
func (b *bench) writes(ctx context.Context) error {
	seed := b.cfg.Spec.Seed
	var uncached, cached []*results.Model
	for i := range b.res.Models {
		m := &b.res.Models[i]
		if stores.Cached(m.Name) {
			cached = append(cached, m)
		} else {
			uncached = append(uncached, m)
		}
	}
	rank := func(m *results.Model) int {
		switch m.Name {
		case stores.PullActive:
			return 0
		case stores.PullRecent:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(uncached, func(x, y *results.Model) int { return rank(x) - rank(y) })
	var shared *results.Phase
	var sharedBy []string
	for _, m := range uncached {
		s := b.open[m.Name]
		switch {
		case m.Name == stores.PullRecent || m.Name == stores.PullActive || m.Name == stores.Push:
			// Their submission is a goal figure against plain pull's:
			// the phases get the same length.
			dur := b.duration(m.Name)
			if m.Name != stores.Push {
				dur = b.cfg.Duration
			}
			var before counters
			p, err := b.phase(ctx, m.Name+"/submit", dur, Submit(s, b.data, seed), func() { before = b.snapshot(s, false) })
			if err != nil {
				return err
			}
			m.Submit = p
			if after := b.snapshot(s, false); m.Name == stores.PullActive && after.hasPull && p.Ops > 0 {
				m.Extra["hints_per_post"] = float64(after.pull.Hints-before.pull.Hints) / float64(p.Ops)
			}
			switch m.Name {
			case stores.PullRecent:
				b.res.Notes = append(b.res.Notes, "pull-recent's submission is measured on its own: its posts also append to the author's list in memcached")
			case stores.PullActive:
				b.res.Notes = append(b.res.Notes, "pull-active's submission is measured on its own: its posts also append to the author's list and send a hint to the index of each heavy follower")
			}
		case shared == nil:
			p, err := b.phase(ctx, "pull/submit", b.cfg.Duration, Submit(b.open[stores.PullSP], b.data, seed), nil)
			if err != nil {
				return err
			}
			shared, m.Submit = &p, p
			sharedBy = append(sharedBy, m.Name)
		default:
			m.Submit = *shared
			sharedBy = append(sharedBy, m.Name)
		}
		if b.cfg.ReadRatio > 0 {
			p, err := b.phase(ctx, m.Name+"/mixed", b.duration(m.Name), Mixed(s, b.data, b.cfg.ReadRatio, seed), nil)
			if err != nil {
				return err
			}
			m.Mixed = &p
		}
	}
	if len(sharedBy) > 1 {
		b.res.Notes = append(b.res.Notes, fmt.Sprintf("submission is measured once on the pull database and shown for %s: posting is the same single INSERT for all of them",
			strings.Join(sharedBy, ", ")))
	}
	for _, m := range cached {
		if err := b.cachedWrites(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// cachedWrites measures a cached model's submission and a mixed phase under
// the invalidate policy, then a mixed phase under the ttl policy that also
// measures how stale the served pages were.
func (b *bench) cachedWrites(ctx context.Context, m *results.Model) error {
	seed, dur := b.cfg.Spec.Seed, b.duration(m.Name)
	s, err := b.freshStore(ctx, m.Name, cache.PolicyInvalidate)
	if err != nil {
		return err
	}
	if m.Submit, err = b.phase(ctx, m.Name+"/submit", dur, Submit(s, b.data, seed), nil); err != nil {
		return err
	}
	// The cache the mixed phase reads is filled during its warm-up, after
	// the submissions above, through the same store.
	var before counters
	p, err := b.phase(ctx, fmt.Sprintf("%s/mixed-%.0f%%", m.Name, 100*b.cfg.CacheReadRatio), dur,
		Mixed(s, b.data, b.cfg.CacheReadRatio, seed), func() { before = b.snapshot(s, false) })
	if err != nil {
		return err
	}
	mixed := p
	m.Mixed = &mixed
	describeCounters(m, "mixed_", before, b.snapshot(s, false))

	ttl, err := b.freshStore(ctx, m.Name, cache.PolicyTTL)
	if err != nil {
		return err
	}
	log, stale := NewPostLog(), &StaleStats{}
	p, err = b.phase(ctx, fmt.Sprintf("%s/ttl-mixed-%.0f%%", m.Name, 100*b.cfg.CacheReadRatio), dur,
		StalenessMixed(ttl, b.data, b.cfg.CacheReadRatio, seed, log, stale), func() {
			before = b.snapshot(ttl, false)
			stale.Reset()
		})
	if err != nil {
		return err
	}
	describeCounters(m, "ttl_", before, b.snapshot(ttl, false))
	pages, stalePages, worst := stale.Result()
	m.Extra["ttl_ms"] = float64(b.cfg.CacheTTL.Microseconds()) / 1000
	m.Extra["ttl_mixed_ops_per_sec"] = p.OpsPerSec
	m.Extra["ttl_max_staleness_ms"] = float64(worst.Microseconds()) / 1000
	if pages > 0 {
		m.Extra["ttl_stale_page_ratio"] = float64(stalePages) / float64(pages)
	}
	b.logf("  %s under ttl %v: %d of %d pages stale, at most %v", m.Name, b.cfg.CacheTTL, stalePages, pages, worst.Round(time.Microsecond))
	if worst > b.cfg.CacheTTL {
		b.res.Failures = append(b.res.Failures, fmt.Sprintf("%s: under the ttl policy a page was served %v stale, beyond the TTL of %v", m.Name, worst, b.cfg.CacheTTL))
	}
	return nil
}

// rawGets measures plain memcached gets of one value the size of a cached
// page: the rate a cached read is compared with.
func (b *bench) rawGets(ctx context.Context) error {
	newOp, err := MemcacheGet(ctx, b.memcache, b.cfg.Concurrency, CachedPageBytes)
	if err != nil {
		return err
	}
	p, err := b.phase(ctx, "memcached/get", b.cfg.ExtraDuration, newOp, nil)
	if err != nil {
		return err
	}
	b.res.MemcacheGet = &p
	return nil
}

// CachedPageBytes is about the size of a cached default page of the
// paper's dataset (20 messages; see package cache).
const CachedPageBytes = 2520

// goals records the target figures of the cache and of the fast pull
// strategies, when the run measured what they compare.
func (b *bench) goals() {
	rate := func(name string) float64 {
		if m := b.res.Model(name); m != nil && m.Retrieve.Ran() {
			return m.Retrieve.OpsPerSec
		}
		return 0
	}
	add := func(name string, value, target float64, detail string) {
		b.res.Goals = append(b.res.Goals, results.Goal{Name: name, Value: value, Target: target, Met: value >= target, Detail: detail})
	}
	push, sp := rate(stores.Push), rate(stores.PullSP)

	// The cache: its best model against push and against memcached itself.
	var bestCached string
	for _, m := range b.res.Models {
		if stores.Cached(m.Name) && (bestCached == "" || rate(m.Name) > rate(bestCached)) {
			bestCached = m.Name
		}
	}
	if bestCached != "" && push > 0 {
		add("cached retrieval / push retrieval", rate(bestCached)/push, 5,
			fmt.Sprintf("%s %.0f/s, push %.0f/s", bestCached, rate(bestCached), push))
	}
	if bestCached != "" && b.res.MemcacheGet != nil && b.res.MemcacheGet.OpsPerSec > 0 {
		get := b.res.MemcacheGet.OpsPerSec
		add("cached retrieval / raw memcached get", rate(bestCached)/get, 0.5,
			fmt.Sprintf("%s %.0f/s, get %.0f/s", bestCached, rate(bestCached), get))
	}

	// Pull at push speed: the best pull strategy other than the paper's.
	var best string
	for _, m := range b.res.Models {
		if results.Family(m.Name) == "pull" && !stores.Cached(m.Name) && m.Name != stores.PullSP && (best == "" || rate(m.Name) > rate(best)) {
			best = m.Name
		}
	}
	if best == "" || rate(best) == 0 {
		return
	}
	if sp > 0 {
		add("best pull retrieval / pull-sp retrieval", rate(best)/sp, 10, fmt.Sprintf("%s %.0f/s, pull-sp %.0f/s", best, rate(best), sp))
	}
	if push > 0 {
		add("best pull retrieval / push retrieval", rate(best)/push, 1, fmt.Sprintf("%s %.0f/s, push %.0f/s", best, rate(best), push))
	}
	var plain float64
	for _, m := range b.res.Models {
		if results.Family(m.Name) == "pull" && !stores.Cached(m.Name) && m.Name != stores.PullRecent && m.Name != stores.PullActive && m.Submit.Ran() {
			plain = m.Submit.OpsPerSec
			break
		}
	}
	if bm := b.res.Model(best); bm != nil && bm.Submit.Ran() && plain > 0 {
		add("best pull submission / plain pull submission", bm.Submit.OpsPerSec/plain, 0.7,
			fmt.Sprintf("%s %.0f msg/s, plain %.0f msg/s", best, bm.Submit.OpsPerSec, plain))
	}
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}
