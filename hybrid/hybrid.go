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
// A read's first statement returns the listed authors the reader follows,
// each with their newest message below the cursor, and the ids of the
// mailbox's page below the cursor. The rest is pull-merge's k-way merge
// with early stop (sqlread.MergeOver) over those authors, with the
// mailbox's ids as one more source already read: in the common case, a
// mailbox page newer than every listed author's head, the second statement
// reads the page's bodies and nothing else; otherwise only authors whose
// head can reach the page are read, each no further than its rank allows.
// A message both parts hold (a post fanned out after its author was
// listed) counts once. Keyset cursors are message ids in both parts, so
// paging is exact across them.
//
// The threshold trades a celebrity's post (one row instead of one per
// follower) against every read of their followers (one more index range).
// DefaultThreshold is 1,000 followers.
//
// VitessStore is the same rule on a Vitess keyspace sharded by user (model
// hybrid@vitess).
package hybrid

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"

	"github.com/pushpull/pushpull/pull/sqlread"
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

// OptionThreshold is the registry option (registry.Model.Options) that
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
	if err := options[0].Check(ModelName, cfg.Threshold); err != nil {
		return nil, fmt.Errorf("open hybrid store: %w", err)
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

// PullsAuthor is the model's rule: an author with followers followers
// (counted up to Threshold) is pulled, their posts fanned out to no
// mailbox, when followers is at least Threshold. Post decides by it, and
// so does a bulk load (MailboxShape).
func (s *Store) PullsAuthor(followers int) bool { return followers >= s.threshold }

// MailboxShape implements registry.PartialMailbox: no posts of the
// authors PullsAuthor pulls.
func (s *Store) MailboxShape() registry.MailboxShape {
	return registry.MailboxShape{PullAuthor: s.PullsAuthor}
}

// Post implements timeline.Store: the message and either its fan-out
// (drowning readers as push.Config.Drowning says), or,
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
		if !s.PullsAuthor(followers) {
			list, err := s.DrowningReaders().Read(ctx)
			if err == nil {
				_, err = push.FanOutTo(ctx, tx, msg.ID, author, list)
			}
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

// Delete implements timeline.Store: the message and its rows in its
// author's followers' mailboxes go together. A listed author's message
// may be in mailboxes still (posted before the listing), so the rows are
// looked for whether the author is listed or not.
func (s *Store) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	return s.Writes(ModelName).Delete(ctx, author, id, func(tx *sql.Tx) error {
		_, err := push.RemoveFanOut(ctx, tx, id, author)
		return err
	})
}

// Follow implements timeline.Store: the follow row and either the backfill
// of the followee's messages or, for a pulled author, the pull_follows row
// commit together.
// The follower is marked drowning in the same transaction when the follow
// takes them past the drowning readers' count (push.Store.FollowMarking).
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.FollowMarking(ctx, ModelName, follower, followee, func(tx *sql.Tx) error {
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
// no pulled author, else the mailbox range and the pulled authors' merged;
// a drowning reader under push.DrowningPull reads by pull
// (push.Store.PullDrowning).
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	return s.Page(ctx, ModelName, user, q, s.PullDrowning(s.read))
}

func (s *Store) read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	heads, box, err := s.candidates(ctx, r)
	if err != nil {
		return nil, err
	}
	return sqlread.MergeOver(ctx, s.DB(), r, heads, box)
}

// candidates returns, in one statement, the pulled authors r.User follows
// (a range of their pull_follows rows, usually empty) with each one's
// newest message below the cursor (one index probe each), sorted
// sqlread.ByNewest and without those who have none, and the ids of the
// newest r.Fetch() mailbox entries below the cursor, newest first (a range
// of the mailbox's primary key, which holds no body).
func (s *Store) candidates(ctx context.Context, r timeline.Request) (heads []sqlread.AuthorNewest, box []uint64, err error) {
	before := uint64(r.Before)
	if before == 0 {
		before = math.MaxUint64
	}
	rows, err := s.DB().QueryContext(ctx,
		`(SELECT p.author_id,
		   (SELECT m.id FROM messages m WHERE m.author_id = p.author_id AND m.id < ? ORDER BY m.id DESC LIMIT 1)
		  FROM pull_follows p WHERE p.user_id = ?)
		 UNION ALL
		 (SELECT 0, message_id FROM mailbox WHERE user_id = ? AND message_id < ? ORDER BY message_id DESC LIMIT ?)`,
		before, r.User, r.User, before, r.Fetch())
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var author uint64
		var id sql.Null[uint64]
		if err := rows.Scan(&author, &id); err != nil {
			return nil, nil, err
		}
		switch {
		case author == 0:
			box = append(box, id.V)
		case id.Valid:
			heads = append(heads, sqlread.AuthorNewest{Author: timeline.UserID(author), Newest: id.V})
		}
	}
	slices.SortFunc(box, sqlread.NewestFirst)
	slices.SortFunc(heads, sqlread.ByNewest)
	return heads, box, rows.Err()
}
