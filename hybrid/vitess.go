package hybrid

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// VitessModelName is VitessStore's name in package registry.
const VitessModelName = ModelName + registry.VitessSuffix

// DefaultVitessDatabase is the keyspace VitessStore uses unless told
// otherwise.
const DefaultVitessDatabase = "pushpull_hybrid_vitess"

// VitessStore is the hybrid model on a Vitess keyspace sharded by user
// (schema.HybridVitess), through vtgate: push@vitess's tables and writes
// (push.VitessStore), with hybrid's rule. The two tables hybrid adds are
// sharded so that each operation stays on the shards push@vitess's does:
// pull_authors by author_id, beside the author's messages and followers,
// and pull_follows by user_id, beside the reader's mailbox.
//
//   - A post counts its author's followers up to Threshold on the
//     author's shard. Below it the post fans out as push@vitess's does
//     (push.VitessStore.FanOut); from it on, the message is written to
//     the author's shard alone (and the sequence), and the first such
//     post lists the author in pull_authors and copies the author's
//     followers into pull_follows on their shards, in chunks, with one
//     INSERT IGNORE ... SELECT each, as a fan-out is written.
//   - A page is one statement on the reader's shard, a UNION ALL of the
//     mailbox page (whose rows carry the messages' bodies) and the
//     reader's pull_follows, which vtgate sends as one call, since both
//     are routed by the same user id. A reader who follows no listed
//     author is done there. Otherwise one more statement reads the listed
//     authors' newest messages below the cursor, ORDER BY id DESC LIMIT
//     Fetch(), which vtgate sends to those authors' shards alone and
//     merges; a full mailbox page sets its floor (no message below the
//     page's last mailbox row can make the page). The two lists are
//     merged, a message in both (posted while its author was below the
//     threshold again) counted once.
//   - A follow of a listed author adds its pull_follows row instead of
//     the backfill; an unfollow removes the row with the mailbox rows.
//
// A post that lists an author and a follow of that author that race
// cannot miss each other: the post's copy reads the author's followers
// rows, and the follow reads the author's pull_authors row with shared
// locks, both on the author's shard, as the same statements do on one
// server (see push.VitessStore for the fan-out's race with a follow).
type VitessStore struct {
	*push.VitessStore
	threshold int
}

var (
	_ timeline.Store          = (*VitessStore)(nil)
	_ timeline.Counting       = (*VitessStore)(nil)
	_ timeline.DBHolder       = (*VitessStore)(nil)
	_ registry.PartialMailbox = (*VitessStore)(nil)
)

// OpenVitess connects to the vtgate at cfg.DSN, whose keyspace
// cfg.Database (DefaultVitessDatabase if "") must exist with
// schema.VitessVSchema, creates the tables through vtgate if needed, and
// returns the store. cfg.Threshold is as for Open.
func OpenVitess(ctx context.Context, cfg Config) (*VitessStore, error) {
	if cfg.Threshold == 0 {
		cfg.Threshold = DefaultThreshold
	}
	if err := options[0].Check(VitessModelName, cfg.Threshold); err != nil {
		return nil, fmt.Errorf("open %s store: %w", VitessModelName, err)
	}
	if cfg.Database == "" {
		cfg.Database = DefaultVitessDatabase
	}
	cfg.Schema = schema.HybridVitess
	base, err := push.OpenVitess(ctx, cfg.Config)
	if err != nil {
		return nil, err
	}
	return &VitessStore{VitessStore: base, threshold: cfg.Threshold}, nil
}

// Threshold returns the follower count from which posts are pulled.
func (s *VitessStore) Threshold() int { return s.threshold }

// PullsAuthor is the model's rule, as Store.PullsAuthor.
func (s *VitessStore) PullsAuthor(followers int) bool { return followers >= s.threshold }

// MailboxShape implements registry.PartialMailbox: no posts of the
// authors PullsAuthor pulls.
func (s *VitessStore) MailboxShape() registry.MailboxShape {
	return registry.MailboxShape{PullAuthor: s.PullsAuthor}
}

// Post implements timeline.Store: the message and either its fan-out, or,
// for an author with Threshold followers or more, the author's listing as
// pulled, commit together.
func (s *VitessStore) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	return s.Writes(VitessModelName).Post(ctx, author, body, nil, func(tx *sql.Tx, msg timeline.Message) error {
		var followers int
		if err := tx.QueryRowContext(ctx,
			`SELECT COUNT(*) FROM (SELECT 1 FROM followers WHERE followee_id = ? LIMIT ?) f`,
			author, s.threshold).Scan(&followers); err != nil {
			return err
		}
		if !s.PullsAuthor(followers) {
			return s.FanOut(ctx, tx, msg)
		}
		res, err := tx.ExecContext(ctx, `INSERT IGNORE INTO pull_authors (author_id) VALUES (?)`, author)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // listed before: pull_follows is current
		}
		// vtgate reads the followers with shared locks, so a
		// concurrent Follow either is copied here or sees the listing.
		return s.InsertInChunks(ctx, tx,
			`SELECT follower_id FROM followers WHERE followee_id = ? AND follower_id > ? ORDER BY follower_id`, author, "follower_id",
			`INSERT IGNORE INTO pull_follows (user_id, author_id)
			 SELECT follower_id, followee_id FROM followers WHERE followee_id = ? AND follower_id > ?`, author)
	})
}

// Delete implements timeline.Store: the message and its rows in its
// author's followers' mailboxes go together. A listed author's message
// may be in mailboxes still (posted before the listing), so the rows are
// looked for whether the author is listed or not.
func (s *VitessStore) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	return s.Writes(VitessModelName).Delete(ctx, author, id, func(tx *sql.Tx) error {
		return s.RemoveFanOut(ctx, tx, author, id)
	})
}

// Follow implements timeline.Store: both follow rows and either the
// backfill of the followee's messages or, for a listed author, the
// pull_follows row commit together.
func (s *VitessStore) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.Writes(VitessModelName).Follow(ctx, follower, followee, func(tx *sql.Tx) error {
		if err := push.AddFollower(ctx, tx, follower, followee); err != nil {
			return err
		}
		// A locking read: a post listing the author now either
		// commits first or waits for this follow and copies it.
		var listed int
		if err := tx.QueryRowContext(ctx,
			`SELECT COUNT(*) FROM pull_authors WHERE author_id = ? LOCK IN SHARE MODE`, followee).Scan(&listed); err != nil {
			return err
		}
		if listed == 0 {
			return s.Backfill(ctx, tx, follower, followee)
		}
		_, err := tx.ExecContext(ctx,
			`INSERT IGNORE INTO pull_follows (user_id, author_id) VALUES (?, ?)`, follower, followee)
		return err
	})
}

// Unfollow implements timeline.Store: both follow rows, the pull_follows
// row and the followee's messages in the follower's mailbox go together.
// The followers row goes first: its lock orders the unfollow after a
// post that is copying the author's followers into pull_follows.
func (s *VitessStore) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.Writes(VitessModelName).Unfollow(ctx, follower, followee, func(tx *sql.Tx) error {
		if err := push.RemoveFollower(ctx, tx, follower, followee); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM pull_follows WHERE user_id = ? AND author_id = ?`, follower, followee); err != nil {
			return err
		}
		return push.RemoveAuthorCopies(ctx, tx, follower, followee)
	})
}

// Timeline implements timeline.Store: the reader's shard, and for a reader
// who follows listed authors their shards (see VitessStore).
func (s *VitessStore) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	return s.Page(ctx, VitessModelName, user, q, s.read)
}

func (s *VitessStore) read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	fetch := r.Fetch()
	before := uint64(r.Before)
	if before == 0 {
		before = math.MaxUint64
	}
	// The second branch's rows have id 0 and the listed author: its
	// constant time only gives the column the first branch's type.
	rows, err := s.DB().QueryContext(ctx,
		`(SELECT message_id, author_id, body, created_at FROM mailbox
		  WHERE user_id = ? AND message_id < ? ORDER BY message_id DESC LIMIT ?)
		 UNION ALL
		 (SELECT 0, author_id, '', CAST('1970-01-02' AS DATETIME(6)) FROM pull_follows WHERE user_id = ?)`,
		r.User, before, fetch, r.User)
	if err != nil {
		return nil, err
	}
	all, err := mysqlx.ScanMessages(rows, fetch)
	if err != nil {
		return nil, err
	}
	var box []timeline.Message
	var listed []timeline.UserID
	for _, m := range all {
		if m.ID == 0 {
			listed = append(listed, m.Author)
		} else {
			box = append(box, m)
		}
	}
	slices.SortFunc(box, newestFirst)
	if len(listed) == 0 {
		return box, nil
	}
	q := make([]byte, 0, 160+21*len(listed))
	q = append(q, `SELECT id, author_id, body, created_at FROM messages WHERE author_id IN (`...)
	q = mysqlx.AppendList(q, listed)
	q = append(q, `) AND id < `...)
	q = strconv.AppendUint(q, before, 10)
	if len(box) >= fetch {
		q = append(q, ` AND id >= `...)
		q = strconv.AppendUint(q, uint64(box[fetch-1].ID), 10)
	}
	q = append(q, ` ORDER BY id DESC LIMIT `...)
	q = strconv.AppendInt(q, int64(fetch), 10)
	rows, err = s.DB().QueryContext(ctx, string(q))
	if err != nil {
		return nil, err
	}
	pulled, err := mysqlx.ScanMessages(rows, fetch)
	if err != nil {
		return nil, err
	}
	return mergeNewest(box, pulled, fetch), nil
}

// newestFirst orders messages by id, newest first.
func newestFirst(x, y timeline.Message) int { return cmp.Compare(y.ID, x.ID) }

// mergeNewest returns the n newest of a and b, each message once.
func mergeNewest(a, b []timeline.Message, n int) []timeline.Message {
	out := slices.SortedFunc(slices.Values(append(a, b...)), newestFirst)
	out = slices.CompactFunc(out, func(x, y timeline.Message) bool { return x.ID == y.ID })
	if len(out) > n {
		out = out[:n]
	}
	return out
}
