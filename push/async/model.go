package async

import (
	"context"
	"slices"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// ModelName is the model's name in package registry.
const ModelName = "push-async"

// The model's registry options.
const (
	// OptionWorkers is Options.Workers ("-1": none in the store).
	OptionWorkers = "workers"
	// OptionChunk is Options.Chunk.
	OptionChunk = "chunk"
)

// options are push-async's registry options, and vitessOptions
// push-async@vitess's, in the order of the Options fields they set.
var (
	options = append([]registry.Option{
		registry.Int(OptionWorkers, DefaultWorkers, -1, MaxWorkers,
			"fan-out workers in each store; -1: none, for `pushpull fanout` to run them (0: the default)"),
		registry.Int(OptionChunk, DefaultChunk, 1, MaxChunk, "followers written per fan-out transaction"),
	}, push.DrowningOptions...)
	vitessOptions = []registry.Option{
		registry.Int(OptionWorkers, DefaultWorkers, -1, MaxWorkers,
			"fan-out workers in each store; -1: none, the jobs wait for another store's"),
		registry.Int(OptionChunk, DefaultVitessChunk, 1, MaxVitessChunk,
			"followers per fan-out chunk: one transaction on the author's shard, one statement on each of their shards"),
	}
)

func init() {
	registry.Register(registry.Model{
		Name:     ModelName,
		Family:   registry.FamilyPush,
		Schema:   schema.Push,
		Database: push.DefaultDatabase,
		Needs:    registry.MariaDB,
		Summary: "push with asynchronous fan-out: a post commits the message and a fan-out job; workers write the mailboxes " +
			"in chunks of followers; reads see a post once the store settles",
		Options:   options,
		Traits:    registry.Async,
		Work:      Work,
		Reconcile: Checker,
		Open: func(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
			return Open(ctx, push.DrowningConfigFrom(cfg), Options{Workers: cfg.Int(OptionWorkers), Chunk: cfg.Int(OptionChunk)})
		},
		Bench: bench,
	})
	registry.Register(registry.Model{
		Name:     VitessModelName,
		Family:   registry.FamilyPush,
		Schema:   schema.PushVitess,
		Database: push.DefaultVitessDatabase,
		Needs:    registry.Vitess,
		Summary: "push-async on Vitess, sharded by user: a post is one transaction on the author's shard (message and fan-out job); " +
			"workers write the mailboxes a chunk of followers at a time, over one post or many, one statement per destination shard",
		Options:   vitessOptions,
		Traits:    registry.Async,
		Reconcile: VitessChecker,
		Open: func(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
			return OpenVitess(ctx, push.Config{DSN: cfg.Vtgate, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force, VtgateStatus: cfg.VtgateStatus},
				Options{Workers: cfg.Int(OptionWorkers), Chunk: cfg.Int(OptionChunk)})
		},
		Bench: bench,
	})
}

// bench is how the benchmark runs both models.
var bench = registry.Bench{
	Phases:    append(slices.Clone(registry.AllPhases), registry.PhaseHalfRate),
	WriteRank: 2, OwnSubmission: true,
	SubmissionNote: "a post writes its message and a fan-out job; the store's workers write the mailbox rows " +
		"meanwhile, and the run settles them after each write phase and reports the fan-out lag",
}
