package hybrid

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// PullFollowsView is the name reconcile reports pull_follows rows under.
const PullFollowsView = "pull_follows"

// Rule is hybrid's rule for reconcile (push.Rule): a mailbox holds every
// message of each followee not listed in pull_authors; a listed author's
// messages may be in it or not (those fanned out before the listing, or
// after the author fell below the threshold, are); pull_follows holds
// exactly the follows of listed authors. A listing is never undone: an
// author's earlier posts are in no mailbox. A repair adds a missing
// pulled follow with INSERT ... SELECT over the follow and the listing,
// and removes one only while the follow or the listing, read under a
// shared lock, is absent; a post that lists the author meanwhile waits,
// and copies the follows itself.
type Rule struct{ push.NoRepairs } // Settle has nothing to do

// Users implements push.Rule.
func (Rule) Users() []string { return []string{"pull_follows.user_id"} }

type state struct {
	users  []timeline.UserID
	listed map[[2]timeline.UserID]bool // (reader, followee listed)
	pulled map[[2]timeline.UserID]bool // pull_follows rows
}

// Load implements push.Rule.
func (Rule) Load(ctx context.Context, q reconcile.Querier, users []timeline.UserID, lock bool) (push.RuleState, error) {
	st := state{users: users, listed: map[[2]timeline.UserID]bool{}, pulled: map[[2]timeline.UserID]bool{}}
	in := string(mysqlx.AppendList(nil, users))
	suffix := ""
	if lock {
		suffix = ` LOCK IN SHARE MODE`
	}
	err := reconcile.ScanInts(ctx, q, `SELECT f.follower_id, f.followee_id FROM follows f
		JOIN pull_authors p ON p.author_id = f.followee_id WHERE f.follower_id IN (`+in+`)`+suffix, 2, func(v []int64) {
		st.listed[[2]timeline.UserID{timeline.UserID(v[0]), timeline.UserID(v[1])}] = true
	})
	if err != nil {
		return nil, err
	}
	err = reconcile.ScanInts(ctx, q, `SELECT user_id, author_id FROM pull_follows WHERE user_id IN (`+in+`)`+suffix, 2, func(v []int64) {
		st.pulled[[2]timeline.UserID{timeline.UserID(v[0]), timeline.UserID(v[1])}] = true
	})
	return st, err
}

func (s state) Want(user, author timeline.UserID, _ timeline.MessageID) push.Want {
	if s.listed[[2]timeline.UserID{user, author}] {
		return push.May
	}
	return push.Must
}

func (s state) Drift(rec push.Record) []reconcile.Drift {
	var out []reconcile.Drift
	for e := range s.listed {
		if !s.pulled[e] {
			out = append(out, reconcile.Drift{Kind: reconcile.Missing, View: PullFollowsView, User: e[0], Item: int64(e[1])})
		}
	}
	for e := range s.pulled {
		switch {
		case s.listed[e]:
		case !rec.Followed(e[0], e[1]):
			out = append(out, reconcile.Drift{Kind: reconcile.Unfollowed, View: PullFollowsView, User: e[0], Item: int64(e[1])})
		default:
			out = append(out, reconcile.Drift{Kind: reconcile.Extra, View: PullFollowsView, User: e[0], Item: int64(e[1])})
		}
	}
	return out
}

// Repair implements push.Rule: a pulled follow is added while the follow
// and the listing exist, and removed while either is absent.
func (Rule) Repair(ctx context.Context, tx *sql.Tx, d reconcile.Drift) (int, error) {
	if d.View != PullFollowsView {
		return 0, nil
	}
	var res sql.Result
	var err error
	if d.Kind == reconcile.Missing {
		res, err = tx.ExecContext(ctx, `INSERT IGNORE INTO pull_follows (user_id, author_id)
			SELECT f.follower_id, f.followee_id FROM follows f JOIN pull_authors p ON p.author_id = f.followee_id
			WHERE f.follower_id = ? AND f.followee_id = ?`, d.User, d.Item)
	} else {
		var due int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM follows f JOIN pull_authors p ON p.author_id = f.followee_id
			WHERE f.follower_id = ? AND f.followee_id = ? LOCK IN SHARE MODE`, d.User, d.Item).Scan(&due); err != nil || due > 0 {
			return 0, err
		}
		res, err = tx.ExecContext(ctx, `DELETE FROM pull_follows WHERE user_id = ? AND author_id = ?`, d.User, d.Item)
	}
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Checker is the model's registry.Model.Reconcile: push's mailbox checker
// under Rule.
func Checker(s timeline.Store) (reconcile.Checker, error) {
	hs, ok := s.(*Store)
	if !ok {
		return nil, fmt.Errorf("%s reconcile: %T: %w", ModelName, s, push.ErrNotMine)
	}
	return push.MailboxChecker{DB: hs.DB(), Rule: hs.Drowning().Rule(Rule{})}, nil
}
