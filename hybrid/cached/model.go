// Package cached is the hybrid of push and pull as Twitter runs it: every
// reader's home timeline is kept in memory (memcached here, Redis there),
// a post is pushed into the timelines of its author's followers who read
// lately, and the posts of celebrities are not pushed at all: their
// followers' reads merge them in from the celebrities' own lists.
//
// The database holds what the pull model's does (messages and follows)
// and stays the system of record; memcached holds derived state that is
// rebuilt from it when lost. The mechanics (home indexes, hints, the
// per-edge registration that keeps celebrities' posts from fanning out,
// the proof that makes every page exact) are recent.Home's, read through
// a pull.Store; this package names the model and sets its policy.
//
// A newest page is one memcached multi-get (the reader's index, follow
// token and followed celebrities' lists) and, when the bodies are in the
// process's message cache, no database query. A post writes its row, then
// appends its id to its author's list and one hint per registered
// follower (pipelined). Pages deeper than the index (128 ids) and reads
// the index cannot prove are read as pull-recent reads them.
package cached

import (
	"context"
	"fmt"

	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// ModelName is the model's name in package registry.
const ModelName = "hybrid-memcached"

// DefaultDatabase is the database the model uses unless told otherwise. It
// is its own: the hints its posts send are not those other pull stores'
// readers expect.
const DefaultDatabase = "pushpull_hybrid_memcached"

// OptionThreshold is the registry option (registry.Config.Options) that
// sets the follower count from which an author is pulled
// (recent.Home.Threshold).
const OptionThreshold = "threshold"

func init() {
	registry.Register(registry.Model{
		Name:     ModelName,
		Family:   registry.FamilyHybrid,
		Schema:   schema.Pull,
		Database: DefaultDatabase,
		Needs:    registry.MariaDB | registry.Memcached,
		Summary: fmt.Sprintf("timelines in memcached: each post hints the home index of every follower who reads lately, except for authors with %d followers or more (option threshold), whose lists readers merge in; the database stays the system of record",
			recent.DefaultHomeThreshold),
		Open: openModel,
		Bench: registry.Bench{Phases: registry.AllPhases, WarmReads: true, OwnSubmission: true,
			SubmissionNote: "its posts also append to the author's list and hint the home index of each registered follower"},
	})
}

// openModel opens the model from a registry.Config: option "threshold" is
// recent.Home.Threshold.
func openModel(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	threshold, err := cfg.IntOption(OptionThreshold, recent.DefaultHomeThreshold)
	if err != nil {
		return nil, err
	}
	if threshold < 1 {
		return nil, fmt.Errorf("open %s: threshold %d: want at least 1 follower", ModelName, threshold)
	}
	return Open(ctx, pull.Config{
		DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force,
		Memcache: cfg.Memcache, Namespace: cfg.Namespace,
	}, threshold)
}

// Open opens the model on cfg's servers (cfg.Read is replaced; Memcache is
// required): a pull store reading with recent.Home at threshold.
func Open(ctx context.Context, cfg pull.Config, threshold int) (*pull.Store, error) {
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	cfg.Read = recent.Home{Threshold: threshold}
	return pull.Open(ctx, cfg)
}
