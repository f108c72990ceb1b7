package hybrid

import (
	"context"
	"fmt"
	"math"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// options are the model's registry options: Config.Threshold.
var options = []registry.Option{
	registry.Int(OptionThreshold, DefaultThreshold, 1, math.MaxInt, "followers from which an author is pulled: their posts are fanned out to no mailbox"),
}

func init() {
	registry.Register(registry.Model{
		Name:      ModelName,
		Family:    registry.FamilyHybrid,
		Schema:    schema.Hybrid,
		Database:  DefaultDatabase,
		Needs:     registry.MariaDB,
		Summary:   fmt.Sprintf("push, except for authors with %d followers or more (option threshold), whose posts their followers pull at read time", DefaultThreshold),
		Options:   push.WithDrowning(options),
		Work:      Work,
		Reconcile: Checker,
		Traits:    registry.Partial,
		Open:      openModel,
		Bench:     registry.Bench{Phases: registry.AllPhases, WriteRank: 2},
	})
	registry.Register(registry.Model{
		Name:     VitessModelName,
		Family:   registry.FamilyHybrid,
		Schema:   schema.HybridVitess,
		Database: DefaultVitessDatabase,
		Needs:    registry.Vitess,
		Summary: "hybrid on Vitess, sharded by user: push@vitess's fan-out for authors below the threshold (option threshold); " +
			"a page is the reader's shard, plus the shards of the listed authors they follow",
		Options:   options,
		Reconcile: VitessChecker,
		Traits:    registry.Partial,
		Open:      openVitessModel,
		Bench:     registry.Bench{Phases: registry.AllPhases, WriteRank: 2},
	})
}

// openVitessModel opens hybrid@vitess from a registry.Config: option
// "threshold" is Config.Threshold.
func openVitessModel(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	return OpenVitess(ctx, Config{
		Config: push.Config{DSN: cfg.Vtgate, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force,
			VtgateStatus: cfg.VtgateStatus},
		Threshold: cfg.Int(OptionThreshold),
	})
}

// openModel opens the model from a registry.Config: option "threshold" is
// Config.Threshold.
func openModel(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	return Open(ctx, Config{
		Config:    push.DrowningConfigFrom(cfg),
		Threshold: cfg.Int(OptionThreshold),
	})
}
