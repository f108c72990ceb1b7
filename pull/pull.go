// Package pull is the pull ("merge on read") model of a home timeline on
// MySQL/MariaDB.
//
// Posting stores only the message, so writes are cheap and the database is
// small; reading a timeline computes it from the follow graph. Store does
// the writes and hands each read to a read strategy (Config.Read), all of
// which share one database and give identical pages:
//
//   - package sqlread: SP, Client, Naive, Union and Merge, stateless
//     strategies that read the tables alone;
//   - package recent: Recent, Active and Home, which read state kept in
//     memcached (each author's newest ids, indexes of the followees who
//     posted last, home indexes) that every write to the database must
//     keep current. A store reading with Home is the hybrid-memcached
//     model, registered here (HybridMemcachedModelName).
//
// Which write hooks a database needs is recorded in its pushpull_meta (see
// WriteHooks), so that no store writes to it without them.
package pull

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/pushpull/pushpull/internal/mckey"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/record"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/pull/sqlread"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// DefaultDatabase is the database the pull model uses unless told otherwise.
const DefaultDatabase = "pushpull_pull"

// DefaultVitessDatabase is the keyspace the pull model uses on Vitess
// unless told otherwise.
const DefaultVitessDatabase = "pushpull_pull_vitess"

// Strategy names a read strategy: the Name of a ReadStrategy.
type Strategy string

const (
	StrategySP     Strategy = "sp"     // sqlread.SP
	StrategyClient Strategy = "client" // sqlread.Client
	StrategyNaive  Strategy = "naive"  // sqlread.Naive
	StrategyUnion  Strategy = "union"  // sqlread.Union
	StrategyMerge  Strategy = "merge"  // sqlread.Merge
	StrategyRecent Strategy = "recent" // recent.Recent; needs Config.Memcache
	StrategyActive Strategy = "active" // recent.Active; needs Config.Memcache
)

// Strategies lists every strategy, in the order the benchmark runs them.
var Strategies = []Strategy{StrategySP, StrategyClient, StrategyNaive, StrategyUnion, StrategyMerge, StrategyRecent, StrategyActive}

// ReadStrategy is a read strategy with its own settings: a value of
// sqlread.SP, sqlread.Client, sqlread.Naive, sqlread.Union, sqlread.Merge
// (any sqlread.Strategy), recent.Recent or recent.Active (any
// recent.Strategy).
type ReadStrategy interface {
	Name() string
}

// Read returns strategy's ReadStrategy with default settings.
func Read(strategy Strategy) (ReadStrategy, error) {
	for _, r := range []ReadStrategy{sqlread.SP{}, sqlread.Client{}, sqlread.Naive{}, sqlread.Union{}, sqlread.Merge{}, recent.Recent{}, recent.Active{}} {
		if r.Name() == string(strategy) {
			return r, nil
		}
	}
	return nil, fmt.Errorf("unknown pull strategy %q (want one of %v)", strategy, Strategies)
}

// Config says where the store lives and how it reads.
type Config struct {
	// DSN is a go-sql-driver DSN of the server, e.g.
	// "user:pass@tcp(127.0.0.1:3306)/". Its database name is ignored.
	DSN string
	// Database holds the pull model's tables and procedures; "" means
	// DefaultDatabase. It is created if missing.
	Database string
	// MaxConns caps the connection pool; 0 means 64.
	MaxConns int
	// Force applies the schema even to a database holding other tables.
	Force bool

	// Memcache lists memcached servers ("host:port"). The strategies of
	// package recent need them, and so does every store, whatever its
	// strategy, on a database whose write hooks are recorded (see
	// WriteHooks); other stores do not use them.
	Memcache []string
	// Namespace prefixes the memcached keys, so that stores on different
	// databases, or tests, can share a memcached: printable ASCII without
	// spaces, at most mckey.MaxNamespaceLen bytes. Stores that write to
	// one database must share it.
	Namespace string
	// MemcacheTimeout bounds each memcached request of the write hooks and
	// reads (recent.Options.Timeout); 0 means recent.DefaultTimeout.
	MemcacheTimeout time.Duration

	// Read is the read strategy with its settings; nil means sqlread.SP{}
	// (sqlread.Client{} on Vitess).
	Read ReadStrategy

	// Vitess: DSN is a vtgate and Database a keyspace sharded by user
	// with schema.VitessVSchema (schema.PullVitess). Read must then be a
	// sqlread.VitessStrategy or recent.Recent, which reads the keyspace
	// through sqlread.VitessTables: stored procedures cannot run on a
	// sharded keyspace, the single statements of sqlread's Union and
	// Merge join across shards, which vtgate does not plan, and
	// recent.Active's indexes and hint targets need one database.
	Vitess bool
	// VtgateStatus is, on Vitess, the host:port of vtgate's status pages,
	// where Counters reads the tablet calls; "" for none.
	VtgateStatus string
}

// Store is the pull model. It implements timeline.Store; the reads of the
// record (a message, an author's own timeline, the follow lists) are
// record.Reader's.
type Store struct {
	record.Reader
	db       *sql.DB
	codec    *timeline.CursorCodec
	now      func() time.Time
	strategy Strategy
	reader   sqlread.Reader
	pages    sqlread.PageCount
	hooks    *recent.State     // nil unless the store runs write hooks
	guard    *schema.HookGuard // nil on Vitess
	keyspace string            // on Vitess with VtgateStatus: the keyspace
	status   string            // and vtgate's status pages, for Counters
}

var _ timeline.Store = (*Store)(nil)

// errNoMeta: a guarded INSERT found no write_hooks row to read.
var errNoMeta = errors.New("the database's pushpull_meta has no write_hooks row (was it emptied by hand?)")

// Open connects to the server, creates the database, tables and procedures
// if needed, and returns the store. A store of package recent's strategies
// records the write hooks it needs in the database (WriteHooks); a store
// opened on a database with hooks recorded runs them, or, without
// Config.Memcache, refuses to open with an error matching ErrWriteHooks.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
		if cfg.Vitess {
			cfg.Database = DefaultVitessDatabase
		}
	}
	model := schema.Pull
	if cfg.Read == nil {
		cfg.Read = sqlread.SP{}
		if cfg.Vitess {
			cfg.Read = sqlread.Client{}
		}
	}
	if cfg.Vitess {
		switch cfg.Read.(type) {
		case sqlread.VitessStrategy, recent.Recent:
		default:
			return nil, fmt.Errorf("open pull store: strategy %q does not run on Vitess (want a sqlread.VitessStrategy or recent.Recent)", cfg.Read.Name())
		}
		model = schema.PullVitess
	}
	s := &Store{now: time.Now, strategy: Strategy(cfg.Read.Name())}
	if cfg.Vitess {
		s.keyspace, s.status = cfg.Database, cfg.VtgateStatus
	}
	var need WriteHooks // what this store's reads need
	switch read := cfg.Read.(type) {
	case sqlread.Strategy:
	case recent.Strategy:
		if len(cfg.Memcache) == 0 {
			return nil, fmt.Errorf("open pull store: strategy %q needs memcached servers (Config.Memcache)", s.strategy)
		}
		need = HookLists
		if read.Hints() {
			need |= HookHints
		}
	default:
		return nil, fmt.Errorf("open pull store: unknown read strategy %T (want one of package sqlread's or recent's)", cfg.Read)
	}
	if err := mckey.CheckNamespace(cfg.Namespace); err != nil {
		return nil, fmt.Errorf("open pull store: %w", err)
	}
	db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Vitess: cfg.Vitess})
	if err != nil {
		return nil, fmt.Errorf("open pull store: %w", err)
	}
	s.db = db
	if err := s.open(ctx, cfg, model, need); err != nil {
		s.Close()
		return nil, fmt.Errorf("open pull store: %w", err)
	}
	return s, nil
}

// open is Open once the database is connected.
func (s *Store) open(ctx context.Context, cfg Config, model schema.Model, need WriteHooks) error {
	if err := schema.Apply(ctx, s.db, model, schema.Options{Force: cfg.Force}); err != nil {
		return err
	}
	var err error
	if s.codec, err = schema.CursorCodec(ctx, s.db); err != nil {
		return err
	}
	s.Reader = record.Reader{DB: s.db, Codec: s.codec}
	recorded, err := RecordedHooks(ctx, s.db)
	if err != nil {
		return err
	}
	// The hooks of package recent are turned on here; the others are run
	// by the stores built on this one, which say so to the guard.
	hooks := (recorded | need) & (HookLists | HookHints)
	if hooks != 0 && len(cfg.Memcache) == 0 {
		return fmt.Errorf("%w: database %s needs the %s write hooks, recorded in its pushpull_meta by a store that reads memcached; give this store the memcached servers and namespace of those stores (Config.Memcache, Config.Namespace)",
			ErrWriteHooks, cfg.Database, recorded)
	}
	env := sqlread.Env{DB: s.db, Pages: &s.pages}
	if hooks != 0 {
		var tables sqlread.Tables = sqlread.MariaDBTables{}
		if cfg.Vitess {
			if hooks&HookHints != 0 {
				return fmt.Errorf("%w: keyspace %s records the %s write hooks, and hints do not run on Vitess", ErrWriteHooks, cfg.Database, recorded)
			}
			tables = sqlread.VitessTables{}
		}
		s.hooks, err = recent.Open(ctx, env, recent.Options{
			Servers: cfg.Memcache, Namespace: cfg.Namespace, MaxConns: cfg.MaxConns, Hints: hooks&HookHints != 0,
			Tables: tables, Timeout: cfg.MemcacheTimeout,
		})
		if err != nil {
			return err
		}
	}
	switch read := cfg.Read.(type) {
	case sqlread.Strategy:
		s.reader = read.NewReader(env)
	case recent.Strategy:
		if s.reader, err = read.NewReader(s.hooks); err != nil {
			return err
		}
	}
	// Recorded last, once this store can keep them: stores opened from
	// now on run them, stores open already learn of them at their next
	// write.
	if err := schema.RecordHooks(ctx, s.db, need&^recorded); err != nil {
		return err
	}
	if !cfg.Vitess {
		s.guard, err = schema.NewHookGuard(ctx, s.db, cfg.Database, hooks)
	}
	return err
}

// WriteGuard implements schema.Guarded: the guard of the store's writes,
// nil on Vitess, where the hooks are checked only when a store opens.
func (s *Store) WriteGuard() *schema.HookGuard { return s.guard }

// write runs a write statement: guarded, the guard's condition in it, on
// MariaDB; plain on Vitess.
func (s *Store) write(ctx context.Context, guarded, plain string, args ...any) (sql.Result, error) {
	if s.guard == nil {
		return s.db.ExecContext(ctx, plain, args...)
	}
	return s.guard.Exec(ctx, s.db, guarded, args...)
}

// DB returns the store's connection pool, for measurement and bulk loading.
func (s *Store) DB() *sql.DB { return s.db }

// Strategy returns the read strategy's name.
func (s *Store) Strategy() Strategy { return s.strategy }

// DownServers implements timeline.Degraded: the memcached servers failing
// now, whose keys are read from the database until they answer again.
func (s *Store) DownServers() []string {
	if s.hooks == nil {
		return nil
	}
	return s.hooks.DownServers()
}

// Hooks returns the write hooks the store runs.
func (s *Store) Hooks() WriteHooks {
	switch {
	case s.hooks == nil:
		return 0
	case s.hooks.SendsHints():
		return HookLists | HookHints
	}
	return HookLists
}

// Post implements timeline.Store: one INSERT, whatever the follower count,
// and the write hooks the database needs.
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	if err := timeline.CheckPost(author, body); err != nil {
		return timeline.Message{}, err
	}
	msg := timeline.Message{Author: author, Body: body, CreatedAt: s.now().UTC().Truncate(time.Microsecond)}
	res, err := s.write(ctx,
		`INSERT INTO messages (author_id, body, created_at) SELECT ?, ?, ? `+schema.GuardFrom,
		`INSERT INTO messages (author_id, body, created_at) VALUES (?, ?, ?)`,
		author, body, msg.CreatedAt)
	var id int64
	if err == nil {
		id, err = res.LastInsertId()
	}
	if err == nil && id == 0 {
		err = errNoMeta
	}
	if err != nil {
		if s.hooks != nil {
			s.hooks.PostFailed(ctx, author)
		}
		return timeline.Message{}, fmt.Errorf("pull post: %w", err)
	}
	msg.ID = timeline.MessageID(id)
	if s.hooks != nil {
		s.hooks.Posted(ctx, msg)
	}
	return msg, nil
}

// Delete implements timeline.Store: one DELETE of the message's row, and
// the write hooks the database needs (the author's list and the indexes
// that may hold the id are rebuilt without it).
func (s *Store) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	if err := timeline.CheckDelete(author, id); err != nil {
		return err
	}
	res, err := s.write(ctx,
		`DELETE FROM messages WHERE id = ? AND author_id = ? AND `+schema.GuardExists,
		`DELETE FROM messages WHERE id = ? AND author_id = ?`, id, author)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if s.hooks != nil && (err != nil || n > 0) {
		s.hooks.Deleted(ctx, author, id)
	}
	switch {
	case err != nil:
		return fmt.Errorf("pull delete: %w", err)
	case n == 0:
		return fmt.Errorf("pull delete: %w", timeline.ErrNotFound)
	}
	return nil
}

// Follow implements timeline.Store.
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	if err := timeline.CheckFollow(follower, followee); err != nil {
		return err
	}
	res, err := s.write(ctx,
		`INSERT IGNORE INTO follows (follower_id, followee_id) SELECT ?, ? `+schema.GuardFrom,
		`INSERT IGNORE INTO follows (follower_id, followee_id) VALUES (?, ?)`, follower, followee)
	s.followsChanged(ctx, follower)
	if err != nil {
		return fmt.Errorf("pull follow: %w", err)
	}
	s.edgeChanged(ctx, res, follower, followee, true)
	return nil
}

// Unfollow implements timeline.Store.
func (s *Store) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	if err := timeline.CheckFollow(follower, followee); err != nil {
		return err
	}
	res, err := s.write(ctx,
		`DELETE FROM follows WHERE follower_id = ? AND followee_id = ? AND `+schema.GuardExists,
		`DELETE FROM follows WHERE follower_id = ? AND followee_id = ?`, follower, followee)
	s.followsChanged(ctx, follower)
	if err != nil {
		return fmt.Errorf("pull unfollow: %w", err)
	}
	s.edgeChanged(ctx, res, follower, followee, false)
	return nil
}

// edgeChanged runs the hook of a follow (follow) or unfollow that changed
// a row: a followee whose follower count may have crossed a threshold.
func (s *Store) edgeChanged(ctx context.Context, res sql.Result, follower, followee timeline.UserID, follow bool) {
	if s.hooks == nil {
		return
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		s.hooks.FollowChanged(ctx, follower, followee, follow)
	}
}

// followsChanged runs the follow hook. It runs even after a failed write,
// which may have committed all the same.
func (s *Store) followsChanged(ctx context.Context, user timeline.UserID) {
	if s.hooks != nil {
		s.hooks.FollowsChanged(ctx, user)
	}
}

// Timeline implements timeline.Store with the configured strategy.
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	return s.codec.Serve(ctx, "user", user, q, func(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
		msgs, err := s.reader.Read(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("pull timeline (%s): %w", s.strategy, err)
		}
		return msgs, nil
	})
}

// Close implements timeline.Store.
func (s *Store) Close() error {
	if s.hooks != nil {
		s.hooks.Close()
	}
	return s.db.Close()
}
