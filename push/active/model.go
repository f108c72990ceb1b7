package active

import (
	"context"
	"fmt"
	"time"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// options are the model's registry options, in the order of Config's
// fields they set: Window, Rebuild and ActiveReads.
var options = []registry.Option{
	registry.Duration(OptionWindow, DefaultWindow, time.Microsecond, MaxWindow,
		"how recently a follower must have read to be pushed to (kept to the microsecond)"),
	registry.Int(OptionRebuild, DefaultRebuild, 1, MaxRebuild,
		"entries a returning reader's mailbox is rebuilt with"),
	registry.Float(OptionActiveReads, DefaultActiveReads, 0, MaxActiveReads,
		"reads per user per window in the history behind a bulk load, which decide the users it makes active").AboveMin(),
}

func init() {
	registry.Register(registry.Model{
		Name:      ModelName,
		Family:    registry.FamilyPush,
		Schema:    schema.PushActive,
		Database:  DefaultDatabase,
		Needs:     registry.MariaDB,
		Summary:   fmt.Sprintf("push to the followers who read within %d days (option window) only; an inactive reader's next read rebuilds their mailbox by pull", DefaultWindow/(24*time.Hour)),
		Options:   push.WithDrowning(options),
		Traits:    registry.Partial,
		Work:      Work,
		Reconcile: Checker,
		Open:      openModel,
		Bench:     registry.Bench{Phases: registry.AllPhases, WriteRank: 2, WarmSearch: true},
	})
}

// openModel opens the model from a registry.Config: options "window",
// "rebuild" and "active_reads" are Config.Window, Config.Rebuild and
// Config.ActiveReads.
func openModel(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	return Open(ctx, Config{
		Config: push.DrowningConfigFrom(cfg),
		Window: cfg.Duration(OptionWindow), Rebuild: cfg.Int(OptionRebuild), ActiveReads: cfg.Float(OptionActiveReads),
	})
}
