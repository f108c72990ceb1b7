// Package record reads what every design on MariaDB or Vitess keeps alike,
// the system of record: the messages table (a message by id, an author's
// own messages) and the follow graph. A design's own reads (home
// timelines) differ; these do not, so each store delegates to a Reader.
package record

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/timeline"
)

// Reader reads the record of one database (or keyspace).
type Reader struct {
	DB    *sql.DB
	Codec *timeline.CursorCodec
	// FollowersTable: the database also keeps the follow graph by
	// followee, in followers (push@vitess does, so that an author's
	// followers are one shard's rows); Followers reads it there instead
	// of follows' followee index, which on a keyspace sharded by follower
	// means asking every shard.
	FollowersTable bool
}

// Message reads message id, or timeline.ErrNotFound. On a keyspace
// sharded by author the lookup by id alone asks every shard.
func (r Reader) Message(ctx context.Context, id timeline.MessageID) (timeline.Message, error) {
	if err := timeline.CheckMessageID(id); err != nil {
		return timeline.Message{}, err
	}
	var m timeline.Message
	err := r.DB.QueryRowContext(ctx, `SELECT id, author_id, body, created_at FROM messages WHERE id = ?`, id).
		Scan(&m.ID, &m.Author, &m.Body, &m.CreatedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return timeline.Message{}, timeline.ErrNotFound
	case err != nil:
		return timeline.Message{}, fmt.Errorf("message %d: %w", id, err)
	}
	return m, nil
}

// AuthorTimeline reads one page of author's own messages: one backward
// range scan of messages' (author_id, id) index, on one shard on Vitess.
func (r Reader) AuthorTimeline(ctx context.Context, author timeline.UserID, q timeline.Query) (timeline.Page, error) {
	p, err := r.Codec.Serve(ctx, "author", author, q, func(ctx context.Context, req timeline.Request) ([]timeline.Message, error) {
		const cols = `SELECT id, author_id, body, created_at FROM messages WHERE author_id = ?`
		var rows *sql.Rows
		var err error
		if req.Before == 0 {
			rows, err = r.DB.QueryContext(ctx, cols+` ORDER BY id DESC LIMIT ?`, req.User, req.Fetch())
		} else {
			rows, err = r.DB.QueryContext(ctx, cols+` AND id < ? ORDER BY id DESC LIMIT ?`, req.User, req.Before, req.Fetch())
		}
		if err != nil {
			return nil, err
		}
		return mysqlx.ScanMessages(rows, req.Fetch())
	})
	if err != nil && !errors.Is(err, timeline.ErrInvalidInput) {
		return timeline.Page{}, fmt.Errorf("own timeline of %d: %w", author, err)
	}
	return p, err
}

// Followees reads one page of the users user follows: a range of follows'
// primary key (one shard on Vitess).
func (r Reader) Followees(ctx context.Context, user timeline.UserID, q timeline.FollowQuery) (timeline.FollowPage, error) {
	return r.follows(ctx, "followees", `SELECT followee_id FROM follows WHERE follower_id = ? AND followee_id > ? ORDER BY followee_id LIMIT ?`, user, q)
}

// Followers reads one page of the users who follow user: a range of
// follows' (followee_id, follower_id) index, or of followers' primary key
// (FollowersTable).
func (r Reader) Followers(ctx context.Context, user timeline.UserID, q timeline.FollowQuery) (timeline.FollowPage, error) {
	query := `SELECT follower_id FROM follows WHERE followee_id = ? AND follower_id > ? ORDER BY follower_id LIMIT ?`
	if r.FollowersTable {
		query = `SELECT follower_id FROM followers WHERE followee_id = ? AND follower_id > ? ORDER BY follower_id LIMIT ?`
	}
	return r.follows(ctx, "followers", query, user, q)
}

func (r Reader) follows(ctx context.Context, what, query string, user timeline.UserID, q timeline.FollowQuery) (timeline.FollowPage, error) {
	limit, err := timeline.CheckFollowQuery(user, q)
	if err != nil {
		return timeline.FollowPage{}, err
	}
	rows, err := r.DB.QueryContext(ctx, query, user, q.After, limit+1)
	if err != nil {
		return timeline.FollowPage{}, fmt.Errorf("%s of %d: %w", what, user, err)
	}
	defer rows.Close()
	users := make([]timeline.UserID, 0, limit+1)
	for rows.Next() {
		var u timeline.UserID
		if err := rows.Scan(&u); err != nil {
			return timeline.FollowPage{}, fmt.Errorf("%s of %d: %w", what, user, err)
		}
		users = append(users, u)
	}
	if err := rows.Err(); err != nil {
		return timeline.FollowPage{}, fmt.Errorf("%s of %d: %w", what, user, err)
	}
	return timeline.MakeFollowPage(limit, users), nil
}

// Follows reports whether follower follows followee: one primary key
// lookup (one shard on Vitess).
func (r Reader) Follows(ctx context.Context, follower, followee timeline.UserID) (bool, error) {
	if err := timeline.CheckFollows(follower, followee); err != nil {
		return false, err
	}
	var one int
	err := r.DB.QueryRowContext(ctx, `SELECT 1 FROM follows WHERE follower_id = ? AND followee_id = ?`, follower, followee).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("does %d follow %d: %w", follower, followee, err)
	}
	return true, nil
}
