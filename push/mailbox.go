package push

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// The statements of push's tables that the models keeping a mailbox share
// (push, push-capped, hybrid): each runs in the caller's transaction, so a
// model composes them with its own bookkeeping and keeps one commit per
// call.

// InsertMessage adds a message by author and returns it with its id; g
// (nil: none) guards the statement (see schema.HookGuard).
func InsertMessage(ctx context.Context, tx *sql.Tx, g *schema.HookGuard, author timeline.UserID, body string, now time.Time) (timeline.Message, error) {
	msg := timeline.Message{Author: author, Body: body, CreatedAt: now.UTC().Truncate(time.Microsecond)}
	res, err := guardedExec(ctx, tx, g,
		`INSERT INTO messages (author_id, body, created_at) SELECT ?, ?, ? `+schema.GuardFrom,
		`INSERT INTO messages (author_id, body, created_at) VALUES (?, ?, ?)`,
		author, body, msg.CreatedAt)
	if err != nil {
		return timeline.Message{}, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return timeline.Message{}, err
	}
	if id == 0 {
		return timeline.Message{}, errNoMeta
	}
	msg.ID = timeline.MessageID(id)
	return msg, nil
}

// errNoMeta: a guarded INSERT found no write_hooks row to read.
var errNoMeta = errors.New("the database's pushpull_meta has no write_hooks row (was it emptied by hand?)")

// guardedExec runs a write statement in tx: guarded, g's condition in it,
// when g is not nil; else plain.
func guardedExec(ctx context.Context, tx *sql.Tx, g *schema.HookGuard, guarded, plain string, args ...any) (sql.Result, error) {
	if g == nil {
		return tx.ExecContext(ctx, plain, args...)
	}
	return g.Exec(ctx, tx, guarded, args...)
}

// FanOut writes message id into the mailbox of every follower of author,
// with one INSERT ... SELECT over the followee index, and returns how many
// rows it wrote. Under REPEATABLE READ the SELECT locks the range it read,
// so a concurrent Follow of author either sees the message (and backfills
// it) or is seen here.
func FanOut(ctx context.Context, tx *sql.Tx, id timeline.MessageID, author timeline.UserID) (int64, error) {
	res, err := tx.ExecContext(ctx,
		`INSERT INTO mailbox (user_id, message_id)
		 SELECT follower_id, ? FROM follows WHERE followee_id = ?`,
		id, author)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// FanOutTo is FanOut with the drowning readers of list written to as
// its option says (DrowningList.Filter); FanOut itself when list is nil
// or empty.
func FanOutTo(ctx context.Context, tx *sql.Tx, id timeline.MessageID, author timeline.UserID, list *DrowningList) (int64, error) {
	filter := list.Filter("follower_id", strconv.FormatUint(uint64(id), 10))
	if filter == "" {
		return FanOut(ctx, tx, id, author)
	}
	res, err := tx.ExecContext(ctx,
		`INSERT INTO mailbox (user_id, message_id)
		 SELECT follower_id, ? FROM follows WHERE followee_id = ?`+filter,
		id, author)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// RemoveMessage deletes author's message id and reports whether there was
// one. Deleting the row first locks it, so a concurrent Follow's backfill
// of author either ran before (and RemoveFanOut deletes its row) or waits
// and no longer sees the message. g (nil: none) guards the statement.
func RemoveMessage(ctx context.Context, tx *sql.Tx, g *schema.HookGuard, author timeline.UserID, id timeline.MessageID) (bool, error) {
	res, err := guardedExec(ctx, tx, g,
		`DELETE FROM messages WHERE id = ? AND author_id = ? AND `+schema.GuardExists,
		`DELETE FROM messages WHERE id = ? AND author_id = ?`, id, author)
	return affected(res, err)
}

// RemoveFanOut deletes message id from the mailbox of every follower of
// author, with one DELETE over the followee index and the mailbox's
// primary key, and returns how many rows it deleted: the rows FanOut and
// later backfills wrote, since the mailbox holds a message for exactly
// the author's current followers.
func RemoveFanOut(ctx context.Context, tx *sql.Tx, id timeline.MessageID, author timeline.UserID) (int64, error) {
	res, err := tx.ExecContext(ctx,
		`DELETE b FROM follows f JOIN mailbox b ON b.user_id = f.follower_id AND b.message_id = ?
		 WHERE f.followee_id = ?`,
		id, author)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// AddFollow records that follower follows followee and reports whether
// the edge is new; g (nil: none) guards the statement.
func AddFollow(ctx context.Context, tx *sql.Tx, g *schema.HookGuard, follower, followee timeline.UserID) (bool, error) {
	res, err := guardedExec(ctx, tx, g,
		`INSERT IGNORE INTO follows (follower_id, followee_id) SELECT ?, ? `+schema.GuardFrom,
		`INSERT IGNORE INTO follows (follower_id, followee_id) VALUES (?, ?)`, follower, followee)
	return affected(res, err)
}

// RemoveFollow deletes the edge and reports whether there was one; g
// (nil: none) guards the statement.
func RemoveFollow(ctx context.Context, tx *sql.Tx, g *schema.HookGuard, follower, followee timeline.UserID) (bool, error) {
	res, err := guardedExec(ctx, tx, g,
		`DELETE FROM follows WHERE follower_id = ? AND followee_id = ? AND `+schema.GuardExists,
		`DELETE FROM follows WHERE follower_id = ? AND followee_id = ?`, follower, followee)
	return affected(res, err)
}

func affected(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// Backfill copies followee's messages with ids at or above from (0: all of
// them) into follower's mailbox and returns how many rows it wrote.
func Backfill(ctx context.Context, tx *sql.Tx, follower, followee timeline.UserID, from timeline.MessageID) (int64, error) {
	res, err := tx.ExecContext(ctx,
		`INSERT IGNORE INTO mailbox (user_id, message_id)
		 SELECT ?, id FROM messages WHERE author_id = ? AND id >= ?`,
		follower, followee, from)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// RemoveAuthor deletes followee's messages from follower's mailbox and
// returns how many rows it deleted.
func RemoveAuthor(ctx context.Context, tx *sql.Tx, follower, followee timeline.UserID) (int64, error) {
	res, err := tx.ExecContext(ctx,
		`DELETE b FROM mailbox b JOIN messages m ON m.id = b.message_id
		 WHERE b.user_id = ? AND m.author_id = ?`,
		follower, followee)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// ReadMailbox reads up to r.Fetch() messages of r.User's mailbox below
// r.Before (0: the newest), newest first: one backward range scan of the
// mailbox's primary key, joined to the message bodies.
func ReadMailbox(ctx context.Context, db *sql.DB, r timeline.Request) ([]timeline.Message, error) {
	var rows *sql.Rows
	var err error
	if r.Before == 0 {
		rows, err = db.QueryContext(ctx,
			`SELECT m.id, m.author_id, m.body, m.created_at
			 FROM mailbox b JOIN messages m ON m.id = b.message_id
			 WHERE b.user_id = ?
			 ORDER BY b.message_id DESC LIMIT ?`, r.User, r.Fetch())
	} else {
		rows, err = db.QueryContext(ctx,
			`SELECT m.id, m.author_id, m.body, m.created_at
			 FROM mailbox b JOIN messages m ON m.id = b.message_id
			 WHERE b.user_id = ? AND b.message_id < ?
			 ORDER BY b.message_id DESC LIMIT ?`, r.User, r.Before, r.Fetch())
	}
	if err != nil {
		return nil, err
	}
	return mysqlx.ScanMessages(rows, r.Fetch())
}

// Writes is the frame of a mailbox model's writes: the input checks, one
// transaction with deadlock retry, push's own rows, and the model's part
// in the same transaction. Errors are wrapped with Model ("push post: ...").
type Writes struct {
	DB    *sql.DB
	Model string
	Now   func() time.Time
	// Guard (nil: none, on Vitess) guards the first statement of each
	// write, which holds the recorded hooks share-locked until the
	// write commits (see schema.HookGuard).
	Guard *schema.HookGuard
}

// Post adds the message; before (nil: nothing) runs first, before the
// message has an id, and fanOut after.
func (w Writes) Post(ctx context.Context, author timeline.UserID, body string, before func(*sql.Tx) error, fanOut func(*sql.Tx, timeline.Message) error) (timeline.Message, error) {
	if err := timeline.CheckPost(author, body); err != nil {
		return timeline.Message{}, err
	}
	var msg timeline.Message
	err := mysqlx.InTx(ctx, w.DB, func(tx *sql.Tx) error {
		if before != nil {
			if err := before(tx); err != nil {
				return err
			}
		}
		var err error
		if msg, err = InsertMessage(ctx, tx, w.Guard, author, body, w.Now()); err != nil {
			return err
		}
		return fanOut(tx, msg)
	})
	if err != nil {
		return timeline.Message{}, fmt.Errorf("%s post: %w", w.Model, err)
	}
	return msg, nil
}

// Delete removes author's message id and runs clear (the model's rows
// derived from it) in the same transaction; a message author does not
// have is timeline.ErrNotFound.
func (w Writes) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID, clear func(*sql.Tx) error) error {
	if err := timeline.CheckDelete(author, id); err != nil {
		return err
	}
	err := mysqlx.InTx(ctx, w.DB, func(tx *sql.Tx) error {
		gone, err := RemoveMessage(ctx, tx, w.Guard, author, id)
		if err != nil {
			return err
		}
		if !gone {
			return timeline.ErrNotFound
		}
		return clear(tx)
	})
	if err != nil {
		return fmt.Errorf("%s delete: %w", w.Model, err)
	}
	return nil
}

// Follow adds the edge and, if it is new, runs fill.
func (w Writes) Follow(ctx context.Context, follower, followee timeline.UserID, fill func(*sql.Tx) error) error {
	return w.edge(ctx, "follow", follower, followee, AddFollow, fill)
}

// Unfollow removes the edge and, if there was one, runs clear.
func (w Writes) Unfollow(ctx context.Context, follower, followee timeline.UserID, clear func(*sql.Tx) error) error {
	return w.edge(ctx, "unfollow", follower, followee, RemoveFollow, clear)
}

func (w Writes) edge(ctx context.Context, verb string, follower, followee timeline.UserID,
	change func(context.Context, *sql.Tx, *schema.HookGuard, timeline.UserID, timeline.UserID) (bool, error), then func(*sql.Tx) error) error {
	if err := timeline.CheckFollow(follower, followee); err != nil {
		return err
	}
	err := mysqlx.InTx(ctx, w.DB, func(tx *sql.Tx) error {
		changed, err := change(ctx, tx, w.Guard, follower, followee)
		if err != nil || !changed {
			return err // nothing changed: the mailbox is as it was
		}
		return then(tx)
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", w.Model, verb, err)
	}
	return nil
}
