package selective

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// options are the model's registry options, in the order of the Config
// fields they set: H, L, HalfLife, FlushEvery and ReadsPerPost.
var options = []registry.Option{
	registry.Float(OptionH, 0, 0, math.Inf(1), "cost of one fan-out row, in a unit shared with l; set both or neither").
		AboveMin().OrZero(fmt.Sprintf("measured, %g until then", DefaultH)),
	registry.Float(OptionL, 0, 0, math.Inf(1), "cost of one pulled author's probe, in h's unit; set both or neither").
		AboveMin().OrZero(fmt.Sprintf("measured, %g until then", DefaultL)),
	registry.Duration(OptionHalfLife, DefaultHalfLife, time.Nanosecond, math.MaxInt64, "half-life of the decayed read and post rates"),
	registry.Int(OptionFlushEvery, DefaultFlushEvery, 1, math.MaxInt, "reads and posts counted between writes of the rates"),
	registry.Float(OptionReadsPerPost, DefaultReadsPerPost, 0, math.Inf(1), "reads per post the bulk load assumes when it starts the rates").AboveMin(),
}

func init() {
	registry.Register(registry.Model{
		Name:      ModelName,
		Family:    registry.FamilyHybrid,
		Schema:    schema.Selective,
		Database:  DefaultDatabase,
		Needs:     registry.MariaDB,
		Summary:   "push or pull per follow edge (Feeding Frenzy): pushed when the follower reads at least H/L times as often as the author posts, from decayed rates and measured costs (options h, l, halflife, flush, reads_per_post)",
		Options:   push.WithDrowning(options),
		Work:      Work,
		Reconcile: Checker,
		Traits:    registry.Partial,
		Open:      openModel,
		Bench:     registry.Bench{Phases: registry.AllPhases, WriteRank: 2},
	})
}

// openModel opens the model from a registry.Config: its options (Option*)
// set Config's fields.
func openModel(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	return Open(ctx, Config{
		Config: push.DrowningConfigFrom(cfg),
		H:      cfg.Float(OptionH), L: cfg.Float(OptionL),
		HalfLife:     cfg.Duration(OptionHalfLife),
		FlushEvery:   cfg.Int(OptionFlushEvery),
		ReadsPerPost: cfg.Float(OptionReadsPerPost),
	})
}
