package async

import (
	"context"
	"slices"
	"strconv"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// ModelName is the model's name in package registry.
const ModelName = "push-async"

// The model's settings in registry.Config.Options.
const (
	// OptionWorkers is Options.Workers ("-1": none in the store).
	OptionWorkers = "workers"
	// OptionChunk is Options.Chunk.
	OptionChunk = "chunk"
)

// ParseOptions reads Options from a registry.Config's Options; a value
// that is not a whole number or out of range is an *OptionError.
func ParseOptions(m map[string]string) (Options, error) {
	var o Options
	for _, f := range []struct {
		name string
		dst  *int
	}{{OptionWorkers, &o.Workers}, {OptionChunk, &o.Chunk}} {
		v, ok := m[f.name]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return Options{}, &OptionError{f.name, v, "want a whole number"}
		}
		*f.dst = n
	}
	return o, o.check()
}

func init() {
	registry.Register(registry.Model{
		Name:     ModelName,
		Family:   registry.FamilyPush,
		Schema:   schema.Push,
		Database: push.DefaultDatabase,
		Needs:    registry.MariaDB,
		Summary: "push with asynchronous fan-out: a post commits the message and a fan-out job; workers write the mailboxes " +
			"in chunks of followers; reads see a post once the store settles",
		Open: func(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
			opts, err := ParseOptions(cfg.Options)
			if err != nil {
				return nil, err
			}
			return Open(ctx, push.ConfigFrom(cfg), opts)
		},
		Bench: registry.Bench{
			Phases:    append(slices.Clone(registry.AllPhases), registry.PhaseHalfRate),
			WriteRank: 2, OwnSubmission: true,
			SubmissionNote: "a post writes its message and a fan-out job; the store's workers write the mailbox rows " +
				"meanwhile, and the run settles them after each write phase and reports the fan-out lag",
		},
	})
}
