package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Hooks are what the writes to a database must do beyond its SQL, so that
// state that stores keep beside the database (in memcached or Redis)
// stays current: a set of named write hooks.
//
// A store that keeps such state records the hooks it needs in the
// database's pushpull_meta (name "write_hooks", the hooks' names
// comma-separated) when it opens, with RecordHooks. From then on every
// store that writes to the database must run them, in every process:
// each write of a store on MariaDB carries a HookGuard's condition on the
// recorded value, checked and share-locked in the statement that writes
// (or the transaction's first), so a write either ran with the hooks
// recorded before it, or committed before a recording took effect (the
// recording's UPDATE waits for it, and the recorder builds its state
// after). A store that learns of a hook it cannot run fails the write
// with ErrWriteHooks and writes nothing.
type Hooks uint16

const (
	// HookLists: a post appends to its author's list of newest ids in
	// memcached; a follow or unfollow replaces the follower's follow
	// token there (the pull strategies of package recent).
	HookLists Hooks = 1 << iota
	// HookHints: a post also hints the home indexes of its author's
	// heavy followers in memcached.
	HookHints
	// HookPages: a write invalidates the cached pages it changes (its
	// author's followers', the follower's) in memcached (package
	// memcache's store in front of a model).
	HookPages
	// HookFeeds: a post adds its id to the home feeds its author's
	// followers keep in Redis; a delete, follow and unfollow change them.
	HookFeeds
	// HookIndex: a post raises its author in the followee indexes its
	// followers keep in Redis.
	HookIndex
)

var hookNames = []string{"lists", "hints", "pages", "feeds", "index"}

// String lists the hooks by name, comma-separated ("lists,hints"), or
// "none".
func (h Hooks) String() string {
	var names []string
	for i, n := range hookNames {
		if h&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// ErrWriteHooks means a store would write to a database without write
// hooks recorded there: it cannot run them (it was not given the servers
// they write to, or its model keeps no such state).
var ErrWriteHooks = errors.New("the database needs write hooks this store cannot run")

// parseHooks reads a recorded value.
func parseHooks(v string) (Hooks, error) {
	var h Hooks
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

// querier is a connection pool or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// recordedValue reads the recorded value as the last commit left it (a
// locking read: a snapshot of an open transaction could be older), ""
// when nothing is recorded.
func recordedValue(ctx context.Context, q querier, lock bool) (string, error) {
	query := `SELECT value FROM pushpull_meta WHERE name = 'write_hooks'`
	if lock {
		query += ` LOCK IN SHARE MODE`
	}
	var v string
	err := q.QueryRowContext(ctx, query).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read write hooks: %w", err)
	}
	return v, nil
}

// RecordedHooks returns the write hooks recorded in the pushpull_meta of
// db, a database (or keyspace) of any pushpull schema: those every store
// writing to it must run.
func RecordedHooks(ctx context.Context, db *sql.DB) (Hooks, error) {
	v, err := recordedValue(ctx, db, false)
	if err != nil {
		return 0, err
	}
	return parseHooks(v)
}

// RecordHooks adds h to the hooks recorded in db's pushpull_meta, one
// statement a hook, so that stores recording at once lose none. Each
// UPDATE waits for the guarded writes in flight (they share-lock the
// row), so a store that records and then builds its state from the
// database sees every write that ran without the hooks.
func RecordHooks(ctx context.Context, db *sql.DB, h Hooks) error {
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

// The conditions a guarded statement carries, each with one placeholder,
// the statement's last, for the value the guard last read
// (HookGuard.Exec appends it):
//
//	INSERT INTO t (a, b) SELECT ?, ? GuardFrom
//	DELETE FROM t WHERE a = ? AND GuardExists
//
// Both share-lock the recorded row until the statement's transaction
// ends; a statement whose condition fails changes no row.
const (
	GuardFrom   = `FROM pushpull_meta WHERE name = 'write_hooks' AND value = ? LOCK IN SHARE MODE`
	GuardExists = `EXISTS (SELECT 1 ` + GuardFrom + `)`
)

// HookGuard keeps a store's writes to the hooks recorded in its
// database (see Hooks). It knows the hooks the store runs and the value
// it last read; a guarded statement that changed no row because the
// value moved rereads it, and retries when the store runs every hook
// recorded (or ignores them), else fails with ErrWriteHooks. Safe for
// concurrent use.
type HookGuard struct {
	db       *sql.DB
	database string

	mu   sync.Mutex
	runs Hooks
	// known is the value last read, read by every write without the
	// lock; learn stores it under the lock.
	known  atomic.Pointer[string]
	ignore bool
}

// NewHookGuard returns a guard of db (named database in errors) for a
// store that runs the hooks runs. It adds the row the guards' conditions
// read when it is missing, and refuses a recorded value it cannot read.
func NewHookGuard(ctx context.Context, db *sql.DB, database string, runs Hooks) (*HookGuard, error) {
	if _, err := db.ExecContext(ctx, `INSERT IGNORE INTO pushpull_meta (name, value) VALUES ('write_hooks', '')`); err != nil {
		return nil, fmt.Errorf("write hooks: %w", err)
	}
	v, err := recordedValue(ctx, db, false)
	if err != nil {
		return nil, err
	}
	if _, err := parseHooks(v); err != nil {
		return nil, err
	}
	// Nothing is known yet: the hooks recorded now are checked against
	// those the store runs at its first write, when the stores in front
	// of it have said what they run (Run).
	g := &HookGuard{db: db, database: database, runs: runs}
	g.known.Store(&unchecked)
	return g, nil
}

// unchecked is the value a guard knows before its first write: no
// recorded value equals it.
var unchecked = "\x00unchecked"

// Run adds h to the hooks the store runs: a store in front of it (package
// memcache's) that runs them on every write calls it before it records
// them.
func (g *HookGuard) Run(h Hooks) {
	g.mu.Lock()
	g.runs |= h
	g.mu.Unlock()
}

// Record adds h to the hooks the store runs and records them in the
// database (RecordHooks): a store that keeps state beside the database
// calls it once it can keep it, before it builds any from the database.
func (g *HookGuard) Record(ctx context.Context, h Hooks) error {
	g.Run(h)
	return RecordHooks(ctx, g.db, h)
}

// Runs returns the hooks the store runs.
func (g *HookGuard) Runs() Hooks {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs
}

// Ignore has the store write without the hooks other stores recorded,
// leaving their state stale. It is for a harness that measures stores one
// after another on one database and reads none of them after another
// wrote (pushpull bench); a service never wants it. The guarded
// statements run all the same, so their cost is measured.
func (g *HookGuard) Ignore() {
	g.mu.Lock()
	g.ignore = true
	g.mu.Unlock()
}

// DB returns the database the guard reads.
func (g *HookGuard) DB() *sql.DB { return g.db }

func (g *HookGuard) value() string {
	return *g.known.Load()
}

// Exec runs a guarded statement (see GuardFrom) on q, the pool or the
// write's transaction, with args and then the value last read. When it
// changes no row, Exec rereads the value: the same, and the statement had
// nothing to change (an edge that was there, a message that was not);
// moved to hooks the store runs, or ignores, and it runs again; else it
// returns an error matching ErrWriteHooks that names what is missing.
func (g *HookGuard) Exec(ctx context.Context, q querier, query string, args ...any) (sql.Result, error) {
	for range maxLearn {
		known := g.value()
		res, err := q.ExecContext(ctx, query, append(args, known)...)
		if err != nil {
			return nil, err
		}
		n, err := res.RowsAffected()
		if err != nil || n > 0 {
			return res, err
		}
		now, err := recordedValue(ctx, q, true)
		if err != nil {
			return nil, err
		}
		if now == known {
			return res, nil
		}
		if err := g.learn(now); err != nil {
			return nil, err
		}
	}
	return nil, errMoving
}

// Check runs the guard's condition alone, in tx: the first statement of
// a write transaction whose own statements carry none. It holds the
// share lock until tx ends.
func (g *HookGuard) Check(ctx context.Context, tx *sql.Tx) error {
	for range maxLearn {
		known := g.value()
		now, err := recordedValue(ctx, tx, true)
		if err != nil {
			return err
		}
		if now == known {
			return nil
		}
		if err := g.learn(now); err != nil {
			return err
		}
	}
	return errMoving
}

// maxLearn bounds the rereads of one write: the value only grows, by one
// hook a statement, so it moves at most once a hook.
var maxLearn = 2 * len(hookNames)

var errMoving = errors.New("write hooks: the recorded value kept moving")

// learn takes a recorded value that moved: the store runs (or ignores)
// every hook in it, or ErrWriteHooks.
func (g *HookGuard) learn(v string) error {
	h, err := parseHooks(v)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if missing := h &^ g.runs; missing != 0 && !g.ignore {
		return fmt.Errorf("%w: database %s needs the %s write hooks, recorded in its pushpull_meta by a store that keeps state beside it (in memcached or Redis), and this store runs %s; write through a store of that model, with its servers and namespace",
			ErrWriteHooks, g.database, missing, g.runs)
	}
	g.known.Store(&v)
	return nil
}

// Guarded is the ability of a store whose writes a HookGuard keeps (the
// stores on MariaDB).
type Guarded interface {
	WriteGuard() *HookGuard
}
