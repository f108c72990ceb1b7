// Package pull is the pull ("merge on read") model of a home timeline on
// MySQL/MariaDB.
//
// Posting stores only the message, so writes are cheap and the database is
// small. Reading a timeline computes it from the follow graph:
//
//  1. find each followee's newest message id below the cursor;
//  2. keep the N followees whose newest ids are largest;
//  3. take the N newest messages of each of them;
//  4. merge, and keep the newest N.
//
// The global N newest messages come from at most N authors, and each of
// those authors' newest message is at least as new as the ones on the page,
// so steps 2 and 3 lose nothing, and a read touches at most followees + N²
// index entries however large the tables grow.
//
// Strategy chooses where the algorithm runs; all strategies share one
// database and give identical pages:
//
//   - StrategySP: stored procedures, one CALL per page (Oku, 2008).
//   - StrategyClient: concurrent client queries with bounded concurrency,
//     merged in Go.
//   - StrategyNaive: one JOIN ... ORDER BY id DESC LIMIT n, the obvious
//     query whose cost grows with everything the followees ever posted; the
//     baseline that shows why the others exist.
//   - StrategyUnion: step 1 as one statement, then steps 2 to 4 as one
//     UNION ALL of per-author LIMIT scans: two round trips (union.go).
//   - StrategyMerge: a k-way merge over the followees' indexes that stops
//     reading an author once it can no longer reach the page: about
//     N + followees index entries instead of N² + followees (merge.go).
//   - StrategyRecent: each author's newest ids kept in memcached, updated
//     on post; a read is one multi-get, a merge and one fetch of the page's
//     bodies, with the database as the fallback and the system of record
//     (recent.go).
//   - StrategyActive: StrategyRecent plus, for users who follow many
//     authors, an index of the followees who posted most recently, so that
//     a read fetches a few dozen lists instead of all of them; posts hint
//     it to their heavy followers (active.go).
package pull

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// DefaultDatabase is the database the pull model uses unless told otherwise.
const DefaultDatabase = "pushpull_pull"

// Strategy names a way of running the read algorithm.
type Strategy string

const (
	StrategySP     Strategy = "sp"
	StrategyClient Strategy = "client"
	StrategyNaive  Strategy = "naive"
	StrategyUnion  Strategy = "union"
	StrategyMerge  Strategy = "merge"
	StrategyRecent Strategy = "recent" // needs Config.Memcache
	StrategyActive Strategy = "active" // needs Config.Memcache
)

// Strategies lists every strategy, in the order the benchmark runs them.
var Strategies = []Strategy{StrategySP, StrategyClient, StrategyNaive, StrategyUnion, StrategyMerge, StrategyRecent, StrategyActive}

// Config says where the store lives and how it reads.
type Config struct {
	// DSN is a go-sql-driver DSN of the server, e.g.
	// "user:pass@tcp(127.0.0.1:3306)/". Its database name is ignored.
	DSN string
	// Database holds the pull model's tables and procedures; "" means
	// DefaultDatabase. It is created if missing.
	Database string
	// Strategy is how timelines are read; "" means StrategySP.
	Strategy Strategy
	// Concurrency bounds the queries one StrategyClient read runs at once;
	// 0 means 8.
	Concurrency int
	// MaxConns caps the connection pool; 0 means 64.
	MaxConns int
	// Force applies the schema even to a database holding other tables.
	Force bool

	// Memcache lists memcached servers ("host:port"). StrategyRecent needs
	// them; with any other strategy, setting them makes Post keep the
	// per-author lists current too, and Follow and Unfollow the follow
	// tokens (see recent.go), which every store writing to a database that
	// StrategyRecent reads must do.
	Memcache []string
	// Namespace prefixes the memcached keys, so that stores on different
	// databases, or tests, can share a memcached. Up to 64 characters, no
	// spaces or control characters.
	Namespace string
	// MessageCache is how many messages StrategyRecent keeps in process,
	// so that a page whose ids all come from memcached needs no database
	// read for its bodies (messages never change once written); 0 means
	// DefaultMessageCache, a negative number none.
	MessageCache int
	// FolloweeCache is how many users' followee lists StrategyRecent keeps
	// in process, checked at every read against a token in memcached that
	// follows and unfollows replace (see followsets.go), so that a read
	// needs no database query for them; 0 means DefaultFolloweeCache, a
	// negative number none. Each costs 8 bytes per followee.
	FolloweeCache int
	// RecentLen caps how many of an author's newest ids memcached keeps;
	// 0 means DefaultRecentLen. Deeper pages read the database for the
	// authors whose lists do not reach that far.
	RecentLen int

	// ActiveLen is how many followees a StrategyActive index keeps; 0
	// means DefaultActiveLen. Users who follow more than twice as many
	// authors get an index; the others read like StrategyRecent.
	ActiveLen int
	// ActiveHints makes Post send its hint to the indexes of the author's
	// heavy followers (see active.go): every store that posts to a
	// database that StrategyActive reads must set it. StrategyActive sets
	// it; it needs Memcache.
	ActiveHints bool
}

// Store is the pull model. It implements timeline.Store.
type Store struct {
	db          *sql.DB
	codec       *timeline.CursorCodec
	now         func() time.Time
	strategy    Strategy
	concurrency int
	read        func(ctx context.Context, r timeline.Request) ([]timeline.Message, error)
	recent      *recentLists  // nil unless Config.Memcache is set
	messages    *messageCache // nil unless StrategyRecent
	stats       stats
}

var _ timeline.Store = (*Store)(nil)

// Open connects to the server, creates the database, tables and procedures
// if needed, and returns the store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	if cfg.Strategy == "" {
		cfg.Strategy = StrategySP
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	s := &Store{now: time.Now, strategy: cfg.Strategy, concurrency: cfg.Concurrency}
	switch cfg.Strategy {
	case StrategySP:
		s.read = s.readSP
	case StrategyClient:
		s.read = s.readClient
	case StrategyNaive:
		s.read = s.readNaive
	case StrategyUnion:
		s.read = s.readUnion
	case StrategyMerge:
		s.read = s.readMerge
	case StrategyRecent, StrategyActive:
		if len(cfg.Memcache) == 0 {
			return nil, fmt.Errorf("open pull store: strategy %q needs memcached servers (Config.Memcache)", cfg.Strategy)
		}
		s.read = s.readRecent
		if cfg.Strategy == StrategyActive {
			s.read, cfg.ActiveHints = s.readActive, true
		}
		if cfg.MessageCache == 0 {
			cfg.MessageCache = DefaultMessageCache
		}
		s.messages = newMessageCache(cfg.MessageCache)
	default:
		return nil, fmt.Errorf("open pull store: unknown strategy %q (want one of %v)", cfg.Strategy, Strategies)
	}
	if cfg.ActiveHints && len(cfg.Memcache) == 0 {
		return nil, fmt.Errorf("open pull store: ActiveHints needs memcached servers (Config.Memcache)")
	}
	if cfg.ActiveLen < 0 || cfg.ActiveLen > 10_000 {
		return nil, fmt.Errorf("open pull store: ActiveLen %d is outside 0..10000", cfg.ActiveLen)
	}
	if err := checkNamespace(cfg.Namespace); err != nil {
		return nil, fmt.Errorf("open pull store: %w", err)
	}
	db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns})
	if err != nil {
		return nil, fmt.Errorf("open pull store: %w", err)
	}
	if err := schema.Apply(ctx, db, schema.Pull, schema.Options{Force: cfg.Force}); err != nil {
		db.Close()
		return nil, fmt.Errorf("open pull store: %w", err)
	}
	if s.codec, err = schema.CursorCodec(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open pull store: %w", err)
	}
	s.db = db
	if len(cfg.Memcache) > 0 {
		if s.recent, err = newRecentLists(ctx, db, cfg); err != nil {
			db.Close()
			return nil, fmt.Errorf("open pull store: %w", err)
		}
	}
	return s, nil
}

// DB returns the store's connection pool, for measurement and bulk loading.
func (s *Store) DB() *sql.DB { return s.db }

// Strategy returns the read strategy.
func (s *Store) Strategy() Strategy { return s.strategy }

// Post implements timeline.Store: one INSERT, whatever the follower count.
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	if err := timeline.CheckPost(author, body); err != nil {
		return timeline.Message{}, err
	}
	msg := timeline.Message{Author: author, Body: body, CreatedAt: s.now().UTC().Truncate(time.Microsecond)}
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO messages (author_id, body, created_at) VALUES (?, ?, ?)`,
		author, body, msg.CreatedAt)
	var id int64
	if err == nil {
		id, err = res.LastInsertId()
	}
	if err != nil {
		if s.recent != nil {
			// The INSERT may have committed all the same (a connection
			// lost after the commit): a list must not go on without it,
			// nor an index.
			s.recent.invalidate(s, author)
			if s.recent.active != nil {
				s.recent.forgetHinted(ctx, s, author)
			}
		}
		return timeline.Message{}, fmt.Errorf("pull post: %w", err)
	}
	msg.ID = timeline.MessageID(id)
	s.messages.put(msg)
	if s.recent != nil {
		// After the commit, never before: a list may only ever hold ids
		// that the database has. See recentLists.added.
		if s.recent.active != nil {
			s.recent.published(ctx, s, author, msg.ID)
		} else {
			s.recent.added(s, author, msg.ID)
		}
	}
	return msg, nil
}

// Follow implements timeline.Store.
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	if err := timeline.CheckFollow(follower, followee); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx,
		`INSERT IGNORE INTO follows (follower_id, followee_id) VALUES (?, ?)`, follower, followee)
	s.followsChanged(follower)
	if err != nil {
		return fmt.Errorf("pull follow: %w", err)
	}
	return nil
}

// Unfollow implements timeline.Store.
func (s *Store) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	if err := timeline.CheckFollow(follower, followee); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx,
		`DELETE FROM follows WHERE follower_id = ? AND followee_id = ?`, follower, followee)
	s.followsChanged(follower)
	if err != nil {
		return fmt.Errorf("pull unfollow: %w", err)
	}
	return nil
}

// followsChanged tells the stores that cache followee lists
// (StrategyRecent) that user's changed. It runs even after a failed
// write, which may have committed all the same.
func (s *Store) followsChanged(user timeline.UserID) {
	if s.recent != nil {
		s.recent.followsChanged(s, user)
	}
}

// Timeline implements timeline.Store with the configured strategy.
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	r, err := s.codec.ParseQuery(user, q)
	if err != nil {
		return timeline.Page{}, err
	}
	msgs, err := s.read(ctx, r)
	if err != nil {
		return timeline.Page{}, fmt.Errorf("pull timeline (%s): %w", s.strategy, err)
	}
	return s.codec.MakePage(r, msgs), nil
}

// Close implements timeline.Store.
func (s *Store) Close() error {
	if s.recent != nil {
		s.recent.close()
	}
	return s.db.Close()
}

// readSP runs the whole algorithm in the server: one CALL, one round trip.
func (s *Store) readSP(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	var rows *sql.Rows
	var err error
	if r.Before == 0 {
		rows, err = s.db.QueryContext(ctx, `CALL pull_timeline_newest(?, ?)`, r.User, r.Fetch())
	} else {
		rows, err = s.db.QueryContext(ctx, `CALL pull_timeline_before(?, ?, ?)`, r.User, r.Before, r.Fetch())
	}
	if err != nil {
		return nil, err
	}
	return mysqlx.ScanMessages(rows, r.Fetch())
}

// readNaive is the single join. It has to look at every message of every
// followee below the cursor before it can sort them.
func (s *Store) readNaive(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	var rows *sql.Rows
	var err error
	if r.Before == 0 {
		rows, err = s.db.QueryContext(ctx,
			`SELECT m.id, m.author_id, m.body, m.created_at
			 FROM follows f JOIN messages m ON m.author_id = f.followee_id
			 WHERE f.follower_id = ?
			 ORDER BY m.id DESC LIMIT ?`, r.User, r.Fetch())
	} else {
		rows, err = s.db.QueryContext(ctx,
			`SELECT m.id, m.author_id, m.body, m.created_at
			 FROM follows f JOIN messages m ON m.author_id = f.followee_id
			 WHERE f.follower_id = ? AND m.id < ?
			 ORDER BY m.id DESC LIMIT ?`, r.User, r.Before, r.Fetch())
	}
	if err != nil {
		return nil, err
	}
	return mysqlx.ScanMessages(rows, r.Fetch())
}
