package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// The registry options (registry.Model.Options) of the model.
const (
	// OptionCap is Config.Cap.
	OptionCap = "cap"
	// OptionWindow is Config.Window, as a Go duration ("168h").
	OptionWindow = "window"
	// OptionMessageCache is Config.MessageCache; 0 keeps none.
	OptionMessageCache = "message_cache"
)

// MaxMessageCache bounds the message_cache option: a slot is allocated
// for every entry, used or not.
const MaxMessageCache = 1 << 24

// options are the model's registry options, in the order of Config's
// fields they set: Cap, Window and MessageCache.
var options = []registry.Option{
	registry.Int(OptionCap, DefaultCap, 1, MaxCap,
		"ids a feed in Redis keeps (the newest); older pages are pulled from MariaDB"),
	registry.Duration(OptionWindow, DefaultWindow, time.Second, MaxWindow,
		"how long a feed lives after its reader's last read; posts reach only the feeds that live (kept to the second)"),
	registry.Int(OptionMessageCache, DefaultMessageCache, 1, MaxMessageCache,
		"messages kept in process for the pages' bodies").OrZero("none"),
}

// check reports the first of Cap and Window (their defaults filled in)
// that its option does not take, as a *registry.OptionError.
func (c Config) check() error {
	for i, v := range []any{c.Cap, c.Window} {
		if err := options[i].Check(ModelName, v); err != nil {
			return err
		}
	}
	return nil
}

func init() {
	registry.Register(registry.Model{
		Name:     ModelName,
		Family:   registry.FamilyPush,
		Schema:   schema.Pull,
		Database: DefaultDatabase,
		Needs:    registry.MariaDB | registry.Redis,
		Traits:   registry.WriteHooks, // feeds
		Summary: fmt.Sprintf("push into home feeds kept in Redis lists of the newest %d ids (option cap), for the followers who read within %d days (option window), as Mastodon does; MariaDB is the record, and a missing feed is rebuilt by pull",
			DefaultCap, DefaultWindow/(24*time.Hour)),
		Options:   push.WithDrowning(options),
		Work:      Work,
		Reconcile: Checker,
		Open:      openModel,
		Bench: registry.Bench{Phases: registry.AllPhases, WarmReads: true, OwnSubmission: true,
			SubmissionNote: "its posts also add the id to the Redis feed of every active follower"},
	})
}

// openModel opens the model from a registry.Config: options "cap",
// "window" and "message_cache" are Config.Cap, Config.Window and
// Config.MessageCache, and push.DrowningOptions Config.Drowning.
func openModel(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	cache := cfg.Int(OptionMessageCache)
	if cache == 0 {
		cache = -1 // the option's 0 is none; Config's is the default
	}
	return Open(ctx, Config{
		DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force,
		Redis: cfg.Redis, Namespace: cfg.Namespace,
		Cap: cfg.Int(OptionCap), Window: cfg.Duration(OptionWindow), MessageCache: cache,
		Drowning: push.DrowningFrom(cfg),
	})
}
