package push

import (
	"context"

	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// CompressedModelName is push-compressed's name in package registry: the
// push model with its mailbox in compressed InnoDB pages
// (schema.PushCompressed, Config.Schema), as the paper suggests for the
// mailbox's bulk. The statements are push's, over a table whose pages
// MariaDB compresses on write (PAGE_COMPRESSED=1, zlib) and stores with
// holes punched in the file. It trades CPU on every page written and read
// from disk for the mailbox's disk space; information_schema's data size
// does not change, the benchmark's disk bytes do.
const CompressedModelName = "push-compressed"

// DefaultCompressedDatabase is the database push-compressed uses unless
// told otherwise.
const DefaultCompressedDatabase = "pushpull_push_compressed"

// openCompressed opens push-compressed from a registry.Config: push's
// store over the compressed mailbox, with DrowningOptions.
func openCompressed(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	c := DrowningConfigFrom(cfg)
	if c.Database == "" {
		c.Database = DefaultCompressedDatabase
	}
	c.Schema = schema.PushCompressed
	return Open(ctx, c)
}
