package push

import (
	"context"
	"database/sql"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/timeline"
)

// The statements of push's tables that the models keeping a mailbox share
// (push, push-capped, hybrid): each runs in the caller's transaction, so a
// model composes them with its own bookkeeping and keeps one commit per
// call.

// InsertMessage adds a message by author and returns it with its id.
func InsertMessage(ctx context.Context, tx *sql.Tx, author timeline.UserID, body string, now time.Time) (timeline.Message, error) {
	msg := timeline.Message{Author: author, Body: body, CreatedAt: now.UTC().Truncate(time.Microsecond)}
	res, err := tx.ExecContext(ctx,
		`INSERT INTO messages (author_id, body, created_at) VALUES (?, ?, ?)`,
		author, body, msg.CreatedAt)
	if err != nil {
		return timeline.Message{}, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return timeline.Message{}, err
	}
	msg.ID = timeline.MessageID(id)
	return msg, nil
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

// AddFollow records that follower follows followee and reports whether
// the edge is new.
func AddFollow(ctx context.Context, tx *sql.Tx, follower, followee timeline.UserID) (bool, error) {
	res, err := tx.ExecContext(ctx,
		`INSERT IGNORE INTO follows (follower_id, followee_id) VALUES (?, ?)`, follower, followee)
	return affected(res, err)
}

// RemoveFollow deletes the edge and reports whether there was one.
func RemoveFollow(ctx context.Context, tx *sql.Tx, follower, followee timeline.UserID) (bool, error) {
	res, err := tx.ExecContext(ctx,
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
