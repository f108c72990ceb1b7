// Package push is the push ("fan-out on write") model of a home timeline on
// MySQL/MariaDB.
//
// Posting a message writes its id into the mailbox of every follower of its
// author with one INSERT ... SELECT over the follow graph, in the same
// transaction as the message. Reading a timeline is then one backward range
// scan of the reader's mailbox, joined to the message bodies. Reads are as
// cheap as they get; writes and storage grow with the number of followers.
package push

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/record"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// DefaultDatabase is the database the push model uses unless told otherwise.
const DefaultDatabase = "pushpull_push"

// DefaultVitessDatabase is the keyspace VitessStore uses unless told
// otherwise.
const DefaultVitessDatabase = "pushpull_push_vitess"

// Config says where the store lives.
type Config struct {
	// DSN is a go-sql-driver DSN of the server, e.g.
	// "user:pass@tcp(127.0.0.1:3306)/". Its database name is ignored.
	DSN string
	// Database holds the push model's tables; "" means DefaultDatabase.
	// It is created if missing.
	Database string
	// MaxConns caps the connection pool; 0 means 64.
	MaxConns int
	// Force applies the schema even to a database holding other tables.
	Force bool
	// Schema is the schema applied to the database; "" means schema.Push.
	// Models built on push's tables name their own (schema.PushCapped,
	// schema.PushCompressed, schema.Hybrid), so that each database says
	// which model it holds.
	Schema schema.Model
	// FanoutChunk is, for VitessStore, how many followers one statement
	// of a post's fan-out writes at most (1 to 10,000, vtgate's row
	// limit); 0 means DefaultFanoutChunk. Store ignores it.
	FanoutChunk int
	// VtgateStatus is, for VitessStore, the host:port of vtgate's status
	// pages, where Counters reads the tablet calls; "" for none.
	VtgateStatus string
	// Drowning is what posts and reads do for the readers who follow far
	// more authors than anyone else; the zero value treats them as
	// everyone else. Store's own Post and Timeline apply it; a model
	// built on the store applies it to its own fan-out (FanOutTo, or
	// DrowningReaders' list in its statement) and reads (PullDrowning),
	// and the store marks the drowning readers either way.
	Drowning Drowning
}

// Store is the push model. It implements timeline.Store; the reads of the
// record (a message, an author's own timeline, the follow lists) are
// record.Reader's.
type Store struct {
	record.Reader
	db    *sql.DB
	codec *timeline.CursorCodec
	now   func() time.Time
	guard *schema.HookGuard
	// drowning is Config.Drowning; puller reads the pages of its
	// DrowningPull readers.
	drowning    Drowning
	drowningSet *DrowningReaders
	puller      *DrowningPuller
}

var _ timeline.Store = (*Store)(nil)

// Open connects to the server, creates the database and schema if needed,
// and returns the store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	cfg.Drowning = cfg.Drowning.resolved()
	if err := cfg.Drowning.Check(ModelName); err != nil {
		return nil, fmt.Errorf("open push store: %w", err)
	}
	db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns})
	if err != nil {
		return nil, fmt.Errorf("open push store: %w", err)
	}
	if cfg.Schema == "" {
		cfg.Schema = schema.Push
	}
	if err := schema.Apply(ctx, db, cfg.Schema, schema.Options{Force: cfg.Force}); err != nil {
		db.Close()
		return nil, fmt.Errorf("open push store: %w", err)
	}
	codec, err := schema.CursorCodec(ctx, db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open push store: %w", err)
	}
	guard, err := schema.NewHookGuard(ctx, db, cfg.Database, 0)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open push store: %w", err)
	}
	if _, err := cfg.Drowning.Mark(ctx, db, 0); err != nil {
		db.Close()
		return nil, fmt.Errorf("open push store: mark drowning readers: %w", err)
	}
	return &Store{Reader: record.Reader{DB: db, Codec: codec}, db: db, codec: codec, now: time.Now, guard: guard,
		drowning: cfg.Drowning, drowningSet: NewDrowningReaders(db, cfg.Drowning), puller: NewDrowningPuller(db)}, nil
}

// WriteGuard implements schema.Guarded: the guard of the store's writes,
// which runs no write hooks of its own. A store in front of it that keeps
// state (package memcache's) records its hooks and tells the guard it
// runs them; a push store of another process then learns of them at its
// next write and fails it with schema.ErrWriteHooks.
func (s *Store) WriteGuard() *schema.HookGuard { return s.guard }

// DB returns the store's connection pool, for measurement and bulk loading.
func (s *Store) DB() *sql.DB { return s.db }

// Post implements timeline.Store: the message and its fan-out to every
// follower's mailbox (drowning readers as Config.Drowning says) commit
// together.
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	return s.Writes(ModelName).Post(ctx, author, body, nil, func(tx *sql.Tx, msg timeline.Message) error {
		list, err := s.drowningSet.Read(ctx)
		if err == nil {
			_, err = FanOutTo(ctx, tx, msg.ID, author, list)
		}
		return err
	})
}

// Delete implements timeline.Store: the message and its rows in its
// author's followers' mailboxes go together.
func (s *Store) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	return s.Writes(ModelName).Delete(ctx, author, id, func(tx *sql.Tx) error {
		_, err := RemoveFanOut(ctx, tx, id, author)
		return err
	})
}

// Follow implements timeline.Store: the follow row and the backfill of the
// followee's existing messages into the follower's mailbox commit
// together; a follow that takes the follower past Drowning.Follows makes
// them a drowning reader in the same transaction.
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.FollowMarking(ctx, ModelName, follower, followee, func(tx *sql.Tx) error {
		_, err := Backfill(ctx, tx, follower, followee, 0)
		return err
	})
}

// FollowMarking is the frame of a follow of a model built on the store
// (Writes(model).Follow, with fill), in whose transaction a follow that
// takes the follower past Drowning.Follows makes them a drowning reader.
func (s *Store) FollowMarking(ctx context.Context, model string, follower, followee timeline.UserID, fill func(*sql.Tx) error) error {
	var marked bool
	err := s.Writes(model).Follow(ctx, follower, followee, func(tx *sql.Tx) error {
		if err := fill(tx); err != nil {
			return err
		}
		var err error
		marked, err = s.drowning.Mark(ctx, tx, follower)
		return err
	})
	if marked && err == nil {
		s.drowningSet.Invalidate() // read again, now that it is committed
	}
	return err
}

// Unfollow implements timeline.Store: the follow row and the followee's
// messages in the follower's mailbox go together.
func (s *Store) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.Writes(ModelName).Unfollow(ctx, follower, followee, func(tx *sql.Tx) error {
		_, err := RemoveAuthor(ctx, tx, follower, followee)
		return err
	})
}

// Writes is the frame of the store's writes, for a model built on it;
// model names it in errors.
func (s *Store) Writes(model string) Writes {
	return Writes{DB: s.db, Model: model, Now: s.now, Guard: s.guard}
}

// Timeline implements timeline.Store with one backward range scan of the
// mailbox's primary key, starting below the cursor; a drowning reader
// under DrowningPull reads by pull instead.
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	return s.Page(ctx, ModelName, user, q, func(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
		if s.drowning.On() && s.drowning.Mode == DrowningPull {
			return s.readMailboxOrPull(ctx, r)
		}
		return ReadMailbox(ctx, s.db, r)
	})
}

// Page is the frame of a mailbox model's Timeline: it checks the query and
// decodes its cursor, reads the page's messages with read (Fetch() of
// them at most, newest first), and makes the page and its cursor. Errors
// of read are wrapped with model.
func (s *Store) Page(ctx context.Context, model string, user timeline.UserID, q timeline.Query,
	read timeline.Reader) (timeline.Page, error) {
	return servePage(ctx, s.codec, model, user, q, read)
}

// servePage is Page with codec.
func servePage(ctx context.Context, codec *timeline.CursorCodec, model string, user timeline.UserID, q timeline.Query,
	read timeline.Reader) (timeline.Page, error) {
	return codec.Serve(ctx, "user", user, q, func(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
		msgs, err := read(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("%s timeline: %w", model, err)
		}
		return msgs, nil
	})
}

// mailboxPage runs query (rows of r.User's mailbox b, "WHERE b.user_id =
// ?" last) for r's page: below the cursor, if any, newest first.
func mailboxPage(ctx context.Context, db *sql.DB, r timeline.Request, query string) (*sql.Rows, error) {
	q, below := mailboxPageQueries(query)
	older, args := mailboxPageArgs(r)
	if older {
		q = below
	}
	return db.QueryContext(ctx, q, args...)
}

// mailboxPageQueries completes query (rows of a user's mailbox b, "WHERE
// b.user_id = ?" last) into the statement of a newest page (arguments:
// the user, how many rows) and of an older one (the user, the cursor, how
// many rows).
func mailboxPageQueries(query string) (newest, older string) {
	return query + ` ORDER BY b.message_id DESC LIMIT ?`,
		query + ` AND b.message_id < ? ORDER BY b.message_id DESC LIMIT ?`
}

// mailboxPageArgs says whether r is an older page (below a cursor) and
// gives the arguments of its statement from mailboxPageQueries.
func mailboxPageArgs(r timeline.Request) (older bool, args []any) {
	if r.Before == 0 {
		return false, []any{r.User, r.Fetch()}
	}
	return true, []any{r.User, r.Before, r.Fetch()}
}

// Close implements timeline.Store.
func (s *Store) Close() error { return s.db.Close() }
