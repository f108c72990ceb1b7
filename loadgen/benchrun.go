package loadgen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/tablecache"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/load"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// bench is one run of RunBench once the dataset exists and the server is
// up: it loads the databases and measures the models.
type bench struct {
	cfg      BenchConfig
	res      *results.Result
	dsn      string
	memcache []string
	redis    string
	// vtgate and vtgateStatus: the Vitess cluster's, for the models on it.
	vtgate, vtgateStatus string
	data                 *dataset.Dataset
	users                int
	logf                 func(format string, args ...any)

	models  []registry.Model            // cfg.Models, looked up
	open    map[string]timeline.Store   // by model name
	fresh   map[string][]timeline.Store // unused stores of cache-mixed models, by name: invalidate, then ttl
	traffic map[string]timeline.Store   // the traffic phase's unused store of a cache-mixed model, by name
	sizes   map[string][2]int64         // data and disk bytes by database
	meter   *cost.Meter                 // nil once a snapshot failed
}

func (b *bench) closeAll() {
	b.eachStore(func(s timeline.Store) { s.Close() })
}

// eachStore calls f with every store the run has open: the models', the
// cache-mixed models' unused fresh ones and their traffic phases'.
func (b *bench) eachStore(f func(timeline.Store)) {
	for _, s := range b.open {
		f(s)
	}
	for _, ss := range b.fresh {
		for _, s := range ss {
			f(s)
		}
	}
	for _, s := range b.traffic {
		f(s)
	}
}

// openModel opens a store of m on the benchmark's databases. namespace
// separates its memcached keys from other stores' of the same model (see
// the cache-mixed phases); options are the variant's, over the run's
// options that m declares.
func (b *bench) openModel(ctx context.Context, m registry.Model, namespace string, options map[string]string) (timeline.Store, error) {
	if own := m.OwnOptions(b.cfg.Options); len(own) > 0 {
		maps.Copy(own, options)
		options = own
	}
	conns := b.cfg.Concurrency * 8
	if b.cfg.Mix != nil && (b.cfg.Rate > 0 || b.cfg.FindRate || b.cfg.Burst != nil) {
		// Waiting for a connection would count as latency, rightly,
		// but would hide where the time went.
		conns = max(conns, b.cfg.MaxInFlight)
	}
	return m.Open(ctx, registry.Config{
		DSN: b.dsn, Database: m.Database, MaxConns: conns,
		Vtgate: b.vtgate, VtgateStatus: b.vtgateStatus,
		Memcache: b.memcache, Redis: b.redis, Namespace: namespace, Options: options,
		// Models of one database write one after another (see
		// openStores); their guarded statements run all the same.
		IgnoreWriteHooks: true,
	})
}

// openStores opens a store of every model once the data is loaded, plus,
// for a cache-mixed model, the two stores its write phases use, each on a
// memcached namespace nobody has used: posts by other stores (the shared
// pull submission, another cached model) reach the database without
// bumping those stores' generations, so a cache filled before them could
// serve pages that lack them.
//
// Stores open in descending WriteRank: a store that keeps memcached state
// on write records that in its database (a write hook), and a store that
// keeps none would then refuse to open there. Stores opened before keep
// posting plainly (they are opened with registry.Config.IgnoreWriteHooks,
// where a service's store would fail the write), which the write phases'
// order (ascending WriteRank) makes harmless: the models whose state
// follows only their own posts write before anyone else.
func (b *bench) openStores(ctx context.Context) error {
	for i, m := range registry.OpenOrder(b.models) {
		if _, ok := b.open[m.Name]; !ok {
			s, err := b.openModel(ctx, m, "", nil)
			if err != nil {
				return err
			}
			b.open[m.Name] = s
		}
		if m.Bench.Has(registry.PhaseCacheMixed) {
			for j, policy := range []memcache.Policy{memcache.PolicyInvalidate, memcache.PolicyTTL} {
				opts := map[string]string{memcache.OptionPolicy: string(policy)}
				if policy == memcache.PolicyTTL {
					// Under invalidate the TTL only bounds staleness
					// when an invalidation fails; the default stays.
					opts[memcache.OptionTTL] = b.cfg.CacheTTL.String()
				}
				s, err := b.openModel(ctx, m, fmt.Sprintf("w%d.%d/", i, j), opts)
				if err != nil {
					return err
				}
				b.fresh[m.Name] = append(b.fresh[m.Name], s)
			}
			if b.cfg.Mix != nil {
				// The traffic phase's cache, filled in its own warm-up.
				s, err := b.openModel(ctx, m, fmt.Sprintf("w%d.traffic/", i), nil)
				if err != nil {
					return err
				}
				b.traffic[m.Name] = s
			}
		}
	}
	return nil
}

// duration is the length of m's read and mixed phases.
func (b *bench) duration(m registry.Model) time.Duration {
	switch {
	case m.Bench.Slow:
		return min(b.cfg.Duration, b.cfg.SlowCap)
	case m.Bench.Paper:
		return b.cfg.Duration
	}
	return b.cfg.ExtraDuration
}

// phase runs one measured phase and records a failure if too many of its
// operations failed. onMeasure, if not nil, runs when measuring begins.
func (b *bench) phase(ctx context.Context, name string, dur time.Duration, newOp func(int) workload.Op, onMeasure func()) (results.Phase, error) {
	p, _, err := b.phaseKinds(ctx, name, dur, nil, newOp, onMeasure)
	return p, err
}

// phaseKinds is phase for operations of several kinds, whose figures it
// returns too. Every phase carries its cost per operation (see metered).
func (b *bench) phaseKinds(ctx context.Context, name string, dur time.Duration, kinds []string, newOp func(int) workload.Op, onMeasure func()) (results.Phase, []workload.KindResult, error) {
	length := dur.String()
	if b.cfg.Ops > 0 {
		length = fmt.Sprintf("%d ops", b.cfg.Ops)
	}
	b.logf("phase %s (%s, %d workers)", name, length, b.cfg.Concurrency)
	start, finish := b.metered(ctx, name, onMeasure)
	pr, err := workload.RunPhase(ctx, workload.PhaseConfig{
		Name: name, Workers: b.cfg.Concurrency, Warmup: b.cfg.Warmup, Duration: dur, Ops: b.cfg.Ops,
		Progress: b.cfg.Progress, OnMeasure: start, Kinds: kinds,
	}, newOp)
	if err != nil {
		return results.Phase{}, nil, err
	}
	p := results.PhaseFromHistogram(pr.Latency, pr.Ops, pr.Errors, pr.Seconds)
	p.WarmupOps = pr.WarmupOps
	p.Cost = finish(pr.Ops + pr.Errors)
	b.logf("  = %s: %.0f ops/s, p50 %.2f ms, p99 %.2f ms, %d errors", name, p.OpsPerSec, p.P50Ms, p.P99Ms, p.Errors)
	b.checkErrors(name, pr.ErrorRate(), pr.SampleErrors)
	return p, pr.Kinds, nil
}

// submitPhase is a phase of posts to s (workload.Submit), with the mean
// audience of its measured posts (results.Phase.PostAudience); onMeasure
// as phase's.
func (b *bench) submitPhase(ctx context.Context, name string, dur time.Duration, s timeline.Store, onMeasure func()) (results.Phase, error) {
	var a workload.Audience
	var mark workload.AudienceMark
	p, err := b.phase(ctx, name, dur, workload.Submit(s, b.data, b.cfg.Spec.Seed, workload.Writes{Audience: &a}), func() {
		mark = a.Mark()
		if onMeasure != nil {
			onMeasure()
		}
	})
	p.PostAudience, _ = a.Since(mark)
	return p, err
}

// checkErrors records a failure of the run when a phase's error rate is
// above workload.MaxErrorRate.
func (b *bench) checkErrors(name string, rate float64, samples []string) {
	if rate > workload.MaxErrorRate {
		b.res.Failures = append(b.res.Failures, fmt.Sprintf("%s: %.1f%% of operations failed (over %.0f%%), e.g. %s",
			name, 100*rate, 100*workload.MaxErrorRate, strings.Join(samples, "; ")))
	}
}

// metered first finishes every open store's background work (quiesce),
// so that the phase counts none of another phase's; then it returns a
// hook for when measuring begins, which runs onMeasure
// (if not nil) and snapshots the servers' and the process's counters, and
// a function for when the phase has ended, which snapshots them again and
// returns the cost of each of ops operations. A snapshot that fails is
// reported once, in the run's notes, and the run goes on without costs.
// A phase whose database counters could not be trusted (connections
// closed while they were read) has no rows, and the notes name it.
func (b *bench) metered(ctx context.Context, name string, onMeasure func()) (start func(), finish func(ops int64) cost.Cost) {
	b.quiesce(ctx, name)
	var before cost.Snapshot
	ok := false
	take := func() (cost.Snapshot, bool) {
		if b.meter == nil {
			return cost.Snapshot{}, false
		}
		s, err := b.meter.Take(ctx)
		if err != nil {
			b.meter = nil
			b.res.Notes = append(b.res.Notes, fmt.Sprintf("costs not measured from here on: %v", err))
			return s, false
		}
		return s, true
	}
	start = func() {
		if onMeasure != nil {
			onMeasure()
		}
		before, ok = take()
	}
	finish = func(ops int64) cost.Cost {
		if !ok {
			return nil
		}
		after, ok := take()
		if !ok {
			return nil
		}
		c := cost.PerOp(before, after, ops)
		if c.CountersUnreliable() {
			b.res.Notes = append(b.res.Notes, fmt.Sprintf("%s: the database's row counters are unreliable (connections closed while they were read, or a sum came out lower at the end than at the start): its rows are left out", name))
		}
		return c
	}
	return start, finish
}

// IdleInterval is how long a run watches its processes while nothing
// runs, before its first phase (results.Result.Idle).
const IdleInterval = 2 * time.Second

// idle measures the CPU each process burns while nothing runs, over
// IdleInterval with the data loaded, the stores open and their
// background work finished (results.Result.Idle): InnoDB's background
// threads, the stores' own timers. A run whose costs are not measured
// measures nothing.
func (b *bench) idle(ctx context.Context) error {
	start, finish := b.metered(ctx, "idle", nil)
	start()
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(IdleInterval):
	}
	secs := time.Since(t0).Seconds()
	// A window of one "operation": the per-operation figures are the
	// window's totals.
	if p, ok := results.ProcessCPUOf(finish(1), secs); ok {
		b.res.Idle = &p
		b.logf("idle: %.0f µs/s application, %.0f database, %.0f memcached, %.0f Redis over %.1fs",
			p.AppUs, p.DBUs, p.MCUs, p.RedisUs, secs)
	}
	return nil
}

func (b *bench) run(ctx context.Context, admin *sql.DB, local bool) error {
	if err := b.load(ctx, admin, local); err != nil {
		return err
	}
	if err := b.openStores(ctx); err != nil {
		return err
	}
	if err := b.idle(ctx); err != nil {
		return err
	}
	if b.cfg.TrafficOnly {
		return b.trafficOnly(ctx)
	}
	harness, err := b.phase(ctx, "harness/noop", min(b.cfg.Duration, time.Second), workload.NewestPage(workload.Noop{}, b.data, b.cfg.Spec.Seed), nil)
	if err != nil {
		return err
	}
	b.res.Harness = &harness

	// Reads first, for every model, while the data is as loaded; then
	// writes.
	for _, m := range b.models {
		rm, err := b.reads(ctx, m)
		if err != nil {
			return err
		}
		b.res.Models = append(b.res.Models, rm)
	}
	if err := b.writes(ctx); err != nil {
		return err
	}
	if slices.ContainsFunc(b.models, func(m registry.Model) bool { return m.Bench.Has(registry.PhaseCacheMixed) }) {
		if err := b.rawGets(ctx); err != nil {
			return err
		}
	}
	if err := b.probeVitess(ctx); err != nil {
		return err
	}
	b.res.Judge()
	return nil
}

// load creates a fresh database for each database the models live in and
// bulk-loads it through a store of the model that opens first there (see
// openStores), then records the sizes. A model on no database gets the
// dataset through its own Follow and Post (fine at small scales only).
func (b *bench) load(ctx context.Context, admin *sql.DB, local bool) error {
	var targets, vtTargets []load.Target
	for _, m := range registry.OpenOrder(b.models) {
		if !m.Persistent() || slices.ContainsFunc(append(targets, vtTargets...), func(t load.Target) bool { return t.Name == m.Database }) {
			continue
		}
		if !m.OnVitess() { // a keyspace of the fresh cluster is empty
			if err := recreate(ctx, admin, m.Database, b.cfg.Force); err != nil {
				return err
			}
		}
		s, err := b.openModel(ctx, m, "", nil)
		if err != nil {
			return err
		}
		b.open[m.Name] = s
		holder, ok := timeline.As[timeline.DBHolder](s)
		if !ok {
			return fmt.Errorf("load %s: model %s lives on a database but does not hand out its connection pool (timeline.DBHolder)", m.Database, m.Name)
		}
		t := load.Target{Name: m.Database, DB: holder.DB(), Schema: m.Schema}
		pm, partial := timeline.As[registry.PartialMailbox](s)
		if partial {
			t.Mailbox = pm.MailboxShape()
		}
		if m.OnVitess() {
			vtTargets = append(vtTargets, t)
			continue
		}
		if t.Mailbox.ActiveReads > 0 {
			active, users := load.ActiveUsers(b.data, t.Mailbox)
			b.res.Notes = append(b.res.Notes, fmt.Sprintf("%s starts with %d of %d users active (%.0f%%): those who read within its window, at %g reads per user per window",
				m.Name, active, users, 100*float64(active)/float64(users), t.Mailbox.ActiveReads))
		}
		targets = append(targets, t)
	}
	b.logf("loading ...")
	var err error
	opts := load.Options{Progress: b.cfg.Progress}
	if local {
		opts.Server = admin // a sandbox: the load may tune it (and puts it back)
		if b.cfg.LoadCache != "" {
			if opts.Cache, err = tablecache.Open(b.cfg.LoadCache, b.cfg.LoadCacheBytes, 0); err != nil {
				return err
			}
		}
	}
	if b.res.Load, err = load.Load(ctx, b.data, targets, opts); err != nil {
		return err
	}
	if len(vtTargets) > 0 {
		if err := b.loadVitess(ctx, vtTargets); err != nil {
			return err
		}
	}
	for _, m := range b.models {
		if m.Persistent() {
			continue
		}
		s, err := b.openModel(ctx, m, "", nil)
		if err != nil {
			return err
		}
		b.open[m.Name] = s
		if err := loadThroughStore(ctx, s, b.data); err != nil {
			return fmt.Errorf("load %s: %w", m.Name, err)
		}
	}
	b.logf("loaded in %.1fs", b.res.Load.Seconds)
	b.sizes = map[string][2]int64{}
	for _, t := range targets {
		data, disk, err := dataSize(ctx, admin, t.Name, local)
		if err != nil {
			return err
		}
		b.sizes[t.Name] = [2]int64{data, disk}
		b.logf("%s database: %s data+index, %s on disk", t.Name, mb(data), mb(disk))
	}
	return nil
}

// loadVitess loads the keyspaces of the models on Vitess (load.Vitess)
// and adds their tables to the run's load.
func (b *bench) loadVitess(ctx context.Context, targets []load.Target) error {
	seq, err := mysqlx.Open(ctx, mysqlx.Options{DSN: b.vtgate, Database: schema.SequenceKeyspace, MaxConns: 1, Vitess: true})
	if err != nil {
		return err
	}
	defer seq.Close()
	t0 := time.Now()
	vl, err := load.Vitess(ctx, b.data, targets, seq, 4)
	if err != nil {
		return err
	}
	b.res.Load.Tables = append(b.res.Load.Tables, vl.Tables...)
	b.res.Load.Seconds += vl.Seconds
	b.logf("loaded %d keyspaces on Vitess in %.1fs", len(targets), time.Since(t0).Seconds())
	return nil
}

// loadThroughStore writes d into s through the Store interface: every
// follow, then every message in id order.
func loadThroughStore(ctx context.Context, s timeline.Store, d *dataset.Dataset) error {
	err := d.EachFollow(func(follower, followee uint32) error {
		return s.Follow(ctx, timeline.UserID(follower), timeline.UserID(followee))
	})
	if err != nil {
		return err
	}
	var body []byte
	return d.EachMessage(func(id uint64, author uint32) error {
		body = d.AppendBody(body[:0], id)
		_, err := s.Post(ctx, timeline.UserID(author), string(body))
		return err
	})
}

// counts snapshots what a store counts about its own work
// (timeline.Counting), or nil.
func counts(s timeline.Store) map[string]int64 {
	if c, ok := timeline.As[timeline.Counting](s); ok {
		return c.Counters()
	}
	return nil
}

// record is the result entry of m, with its roles.
func (b *bench) record(m registry.Model) results.Model {
	return results.Model{
		Name: m.Name, Family: m.Family, PaperModel: m.Bench.Paper, Base: m.Base,
		SharedSubmit: m.Bench.Has(registry.PhaseSubmit) && !m.Bench.OwnSubmission,
		Options:      m.EffectiveOptions(m.OwnOptions(b.cfg.Options)),
		DataBytes:    b.sizes[m.Database][0], DiskBytes: b.sizes[m.Database][1], Extra: map[string]float64{},
	}
}

// reads measures m's retrieval of newest and older pages.
func (b *bench) reads(ctx context.Context, m registry.Model) (results.Model, error) {
	s := b.open[m.Name]
	rm := b.record(m)
	if m.Bench.Note != "" {
		b.res.Notes = append(b.res.Notes, m.Name+": "+m.Bench.Note)
	}
	// Cursors for the older-page phase come from walking sample
	// timelines 2 to 5 pages deep; fewer for the slow models, whose walk
	// would otherwise take longer than their phase.
	dur, sample := b.duration(m), m.Bench.OlderSample
	if sample <= 0 {
		sample = registry.DefaultOlderSample
	}
	usesMemcache := m.Needs&registry.Memcached != 0
	usesRedis := m.Needs&registry.Redis != 0
	var startMem, startRedis, startRedisData int64
	if usesMemcache {
		startMem, _ = memcachedBytes(b.memcache)
	}
	if usesRedis {
		startRedis, startRedisData, _ = redisBytes(b.redis)
	}
	if m.Bench.WarmReads {
		// The figure wanted is a warm cache's, as a service would see
		// it: every user's newest page is read once first. Without
		// this a slow model fills its cache during the phase and the
		// rate measures the filling.
		if err := b.warm(ctx, s); err != nil {
			return rm, err
		}
	}
	if p, ok := timeline.As[timeline.Primer](s); ok {
		users := make([]timeline.UserID, b.users)
		for i := range users {
			users[i] = timeline.UserID(i + 1)
		}
		if err := p.Prime(ctx, users); err != nil {
			return rm, fmt.Errorf("prime %s: %w", m.Name, err)
		}
	}
	var before map[string]int64
	var err error
	if rm.Retrieve, err = b.phase(ctx, m.Name+"/retrieve", dur, workload.NewestPage(s, b.data, b.cfg.Spec.Seed), func() { before = counts(s) }); err != nil {
		return rm, err
	}
	after := counts(s)
	if b.cfg.HTTP {
		p, err := b.readsOverHTTP(ctx, m, s, dur)
		if err != nil {
			return rm, err
		}
		rm.RetrieveHTTP = &p
	}
	maps.Copy(rm.Extra, results.CounterFigures("", before, after))
	maps.Copy(rm.Extra, results.TabletCallFigures("newest_", before, after, rm.Retrieve.Ops))
	maps.Copy(rm.Extra, results.ActiveFigures("newest_", before, after, rm.Retrieve.Ops))
	if err := b.drowningPages(ctx, m, s, &rm); err != nil {
		return rm, err
	}
	if usesMemcache {
		// What this model's reads added to memcached: cached pages,
		// lists, indexes. (Other items expiring meanwhile would make it
		// an underestimate; none expire this soon.)
		if now, err := memcachedBytes(b.memcache); err == nil && now > startMem {
			rm.Extra["memcached_mb"] = float64(now-startMem) / 1e6
		}
	}
	if usesRedis {
		// What this model's reads added to Redis (used_memory, and
		// used_memory_dataset, without the server's own overhead): the
		// feeds or indexes the warm reads built, for every user who
		// read.
		if now, data, err := redisBytes(b.redis); err == nil && now > startRedis {
			rm.Extra["redis_mb"] = float64(now-startRedis) / 1e6
			if data > startRedisData {
				rm.Extra["redis_dataset_mb"] = float64(data-startRedisData) / 1e6
			}
		}
	}
	if !m.Bench.Has(registry.PhaseOlder) {
		rm.RetrieveOlder.Skipped = true
		return rm, nil
	}
	pool, err := workload.CollectOlderPages(ctx, s, b.data, sample, b.cfg.Concurrency, b.cfg.Spec.Seed)
	switch {
	case errors.Is(err, workload.ErrNoOlderPages):
		rm.RetrieveOlder.Skipped = true
		b.res.Notes = append(b.res.Notes, m.Name+": no timeline has a second page; older-page retrieval not measured")
	case err != nil:
		return rm, err
	default:
		if rm.RetrieveOlder, err = b.phase(ctx, m.Name+"/retrieve-older", dur, workload.OlderPages(s, pool, b.cfg.Spec.Seed), func() { before = counts(s) }); err != nil {
			return rm, err
		}
		after = counts(s)
		maps.Copy(rm.Extra, results.TabletCallFigures("older_", before, after, rm.RetrieveOlder.Ops))
		maps.Copy(rm.Extra, results.ActiveFigures("older_", before, after, rm.RetrieveOlder.Ops))
	}
	return rm, nil
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
	b.logf("  warmed: %d newest pages read in %.1fs", b.users, time.Since(start).Seconds())
	return nil
}

// writes measures the write phases, in two passes over the models in
// ascending WriteRank (see registry.Bench.WriteRank and openStores):
// first the phases that read while they write (the mixed phase at the
// run's read ratio, then the traffic phase, when the run has them), then
// the submissions, which only write. A submission posts as fast as it
// can, tens of thousands of messages in a few seconds, most of them by a
// few authors under skewed activity; a phase that read after it would
// read a different dataset from the models measured before it (more
// posts, in long runs of a few authors: pull's merges read more rows), and
// models that share a database would each read what the others' submissions
// left. Models of one database that post alike share one submission phase,
// through the first of them. Cache-mixed models measure their submission
// and mixed phases on their fresh stores, in the second pass.
func (b *bench) writes(ctx context.Context) error {
	order := registry.WriteOrder(b.models)
	for _, m := range order {
		if err := b.readWhileWriting(ctx, m); err != nil {
			return err
		}
	}
	shared := map[string]*results.Phase{} // by database
	sharedBy := map[string][]string{}
	var databases []string
	for _, m := range order {
		if err := b.modelWrites(ctx, m, shared, sharedBy, &databases); err != nil {
			return err
		}
	}
	for _, db := range databases {
		if names := sharedBy[db]; len(names) > 1 {
			b.res.Notes = append(b.res.Notes, fmt.Sprintf("submission is measured once on the %s database and shown for %s: they post alike",
				db, strings.Join(names, ", ")))
		}
	}
	return nil
}

// readWhileWriting measures m's mixed phase at the run's read ratio, its
// traffic phase, its delete study and its burst phase, those of them the
// run has (see writes), each followed by a settle.
func (b *bench) readWhileWriting(ctx context.Context, m registry.Model) error {
	if b.cfg.ReadRatio > 0 && m.Bench.Has(registry.PhaseMixed) && !m.Bench.Has(registry.PhaseCacheMixed) {
		rm, s := b.res.Model(m.Name), b.open[m.Name]
		var before map[string]int64
		// Every page read is checked against the posts acknowledged
		// before it began: a design that serves pages from state kept
		// beside the database shows here whether its pages lag.
		log, stale := workload.NewPostLog(), &workload.StaleStats{}
		p, err := b.phase(ctx, m.Name+"/mixed", b.duration(m), workload.StalenessMixed(s, b.data, b.cfg.ReadRatio, b.cfg.Spec.Seed, log, stale), func() {
			before = counts(s)
			forgetLag(s)
			stale.Reset()
		})
		if err != nil {
			return err
		}
		rm.Mixed = &p
		maps.Copy(rm.Extra, results.ActiveFigures("mixed_", before, counts(s), p.Ops))
		pages, stalePages, worst := stale.Result()
		rm.Extra["mixed_pages"] = float64(pages)
		rm.Extra["mixed_stale_pages"] = float64(stalePages)
		rm.Extra["mixed_max_staleness_ms"] = float64(worst.Microseconds()) / 1000
		b.logf("  %s mixed: %d of %d pages stale, at most %v", m.Name, stalePages, pages, worst.Round(time.Microsecond))
		if err := b.settle(ctx, m, s, "mixed_", rm); err != nil {
			return err
		}
	}
	if b.cfg.Mix != nil {
		if err := b.trafficPhases(ctx, m); err != nil {
			return err
		}
	}
	if b.cfg.Deletes > 0 {
		if err := b.deleteStudy(ctx, m, b.trafficStore(m)); err != nil {
			return err
		}
	}
	if b.cfg.Burst != nil {
		if err := b.burstPhase(ctx, m); err != nil {
			return err
		}
	}
	return b.returningStudy(ctx, m)
}

// modelWrites measures m's submission (see writes).
func (b *bench) modelWrites(ctx context.Context, m registry.Model, shared map[string]*results.Phase, sharedBy map[string][]string, databases *[]string) error {
	rm, s := b.res.Model(m.Name), b.open[m.Name]
	if m.Bench.Has(registry.PhaseCacheMixed) {
		return b.cachedWrites(ctx, m, rm)
	}
	if !m.Bench.Has(registry.PhaseSubmit) {
		return nil
	}
	switch {
	case m.Bench.OwnSubmission:
		// Its submission is a goal figure against the plain one's:
		// the phases get the same length.
		before := map[string]int64{}
		p, err := b.submitPhase(ctx, m.Name+"/submit", b.cfg.Duration, s, func() {
			before = counts(s)
			forgetLag(s)
		})
		if err != nil {
			return err
		}
		rm.Submit = p
		after := counts(s)
		maps.Copy(rm.Extra, results.PostFigures(before, after, p.Ops))
		maps.Copy(rm.Extra, results.TabletCallFigures("post_", before, after, p.Ops))
		b.res.Notes = append(b.res.Notes, fmt.Sprintf("%s's submission is measured on its own: %s", m.Name, m.Bench.SubmissionNote))
		if err := b.settle(ctx, m, s, "", rm); err != nil {
			return err
		}
		maps.Copy(rm.Extra, results.FanoutFigures("", before, counts(s)))
		if m.Bench.Has(registry.PhaseHalfRate) {
			if err := b.halfRate(ctx, m, s, rm); err != nil {
				return err
			}
		}
	case shared[m.Database] == nil:
		var before map[string]int64
		p, err := b.submitPhase(ctx, string(m.Family)+"/submit", b.cfg.Duration, s, func() { before = counts(s) })
		if err != nil {
			return err
		}
		shared[m.Database], rm.Submit = &p, p
		after := counts(s)
		maps.Copy(rm.Extra, results.TabletCallFigures("post_", before, after, p.Ops))
		maps.Copy(rm.Extra, results.ActiveFigures("post_", before, after, p.Ops))
		sharedBy[m.Database] = append(sharedBy[m.Database], m.Name)
		*databases = append(*databases, m.Database)
	default:
		rm.Submit = *shared[m.Database]
		for k, v := range b.res.Model(sharedBy[m.Database][0]).Extra {
			if strings.HasPrefix(k, "post_tablet_") {
				rm.Extra[k] = v
			}
		}
		sharedBy[m.Database] = append(sharedBy[m.Database], m.Name)
	}
	return nil
}

// cachedWrites measures a cache-mixed model's submission and a mixed phase
// under the invalidate policy, then a mixed phase under the ttl policy that
// also measures how stale the served pages were.
func (b *bench) cachedWrites(ctx context.Context, m registry.Model, rm *results.Model) error {
	seed, dur := b.cfg.Spec.Seed, b.duration(m)
	s, ttl := b.fresh[m.Name][0], b.fresh[m.Name][1]
	var err error
	if rm.Submit, err = b.submitPhase(ctx, m.Name+"/submit", dur, s, nil); err != nil {
		return err
	}
	// The cache the mixed phase reads is filled during its warm-up, after
	// the submissions above, through the same store.
	var before map[string]int64
	p, err := b.phase(ctx, fmt.Sprintf("%s/mixed-%.0f%%", m.Name, 100*b.cfg.CacheReadRatio), dur,
		workload.Mixed(s, b.data, b.cfg.CacheReadRatio, seed), func() { before = counts(s) })
	if err != nil {
		return err
	}
	mixed := p
	rm.Mixed = &mixed
	maps.Copy(rm.Extra, results.CounterFigures("mixed_", before, counts(s)))

	log, stale := workload.NewPostLog(), &workload.StaleStats{}
	p, err = b.phase(ctx, fmt.Sprintf("%s/ttl-mixed-%.0f%%", m.Name, 100*b.cfg.CacheReadRatio), dur,
		workload.StalenessMixed(ttl, b.data, b.cfg.CacheReadRatio, seed, log, stale), func() {
			before = counts(ttl)
			stale.Reset()
		})
	if err != nil {
		return err
	}
	maps.Copy(rm.Extra, results.CounterFigures("ttl_", before, counts(ttl)))
	pages, stalePages, worst := stale.Result()
	rm.Extra["ttl_ms"] = float64(b.cfg.CacheTTL.Microseconds()) / 1000
	rm.Extra["ttl_mixed_ops_per_sec"] = p.OpsPerSec
	rm.Extra["ttl_max_staleness_ms"] = float64(worst.Microseconds()) / 1000
	if pages > 0 {
		rm.Extra["ttl_stale_page_ratio"] = float64(stalePages) / float64(pages)
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
// paper's dataset (20 messages; see package memcache).
const CachedPageBytes = 2520

// trafficOnly measures every model's traffic phase and nothing else (see
// BenchConfig.TrafficOnly), in write order as writes would, each store
// warmed and primed first as reads would have left it: a model whose reads
// are measured warm (Bench.WarmReads) has every user's newest page read,
// unless its traffic runs on a store of its own that fills in the phase's
// warm-up (a cached model's, see trafficStore).
func (b *bench) trafficOnly(ctx context.Context) error {
	for _, m := range b.models {
		rm := b.record(m)
		rm.Retrieve.Skipped, rm.RetrieveOlder.Skipped, rm.Submit.Skipped = true, true, true
		if m.Bench.Note != "" {
			b.res.Notes = append(b.res.Notes, m.Name+": "+m.Bench.Note)
		}
		b.res.Models = append(b.res.Models, rm)
	}
	for _, m := range registry.WriteOrder(b.models) {
		s := b.trafficStore(m)
		if _, own := b.traffic[m.Name]; m.Bench.WarmReads && !own {
			if err := b.warm(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
		}
		if p, ok := timeline.As[timeline.Primer](s); ok {
			users := make([]timeline.UserID, b.users)
			for i := range users {
				users[i] = timeline.UserID(i + 1)
			}
			if err := p.Prime(ctx, users); err != nil {
				return fmt.Errorf("prime %s: %w", m.Name, err)
			}
		}
		if err := b.trafficPhases(ctx, m); err != nil {
			return err
		}
	}
	return nil
}
