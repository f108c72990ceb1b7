package pull

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// HybridMemcachedModelName is the name in package registry of the hybrid
// of push and pull as Twitter runs it: every reader's home timeline is
// kept in memory (memcached here, Redis there), a post is pushed into the
// timelines of its author's followers who read lately, and the posts of
// celebrities are not pushed at all: their followers' reads merge them in
// from the celebrities' own lists.
//
// It is registered here, beside the pull strategies, because it is a pull
// Store reading with recent.Home: the database holds what the pull
// model's does (messages and follows) and stays the system of record;
// memcached holds derived state that is rebuilt from it when lost. The
// mechanics (home indexes, hints, the per-edge registration that keeps
// celebrities' posts from fanning out, the proof that makes every page
// exact) are recent.Home's; this file names the model and sets its policy.
//
// A newest page is one memcached multi-get (the reader's index, follow
// token and followed celebrities' lists) and, when the bodies are in the
// process's message cache, no database query. A post writes its row, then
// appends its id to its author's list and one hint per registered
// follower (pipelined). Pages deeper than the index and reads the index
// cannot prove are read as pull-recent reads them.
const HybridMemcachedModelName = "hybrid-memcached"

// DefaultHybridMemcachedDatabase is the database hybrid-memcached uses
// unless told otherwise. It is its own: the hints its posts send are not
// those other pull stores' readers expect.
const DefaultHybridMemcachedDatabase = "pushpull_hybrid_memcached"

// OptionThreshold is hybrid-memcached's registry option
// (registry.Model.Options) that sets the follower count from which an
// author is pulled (recent.Home.Threshold).
const OptionThreshold = "threshold"

// hybridMemcachedOptions are hybrid-memcached's registry options:
// recent.Home's settings.
var hybridMemcachedOptions = append([]registry.Option{
	registry.Int(OptionThreshold, recent.DefaultHomeThreshold, 1, math.MaxInt,
		"followers from which an author is pulled: their posts hint no home index, and readers merge their lists in"),
	registry.Int(OptionHomeLen, recent.DefaultHomeLen, 1, recent.MaxLen,
		"message ids a home index holds; deeper pages are read as pull-recent reads them"),
	registry.Duration(OptionCelebrityRefresh, recent.DefaultCelebrityRefresh, time.Millisecond, 24*time.Hour,
		"how often a process rereads who the celebrities are (a follow through it that moves an author across the threshold rereads them at once)"),
}, recentOptions...)

func init() {
	registry.Register(registry.Model{
		Name:     HybridMemcachedModelName,
		Family:   registry.FamilyHybrid,
		Schema:   schema.Pull,
		Database: DefaultHybridMemcachedDatabase,
		Needs:    registry.MariaDB | registry.Memcached,
		Summary: fmt.Sprintf("timelines in memcached: each post hints the home index of every follower who reads lately, except for authors with %d followers or more (option threshold), whose lists readers merge in; the database stays the system of record",
			recent.DefaultHomeThreshold),
		Options:   hybridMemcachedOptions,
		Traits:    registry.WriteHooks,
		Work:      hybridMemcachedWork,
		Reconcile: ListsChecker,
		Open:      openHybridMemcached,
		Bench: registry.Bench{Phases: registry.AllPhases, WarmReads: true, OwnSubmission: true,
			SubmissionNote: "its posts also append to the author's list and hint the home index of each registered follower"},
	})
}

// openHybridMemcached opens hybrid-memcached from a registry.Config: its
// options set recent.Home's fields.
func openHybridMemcached(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	return OpenHybridMemcached(ctx, Config{
		DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force,
		Memcache: cfg.Memcache, Namespace: cfg.Namespace,
	}, recent.Home{Recent: recentFrom(cfg), Keep: cfg.Int(OptionHomeLen), Threshold: cfg.Int(OptionThreshold),
		CelebrityRefresh: cfg.Duration(OptionCelebrityRefresh)})
}

// OpenHybridMemcached opens hybrid-memcached on cfg's servers (cfg.Read is
// replaced; Memcache is required): a pull store reading with home, whose
// zero fields mean their defaults.
func OpenHybridMemcached(ctx context.Context, cfg Config, home recent.Home) (*Store, error) {
	if cfg.Database == "" {
		cfg.Database = DefaultHybridMemcachedDatabase
	}
	cfg.Read = home
	return Open(ctx, cfg)
}
