package capped

import (
	"context"
	"fmt"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

func init() {
	registry.Register(registry.Model{
		Name:     ModelName,
		Family:   registry.FamilyPush,
		Schema:   schema.PushCapped,
		Database: DefaultDatabase,
		Needs:    registry.MariaDB,
		Summary:  fmt.Sprintf("push with each mailbox capped at its newest %d entries (option cap); older pages come from the pull merge", DefaultCap),
		Open:     openModel,
		Bench:    registry.Bench{Phases: registry.AllPhases, WriteRank: 2},
	})
}

// openModel opens the model from a registry.Config: options "cap" and
// "slack" are Config.Cap and Config.Slack.
func openModel(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	limit, err := cfg.IntOption(OptionCap, DefaultCap)
	if err != nil {
		return nil, err
	}
	slack, err := cfg.IntOption(OptionSlack, 0)
	if err != nil {
		return nil, err
	}
	return Open(ctx, Config{
		Config: push.ConfigFrom(cfg),
		Cap:    limit, Slack: slack,
	})
}
