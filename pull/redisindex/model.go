package redisindex

import (
	"context"
	"fmt"
	"time"

	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// OptionWindow is the registry option (registry.Model.Options) that sets
// Config.Window, as a Go duration ("168h").
const OptionWindow = "window"

// MaxWindow bounds Config.Window.
const MaxWindow = 100 * 365 * 24 * time.Hour

var windowOption = registry.Duration(OptionWindow, DefaultWindow, time.Second, MaxWindow,
	"how long an index lives after its reader's last read; posts update only the indexes that live (kept to the second)")

func init() {
	registry.Register(registry.Model{
		Name:     ModelName,
		Family:   registry.FamilyPull,
		Schema:   schema.Pull,
		Database: DefaultDatabase,
		Needs:    registry.MariaDB | registry.Redis,
		Traits:   registry.WriteHooks, // index
		Summary: fmt.Sprintf("pull, with each reader's followees ranked by their newest message in a Redis sorted set (Flickr's), so that a newest page merges only the %d who posted last; posts raise their author's score in every active follower's index",
			timeline.DefaultLimit+1),
		Options: []registry.Option{windowOption},
		Work:    Work,
		Open: func(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
			return Open(ctx, Config{
				DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force,
				Redis: cfg.Redis, Namespace: cfg.Namespace, Window: cfg.Duration(OptionWindow),
			})
		},
		Reconcile: Checker,
		Bench: registry.Bench{Phases: registry.AllPhases, WarmReads: true, OwnSubmission: true,
			SubmissionNote: "its posts also raise the author's score in the Redis index of every active follower"},
	})
}
