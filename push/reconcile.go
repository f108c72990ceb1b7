package push

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// MailboxView is the name reconcile reports mailbox rows under.
const MailboxView = "mailbox"

// Want is what a mailbox design's rule says of one message of an author
// the reader follows.
type Want uint8

const (
	// Must: the mailbox must hold the message.
	Must Want = iota
	// May: the mailbox may hold it or not (a fan-out still pending, a
	// pulled author's message, the mailbox of an inactive reader).
	May
	// MustNot: the mailbox must not hold it (below a floor, of a pulled
	// edge).
	MustNot
)

// Record is what the record says of a batch of readers: whom each
// follows and how many mailbox rows each has.
type Record struct {
	Follows map[timeline.UserID]map[timeline.UserID]bool
	Rows    map[timeline.UserID]int64
}

// Followed reports whether user follows author.
func (r Record) Followed(user, author timeline.UserID) bool { return r.Follows[user][author] }

// RuleState is a design's state of a batch of readers, read by
// Rule.Load.
type RuleState interface {
	// Want is the rule for message id of author, whom user follows.
	Want(user, author timeline.UserID, id timeline.MessageID) Want
	// Drift is the drift of the design's own state (floors, counts,
	// flags, edges), given the record of the batch read in the same
	// snapshot.
	Drift(rec Record) []reconcile.Drift
}

// Rule is what a design built on push's mailbox adds to push's rule ("a
// mailbox holds every message of every author its reader follows, and
// nothing else"): the state that says which messages a mailbox must,
// may and must not hold, and how to repair that state.
type Rule interface {
	// Users are the columns ("table.column", each the first column of
	// an index) that name users with state, beside follows.follower_id
	// and mailbox.user_id.
	Users() []string
	// Load reads the state of users through q: in a check's read-only
	// snapshot, or, with lock, in a repair's transaction under the locks
	// the design's writes take, so that the state cannot change until
	// the repair commits.
	Load(ctx context.Context, q reconcile.Querier, users []timeline.UserID, lock bool) (RuleState, error)
	// Repair fixes one drift item of the design's own state in tx (the
	// reader's follows are locked) and returns how many values it
	// changed; called before the mailbox rows are repaired.
	Repair(ctx context.Context, tx *sql.Tx, d reconcile.Drift) (int, error)
	// Settle runs last in a repair's transaction of user, after the
	// mailbox rows are repaired (push-capped recounts the entries), and
	// returns how many values it changed.
	Settle(ctx context.Context, tx *sql.Tx, user timeline.UserID) (int, error)
}

// PushRule is push's own rule: every message of a followed author is in
// the mailbox; no state beside it.
type PushRule struct{ NoRepairs }

// NoRepairs gives a Rule whose design keeps no state of its own to repair
// the Repair and Settle that change nothing; a rule embeds it and defines
// either itself where it has something to do.
type NoRepairs struct{}

// Repair implements Rule: nothing to repair.
func (NoRepairs) Repair(context.Context, *sql.Tx, reconcile.Drift) (int, error) { return 0, nil }

// Settle implements Rule: nothing to settle.
func (NoRepairs) Settle(context.Context, *sql.Tx, timeline.UserID) (int, error) { return 0, nil }

func (PushRule) Users() []string { return nil }
func (PushRule) Load(context.Context, reconcile.Querier, []timeline.UserID, bool) (RuleState, error) {
	return pushState{}, nil
}

type pushState struct{}

func (pushState) Want(timeline.UserID, timeline.UserID, timeline.MessageID) Want { return Must }
func (pushState) Drift(Record) []reconcile.Drift                                 { return nil }

// MailboxChecker is the reconcile.Checker of the designs that keep push's
// mailbox: push, push-compressed and, with their Rules, the others. A
// check reads, in one read-only transaction, the batch's follows, its
// mailbox rows with their messages' authors, the messages of its
// followees and the Rule's state, and reports:
//
//   - a mailbox row whose message is gone: Deleted;
//   - a row of an author the reader does not follow: Unfollowed;
//   - a row the Rule says must not be there: Extra;
//   - a message of a followed author the Rule says must be there, and is
//     not: Missing;
//   - and the Rule's own drift.
//
// A repair locks the reader's follows (LOCK IN SHARE MODE, which holds
// off their follows and unfollows), repairs the Rule's state, loads it
// under lock, then locks the messages of the drift and, for each row,
// deletes it only if it still must not be there and inserts it only if
// it still must: a post committed meanwhile is never removed, a message
// deleted meanwhile is never written back.
type MailboxChecker struct {
	DB   *sql.DB
	Rule Rule
}

var _ reconcile.Checker = MailboxChecker{}

// Users implements reconcile.Checker: the followers, the mailboxes' users
// and the Rule's.
func (c MailboxChecker) Users(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error) {
	cols := append([]string{"follows.follower_id", "mailbox.user_id"}, c.Rule.Users()...)
	return reconcile.UsersIn(ctx, c.DB, after, limit, cols...)
}

// Check implements reconcile.Checker.
func (c MailboxChecker) Check(ctx context.Context, users []timeline.UserID) (reconcile.Batch, error) {
	var b reconcile.Batch
	err := mysqlx.InTxOptions(ctx, c.DB, &sql.TxOptions{ReadOnly: true}, func(tx *sql.Tx) error {
		b = reconcile.Batch{}
		rec, n, err := readRecord(ctx, tx, users)
		if err != nil {
			return err
		}
		b.Rows += n
		st, err := c.Rule.Load(ctx, tx, users, false)
		if err != nil {
			return err
		}
		have := map[timeline.UserID]map[timeline.MessageID]bool{}
		in := string(mysqlx.AppendList(nil, users))
		err = scanRows(ctx, tx, `SELECT b.user_id, b.message_id, COALESCE(m.author_id, 0)
			FROM mailbox b LEFT JOIN messages m ON m.id = b.message_id WHERE b.user_id IN (`+in+`)`,
			func(u, id, author int64) {
				b.Rows++
				user := timeline.UserID(u)
				rec.Rows[user]++
				if have[user] == nil {
					have[user] = map[timeline.MessageID]bool{}
				}
				have[user][timeline.MessageID(id)] = true
				if kind, bad := judge(rec, st, user, timeline.UserID(author), timeline.MessageID(id)); bad {
					b.Drift = append(b.Drift, reconcile.Drift{Kind: kind, View: MailboxView, User: user, Item: id})
				}
			})
		if err != nil {
			return err
		}
		err = scanRows(ctx, tx, `SELECT f.follower_id, m.id, m.author_id
			FROM follows f JOIN messages m ON m.author_id = f.followee_id WHERE f.follower_id IN (`+in+`)`,
			func(u, id, author int64) {
				b.Rows++
				user := timeline.UserID(u)
				if !have[user][timeline.MessageID(id)] && st.Want(user, timeline.UserID(author), timeline.MessageID(id)) == Must {
					b.Drift = append(b.Drift, reconcile.Drift{Kind: reconcile.Missing, View: MailboxView, User: user, Item: id})
				}
			})
		if err != nil {
			return err
		}
		b.Drift = append(b.Drift, st.Drift(rec)...)
		return nil
	})
	return b, err
}

// judge says what is wrong, if anything, with a mailbox row of user:
// message id by author (0: the message is gone).
func judge(rec Record, st RuleState, user, author timeline.UserID, id timeline.MessageID) (reconcile.Kind, bool) {
	switch {
	case author == 0:
		return reconcile.Deleted, true
	case !rec.Followed(user, author):
		return reconcile.Unfollowed, true
	case st.Want(user, author, id) == MustNot:
		return reconcile.Extra, true
	}
	return "", false
}

// readRecord reads the follows of users.
func readRecord(ctx context.Context, q reconcile.Querier, users []timeline.UserID) (Record, int64, error) {
	rec := Record{Follows: map[timeline.UserID]map[timeline.UserID]bool{}, Rows: map[timeline.UserID]int64{}}
	var n int64
	err := scanPairs(ctx, q, `SELECT follower_id, followee_id FROM follows WHERE follower_id IN (`+
		string(mysqlx.AppendList(nil, users))+`)`, func(u, a int64) {
		n++
		rec.add(timeline.UserID(u), timeline.UserID(a))
	})
	return rec, n, err
}

func (r Record) add(user, author timeline.UserID) {
	if r.Follows[user] == nil {
		r.Follows[user] = map[timeline.UserID]bool{}
	}
	r.Follows[user][author] = true
}

// Repair implements reconcile.Checker.
func (c MailboxChecker) Repair(ctx context.Context, user timeline.UserID, drift []reconcile.Drift) (int, error) {
	var fixed int
	err := mysqlx.InTx(ctx, c.DB, func(tx *sql.Tx) error {
		fixed = 0
		// The reader's follows, locked: no follow or unfollow of theirs
		// commits until this does.
		rec := Record{Follows: map[timeline.UserID]map[timeline.UserID]bool{}}
		if err := scanPairs(ctx, tx, `SELECT follower_id, followee_id FROM follows WHERE follower_id = ? LOCK IN SHARE MODE`,
			func(u, a int64) { rec.add(timeline.UserID(u), timeline.UserID(a)) }, user); err != nil {
			return err
		}
		var ids []timeline.MessageID
		for _, d := range drift {
			if d.View == MailboxView {
				ids = append(ids, timeline.MessageID(d.Item))
				continue
			}
			n, err := c.Rule.Repair(ctx, tx, d)
			if err != nil {
				return err
			}
			fixed += n
		}
		if len(ids) > 0 {
			st, err := c.Rule.Load(ctx, tx, []timeline.UserID{user}, true)
			if err != nil {
				return err
			}
			authors, err := lockMessages(ctx, tx, ids)
			if err != nil {
				return err
			}
			for _, id := range ids {
				a := authors[id]
				must := a != 0 && rec.Followed(user, a) && st.Want(user, a, id) == Must
				_, bad := judge(rec, st, user, a, id)
				q := ""
				switch {
				case must:
					q = `INSERT IGNORE INTO mailbox (user_id, message_id) VALUES (?, ?)`
				case bad:
					q = `DELETE FROM mailbox WHERE user_id = ? AND message_id = ?`
				default:
					continue // May: leave it as it is
				}
				res, err := tx.ExecContext(ctx, q, user, id)
				if err != nil {
					return err
				}
				n, err := res.RowsAffected()
				if err != nil {
					return err
				}
				fixed += int(n)
			}
		}
		n, err := c.Rule.Settle(ctx, tx, user)
		fixed += n
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("repair mailbox of user %d: %w", user, err)
	}
	return fixed, nil
}

// lockMessages returns the authors of the messages of ids that exist,
// under shared locks: none of them can be deleted, and no message can be
// inserted with one of the others' ids, until the transaction ends.
func lockMessages(ctx context.Context, tx *sql.Tx, ids []timeline.MessageID) (map[timeline.MessageID]timeline.UserID, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	authors := map[timeline.MessageID]timeline.UserID{}
	err := scanPairs(ctx, tx, `SELECT id, author_id FROM messages WHERE id IN (`+
		string(mysqlx.AppendList(nil, slices.Compact(ids)))+`) LOCK IN SHARE MODE`,
		func(id, a int64) { authors[timeline.MessageID(id)] = timeline.UserID(a) })
	return authors, err
}

// scanPairs runs query and calls f with each row's two integers.
func scanPairs(ctx context.Context, q reconcile.Querier, query string, f func(a, b int64), args ...any) error {
	return reconcile.ScanInts(ctx, q, query, 2, func(v []int64) { f(v[0], v[1]) }, args...)
}

// scanRows runs query and calls f with each row's three integers.
func scanRows(ctx context.Context, q reconcile.Querier, query string, f func(a, b, c int64), args ...any) error {
	return reconcile.ScanInts(ctx, q, query, 3, func(v []int64) { f(v[0], v[1], v[2]) }, args...)
}

// ErrNotMine is what a design's reconcile function returns for a store
// that is not its own.
var ErrNotMine = errors.New("not a store of this model")

// Checker is push's and push-compressed's registry.Model.Reconcile.
func Checker(s timeline.Store) (reconcile.Checker, error) {
	ps, ok := s.(*Store)
	if !ok {
		return nil, fmt.Errorf("push reconcile: %T: %w", s, ErrNotMine)
	}
	return MailboxChecker{DB: ps.DB(), Rule: ps.drowning.Rule(PushRule{})}, nil
}
