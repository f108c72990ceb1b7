package capped

import (
	"context"
	"fmt"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// options are the model's registry options: Config.Cap and Config.Slack.
var options = []registry.Option{
	registry.Int(OptionCap, DefaultCap, 1, MaxCap, "entries a mailbox keeps after a trim"),
	registry.Int(OptionSlack, 0, 1, MaxCap, "entries a mailbox may hold past the cap before it is trimmed").OrZero("cap/8, at least 1"),
}

func init() {
	registry.Register(registry.Model{
		Name:      ModelName,
		Family:    registry.FamilyPush,
		Schema:    schema.PushCapped,
		Database:  DefaultDatabase,
		Needs:     registry.MariaDB,
		Summary:   fmt.Sprintf("push with each mailbox capped at its newest %d entries (option cap); older pages come from the pull merge", DefaultCap),
		Options:   push.WithDrowning(options),
		Traits:    registry.Partial,
		Work:      Work,
		Reconcile: Checker,
		Open:      openModel,
		Bench:     registry.Bench{Phases: registry.AllPhases, WriteRank: 2},
	})
}

// openModel opens the model from a registry.Config: options "cap" and
// "slack" are Config.Cap and Config.Slack, and push.DrowningOptions
// Config.Drowning.
func openModel(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	return Open(ctx, Config{
		Config: push.DrowningConfigFrom(cfg),
		Cap:    cfg.Int(OptionCap), Slack: cfg.Int(OptionSlack),
	})
}
