// Package capped is the push model with capped mailboxes, as Twitter
// and Mastodon keep them (about 800 entries per home timeline): each
// user's mailbox holds their newest Cap entries, and older pages come from
// the pull model's merge over the same database's follows and messages.
//
// The mailbox of a user holds every message of their timeline with an id
// at or above their floor (mailbox_state.floor_id; 0 while nothing was cut
// off), and nothing below it. A page is push's read of the mailbox below
// the cursor; only when that is not a full page does the read look up the
// floor, and if it is above 0, the rest of the page comes from
// sqlread.Merge below the floor. Keyset cursors are message ids either
// way, so paging across the floor neither repeats nor skips, and the
// newest pages cost what push's do.
//
// Nothing lands below a floor: a post locks its followers' state rows
// before its message gets an id, and a trim locks the state row of the
// mailbox it cuts, so a trim never runs between a message's id and its
// fan-out.
//
// Trimming is amortised: every write that adds or removes mailbox rows
// keeps the user's entry count (mailbox_state.entries) in the same
// transaction, and flags the mailbox due once it holds more than Cap+Slack
// entries. After a write commits, the store trims the mailboxes flagged
// due, each in a transaction of its own: one DELETE of the oldest
// entries-Cap rows (ORDER BY message_id LIMIT, reading only what it
// deletes), raising the floor above them. A mailbox is trimmed once per
// Slack entries it receives, never scanned per post. A trim that loses a
// race (its mailbox is being written) or fails is skipped and left to the
// next write's, and the write it follows has committed and succeeds
// regardless: a mailbox may pass Cap+Slack for as long as that takes.
//
// A follow backfills only the followee's newest Cap messages at or above
// the follower's floor; when the followee has more, it raises the floor to
// the oldest of them and deletes the rows below it: the older messages
// are the pull merge's.
package capped

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// ModelName is the model's name in package registry.
const ModelName = "push-capped"

// DefaultDatabase is the database the model uses unless told otherwise.
const DefaultDatabase = "pushpull_push_capped"

// DefaultCap is Config.Cap's default: Twitter's and Mastodon's home
// timelines keep about 800 entries.
const DefaultCap = 800

// MaxCap bounds Config.Cap and Config.Slack.
const MaxCap = 1_000_000

// The registry options (registry.Model.Options) of the model.
const (
	// OptionCap is Config.Cap.
	OptionCap = "cap"
	// OptionSlack is Config.Slack.
	OptionSlack = "slack"
)

// Config says where the store lives and how large mailboxes grow.
type Config struct {
	push.Config
	// Cap is how many entries a mailbox keeps after a trim; 0 means
	// DefaultCap.
	Cap int
	// Slack is how many entries a mailbox may hold above Cap before it is
	// trimmed; 0 means Cap/8 (at least 1). A larger slack trims less
	// often and keeps more rows.
	Slack int
}

// Store is the push-capped model. It implements timeline.Store; its DB and
// Close are push's.
type Store struct {
	*push.Store
	pull       sqlread.Reader
	pullPages  *sqlread.PageCount
	cap, slack int
}

var (
	_ timeline.Store          = (*Store)(nil)
	_ registry.PartialMailbox = (*Store)(nil)
)

// Open connects to the server, creates the database and schema if needed,
// and returns the store. A Cap or Slack out of its option's bounds is a
// *registry.OptionError.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Cap == 0 {
		cfg.Cap = DefaultCap
	}
	if cfg.Slack == 0 {
		cfg.Slack = max(1, cfg.Cap/8)
	}
	for i, v := range []int{cfg.Cap, cfg.Slack} {
		if err := options[i].Check(ModelName, v); err != nil {
			return nil, fmt.Errorf("open %s store: %w", ModelName, err)
		}
	}
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	cfg.Schema = schema.PushCapped
	base, err := push.Open(ctx, cfg.Config)
	if err != nil {
		return nil, err
	}
	pages := &sqlread.PageCount{}
	return &Store{
		Store: base, cap: cfg.Cap, slack: cfg.Slack, pullPages: pages,
		pull: sqlread.Merge{}.NewReader(sqlread.Env{DB: base.DB(), Pages: pages}),
	}, nil
}

// Cap returns how many entries a mailbox keeps after a trim.
func (s *Store) Cap() int { return s.cap }

// Slack returns how far past Cap a mailbox grows before it is trimmed.
func (s *Store) Slack() int { return s.slack }

// MailboxShape implements registry.PartialMailbox: the newest Cap entries
// of each user, a number the loader cuts every mailbox at.
func (s *Store) MailboxShape() registry.MailboxShape { return registry.MailboxShape{Cap: s.cap} }

// PullPages returns how many pages (or page remainders) came from the pull
// merge below a floor.
func (s *Store) PullPages() int64 { return s.pullPages.Pages() }

// Post implements timeline.Store: the message, its fan-out (drowning
// readers as push.Config.Drowning says) and the followers' entry counts
// commit together; then the mailboxes due are trimmed.
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	// The counts first, before the message has an id: they lock the
	// followers' state rows, which a trim must lock too, so no trim runs
	// between this message's id and its fan-out, and every mailbox row
	// stays at or above its user's floor.
	//
	// A drowning reader's count is the fan-out's to raise, or not: the
	// count locks their state row and adds nothing, and under the lossy
	// option the rows written to them are counted after the fan-out.
	list, err := s.DrowningReaders().Read(ctx)
	if err != nil {
		return timeline.Message{}, fmt.Errorf("%s post: %w", ModelName, err)
	}
	count := func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO mailbox_state (user_id, entries)
			 SELECT follower_id, IF(`+list.In("follower_id")+`, 0, 1) FROM follows WHERE followee_id = ?
			 ON DUPLICATE KEY UPDATE entries = entries + VALUES(entries), due = entries > ?`,
			author, s.cap+s.slack)
		return err
	}
	msg, err := s.Writes(ModelName).Post(ctx, author, body, count, func(tx *sql.Tx, msg timeline.Message) error {
		if _, err := push.FanOutTo(ctx, tx, msg.ID, author, list); err != nil || list.Len() == 0 || s.Drowning().Mode != push.DrowningLossy {
			return err
		}
		// The drowning followers who got the row, by a read that locks
		// nothing; then their counts, whose rows the count above
		// locked. An UPDATE that found them by itself would lock every
		// drowning reader's state row, the author's followers or not,
		// and deadlock with other posts and trims.
		var kept []timeline.UserID
		err := reconcile.ScanInts(ctx, tx, `SELECT user_id FROM mailbox WHERE `+list.In("user_id")+` AND message_id = ?`, 1,
			func(v []int64) { kept = append(kept, timeline.UserID(v[0])) }, msg.ID)
		if err != nil || len(kept) == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx,
			`UPDATE mailbox_state SET entries = entries + 1, due = entries > ?
			 WHERE user_id IN (`+string(mysqlx.AppendList(nil, kept))+`)`, s.cap+s.slack)
		return err
	})
	if err == nil {
		s.trimDue(ctx)
	}
	return msg, err
}

// Follow implements timeline.Store: the follow row, the backfill of the
// followee's newest Cap messages at or above the follower's floor, and the
// follower's new floor and count commit together.
// The follower is marked drowning in the same transaction when the follow
// takes them past the drowning readers' count (push.Store.FollowMarking).
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	err := s.FollowMarking(ctx, ModelName, follower, followee, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO mailbox_state (user_id) VALUES (?) ON DUPLICATE KEY UPDATE user_id = user_id`,
			follower); err != nil {
			return err
		}
		var floor timeline.MessageID
		if err := tx.QueryRowContext(ctx,
			`SELECT floor_id FROM mailbox_state WHERE user_id = ? FOR UPDATE`, follower).Scan(&floor); err != nil {
			return err
		}
		var oldest timeline.MessageID
		err := tx.QueryRowContext(ctx,
			`SELECT id FROM messages WHERE author_id = ? AND id >= ? ORDER BY id DESC LIMIT 1 OFFSET ?`,
			followee, floor, s.cap-1).Scan(&oldest)
		switch {
		case errors.Is(err, sql.ErrNoRows): // fewer than Cap: all of them
		case err != nil:
			return err
		default:
			floor = oldest
		}
		n, err := push.Backfill(ctx, tx, follower, followee, floor)
		if err != nil {
			return err
		}
		// A raised floor leaves the other followees' rows below it to
		// the pull merge: delete them (fewer than Cap+Slack).
		res, err := tx.ExecContext(ctx, `DELETE FROM mailbox WHERE user_id = ? AND message_id < ?`, follower, floor)
		if err != nil {
			return err
		}
		below, err := res.RowsAffected()
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx,
			`UPDATE mailbox_state SET floor_id = ?, entries = entries + ? - LEAST(entries + ?, ?), due = entries > ? WHERE user_id = ?`,
			floor, n, n, below, s.cap+s.slack, follower)
		return err
	})
	if err == nil {
		s.trimDue(ctx)
	}
	return err
}

// Unfollow implements timeline.Store: the follow row, the followee's
// messages in the follower's mailbox and their count go together.
func (s *Store) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.Writes(ModelName).Unfollow(ctx, follower, followee, func(tx *sql.Tx) error {
		n, err := push.RemoveAuthor(ctx, tx, follower, followee)
		if err != nil || n == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx,
			`UPDATE mailbox_state SET entries = entries - LEAST(entries, ?), due = entries > ? WHERE user_id = ?`,
			n, s.cap+s.slack, follower)
		return err
	})
}

// Delete implements timeline.Store: the message, its rows in its author's
// followers' mailboxes and those mailboxes' entry counts go together. A
// follower whose floor is above the message has no row of it, and no
// count to lower: the pull merge below the floor reads messages, where
// it is gone.
func (s *Store) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	return s.Writes(ModelName).Delete(ctx, author, id, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`UPDATE follows f JOIN mailbox b ON b.user_id = f.follower_id AND b.message_id = ?
			 JOIN mailbox_state st ON st.user_id = f.follower_id
			 SET st.entries = st.entries - LEAST(st.entries, 1)
			 WHERE f.followee_id = ?`, id, author); err != nil {
			return err
		}
		_, err := push.RemoveFanOut(ctx, tx, id, author)
		return err
	})
}

// trimBatch is how many due mailboxes one write trims at most.
const trimBatch = 16

// trimDue trims the mailboxes flagged due: one short range of the due
// index, usually empty. The write before it has committed, so a trim that
// fails (the server went away, ctx ended) fails nothing: the flags stay,
// and the next write's trim picks them up.
func (s *Store) trimDue(ctx context.Context) {
	rows, err := s.DB().QueryContext(ctx, `SELECT user_id FROM mailbox_state WHERE due = 1 LIMIT ?`, trimBatch)
	if err != nil {
		return
	}
	var due []timeline.UserID
	for rows.Next() {
		var u timeline.UserID
		if rows.Scan(&u) == nil {
			due = append(due, u)
		}
	}
	rows.Close()
	for _, u := range due {
		if _, err := s.Trim(ctx, u); err != nil {
			return
		}
	}
}

// Trim cuts user's mailbox to its newest Cap entries if it is due, and
// returns how many rows it deleted. A mailbox that is not due, or that
// another transaction holds (a write, or another trim), is left alone.
func (s *Store) Trim(ctx context.Context, user timeline.UserID) (int64, error) {
	var deleted int64
	err := mysqlx.InTx(ctx, s.DB(), func(tx *sql.Tx) error {
		deleted = 0
		var entries int64
		var floor timeline.MessageID
		err := tx.QueryRowContext(ctx,
			`SELECT entries, floor_id FROM mailbox_state WHERE user_id = ? AND due = 1 FOR UPDATE SKIP LOCKED`,
			user).Scan(&entries, &floor)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if excess := entries - int64(s.cap); excess > 0 {
			rows, err := tx.QueryContext(ctx,
				`DELETE FROM mailbox WHERE user_id = ? ORDER BY message_id LIMIT ? RETURNING message_id`,
				user, excess)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id timeline.MessageID
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				deleted++
				// Everything at or below id is gone; the rest of
				// the timeline above the old floor is still there.
				floor = max(floor, id+1)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx,
			`UPDATE mailbox_state SET floor_id = ?, entries = entries - LEAST(entries, ?), due = 0 WHERE user_id = ?`,
			floor, deleted, user)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("trim mailbox of %d: %w", user, err)
	}
	return deleted, nil
}

// Timeline implements timeline.Store: the mailbox's rows below the cursor,
// then, if they do not fill the page and the floor is above 0, the pull
// merge below the floor; a drowning reader under push.DrowningPull reads
// by pull (push.Store.PullDrowning).
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	return s.Page(ctx, ModelName, user, q, s.PullDrowning(s.read))
}

func (s *Store) read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	return ReadAboveFloor(ctx, s.DB(), s.pull, r, func(ctx context.Context) (timeline.MessageID, error) {
		var floor timeline.MessageID
		err := s.DB().QueryRowContext(ctx, `SELECT floor_id FROM mailbox_state WHERE user_id = ?`, r.User).Scan(&floor)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil
		}
		return floor, err
	})
}

// ReadAboveFloor reads r's page from a mailbox that holds every message of
// r.User's timeline with an id at or above a floor and nothing below it,
// with pull below the floor: push.ReadMailbox's rows below the cursor,
// then, if they do not fill the page, floor (0: the mailbox holds the
// whole timeline) and the rest of the page from pull below it. floor is
// looked up after the mailbox, so a floor raised between the two reads
// (the rows below it deleted) drops the rows read below it, and a model
// whose floor never falls reads exact pages.
func ReadAboveFloor(ctx context.Context, db *sql.DB, pull sqlread.Reader, r timeline.Request,
	floor func(context.Context) (timeline.MessageID, error)) ([]timeline.Message, error) {
	msgs, err := push.ReadMailbox(ctx, db, r)
	if err != nil || len(msgs) == r.Fetch() {
		// Every mailbox row is at or above the floor, and every
		// message of the timeline at or above it is in the mailbox: a
		// full page is exact.
		return msgs, err
	}
	low, err := floor(ctx)
	if err != nil {
		return nil, err
	}
	if low == 0 {
		return msgs, nil // the mailbox holds the whole timeline
	}
	// A trim between the two reads may have raised the floor above rows
	// read: those are the merge's now.
	for i, m := range msgs {
		if m.ID < low {
			msgs = msgs[:i]
			break
		}
	}
	below := low
	if r.Before != 0 && r.Before < low {
		below = r.Before
	}
	rest, err := pull.Read(ctx, timeline.Request{User: r.User, Limit: r.Fetch() - len(msgs) - 1, Before: below})
	if err != nil {
		return nil, err
	}
	return append(msgs, rest...), nil
}
