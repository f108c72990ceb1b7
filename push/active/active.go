// Package active is the push model that fans out only to active
// readers, as Mastodon does (home feeds are kept for users who signed in
// within the last 7 days) and Twitter did (RPUSHX appends a tweet only to
// the timelines already in Redis): a post writes its id into the mailboxes
// of the followers who read within a window, and passes the others over.
// An inactive user's next read rebuilds their mailbox by pull first, like
// Mastodon's populate_home: the newest Rebuild entries of the timeline,
// read with the pull model's merge, and the user is active again.
//
// The trade-off: a post writes rows only for the share of its audience
// that reads, so a workload where most followers are idle (most accounts
// are) writes a fraction of push's rows, and the mailboxes of idle users
// take no space; in exchange, each return of an idle user costs one pull
// read of Rebuild entries and as many row writes, every read looks up its
// reader's state row, and every post counts its audience. It pays when a
// user's posts fan out to more idle followers than the rebuilds of those
// followers write, that is when followers return rarely.
//
// # State
//
// The reader_state table keeps, per user, an active flag, the last read
// recorded (read_at) and a floor. The flag, not the clock, says what the
// mailbox holds: while it is set, the mailbox holds every message of the
// user's timeline with an id at or above the floor, and nothing below it.
// Older pages come from sqlread.Merge below the floor, as in push-capped
// (capped.ReadAboveFloor); keyset cursors are message ids throughout.
//
// The flag changes only under the state row's exclusive lock, and a post's
// fan-out reads its followers' state rows under shared locks (the fan-out
// is one INSERT ... SELECT that joins follows to reader_state), so every
// post either writes a row for a follower or commits, skipped, before
// that follower's flag can be set again:
//
//   - Expiry clears the flag of users whose read_at is older than the
//     window: one short range scan of the (active, read_at) index, run by
//     posts at most once per Window/16 (and at most once a second).
//   - A read that finds the flag clear rebuilds: it locks the state row,
//     reads the newest Rebuild entries of the timeline with the pull merge
//     (which then sees every post that passed the user over: those
//     committed before the lock was granted), writes them with INSERT
//     IGNORE, deletes what lies below the new floor, and sets the flag and
//     the floor in the same transaction. A post whose fan-out waited for
//     that lock sees the flag set and writes its row; one whose id lies
//     below the new floor writes none (the merge reads it). A post
//     committed during a rebuild is thus neither lost nor written twice.
//   - A read that finds the flag set records read_at when the recorded one
//     is older than Window/16, only while the flag is still set; if expiry
//     cleared it meanwhile, the read rebuilds instead.
//
// The floor never falls (a rebuild raises it at most to its Rebuild-th
// newest entry), so a read that looks the floor up after reading the
// mailbox never misses rows, whatever a concurrent rebuild does. A follow
// backfills only an active follower's mailbox (an inactive one is rebuilt
// before it is read); an unfollow removes the followee's rows either way.
// Follows and unfollows lock the follower's state row as rebuilds do.
//
// The clock (Config.Now) decides only when users expire: a wrong clock
// costs writes or rebuilds, never a wrong page.
package active

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/push/capped"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
)

// ModelName is the model's name in package registry.
const ModelName = "push-active"

// DefaultDatabase is the database the model uses unless told otherwise.
const DefaultDatabase = "pushpull_push_active"

// Defaults and bounds of Config.
const (
	// DefaultWindow is Config.Window's default: Mastodon keeps the home
	// feeds of users active within the last 7 days.
	DefaultWindow = 7 * 24 * time.Hour
	// MaxWindow bounds Config.Window.
	MaxWindow = 100 * 365 * 24 * time.Hour
	// DefaultRebuild is Config.Rebuild's default: Mastodon's and
	// Twitter's home feeds keep about 800 entries.
	DefaultRebuild = 800
	// MaxRebuild bounds Config.Rebuild.
	MaxRebuild = 100_000
	// DefaultActiveReads is Config.ActiveReads's default: every user
	// reads once per window on average, so that under uniform activity
	// about 63% of users start active (1 - 1/e).
	DefaultActiveReads = 1.0
	// MaxActiveReads bounds Config.ActiveReads.
	MaxActiveReads = 1e6
)

// The registry options (registry.Model.Options) of the model.
const (
	// OptionWindow is Config.Window, as a Go duration ("168h", "30s").
	OptionWindow = "window"
	// OptionRebuild is Config.Rebuild.
	OptionRebuild = "rebuild"
	// OptionActiveReads is Config.ActiveReads.
	OptionActiveReads = "active_reads"
)

// Config says where the store lives and whom posts fan out to.
type Config struct {
	push.Config
	// Window is how recently a user must have read for posts to fan out
	// to them; 0 means DefaultWindow. It is kept to the microsecond.
	Window time.Duration
	// Rebuild is how many of the newest entries of a timeline a rebuild
	// writes into the mailbox at most; 0 means DefaultRebuild.
	Rebuild int
	// ActiveReads is the mean number of reads per user within Window that
	// the history behind a bulk-loaded dataset had: it decides which
	// users the load makes active (registry.MailboxShape.ActiveReads).
	// The store itself does not use it. 0 means DefaultActiveReads.
	ActiveReads float64
	// Now is the store's clock for reads and expiry; nil means time.Now.
	// Tests move it to expire users without waiting.
	Now func() time.Time
}

// check reports the first field of a Config with its defaults filled in
// that its option does not take, as a *registry.OptionError.
func (c Config) check() error {
	for i, v := range []any{c.Window, c.Rebuild, c.ActiveReads} {
		if err := options[i].Check(ModelName, v); err != nil {
			return err
		}
	}
	return nil
}

// Store is the push-active model. It implements timeline.Store; its DB and
// Close are push's.
type Store struct {
	*push.Store
	pull, rebuildPull    sqlread.Reader
	pullPages            *sqlread.PageCount
	window               time.Duration
	rebuild              int
	activeReads          float64
	now                  func() time.Time
	rebuilding           chan struct{} // a slot per rebuild under way
	lastExpiry           atomic.Int64  // unix µs of the last expiry run
	pushed, skipped      atomic.Int64
	rebuilds, rebuildRow atomic.Int64
	expired              atomic.Int64
}

var (
	_ timeline.Store          = (*Store)(nil)
	_ registry.PartialMailbox = (*Store)(nil)
	_ timeline.Counting       = (*Store)(nil)
)

// Open checks cfg, connects to the server, creates the database and
// schema if needed, and returns the store. An invalid cfg is a
// *registry.OptionError, and nothing is created.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Rebuild == 0 {
		cfg.Rebuild = DefaultRebuild
	}
	if cfg.ActiveReads == 0 {
		cfg.ActiveReads = DefaultActiveReads
	}
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("open %s store: %w", ModelName, err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	cfg.Schema = schema.PushActive
	base, err := push.Open(ctx, cfg.Config)
	if err != nil {
		return nil, err
	}
	// A rebuild holds a transaction's connection while the merge reads
	// on another: fewer of them at once than the pool has connections,
	// or they could hold every connection and wait for one more.
	slots := 8
	if n := base.DB().Stats().MaxOpenConnections; n > 0 {
		slots = max(1, min(slots, n/4))
	}
	pages := &sqlread.PageCount{}
	return &Store{
		Store: base, pullPages: pages,
		pull:        sqlread.Merge{}.NewReader(sqlread.Env{DB: base.DB(), Pages: pages}),
		rebuildPull: sqlread.Merge{}.NewReader(sqlread.Env{DB: base.DB(), Pages: &sqlread.PageCount{}}),
		window:      cfg.Window, rebuild: cfg.Rebuild, activeReads: cfg.ActiveReads, now: cfg.Now,
		rebuilding: make(chan struct{}, slots),
	}, nil
}

// Window returns how recently a user must have read for posts to fan out
// to them.
func (s *Store) Window() time.Duration { return s.window }

// Rebuild returns how many entries a rebuild writes at most.
func (s *Store) Rebuild() int { return s.rebuild }

// MailboxShape implements registry.PartialMailbox: the mailboxes of the
// users active under Config.ActiveReads, the activity level the loader
// draws the active users by.
func (s *Store) MailboxShape() registry.MailboxShape {
	return registry.MailboxShape{ActiveReads: s.activeReads}
}

// PullPages returns how many pages (or page remainders) came from the pull
// merge below a floor.
func (s *Store) PullPages() int64 { return s.pullPages.Pages() }

// Counters implements timeline.Counting: the rows posts wrote and skipped,
// the rebuilds and their rows, and the users expired (counter.PushedRows
// and the keys after it).
func (s *Store) Counters() map[string]int64 {
	return map[string]int64{
		counter.PushedRows:  s.pushed.Load(),
		counter.SkippedRows: s.skipped.Load(),
		counter.Rebuilds:    s.rebuilds.Load(),
		counter.RebuildRows: s.rebuildRow.Load(),
		counter.Expired:     s.expired.Load(),
	}
}

// refresh is how stale a recorded read may get before a read records a
// new one: a read writes read_at at most once per Window/16.
func (s *Store) refresh() int64 { return max(1, s.window.Microseconds()/16) }

// Post implements timeline.Store: expiry first when it is due, then, in
// one transaction, the message, the count of its author's followers and
// the fan-out to those of them that are active (drowning readers as
// push.Config.Drowning says).
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	if err := timeline.CheckPost(author, body); err != nil {
		return timeline.Message{}, err // before expiry: a bad post writes nothing
	}
	s.expireDue(ctx)
	var followers, written int64
	msg, err := s.Writes(ModelName).Post(ctx, author, body, nil, func(tx *sql.Tx, msg timeline.Message) error {
		// The count locks the range of follows the fan-out reads, so
		// the two agree.
		if err := tx.QueryRowContext(ctx,
			`SELECT COUNT(*) FROM follows WHERE followee_id = ? LOCK IN SHARE MODE`, author).Scan(&followers); err != nil {
			return err
		}
		list, err := s.DrowningReaders().Read(ctx)
		if err != nil {
			return err
		}
		// Follows first (STRAIGHT_JOIN): the author's range of the
		// followee index, then each follower's state row, read under a
		// shared lock that a flag change must wait for.
		res, err := tx.ExecContext(ctx,
			`INSERT INTO mailbox (user_id, message_id)
			 SELECT STRAIGHT_JOIN f.follower_id, ? FROM follows f JOIN reader_state r ON r.user_id = f.follower_id
			 WHERE f.followee_id = ? AND r.active = 1 AND r.floor_id <= ?`+list.Filter("f.follower_id", strconv.FormatUint(uint64(msg.ID), 10)),
			msg.ID, author, msg.ID)
		if err != nil {
			return err
		}
		written, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return msg, err
	}
	s.pushed.Add(written)
	s.skipped.Add(followers - written)
	return msg, nil
}

// lockState creates user's state row if it has none (inactive, floor 0)
// and locks it; it returns the flag and the floor.
func lockState(ctx context.Context, tx *sql.Tx, user timeline.UserID) (active bool, floor timeline.MessageID, err error) {
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO reader_state (user_id) VALUES (?) ON DUPLICATE KEY UPDATE user_id = user_id`, user); err != nil {
		return false, 0, err
	}
	err = tx.QueryRowContext(ctx,
		`SELECT active, floor_id FROM reader_state WHERE user_id = ? FOR UPDATE`, user).Scan(&active, &floor)
	return active, floor, err
}

// Follow implements timeline.Store: the follow row and, if the follower is
// active, the backfill of the followee's messages at or above the
// follower's floor commit together.
// The follower is marked drowning in the same transaction when the follow
// takes them past the drowning readers' count (push.Store.FollowMarking).
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.FollowMarking(ctx, ModelName, follower, followee, func(tx *sql.Tx) error {
		active, floor, err := lockState(ctx, tx, follower)
		if err != nil || !active {
			return err // an inactive mailbox is rebuilt before it is read
		}
		_, err = push.Backfill(ctx, tx, follower, followee, floor)
		return err
	})
}

// Delete implements timeline.Store: the message and its rows in the
// mailboxes of its author's followers go together, active or not (an
// inactive follower's mailbox holds no row to delete, and its rebuild
// reads messages, where it is gone).
func (s *Store) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	return s.Writes(ModelName).Delete(ctx, author, id, func(tx *sql.Tx) error {
		_, err := push.RemoveFanOut(ctx, tx, id, author)
		return err
	})
}

// Unfollow implements timeline.Store: the follow row and the followee's
// messages in the follower's mailbox go together, whether the follower is
// active or not.
func (s *Store) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.Writes(ModelName).Unfollow(ctx, follower, followee, func(tx *sql.Tx) error {
		if _, _, err := lockState(ctx, tx, follower); err != nil {
			return err
		}
		_, err := push.RemoveAuthor(ctx, tx, follower, followee)
		return err
	})
}

// Timeline implements timeline.Store: the reader is made active (a
// rebuild if they were not), then the page is read from the mailbox and,
// below the floor, from the pull merge. A drowning reader under
// push.DrowningPull reads by pull (push.Store.PullDrowning), and is
// neither made active nor rebuilt.
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	return s.Page(ctx, ModelName, user, q, s.PullDrowning(s.read))
}

func (s *Store) read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	if err := s.activate(ctx, r.User); err != nil {
		return nil, err
	}
	return capped.ReadAboveFloor(ctx, s.DB(), s.pull, r, func(ctx context.Context) (timeline.MessageID, error) {
		var floor timeline.MessageID
		err := s.DB().QueryRowContext(ctx, `SELECT floor_id FROM reader_state WHERE user_id = ?`, r.User).Scan(&floor)
		return floor, err
	})
}

// activate makes sure user's flag is set before their mailbox is read:
// it records the read if the last one recorded is older than refresh, and
// rebuilds the mailbox if the flag is clear.
func (s *Store) activate(ctx context.Context, user timeline.UserID) error {
	var active bool
	var readAt int64
	err := s.DB().QueryRowContext(ctx, `SELECT active, read_at FROM reader_state WHERE user_id = ?`, user).Scan(&active, &readAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	case active && s.now().UnixMicro()-readAt < s.refresh():
		return nil
	case active:
		// In a transaction of its own, so that a deadlock with a post,
		// which reads the flags of its author's followers under shared
		// locks, is retried rather than failing the read.
		var n int64
		err := mysqlx.InTx(ctx, s.DB(), func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx,
				`UPDATE reader_state SET read_at = GREATEST(read_at, ?) WHERE user_id = ? AND active = 1`,
				s.now().UnixMicro(), user)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		// 0 rows: expiry cleared the flag since it was read (or the
		// clock stood still, and RebuildMailbox finds the flag set).
		if err != nil || n > 0 {
			return err
		}
	}
	_, err = s.RebuildMailbox(ctx, user)
	return err
}

// RebuildMailbox makes user active: if their flag is clear, it writes the
// newest Rebuild entries of their timeline (at or above their floor) into
// their mailbox with INSERT IGNORE, deletes the rows below the new floor,
// and sets the flag, the floor and read_at, in one transaction that holds
// the user's state row. It returns the rows it wrote (0 when the user was
// active already, and only read_at changed).
func (s *Store) RebuildMailbox(ctx context.Context, user timeline.UserID) (int64, error) {
	select {
	case s.rebuilding <- struct{}{}:
		defer func() { <-s.rebuilding }()
	case <-ctx.Done():
		return 0, fmt.Errorf("rebuild mailbox of %d: %w", user, ctx.Err())
	}
	var written int64
	var rebuilt bool
	err := mysqlx.InTx(ctx, s.DB(), func(tx *sql.Tx) error {
		written, rebuilt = 0, false
		active, floor, err := lockState(ctx, tx, user)
		if err != nil {
			return err
		}
		now := s.now().UnixMicro()
		if active { // a read rebuilt it meanwhile
			_, err := tx.ExecContext(ctx, `UPDATE reader_state SET read_at = GREATEST(read_at, ?) WHERE user_id = ?`, now, user)
			return err
		}
		// The merge reads on another connection, after the lock was
		// granted: every post that passed this user over has committed,
		// and every later one waits for this transaction.
		newest, err := s.rebuildPull.Read(ctx, timeline.Request{User: user, Limit: s.rebuild})
		if err != nil {
			return err
		}
		if len(newest) > s.rebuild {
			floor = max(floor, newest[s.rebuild-1].ID)
			newest = newest[:s.rebuild]
		}
		if floor > 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM mailbox WHERE user_id = ? AND message_id < ?`, user, floor); err != nil {
				return err
			}
		}
		var q strings.Builder
		q.WriteString(`INSERT IGNORE INTO mailbox (user_id, message_id) VALUES `)
		n := 0
		for _, m := range newest {
			if m.ID < floor {
				break // newest first
			}
			if n > 0 {
				q.WriteByte(',')
			}
			fmt.Fprintf(&q, "(%d,%d)", user, m.ID)
			n++
		}
		if n > 0 {
			res, err := tx.ExecContext(ctx, q.String())
			if err != nil {
				return err
			}
			if written, err = res.RowsAffected(); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx,
			`UPDATE reader_state SET active = 1, read_at = GREATEST(read_at, ?), floor_id = ? WHERE user_id = ?`,
			now, floor, user)
		rebuilt = true
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rebuild mailbox of %d: %w", user, err)
	}
	if rebuilt {
		s.rebuilds.Add(1)
		s.rebuildRow.Add(written)
	}
	return written, nil
}

// expireBatch is how many users one expiry transaction flags inactive at
// most, and expireBatches how many transactions one run takes at most.
const (
	expireBatch   = 256
	expireBatches = 8
)

// expireDue runs Expire if the last run is older than Window/16 or a
// second, whichever is shorter (or the clock went back). A failed run
// fails nothing: the next one catches up.
func (s *Store) expireDue(ctx context.Context) {
	now := s.now().UnixMicro()
	last := s.lastExpiry.Load()
	every := min(s.refresh(), time.Second.Microseconds())
	if now >= last && now-last < every {
		return
	}
	if s.lastExpiry.CompareAndSwap(last, now) {
		s.Expire(ctx)
	}
}

// Expire clears the flag of the users whose last recorded read is older
// than the window, and returns how many it cleared. Users whose state row
// another transaction holds are left to the next run.
func (s *Store) Expire(ctx context.Context) (int64, error) {
	cutoff := s.now().Add(-s.window).UnixMicro()
	var total int64
	for range expireBatches {
		var n int64
		err := mysqlx.InTx(ctx, s.DB(), func(tx *sql.Tx) error {
			n = 0
			rows, err := tx.QueryContext(ctx,
				`SELECT user_id FROM reader_state WHERE active = 1 AND read_at < ? LIMIT ? FOR UPDATE SKIP LOCKED`,
				cutoff, expireBatch)
			if err != nil {
				return err
			}
			var ids []string
			for rows.Next() {
				var u uint64
				if err := rows.Scan(&u); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, strconv.FormatUint(u, 10))
			}
			rows.Close()
			if err := rows.Err(); err != nil || len(ids) == 0 {
				return err
			}
			res, err := tx.ExecContext(ctx,
				`UPDATE reader_state SET active = 0 WHERE user_id IN (`+strings.Join(ids, ",")+`) AND active = 1 AND read_at < ?`, cutoff)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("%s expiry: %w", ModelName, err)
		}
		total += n
		s.expired.Add(n)
		if n < expireBatch {
			break
		}
	}
	return total, nil
}
