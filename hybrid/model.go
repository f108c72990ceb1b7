package hybrid

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
		Family:   registry.FamilyHybrid,
		Schema:   schema.Hybrid,
		Database: DefaultDatabase,
		Needs:    registry.MariaDB,
		Summary:  fmt.Sprintf("push, except for authors with %d followers or more (option threshold), whose posts their followers pull at read time", DefaultThreshold),
		Open:     openModel,
		Bench:    registry.Bench{Phases: registry.AllPhases, WriteRank: 2},
	})
}

// openModel opens the model from a registry.Config: option "threshold" is
// Config.Threshold.
func openModel(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	threshold, err := cfg.IntOption(OptionThreshold, DefaultThreshold)
	if err != nil {
		return nil, err
	}
	return Open(ctx, Config{
		Config:    push.ConfigFrom(cfg),
		Threshold: threshold,
	})
}
