package active

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

func init() {
	registry.Register(registry.Model{
		Name:     ModelName,
		Family:   registry.FamilyPush,
		Schema:   schema.PushActive,
		Database: DefaultDatabase,
		Needs:    registry.MariaDB,
		Summary:  fmt.Sprintf("push to the followers who read within %d days (option window) only; an inactive reader's next read rebuilds their mailbox by pull", DefaultWindow/(24*time.Hour)),
		Open:     openModel,
		Bench:    registry.Bench{Phases: registry.AllPhases, WriteRank: 2},
	})
}

// openModel opens the model from a registry.Config: options "window" (a
// Go duration), "rebuild" and "active_reads" are Config.Window,
// Config.Rebuild and Config.ActiveReads. A bad option is an *OptionError.
func openModel(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	c := Config{Config: push.ConfigFrom(cfg)}
	if v := cfg.Options[OptionWindow]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, &OptionError{OptionWindow, v, "want a positive Go duration, e.g. 168h or 30s"}
		}
		c.Window = d
	}
	if v := cfg.Options[OptionRebuild]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, &OptionError{OptionRebuild, v, "want a positive integer"}
		}
		c.Rebuild = n
	}
	if v := cfg.Options[OptionActiveReads]; v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) {
			return nil, &OptionError{OptionActiveReads, v, "want a number above 0"}
		}
		c.ActiveReads = f
	}
	return Open(ctx, c)
}
