// Package pushcompressed is the push model with its mailbox in compressed
// InnoDB pages (schema.PushCompressed), as the paper suggests for the
// mailbox's bulk: the same statements as package push, over a table whose
// pages MariaDB compresses on write (PAGE_COMPRESSED=1, zlib) and stores
// with holes punched in the file. It trades CPU on every page written and
// read from disk for the mailbox's disk space; information_schema's data
// size does not change, the benchmark's disk bytes do.
package pushcompressed

import (
	"context"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// ModelName is the model's name in package registry.
const ModelName = "push-compressed"

// DefaultDatabase is the database the model uses unless told otherwise.
const DefaultDatabase = "pushpull_push_compressed"

// Open opens a push store on a database with the compressed mailbox.
func Open(ctx context.Context, cfg push.Config) (*push.Store, error) {
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	cfg.Schema = schema.PushCompressed
	return push.Open(ctx, cfg)
}

func init() {
	registry.Register(registry.Model{
		Name:     ModelName,
		Family:   registry.FamilyPush,
		Schema:   schema.PushCompressed,
		Database: DefaultDatabase,
		Needs:    registry.MariaDB,
		Summary:  "push with the mailbox in compressed InnoDB pages (PAGE_COMPRESSED): less disk for CPU on page writes and reads",
		Open: func(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
			return Open(ctx, push.ConfigFrom(cfg))
		},
		Bench: registry.Bench{Phases: registry.AllPhases, WriteRank: 2},
	})
}
