// Package hybrid is Twitter's hybrid of push and pull: a post is fanned
// out to its author's followers' mailboxes, as in push, unless the author
// has at least Threshold followers; then it is written once, and its
// readers pull it at read time.
//
// The decision is taken per post, from the author's follower count then
// (counted up to Threshold, one short index range). The first post not
// fanned out lists its author in pull_authors and copies the author's
// follows into pull_follows, the follows a read must pull; a later follow
// of a listed author goes there too and backfills nothing. An author stays
// listed: when their followers fall below the threshold their posts are
// fanned out again, but the earlier ones are in no mailbox, so readers
// keep pulling them, and the posts that are in both parts are merged once.
//
// A read of a user who follows no listed author is push's read. Otherwise
// it is one statement: the mailbox range below the cursor and, for each
// listed followee, the author's messages below the cursor, each branch
// stopping at the page's length, merged with duplicates removed and cut to
// the page. Keyset cursors are message ids in both parts, so paging is
// exact across them.
//
// The threshold trades a celebrity's post (one row instead of one per
// follower) against every read of their followers (one more index range).
// DefaultThreshold is 1,000 followers.
package hybrid

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// ModelName is the model's name in package registry.
const ModelName = "hybrid"

// DefaultDatabase is the database the model uses unless told otherwise.
const DefaultDatabase = "pushpull_hybrid"

// DefaultThreshold is Config.Threshold's default. A post to 1,000
// followers writes 1,000 mailbox rows where a pull costs each of its
// followers' reads one index range of a page's length: with reads a few
// times as frequent as posts per user, the cost crosses over in the
// hundreds to thousands, the range Twitter's cut-off was reported in.
const DefaultThreshold = 1000

// OptionThreshold is the registry option (registry.Config.Options) that
// sets Config.Threshold.
const OptionThreshold = "threshold"

// Config says where the store lives and which authors are pulled.
type Config struct {
	push.Config
	// Threshold is the follower count from which an author's posts are
	// not fanned out; 0 means DefaultThreshold.
	Threshold int
}

// Store is the hybrid model. It implements timeline.Store; its DB and
// Close are push's.
type Store struct {
	*push.Store
	threshold int
}

var (
	_ timeline.Store          = (*Store)(nil)
	_ registry.PartialMailbox = (*Store)(nil)
)

// Open connects to the server, creates the database and schema if needed,
// and returns the store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Threshold == 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.Threshold < 1 {
		return nil, fmt.Errorf("open hybrid store: threshold %d: want at least 1 follower", cfg.Threshold)
	}
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	cfg.Schema = schema.Hybrid
	base, err := push.Open(ctx, cfg.Config)
	if err != nil {
		return nil, err
	}
	return &Store{Store: base, threshold: cfg.Threshold}, nil
}

// Threshold returns the follower count from which posts are pulled.
func (s *Store) Threshold() int { return s.threshold }

// MailboxShape implements registry.PartialMailbox: no posts of authors
// with Threshold followers or more.
func (s *Store) MailboxShape() registry.MailboxShape {
	return registry.MailboxShape{PullFrom: s.threshold}
}

// Post implements timeline.Store: the message and either its fan-out, or,
// for an author with Threshold followers or more, the author's listing as
// pulled, commit together.
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	return s.Writes(ModelName).Post(ctx, author, body, nil, func(tx *sql.Tx, msg timeline.Message) error {
		var followers int
		if err := tx.QueryRowContext(ctx,
			`SELECT COUNT(*) FROM (SELECT 1 FROM follows WHERE followee_id = ? LIMIT ?) f`,
			author, s.threshold).Scan(&followers); err != nil {
			return err
		}
		if followers < s.threshold {
			_, err := push.FanOut(ctx, tx, msg.ID, author)
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT IGNORE INTO pull_authors (author_id) VALUES (?)`, author)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // listed before: pull_follows is current
		}
		// The SELECT locks the author's follows, so a concurrent
		// Follow either is copied here or sees the listing.
		_, err = tx.ExecContext(ctx,
			`INSERT IGNORE INTO pull_follows (user_id, author_id)
			 SELECT follower_id, followee_id FROM follows WHERE followee_id = ?`, author)
		return err
	})
}

// Follow implements timeline.Store: the follow row and either the backfill
// of the followee's messages or, for a pulled author, the pull_follows row
// commit together.
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.Writes(ModelName).Follow(ctx, follower, followee, func(tx *sql.Tx) error {
		// A locking read: a post listing the author now either
		// commits first or waits for this follow and copies it.
		var listed int
		if err := tx.QueryRowContext(ctx,
			`SELECT COUNT(*) FROM pull_authors WHERE author_id = ? LOCK IN SHARE MODE`, followee).Scan(&listed); err != nil {
			return err
		}
		if listed == 0 {
			_, err := push.Backfill(ctx, tx, follower, followee, 0)
			return err
		}
		_, err := tx.ExecContext(ctx,
			`INSERT IGNORE INTO pull_follows (user_id, author_id) VALUES (?, ?)`, follower, followee)
		return err
	})
}

// Unfollow implements timeline.Store: the follow row, the pull_follows row
// and the followee's messages in the follower's mailbox go together.
func (s *Store) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.Writes(ModelName).Unfollow(ctx, follower, followee, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM pull_follows WHERE user_id = ? AND author_id = ?`, follower, followee); err != nil {
			return err
		}
		_, err := push.RemoveAuthor(ctx, tx, follower, followee)
		return err
	})
}

// Timeline implements timeline.Store: push's read for a user who follows
// no pulled author, else the mailbox range and the pulled authors' merged.
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	return s.Page(ctx, ModelName, user, q, s.read)
}

func (s *Store) read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	pulled, err := s.pulledFollowees(ctx, r.User)
	if err != nil {
		return nil, err
	}
	if len(pulled) == 0 {
		return push.ReadMailbox(ctx, s.DB(), r)
	}
	rows, err := s.DB().QueryContext(ctx, string(mergeQuery(r, pulled)))
	if err != nil {
		return nil, err
	}
	return mysqlx.ScanMessages(rows, r.Fetch())
}

// pulledFollowees returns the pulled authors user follows: a range scan
// of user's pull_follows rows, usually empty.
func (s *Store) pulledFollowees(ctx context.Context, user timeline.UserID) ([]timeline.UserID, error) {
	rows, err := s.DB().QueryContext(ctx, `SELECT author_id FROM pull_follows WHERE user_id = ?`, user)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []timeline.UserID
	for rows.Next() {
		var a timeline.UserID
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// mergeQuery is the read of a page from the mailbox and the authors'
// messages: a UNION (which drops the rows both parts hold: posts of an
// author fanned out after being pulled) of per-part ranges below the
// cursor, each stopping at Fetch() rows, cut to Fetch(). Every value is an
// integer the store produced, written in as a literal.
func mergeQuery(r timeline.Request, authors []timeline.UserID) []byte {
	fetch := strconv.AppendInt(nil, int64(r.Fetch()), 10)
	var below []byte
	if r.Before > 0 {
		below = strconv.AppendInt(nil, int64(r.Before), 10)
	}
	q := make([]byte, 0, 256+160*len(authors))
	q = append(q, `(SELECT m.id, m.author_id, m.body, m.created_at FROM mailbox b JOIN messages m ON m.id = b.message_id WHERE b.user_id = `...)
	q = strconv.AppendInt(q, int64(r.User), 10)
	if below != nil {
		q = append(q, ` AND b.message_id < `...)
		q = append(q, below...)
	}
	q = append(q, ` ORDER BY b.message_id DESC LIMIT `...)
	q = append(q, fetch...)
	q = append(q, ')')
	for _, a := range authors {
		q = append(q, ` UNION (SELECT id, author_id, body, created_at FROM messages WHERE author_id = `...)
		q = strconv.AppendInt(q, int64(a), 10)
		if below != nil {
			q = append(q, ` AND id < `...)
			q = append(q, below...)
		}
		q = append(q, ` ORDER BY id DESC LIMIT `...)
		q = append(q, fetch...)
		q = append(q, ')')
	}
	q = append(q, ` ORDER BY id DESC LIMIT `...)
	q = append(q, fetch...)
	return q
}
