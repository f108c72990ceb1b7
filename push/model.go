package push

import (
	"context"
	"slices"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// ConfigFrom is the Config of a store opened through the registry: the
// server, database, pool size and Force of cfg. The models built on push's
// tables open their push.Config with it.
func ConfigFrom(cfg registry.Config) Config {
	return Config{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force}
}

// DrowningConfigFrom is ConfigFrom with the Drowning of DrowningOptions,
// for the models that declare them.
func DrowningConfigFrom(cfg registry.Config) Config {
	c := ConfigFrom(cfg)
	c.Drowning = DrowningFrom(cfg)
	return c
}

// WithDrowning returns opts and DrowningOptions, for the Options of a
// model built on push's tables that declares the drowning readers' options
// (and opens its push.Config with DrowningConfigFrom).
func WithDrowning(opts []registry.Option) []registry.Option {
	return append(slices.Clip(opts), DrowningOptions...)
}

// ModelName is the push model's name in package registry.
const ModelName = "push"

func init() {
	registry.Register(registry.Model{
		Name:     ModelName,
		Family:   registry.FamilyPush,
		Schema:   schema.Push,
		Database: DefaultDatabase,
		Needs:    registry.MariaDB,
		Summary:  "fan-out on write: posting copies the message id into every follower's mailbox; reading is one index range scan",
		Options:  DrowningOptions,
		Open: func(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
			return Open(ctx, DrowningConfigFrom(cfg))
		},
		Bench:     registry.Bench{Default: true, Paper: true, Phases: registry.AllPhases, WriteRank: 2},
		Work:      Work,
		Reconcile: Checker,
		Offers:    []registry.Offer{{Variant: "memcache", Bench: true}},
	})
	registry.Register(registry.Model{
		Name:      CompressedModelName,
		Family:    registry.FamilyPush,
		Schema:    schema.PushCompressed,
		Database:  DefaultCompressedDatabase,
		Needs:     registry.MariaDB,
		Summary:   "push with the mailbox in compressed InnoDB pages (PAGE_COMPRESSED): less disk for CPU on page writes and reads",
		Options:   DrowningOptions,
		Open:      openCompressed,
		Bench:     registry.Bench{Phases: registry.AllPhases, WriteRank: 2},
		Work:      Work,
		Reconcile: Checker,
	})
	registry.Register(registry.Model{
		Name:     VitessModelName,
		Family:   registry.FamilyPush,
		Schema:   schema.PushVitess,
		Database: DefaultVitessDatabase,
		Needs:    registry.Vitess,
		Summary:  "fan-out on write on Vitess, sharded by user: the fan-out is a cross-shard INSERT ... SELECT in chunks of followers; a page is one mailbox shard, then its authors' shards",
		Open: func(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
			return OpenVitess(ctx, Config{DSN: cfg.Vtgate, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force, VtgateStatus: cfg.VtgateStatus})
		},
		Bench:     registry.Bench{Phases: registry.AllPhases, WriteRank: 2},
		Reconcile: VitessChecker,
	})
}

// VitessModelName is VitessStore's name in package registry.
const VitessModelName = ModelName + registry.VitessSuffix

// AllFollowers implements memcache.FollowerLister from the follows index.
func (s *Store) AllFollowers(ctx context.Context, author timeline.UserID) ([]timeline.UserID, error) {
	return mysqlx.Followers(ctx, s.db, author)
}
