// Package stores opens a timeline.Store by model name, so that the CLI, the
// benchmark and the tests name backends the same way ("push", "pull-sp",
// ...) and adding a backend is one entry here.
package stores

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pushpull/pushpull/cache"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/push"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// Model names.
const (
	Memory     = "memory"
	Push       = "push"
	PullSP     = "pull-sp"
	PullClient = "pull-client"
	PullNaive  = "pull-naive"
	PullUnion  = "pull-union"
	PullMerge  = "pull-merge"
	PullRecent = "pull-recent" // needs Config.Memcache
	PullActive = "pull-active" // needs Config.Memcache
)

// SQLModels are the models backed by MySQL/MariaDB, in benchmark order.
var SQLModels = []string{Push, PullSP, PullClient, PullNaive, PullUnion, PullMerge, PullRecent, PullActive}

// Models are the memory model and the SQL models.
var Models = append([]string{Memory}, SQLModels...)

// CachedSuffix marks a SQL model wrapped in the memcached decorator
// (package cache): "push+memcache" is push with its newest pages in
// memcached.
const CachedSuffix = "+memcache"

// The cached models.
const (
	PushCached       = Push + CachedSuffix
	PullSPCached     = PullSP + CachedSuffix
	PullClientCached = PullClient + CachedSuffix
)

// CachedModels are the cached variants offered by name. Any SQL model plus
// CachedSuffix opens; these are the ones the benchmark knows.
var CachedModels = []string{PushCached, PullSPCached, PullClientCached}

// ServerModels are the models that live on a server: SQLModels, then
// CachedModels.
var ServerModels = slices.Concat(SQLModels, CachedModels)

// Base returns the SQL model under a cached one ("push" for
// "push+memcache"), and model itself otherwise.
func Base(model string) string { return strings.TrimSuffix(model, CachedSuffix) }

// Cached reports whether model is a SQL model behind the memcached
// decorator.
func Cached(model string) bool { return strings.HasSuffix(model, CachedSuffix) }

// Config is what a SQL model needs to open.
type Config struct {
	DSN string
	// Database overrides the model's default database (pushpull_push or
	// pushpull_pull).
	Database string
	// MaxConns caps the connection pool; 0 means the store's default.
	MaxConns int
	// Force lets the schema be applied to a database pushpull did not
	// create.
	Force bool
	// Memcache lists memcached servers ("host:port"). pull-recent and
	// pull-active need them; the other models ignore them.
	Memcache []string
	// Namespace prefixes the memcached keys of pull-recent, pull-active and of the
	// cached models, for several runs sharing one memcached. Keys also
	// carry a digest of the database's identity, so a re-created database
	// never sees the entries of its predecessor.
	Namespace string
	// CachePolicy and CacheTTL configure the cached models (see
	// cache.Options); the zero policy means cache.PolicyInvalidate.
	CachePolicy cache.Policy
	CacheTTL    time.Duration
}

// NeedsMemcache reports whether model cannot open without Config.Memcache.
func NeedsMemcache(model string) bool {
	return model == PullRecent || model == PullActive || Cached(model)
}

// Open opens model. Unknown names give an error listing the known ones.
func Open(ctx context.Context, model string, cfg Config) (timeline.Store, error) {
	if Cached(model) {
		return openCached(ctx, model, cfg)
	}
	switch model {
	case Memory:
		return timeline.NewMemory(), nil
	case Push:
		return push.Open(ctx, push.Config{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force})
	}
	if strategy, ok := strings.CutPrefix(model, "pull-"); ok {
		pc := pull.Config{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force, Strategy: pull.Strategy(strategy)}
		// Only pull-recent and pull-active get memcached: with it, a
		// pull store of any strategy would also keep the lists on Post,
		// which costs the other models' posts a memcached round trip
		// they do not need. (pull-active's posts also send its hints.)
		if NeedsMemcache(model) {
			if len(cfg.Memcache) == 0 {
				return nil, fmt.Errorf("model %s needs memcached servers (stores.Config.Memcache)", model)
			}
			pc.Memcache, pc.Namespace = cfg.Memcache, cfg.Namespace
		}
		return pull.Open(ctx, pc)
	}
	return nil, fmt.Errorf("unknown model %q (want one of %s)", model, strings.Join(slices.Concat(Models, CachedModels), ", "))
}

// openCached opens the base model of a cached one and wraps it in the
// memcached decorator, which learns an author's followers from the base
// model's follows table.
func openCached(ctx context.Context, model string, cfg Config) (timeline.Store, error) {
	base := Base(model)
	if base == Memory || Cached(base) {
		return nil, fmt.Errorf("unknown model %q: only SQL models can be cached", model)
	}
	if len(cfg.Memcache) == 0 {
		return nil, fmt.Errorf("model %s needs memcached servers (stores.Config.Memcache)", model)
	}
	inner, err := Open(ctx, base, cfg)
	if err != nil {
		return nil, err
	}
	db := inner.(interface{ DB() *sql.DB }).DB()
	id, err := schema.Identity(ctx, db, "pushpull cache")
	if err != nil {
		inner.Close()
		return nil, fmt.Errorf("open %s: %w", model, err)
	}
	policy := cfg.CachePolicy
	if policy == "" {
		policy = cache.PolicyInvalidate
	}
	s, err := cache.New(inner, cache.Options{
		Servers:      cfg.Memcache,
		Namespace:    cfg.Namespace + model + ":" + id,
		Policy:       policy,
		TTL:          cfg.CacheTTL,
		MaxIdleConns: max(cfg.MaxConns, 8),
	})
	if err != nil {
		inner.Close()
		return nil, fmt.Errorf("open %s: %w", model, err)
	}
	return s, nil
}

// Database returns the default database of a SQL model (cached or not).
func Database(model string) string {
	if Base(model) == Push {
		return push.DefaultDatabase
	}
	return pull.DefaultDatabase
}
