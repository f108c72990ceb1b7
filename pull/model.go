package pull

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/vtstats"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
)

// ModelPrefix starts the registry name of every pull model: "pull-" and the
// strategy ("pull-sp", "pull-recent", ...).
const ModelPrefix = "pull-"

// ModelName is the registry name of the pull model reading with strategy.
func ModelName(strategy Strategy) string { return ModelPrefix + string(strategy) }

// The registry options of the pull models (registry.Model.Options): the
// settings of their read strategies.
const (
	// OptionConcurrency is sqlread.Client.Concurrency.
	OptionConcurrency = "concurrency"
	// OptionRecentLen is recent.Recent.RecentLen.
	OptionRecentLen = "recent_len"
	// OptionMessageCache is recent.Recent.MessageCache; 0 keeps none.
	OptionMessageCache = "message_cache"
	// OptionFolloweeCache is recent.Recent.FolloweeCache; 0 keeps none.
	OptionFolloweeCache = "followee_cache"
	// OptionActiveLen is recent.Active.ActiveLen.
	OptionActiveLen = "active_len"
	// OptionHomeLen is recent.Home.Keep (hybrid-memcached).
	OptionHomeLen = "home_len"
	// OptionCelebrityRefresh is recent.Home.CelebrityRefresh
	// (hybrid-memcached).
	OptionCelebrityRefresh = "celebrity_refresh"
)

// MaxInProcess bounds the in-process caches' options (message_cache,
// followee_cache): a slot is allocated for every entry, used or not.
const MaxInProcess = 1 << 24

// recentOptions are the options of the strategies of package recent.
var recentOptions = []registry.Option{
	registry.Int(OptionRecentLen, recent.DefaultRecentLen, 1, recent.MaxLen,
		"newest ids of each author kept in memcached; deeper pages read the rest from the database"),
	registry.Int(OptionMessageCache, recent.DefaultMessageCache, 1, MaxInProcess,
		"messages kept in process for the pages' bodies").OrZero("none"),
	registry.Int(OptionFolloweeCache, recent.DefaultFolloweeCache, 1, MaxInProcess,
		"users whose followees are kept in process, checked against a token in memcached at every read").OrZero("none"),
}

// recentFrom is recent.Recent with the settings of cfg's options.
func recentFrom(cfg registry.Config) recent.Recent {
	none := func(n int) int { // recent's 0 is the default; the option's 0 is none
		if n == 0 {
			return -1
		}
		return n
	}
	return recent.Recent{
		RecentLen:     cfg.Int(OptionRecentLen),
		MessageCache:  none(cfg.Int(OptionMessageCache)),
		FolloweeCache: none(cfg.Int(OptionFolloweeCache)),
	}
}

// settings are a read strategy's registry options and the strategy with
// the values a Config gives them.
type settings struct {
	options []registry.Option
	read    func(cfg registry.Config) ReadStrategy
}

// settingsOf returns the settings of r's strategy: none for a strategy
// without any, which is read as it is.
func settingsOf(r ReadStrategy) settings {
	switch r.(type) {
	case sqlread.Client:
		return settings{
			[]registry.Option{registry.Int(OptionConcurrency, sqlread.DefaultConcurrency, 1, math.MaxInt, "queries one read runs at once")},
			func(cfg registry.Config) ReadStrategy { return sqlread.Client{Concurrency: cfg.Int(OptionConcurrency)} },
		}
	case recent.Recent:
		return settings{recentOptions, func(cfg registry.Config) ReadStrategy { return recentFrom(cfg) }}
	case recent.Active:
		active := registry.Int(OptionActiveLen, recent.DefaultActiveLen, 1, recent.MaxLen,
			"followees who posted last that an index keeps; users following more than twice as many get one")
		return settings{
			append(slices.Clone(recentOptions), active),
			func(cfg registry.Config) ReadStrategy {
				return recent.Active{Recent: recentFrom(cfg), ActiveLen: cfg.Int(OptionActiveLen)}
			},
		}
	}
	return settings{read: func(registry.Config) ReadStrategy { return r }}
}

func init() {
	paper := func(b registry.Bench) registry.Bench {
		b.Paper, b.Default, b.Phases, b.WriteRank = true, true, registry.AllPhases, 2
		return b
	}
	extra := func(b registry.Bench) registry.Bench {
		b.Default, b.Phases = true, registry.AllPhases
		return b
	}
	for _, m := range []struct {
		strategy Strategy
		summary  string
		bench    registry.Bench
		offers   []registry.Offer
		work     registry.WorkModel
	}{
		{StrategySP, "merge on read, run by stored procedures (one CALL per page), as in the paper",
			paper(registry.Bench{}), []registry.Offer{{Variant: "memcache", Bench: true}}, spWork},
		{StrategyClient, "merge on read, run as concurrent small queries from the client",
			paper(registry.Bench{OlderSample: 100}), []registry.Offer{{Variant: "memcache"}}, clientWork},
		{StrategyNaive, "merge on read as one JOIN ... ORDER BY ... LIMIT (the baseline)",
			paper(registry.Bench{OlderSample: 40, Slow: true}), nil, nil},
		{StrategyUnion, "merge on read: newest id per followee, then one UNION ALL statement for the top followees' messages (two round trips)",
			extra(registry.Bench{WriteRank: 2}), nil, unionWork},
		{StrategyMerge, "merge on read with early stop: after the newest id per followee, one range scan reads only the ids that can still reach the page",
			extra(registry.Bench{WriteRank: 2}), nil, mergeWork},
		{StrategyRecent, fmt.Sprintf("merge on read from each author's newest %d ids kept in memcached (one multi-get), bodies from an in-process cache; the database stays the system of record", recent.DefaultRecentLen),
			extra(registry.Bench{WarmReads: true, OwnSubmission: true, WriteRank: 1,
				SubmissionNote: "its posts also append to the author's list in memcached"}), nil, recentWork},
		{StrategyActive, fmt.Sprintf("%s plus, for users following more than %d authors, an index of the %d who posted last, so a page fetches %d lists, not all; each post hints the index of every such follower",
			ModelName(StrategyRecent), 2*recent.DefaultActiveLen, recent.DefaultActiveLen, timeline.DefaultLimit+1),
			extra(registry.Bench{WarmReads: true, OwnSubmission: true, WriteRank: 0,
				SubmissionNote: "its posts also append to the author's list and send a hint to the index of each heavy follower"}), nil, activeWork},
	} {
		read, err := Read(m.strategy)
		if err != nil {
			panic("pull: " + err.Error())
		}
		needs, traits := registry.MariaDB, registry.Traits(0)
		var check registry.Reconcile
		if _, ok := read.(recent.Strategy); ok {
			needs, traits, check = needs|registry.Memcached, registry.WriteHooks, ListsChecker
		}
		set := settingsOf(read)
		registry.Register(registry.Model{
			Name:      ModelName(m.strategy),
			Family:    registry.FamilyPull,
			Schema:    schema.Pull,
			Database:  DefaultDatabase,
			Needs:     needs,
			Summary:   m.summary,
			Options:   set.options,
			Traits:    traits,
			Open:      openStrategy(set),
			Bench:     m.bench,
			Offers:    m.offers,
			Work:      m.work,
			Reconcile: check,
		})
	}
	onVitess := registry.Bench{Phases: registry.AllPhases, WriteRank: 2, OlderSample: 100}
	for _, m := range []struct {
		read    ReadStrategy
		summary string
		needs   registry.Servers
		bench   registry.Bench
	}{
		{sqlread.Client{}, "pull-client on Vitess: a query per followee, each routed to the followee's shard", 0, onVitess},
		{sqlread.VitessUnion{}, "pull-union on Vitess: newest id per followee in one GROUP BY over their shards, then a UNION ALL of per-author branches, each on its author's shard", 0, onVitess},
		{sqlread.VitessMerge{}, "pull-merge on Vitess: newest id per followee, then one ORDER BY ... LIMIT over the top authors' shards above the floor, merged by vtgate", 0, onVitess},
		{recent.Recent{}, "pull-recent on Vitess: the followees from the reader's shard, the lists from memcached, bodies from the in-process cache or by author and id from the authors' shards; pull-merge@vitess when memcached fails",
			registry.Memcached, registry.Bench{Phases: registry.AllPhases, OlderSample: 100, WarmReads: true, OwnSubmission: true, WriteRank: 1,
				SubmissionNote: "its posts also append to the author's list in memcached"}},
	} {
		var traits registry.Traits
		var check registry.Reconcile
		if _, ok := m.read.(recent.Strategy); ok {
			traits, check = registry.WriteHooks, ListsChecker
		}
		set := settingsOf(m.read)
		registry.Register(registry.Model{
			Name:      VitessModelName(Strategy(m.read.Name())),
			Family:    registry.FamilyPull,
			Schema:    schema.PullVitess,
			Database:  DefaultVitessDatabase,
			Needs:     registry.Vitess | m.needs,
			Summary:   m.summary,
			Options:   set.options,
			Traits:    traits,
			Open:      openVitess(set),
			Bench:     m.bench,
			Reconcile: check,
		})
	}
}

// VitessModelName is the registry name of the pull model on Vitess
// reading with strategy: "pull-client@vitess", ...
func VitessModelName(strategy Strategy) string { return ModelName(strategy) + registry.VitessSuffix }

// openVitess opens a pull store on Vitess reading with set's strategy. As
// openStrategy, every store gets the memcached servers when there are
// any, for the write hooks a keyspace read by pull-recent@vitess records.
func openVitess(set settings) registry.Open {
	return func(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
		return Open(ctx, Config{
			DSN: cfg.Vtgate, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force,
			Memcache: cfg.Memcache, Namespace: cfg.Namespace,
			Read: set.read(cfg), Vitess: true, VtgateStatus: cfg.VtgateStatus,
		})
	}
}

// openStrategy opens a pull store reading with set's strategy, set as
// cfg's options say. Every strategy gets the memcached servers when there
// are any: the recent strategies read them, and the others run the write
// hooks a database has recorded (see WriteHooks), and otherwise leave them
// unused.
func openStrategy(set settings) registry.Open {
	return func(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
		return Open(ctx, Config{
			DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force,
			Memcache: cfg.Memcache, Namespace: cfg.Namespace, Read: set.read(cfg),
		})
	}
}

var (
	_ timeline.DBHolder = (*Store)(nil)
	_ timeline.Counting = (*Store)(nil)
	_ timeline.Primer   = (*Store)(nil)
	_ timeline.Degraded = (*Store)(nil)
)

// Counters implements timeline.Counting: the rows the reads examined, and
// the memcached lists, followee caches and indexes they used.
func (s *Store) Counters() map[string]int64 {
	st := s.Stats()
	c := map[string]int64{
		counter.Pages:          st.Pages,
		counter.RowsRead:       st.RowsRead,
		counter.ListHits:       st.CacheHits,
		counter.ListMisses:     st.CacheMisses,
		counter.CacheErrors:    st.CacheErrors,
		counter.FolloweeHits:   st.FollowHits,
		counter.FolloweeMisses: st.FollowMisses,
		counter.IndexReads:     st.IndexReads,
		counter.IndexFallbacks: st.IndexFallbacks,
		counter.IndexBuilds:    st.IndexBuilds,
		counter.IndexPatches:   st.IndexPatches,
	}
	if s.Hooks()&HookHints != 0 {
		c[counter.Hints] = st.Hints
	}
	if s.status != "" {
		if calls, err := vtstats.Calls(context.Background(), s.status, s.keyspace, schema.SequenceKeyspace); err == nil {
			maps.Copy(c, calls)
		}
	}
	return c
}

// Prime implements timeline.Primer: it builds the hint targets that
// memcached lacks for users as authors (see recent.State.PrimeHintTargets),
// which a running service's posts keep built as they keep the lists.
// Stores that send no hints have nothing to prime.
func (s *Store) Prime(ctx context.Context, users []timeline.UserID) error {
	return s.hooks.PrimeHintTargets(ctx, users)
}

// AllFollowers implements memcache.FollowerLister from the follows index.
func (s *Store) AllFollowers(ctx context.Context, author timeline.UserID) ([]timeline.UserID, error) {
	return mysqlx.Followers(ctx, s.db, author)
}
