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
	// FanoutChunk is, for VitessStore, how many followers one statement
	// of a post's fan-out writes at most (1 to 10,000, vtgate's row
	// limit); 0 means DefaultFanoutChunk. Store ignores it.
	FanoutChunk int
	// VtgateStatus is, for VitessStore, the host:port of vtgate's status
	// pages, where Counters reads the tablet calls; "" for none.
	VtgateStatus string
}

// Store is the push model. It implements timeline.Store.
type Store struct {
	db    *sql.DB
	codec *timeline.CursorCodec
	now   func() time.Time
}

var _ timeline.Store = (*Store)(nil)

// Open connects to the server, creates the database and schema if needed,
// and returns the store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns})
	if err != nil {
		return nil, fmt.Errorf("open push store: %w", err)
	}
	if err := schema.Apply(ctx, db, schema.Push, schema.Options{Force: cfg.Force}); err != nil {
		db.Close()
		return nil, fmt.Errorf("open push store: %w", err)
	}
	codec, err := schema.CursorCodec(ctx, db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open push store: %w", err)
	}
	return &Store{db: db, codec: codec, now: time.Now}, nil
}

// DB returns the store's connection pool, for measurement and bulk loading.
func (s *Store) DB() *sql.DB { return s.db }

// Post implements timeline.Store: the message and its fan-out to every
// follower's mailbox commit together.
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	return post(ctx, s.db, s.now, "push", author, body, func(tx *sql.Tx, id int64) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO mailbox (user_id, message_id)
			 SELECT follower_id, ? FROM follows WHERE followee_id = ?`,
			id, author)
		return err
	})
}

// post checks a post, then inserts the message and runs fanOut with its id
// in one transaction; model begins its errors.
func post(ctx context.Context, db *sql.DB, now func() time.Time, model string, author timeline.UserID, body string, fanOut func(tx *sql.Tx, id int64) error) (timeline.Message, error) {
	if err := timeline.CheckPost(author, body); err != nil {
		return timeline.Message{}, err
	}
	msg := timeline.Message{Author: author, Body: body, CreatedAt: now().UTC().Truncate(time.Microsecond)}
	err := mysqlx.InTx(ctx, db, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			`INSERT INTO messages (author_id, body, created_at) VALUES (?, ?, ?)`,
			author, body, msg.CreatedAt)
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		msg.ID = timeline.MessageID(id)
		return fanOut(tx, id)
	})
	if err != nil {
		return timeline.Message{}, fmt.Errorf("%s post: %w", model, err)
	}
	return msg, nil
}

// changeFollow checks a follow or unfollow, then runs first (a statement
// on follows with the arguments follower, followee) and, if it changed a
// row, then, in one transaction; what begins its errors.
func changeFollow(ctx context.Context, db *sql.DB, what string, follower, followee timeline.UserID, first string, then func(tx *sql.Tx) error) error {
	if err := timeline.CheckFollow(follower, followee); err != nil {
		return err
	}
	err := mysqlx.InTx(ctx, db, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, first, follower, followee)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // no change: the mailbox is as it should be
		}
		return then(tx)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Follow implements timeline.Store: the follow row and the backfill of the
// followee's existing messages into the follower's mailbox commit together.
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	return changeFollow(ctx, s.db, "push follow", follower, followee,
		`INSERT IGNORE INTO follows (follower_id, followee_id) VALUES (?, ?)`,
		func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx,
				`INSERT IGNORE INTO mailbox (user_id, message_id)
				 SELECT ?, id FROM messages WHERE author_id = ?`,
				follower, followee)
			return err
		})
}

// Unfollow implements timeline.Store: the follow row and the followee's
// messages in the follower's mailbox go together.
func (s *Store) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	return changeFollow(ctx, s.db, "push unfollow", follower, followee,
		`DELETE FROM follows WHERE follower_id = ? AND followee_id = ?`,
		func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx,
				`DELETE b FROM mailbox b JOIN messages m ON m.id = b.message_id
				 WHERE b.user_id = ? AND m.author_id = ?`,
				follower, followee)
			return err
		})
}

// Timeline implements timeline.Store with one backward range scan of the
// mailbox's primary key, starting below the cursor.
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	r, err := s.codec.ParseQuery(user, q)
	if err != nil {
		return timeline.Page{}, err
	}
	rows, err := mailboxPage(ctx, s.db, r,
		`SELECT m.id, m.author_id, m.body, m.created_at
		 FROM mailbox b JOIN messages m ON m.id = b.message_id WHERE b.user_id = ?`)
	if err != nil {
		return timeline.Page{}, fmt.Errorf("push timeline: %w", err)
	}
	msgs, err := mysqlx.ScanMessages(rows, r.Fetch())
	if err != nil {
		return timeline.Page{}, fmt.Errorf("push timeline: %w", err)
	}
	return s.codec.MakePage(r, msgs), nil
}

// mailboxPage runs query (rows of r.User's mailbox b, "WHERE b.user_id =
// ?" last) for r's page: below the cursor, if any, newest first.
func mailboxPage(ctx context.Context, db *sql.DB, r timeline.Request, query string) (*sql.Rows, error) {
	if r.Before == 0 {
		return db.QueryContext(ctx, query+` ORDER BY b.message_id DESC LIMIT ?`, r.User, r.Fetch())
	}
	return db.QueryContext(ctx, query+` AND b.message_id < ? ORDER BY b.message_id DESC LIMIT ?`, r.User, r.Before, r.Fetch())
}

// Close implements timeline.Store.
func (s *Store) Close() error { return s.db.Close() }
