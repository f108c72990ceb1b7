package hybrid

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// VitessChecker is hybrid@vitess's registry.Model.Reconcile: push@vitess's
// checker (push.VitessChecker: the mailbox with its copies, and the
// followers table), under hybrid's rule as Rule states it on one server:
//
//   - a mailbox holds every message of each followee not listed in
//     pull_authors (Missing); a listed author's messages may be in it or
//     not (those fanned out before the listing, or while the author was
//     below the threshold again, are), but whatever it holds is of a
//     followed author, of a message that exists, with the message's
//     copies (Unfollowed, Deleted, Stale);
//   - pull_follows holds (reader, author) exactly when the reader follows
//     the author and the author is listed: a pulled follow it lacks is
//     Missing, a row without its follow Unfollowed, a row of an author
//     not listed Extra, each reported under the reader with the author as
//     the item, as on one server.
//
// The listing itself is the rule's state, not a view: a post lists its
// author when it counts Threshold followers, and a listing is never
// undone, so no record says whether an author should be listed. A listing
// lost or added by mistake shows as the drift it makes: the listed
// author's pulled follows Missing, or an unlisted author's pulled follows
// Extra and the messages their followers' mailboxes lack Missing; a
// repair makes the views agree with the listing as it is.
//
// A look reads pull_authors on the followees' shards and pull_follows on
// the readers' after the followees' messages and before the mailboxes
// (push.VitessLoad): a post writes its message and its author's listing
// on the author's shard in one commit, so a message a look holds of a
// listed author is seen as listed. A repair of a pulled follow, in the
// transaction in which the reader's follows are locked in share mode (on
// the reader's shard, which holds off their follows and unfollows), reads
// the author's listing LOCK IN SHARE MODE (on the author's shard, which
// holds off a post that would list the author), and adds the row only
// while both the follow and the listing exist, and deletes it only while
// one is absent (INSERT IGNORE and DELETE, so a second repair changes
// nothing). A post that lists the author meanwhile waits for the repair,
// then copies the author's followers into pull_follows itself.
func VitessChecker(s timeline.Store) (reconcile.Checker, error) {
	vs, ok := s.(*VitessStore)
	if !ok {
		return nil, fmt.Errorf("%s reconcile: %T: %w", VitessModelName, s, push.ErrNotMine)
	}
	return vs.Checker(push.VitessRule{
		Model: VitessModelName,
		Users: []string{"pull_follows.user_id"},
		Load:  loadPulled,
		Fix:   fixPulled,
	}), nil
}

// loadPulled is hybrid@vitess's push.VitessLoad: the listings of the
// followees, from their shards, and the readers' pulled follows, from
// theirs; a mailbox row of a listed author's message may be missing.
func loadPulled(ctx context.Context, db *sql.DB, users, followees []timeline.UserID, followed func(user, author timeline.UserID) bool) (push.VitessState, int64, error) {
	listed := map[timeline.UserID]bool{}
	rows, err := reconcile.ScanOwned(ctx, db, "author_id, author_id", "pull_authors", "", followees, func(r *sql.Rows) (int64, int64, error) {
		var a int64
		err := r.Scan(&a, &a)
		listed[timeline.UserID(a)] = true
		return a, a, err
	})
	if err != nil {
		return push.VitessState{}, rows, err
	}
	pulled := map[[2]timeline.UserID]bool{} // (reader, author)
	n, err := reconcile.ScanOwned(ctx, db, "user_id, author_id", "pull_follows", "", users, func(r *sql.Rows) (int64, int64, error) {
		var u, a int64
		err := r.Scan(&u, &a)
		pulled[[2]timeline.UserID{timeline.UserID(u), timeline.UserID(a)}] = true
		return u, a, err
	})
	rows += n
	if err != nil {
		return push.VitessState{}, rows, err
	}
	var drift []reconcile.Drift
	for e := range pulled {
		kind := reconcile.Kind("")
		switch {
		case !followed(e[0], e[1]):
			kind = reconcile.Unfollowed
		case !listed[e[1]]:
			kind = reconcile.Extra
		default:
			continue
		}
		drift = append(drift, reconcile.Drift{Kind: kind, View: PullFollowsView, User: e[0], Item: int64(e[1])})
	}
	for _, u := range users {
		for a := range listed {
			if followed(u, a) && !pulled[[2]timeline.UserID{u, a}] {
				drift = append(drift, reconcile.Drift{Kind: reconcile.Missing, View: PullFollowsView, User: u, Item: int64(a)})
			}
		}
	}
	return push.VitessState{
		May:   func(_, author timeline.UserID, _ timeline.MessageID) bool { return listed[author] },
		Drift: drift,
	}, rows, nil
}

// fixPulled is hybrid@vitess's push.VitessRule.Fix: user's pulled follow
// of the drift's author exists exactly when user follows the author
// (followed, read under a shared lock) and the author is listed (read
// here under a shared lock, on the author's shard).
func fixPulled(ctx context.Context, tx *sql.Tx, user timeline.UserID, d reconcile.Drift, followed map[timeline.UserID]bool) (int, error) {
	if d.View != PullFollowsView {
		return 0, nil
	}
	author := timeline.UserID(d.Item)
	listed := false
	if err := reconcile.ScanInts(ctx, tx, `SELECT author_id FROM pull_authors WHERE author_id = ? LOCK IN SHARE MODE`, 1,
		func([]int64) { listed = true }, author); err != nil {
		return 0, err
	}
	q := `DELETE FROM pull_follows WHERE user_id = ? AND author_id = ?`
	if followed[author] && listed {
		q = `INSERT IGNORE INTO pull_follows (user_id, author_id) VALUES (?, ?)`
	}
	return reconcile.Exec(ctx, tx, q, user, author)
}
