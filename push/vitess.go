package push

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/record"
	"github.com/pushpull/pushpull/internal/vtstats"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// DefaultFanoutChunk is Config.FanoutChunk's default: half of the 10,000
// rows vtgate lets one statement return or write by default.
const DefaultFanoutChunk = 5000

// VitessStore is the push model on a Vitess keyspace sharded by user
// (schema.PushVitess), through vtgate. Stored procedures cannot run on a
// sharded keyspace, and the push model needs none: every statement is the
// client SQL of Store, reshaped so that vtgate routes it by the column
// each table is sharded by.
//
//   - Post inserts the message on its author's shard (vtgate numbers it
//     from the sequence), then fans it out with INSERT ... SELECT from the
//     author's followers, which live on the author's shard too; vtgate
//     sends each mailbox row to its reader's shard. vtgate refuses a
//     statement of more than 10,000 rows, so the fan-out goes in chunks
//     of FanoutChunk followers in follower_id order.
//   - Timeline reads the page from the reader's shard alone: the
//     mailbox row carries the message's author, body and time, copied by
//     the fan-out (see vitess.sql), so a page is one tablet call at any
//     shard count, where reading the bodies from the authors' shards
//     would add one call per distinct author's shard. The page's two
//     statements (newest, older) are prepared once (pageStatements).
//   - Follow writes both follow tables (the follower's shard and the
//     followee's) and copies the followee's messages into the mailbox in
//     chunks; Unfollow deletes them by (user_id, author_id) on one shard.
//
// Each call is one vtgate transaction. vtgate commits a transaction that
// wrote to several shards shard by shard, without two-phase commit.
//
// A post and a follow (or unfollow) of one author that race cannot miss
// each other. The author's followers rows and messages are on the
// author's shard, and vtgate reads the SELECT half of an INSERT ... SELECT
// with LOCK IN SHARE MODE: the post's fan-out read of the followers and
// the follow's backfill read of the messages lock what they read on that
// shard, as the same statements do on one server. The second waits for
// the first to commit and then reads its row; crossed waits are a
// deadlock, which the transaction is retried after.
type VitessStore struct {
	record.Reader
	db       *sql.DB
	codec    *timeline.CursorCodec
	now      func() time.Time
	chunk    int
	keyspace string
	status   string // vtgate's status pages, for Counters
	vtgate   string // "tcp 127.0.0.1:15306": where the vtgate is, for errors
	page     pageStatements
}

var _ timeline.Store = (*VitessStore)(nil)

// OpenVitess connects to the vtgate at cfg.DSN, whose keyspace
// cfg.Database (DefaultVitessDatabase if "") must exist with schema's VitessVSchema,
// creates the tables of cfg.Schema (schema.PushVitess if "") through
// vtgate if needed, and returns the store.
func OpenVitess(ctx context.Context, cfg Config) (*VitessStore, error) {
	if cfg.Database == "" {
		cfg.Database = DefaultVitessDatabase
	}
	if cfg.Schema == "" {
		cfg.Schema = schema.PushVitess
	}
	chunk := cfg.FanoutChunk
	if chunk == 0 {
		chunk = DefaultFanoutChunk
	}
	if chunk < 1 || chunk > 10000 {
		return nil, fmt.Errorf("open %s store: FanoutChunk %d: want 1 to 10000", cfg.Schema, chunk)
	}
	db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Vitess: true})
	if err != nil {
		return nil, fmt.Errorf("open %s store: %w", cfg.Schema, err)
	}
	if err := schema.Apply(ctx, db, cfg.Schema, schema.Options{Force: cfg.Force}); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s store: %w", cfg.Schema, err)
	}
	codec, err := schema.CursorCodec(ctx, db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s store: %w", cfg.Schema, err)
	}
	dsn, err := mysqlx.Config(cfg.DSN) // parsed by Open already
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open push@vitess store: %w", err)
	}
	page, err := preparePage(ctx, db, vitessPage)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s store: %w", cfg.Schema, err)
	}
	return &VitessStore{
		Reader: record.Reader{DB: db, Codec: codec, FollowersTable: true},
		db:     db, codec: codec, now: time.Now, chunk: chunk, keyspace: cfg.Database, status: cfg.VtgateStatus,
		vtgate: dsn.Net + " " + dsn.Addr, page: page,
	}, nil
}

// vitessPage is a page of the mailbox on Vitess, whose rows carry what a
// page shows (see mailboxPageQueries).
const vitessPage = `SELECT b.message_id, b.author_id, b.body, b.created_at FROM mailbox b WHERE b.user_id = ?`

// pageStatements are a mailbox page's two statements (mailboxPageQueries),
// prepared once on a pool: database/sql prepares each on a connection the
// first time it runs there, which vtgate answers by asking a tablet (of
// any shard) for the result's columns, one call per connection. Through
// vtgate a prepared statement then costs less CPU than the same
// statement sent as text with its values: vtgate finds an executed
// statement's plan by its text, where a text statement is parsed and its
// values replaced by bind variables before each lookup. The tablet and
// mysqld receive the same statement either way.
type pageStatements struct{ newest, older *sql.Stmt }

func preparePage(ctx context.Context, db *sql.DB, query string) (pageStatements, error) {
	newest, older := mailboxPageQueries(query)
	var p pageStatements
	var err error
	if p.newest, err = db.PrepareContext(ctx, newest); err != nil {
		return p, fmt.Errorf("prepare a page: %w", err)
	}
	if p.older, err = db.PrepareContext(ctx, older); err != nil {
		p.newest.Close()
		return p, fmt.Errorf("prepare a page: %w", err)
	}
	return p, nil
}

// query runs r's page.
func (p pageStatements) query(ctx context.Context, r timeline.Request) (*sql.Rows, error) {
	st := p.newest
	older, args := mailboxPageArgs(r)
	if older {
		st = p.older
	}
	return st.QueryContext(ctx, args...)
}

func (p pageStatements) close() error { return errors.Join(p.newest.Close(), p.older.Close()) }

// Counters implements timeline.Counting: the calls vtgate has made to the
// tablets of the store's keyspace and of the message sequence's (see
// package vtstats), or nothing without Config.VtgateStatus.
func (s *VitessStore) Counters() map[string]int64 {
	if s.status == "" {
		return nil
	}
	c, err := vtstats.Calls(context.Background(), s.status, s.keyspace, schema.SequenceKeyspace)
	if err != nil {
		return nil
	}
	return c
}

// DB returns the store's connection pool to vtgate.
func (s *VitessStore) DB() *sql.DB { return s.db }

// Writes is push's frame of a write (checks, transaction, the message and
// follow rows) on the keyspace, its errors wrapped with model; the store,
// and a model built on it, adds its own part to each.
func (s *VitessStore) Writes(model string) Writes { return Writes{DB: s.db, Model: model, Now: s.now} }

// Chunk is the store's FanoutChunk: the most followers one statement of a
// fan-out, a backfill or a delete writes.
func (s *VitessStore) Chunk() int { return s.chunk }

// Post implements timeline.Store.
func (s *VitessStore) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	return s.Writes(VitessModelName).Post(ctx, author, body, nil, func(tx *sql.Tx, msg timeline.Message) error {
		return s.FanOut(ctx, tx, msg)
	})
}

// FanOut writes msg, with its body and time, into the mailbox of each of
// its author's followers, s.chunk followers per statement. The message is
// new, so no mailbox holds it yet, and a chunk writes a row per follower
// it reads: a chunk of fewer than s.chunk rows is the last.
func (s *VitessStore) FanOut(ctx context.Context, tx *sql.Tx, msg timeline.Message) error {
	author := msg.Author
	var after uint64
	for {
		res, err := tx.ExecContext(ctx,
			`INSERT INTO mailbox (user_id, message_id, author_id, body, created_at)
			 SELECT follower_id, `+strconv.FormatInt(int64(msg.ID), 10)+`, followee_id, ?, ? FROM followers
			 WHERE followee_id = ? AND follower_id > ? ORDER BY follower_id LIMIT `+strconv.Itoa(s.chunk),
			msg.Body, msg.CreatedAt, author, after)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n < int64(s.chunk) {
			return err
		}
		if after, err = nthKey(ctx, tx, `SELECT follower_id FROM followers WHERE followee_id = ? AND follower_id > ? ORDER BY follower_id`, author, after, s.chunk); err != nil {
			return err
		}
	}
}

// nthKey returns the n-th key (from 1) that query, ordered by the key and
// given owner and a lower bound, returns: the last key of a chunk.
func nthKey(ctx context.Context, tx *sql.Tx, query string, owner timeline.UserID, after uint64, n int) (uint64, error) {
	var key uint64
	err := tx.QueryRowContext(ctx, query+` LIMIT 1 OFFSET `+strconv.Itoa(n-1), owner, after).Scan(&key)
	return key, err
}

// Follow implements timeline.Store.
func (s *VitessStore) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.Writes(VitessModelName).Follow(ctx, follower, followee,
		func(tx *sql.Tx) error {
			if err := AddFollower(ctx, tx, follower, followee); err != nil {
				return err
			}
			return s.Backfill(ctx, tx, follower, followee)
		})
}

// AddFollower writes the follow's row of the followers table, the graph
// by followee, on the followee's shard.
func AddFollower(ctx context.Context, tx *sql.Tx, follower, followee timeline.UserID) error {
	_, err := tx.ExecContext(ctx, `INSERT IGNORE INTO followers (followee_id, follower_id) VALUES (?, ?)`, followee, follower)
	return err
}

// RemoveFollower deletes the follow's row of the followers table, on the
// followee's shard.
func RemoveFollower(ctx context.Context, tx *sql.Tx, follower, followee timeline.UserID) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM followers WHERE followee_id = ? AND follower_id = ?`, followee, follower)
	return err
}

// RemoveAuthorCopies deletes followee's messages from follower's mailbox
// on Vitess, by the author its rows copy: one statement on the follower's
// shard.
func RemoveAuthorCopies(ctx context.Context, tx *sql.Tx, follower, followee timeline.UserID) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM mailbox WHERE user_id = ? AND author_id = ?`, follower, followee)
	return err
}

// Backfill copies followee's messages into follower's mailbox in tx,
// s.Chunk() messages per statement in id order.
func (s *VitessStore) Backfill(ctx context.Context, tx *sql.Tx, follower, followee timeline.UserID) error {
	return s.InsertInChunks(ctx, tx, `SELECT id FROM messages WHERE author_id = ? AND id > ? ORDER BY id`, followee, "id",
		`INSERT IGNORE INTO mailbox (user_id, message_id, author_id, body, created_at)
		 SELECT ?, id, author_id, body, created_at FROM messages WHERE author_id = ? AND id > ?`, follower, followee)
}

// InsertInChunks runs insert, an INSERT IGNORE ... SELECT whose last
// condition is "key > ?", over the rows of owner in key order, s.Chunk()
// rows per statement: vtgate refuses a statement of more rows than its
// limit. keys is the query of those keys (its arguments owner and a lower
// bound, ordered by key). INSERT IGNORE may write fewer rows than a chunk
// reads, so each chunk's upper end is looked up first, and insert runs
// with args, then the chunk's lower end and " AND key <= upper".
func (s *VitessStore) InsertInChunks(ctx context.Context, tx *sql.Tx, keys string, owner timeline.UserID, key, insert string, args ...any) error {
	var after uint64
	for {
		upper, err := nthKey(ctx, tx, keys, owner, after, s.chunk)
		if errors.Is(err, sql.ErrNoRows) {
			_, err = tx.ExecContext(ctx, insert, append(args, after)...)
			return err
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, insert+` AND `+key+` <= ?`, append(args, after, upper)...); err != nil {
			return err
		}
		after = upper
	}
}

// Delete implements timeline.Store: the message on its author's shard,
// then its mailbox rows (RemoveFanOut).
func (s *VitessStore) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	return s.Writes(VitessModelName).Delete(ctx, author, id, func(tx *sql.Tx) error {
		return s.RemoveFanOut(ctx, tx, author, id)
	})
}

// RemoveFanOut deletes message id of author from its followers'
// mailboxes in tx: s.Chunk() followers per statement, read from the
// author's shard, each statement routed by the followers' ids to their
// shards.
func (s *VitessStore) RemoveFanOut(ctx context.Context, tx *sql.Tx, author timeline.UserID, id timeline.MessageID) error {
	var after uint64
	for {
		rows, err := tx.QueryContext(ctx,
			`SELECT follower_id FROM followers WHERE followee_id = ? AND follower_id > ? ORDER BY follower_id LIMIT `+strconv.Itoa(s.chunk),
			author, after)
		if err != nil {
			return err
		}
		var users []uint64
		for rows.Next() {
			var u uint64
			if err := rows.Scan(&u); err != nil {
				rows.Close()
				return err
			}
			users = append(users, u)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(users) == 0 {
			return err
		}
		q := mysqlx.AppendList([]byte(`DELETE FROM mailbox WHERE message_id = `+strconv.FormatInt(int64(id), 10)+` AND user_id IN (`), users)
		if _, err := tx.ExecContext(ctx, string(append(q, ')'))); err != nil {
			return err
		}
		if len(users) < s.chunk {
			return nil
		}
		after = users[len(users)-1]
	}
}

// Unfollow implements timeline.Store.
func (s *VitessStore) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.Writes(VitessModelName).Unfollow(ctx, follower, followee,
		func(tx *sql.Tx) error {
			if err := RemoveFollower(ctx, tx, follower, followee); err != nil {
				return err
			}
			return RemoveAuthorCopies(ctx, tx, follower, followee)
		})
}

// Timeline implements timeline.Store: the page from the reader's mailbox
// shard, one tablet call.
func (s *VitessStore) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	return s.Page(ctx, VitessModelName, user, q, s.read)
}

// Page is Store.Page on the keyspace: the frame of a Timeline of a model
// built on the store.
func (s *VitessStore) Page(ctx context.Context, model string, user timeline.UserID, q timeline.Query,
	read timeline.Reader) (timeline.Page, error) {
	return servePage(ctx, s.codec, model, user, q, read)
}

func (s *VitessStore) read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	rows, err := s.page.query(ctx, r)
	if err != nil {
		return nil, err
	}
	return mysqlx.ScanMessages(rows, r.Fetch())
}

// Close implements timeline.Store.
func (s *VitessStore) Close() error { return errors.Join(s.page.close(), s.db.Close()) }
