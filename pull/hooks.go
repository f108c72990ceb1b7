package pull

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// WriteHooks are what a store's writes must do beyond the SQL, so that
// state derived from the database stays current: the write hooks of
// package recent.
//
// A store whose strategy reads that state (recent.Recent, recent.Active)
// records the hooks it needs in its database's pushpull_meta (name
// "write_hooks") when it opens. Every store opened on that database later,
// whatever its strategy, runs them: with Config.Memcache it turns them on,
// without it Open fails with ErrWriteHooks. A store opened before the hooks
// were recorded keeps writing without them until it is reopened; the
// benchmark relies on that, opening every model of a database first and
// letting those that keep the state write before the others
// (registry.Bench.WriteRank).
type WriteHooks uint8

const (
	// HookLists: Post appends to the author's list of newest ids, Follow
	// and Unfollow replace the follower's follow token (recent.Recent).
	HookLists WriteHooks = 1 << iota
	// HookHints: Post also hints the indexes of the author's heavy
	// followers (recent.Active).
	HookHints
)

var hookNames = []string{"lists", "hints"}

// String lists the hooks by name, comma-separated ("lists,hints").
func (h WriteHooks) String() string {
	var names []string
	for i, n := range hookNames {
		if h&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "no"
	}
	return strings.Join(names, ",")
}

// ErrWriteHooks means a store would write to a database without the write
// hooks recorded there: it was not given the memcached servers the hooks
// write to.
var ErrWriteHooks = errors.New("the database needs write hooks this store cannot run")

// RecordedHooks returns the write hooks recorded in the pushpull_meta of
// db, a database (or keyspace) of any pushpull schema: those every store
// writing to it must run.
func RecordedHooks(ctx context.Context, db *sql.DB) (WriteHooks, error) {
	var v string
	err := db.QueryRowContext(ctx, `SELECT value FROM pushpull_meta WHERE name = 'write_hooks'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read write hooks: %w", err)
	}
	var h WriteHooks
	for name := range strings.SplitSeq(v, ",") {
		i := slices.Index(hookNames, name)
		switch {
		case name == "":
		case i < 0:
			return 0, fmt.Errorf("%w: unknown write hook %q in pushpull_meta", ErrWriteHooks, name)
		default:
			h |= 1 << i
		}
	}
	return h, nil
}

// recordHooks adds h to the hooks recorded in db's pushpull_meta, one
// statement a hook, so that stores recording at once lose none.
func recordHooks(ctx context.Context, db *sql.DB, h WriteHooks) error {
	if h == 0 {
		return nil
	}
	if _, err := db.ExecContext(ctx, `INSERT IGNORE INTO pushpull_meta (name, value) VALUES ('write_hooks', '')`); err != nil {
		return fmt.Errorf("record write hooks: %w", err)
	}
	for i, name := range hookNames {
		if h&(1<<i) == 0 {
			continue
		}
		if _, err := db.ExecContext(ctx,
			`UPDATE pushpull_meta SET value = CONCAT_WS(',', NULLIF(value, ''), ?) WHERE name = 'write_hooks' AND NOT FIND_IN_SET(?, value)`,
			name, name); err != nil {
			return fmt.Errorf("record write hooks: %w", err)
		}
	}
	return nil
}
