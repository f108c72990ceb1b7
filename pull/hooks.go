package pull

import (
	"context"
	"database/sql"

	schema "github.com/pushpull/pushpull/sql"
)

// WriteHooks are what a store's writes must do beyond the SQL, so that
// state derived from the database stays current (schema.Hooks; package
// recent's are HookLists and HookHints).
//
// A store whose strategy reads that state (recent.Recent, recent.Active)
// records the hooks it needs in its database's pushpull_meta when it
// opens. Every store opened on that database later, whatever its
// strategy, runs them: with Config.Memcache it turns them on, without it
// Open fails with ErrWriteHooks. A store opened before they were recorded
// learns of them at its next write, which fails with ErrWriteHooks and
// writes nothing (schema.HookGuard), unless the store ignores them (a
// harness that measures stores one after another on one database:
// HookGuard.Ignore).
type WriteHooks = schema.Hooks

const (
	// HookLists: Post appends to the author's list of newest ids, Follow
	// and Unfollow replace the follower's follow token (recent.Recent).
	HookLists = schema.HookLists
	// HookHints: Post also hints the indexes of the author's heavy
	// followers (recent.Active).
	HookHints = schema.HookHints
)

// ErrWriteHooks means a store would write to a database without the write
// hooks recorded there (schema.ErrWriteHooks).
var ErrWriteHooks = schema.ErrWriteHooks

// RecordedHooks returns the write hooks recorded in the pushpull_meta of
// db, a database (or keyspace) of any pushpull schema: those every store
// writing to it must run.
func RecordedHooks(ctx context.Context, db *sql.DB) (WriteHooks, error) {
	return schema.RecordedHooks(ctx, db)
}
