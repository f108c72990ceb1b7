package push

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// FollowersView is the name reconcile reports the rows of push@vitess's
// followers table under: the follow graph by followee, which the fan-out
// reads.
const FollowersView = "followers"

// VitessChecker is push@vitess's registry.Model.Reconcile. The keyspace
// keeps two views beside the record (follows and messages): the mailbox,
// whose rows carry copies of their messages' author, body and time, and
// the followers table, the follow graph by followee. Its rule:
//
//   - every message of every author a reader follows is in the reader's
//     mailbox (Missing), and nothing else: a row of a message that is gone
//     is Deleted, one of an author the reader does not follow
//     Unfollowed; a row whose author, body or time differs from its
//     message's is Stale (an unfollow deletes rows by their copied author,
//     and a page shows the copies);
//   - followers holds (author, follower) exactly when follows holds
//     (follower, author): a follow it lacks is Missing, reported under the
//     follower with the author as the item; a row without its follow is
//     Extra, reported under the author with the follower as the item.
//
// It is a reconcile.Looks: on a sharded keyspace each shard reads its own
// snapshot, and a post, follow or delete writes to several shards and
// commits them one by one, so a look can see half a write; a check
// reports only what two looks a second apart found alike. Every read of a
// look names its users in an IN list on the column their table is
// sharded by, so vtgate sends it to their shards alone: a batch's
// follows and mailbox to the readers' shards, its followees' messages
// and followers rows to the authors' shards. Only the list of users is
// an ordered scatter, once per batch, and a look asks every shard for a
// message by id only when a mailbox row names one that neither a
// followee nor the row's copied author has: drift.
//
// A repair of a user runs in one vtgate transaction and re-reads under
// the locks the writes take: the reader's follows (LOCK IN SHARE MODE, on
// the reader's shard, which holds off their follows and unfollows), then
// the messages of the drift among the followees' (LOCK IN SHARE MODE, on
// the authors' shards, which holds off their deletes), then the mailbox
// rows (FOR UPDATE). A row is written (or its copies rewritten) only while
// its message exists and its author is followed, and deleted only while
// that is not so; message ids come from a sequence and are never reused,
// so a message found gone stays gone. A followers row is added only while
// its follow exists and removed only while it does not, under a shared
// lock of that follow on the follower's shard.
//
// Its errors name the vtgate. A vtgate that hangs or goes away in the
// middle of a repair ends the repair's transaction uncommitted (vtgate
// rolls back a session whose client left, a tablet a transaction past its
// timeout), so nothing of it is written; should vtgate fail between the
// commits of the shards a repair wrote to, each shard's part is itself
// right (every write was decided under the locks above), and the next
// check finds the rest.
func VitessChecker(s timeline.Store) (reconcile.Checker, error) {
	vs, ok := s.(*VitessStore)
	if !ok {
		return nil, fmt.Errorf("%s reconcile: %T: %w", VitessModelName, s, ErrNotMine)
	}
	return vs.Checker(VitessRule{}), nil
}

// VitessRule is what a model built on push@vitess adds to push@vitess's
// rule in its checker (VitessStore.Checker): rows of the mailbox that may
// be missing, and views of its own beside the mailbox and followers. The
// zero VitessRule is push@vitess's rule.
type VitessRule struct {
	// Model names the model in the repair's errors; "" means
	// push@vitess.
	Model string
	// Users are more columns ("table.column", the first column of an
	// index of their table) in which the walk finds users: those of the
	// model's own views.
	Users []string
	// Load, if not nil, reads what the rule needs of a look.
	Load VitessLoad
	// Fix, if not nil, repairs an item of the model's own views (one
	// whose View is neither MailboxView nor FollowersView) in the
	// repair's transaction, in which user's follows are read under a
	// shared lock (followed), and returns the rows it changed. It must
	// decide again under the locks the model's writes take, as the
	// mailbox's repair does.
	Fix func(ctx context.Context, tx *sql.Tx, user timeline.UserID, d reconcile.Drift, followed map[timeline.UserID]bool) (int, error)
}

// VitessLoad reads what a VitessRule needs of a look: given the look's
// users, their followees and whom each follows (read first), it reads the
// model's state and own views and returns them, with the rows it read. A
// look calls it after it has read the followees' messages and before it
// reads the mailboxes, so what it reads of the authors' shards (a fan-out
// job, a listing) is at least as new as the messages the look holds.
type VitessLoad func(ctx context.Context, db *sql.DB, users, followees []timeline.UserID, followed func(user, author timeline.UserID) bool) (VitessState, int64, error)

// VitessState is what a VitessLoad read for a look.
type VitessState struct {
	// May, if not nil, reports whether user's row of author's message id
	// may be missing (a fan-out still queued, an author pulled at read
	// time); such a row is not drift, and neither is its presence.
	May func(user, author timeline.UserID, id timeline.MessageID) bool
	// Drift is the drift of the model's own views among the look's users.
	Drift []reconcile.Drift
}

// Checker returns VitessChecker's checker of s under rule: push@vitess's
// rule, except that a mailbox row rule's state says may be missing is not
// drift, and with rule's own views checked and repaired beside the
// mailbox and followers.
func (s *VitessStore) Checker(rule VitessRule) reconcile.Checker {
	columns := append([]string{"follows.follower_id", "mailbox.user_id", "followers.followee_id"}, rule.Users...)
	return reconcile.Looks{
		List: func(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error) {
			us, err := reconcile.UsersIn(ctx, s.db, after, limit, columns...)
			return us, s.at(err)
		},
		Look: func(ctx context.Context, users []timeline.UserID) ([]reconcile.Drift, int64, error) {
			drift, rows, err := s.look(ctx, users, rule.Load)
			return drift, rows, s.at(err)
		},
		Fix: func(ctx context.Context, user timeline.UserID, still []reconcile.Drift) (int, error) {
			n, err := s.fix(ctx, user, still, rule)
			return n, s.at(err)
		},
	}
}

// at names the vtgate in err (nil stays nil): a call that ran out of
// time says no more than its deadline, and a run stopped by a vtgate that
// hangs must say which one.
func (s *VitessStore) at(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("vtgate at %s: %w", s.vtgate, err)
}

// copied is a message as a mailbox row copies it.
type copied struct {
	author  timeline.UserID
	body    string
	created time.Time
}

// scanCopies reads rows of (id, author, body, time) into into, by id,
// and closes them; err is the query's.
func scanCopies(rows *sql.Rows, err error, into map[timeline.MessageID]copied) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var c copied
		if err := rows.Scan(&id, &c.author, &c.body, &c.created); err != nil {
			return err
		}
		into[timeline.MessageID(id)] = c
	}
	return rows.Err()
}

func (c copied) same(d copied) bool {
	return c.author == d.author && c.body == d.body && c.created.Equal(d.created)
}

// scanCopied scans a row of (owner, key, author, body, created_at).
func scanCopied(rows *sql.Rows) (owner, key int64, c copied, err error) {
	err = rows.Scan(&owner, &key, &c.author, &c.body, &c.created)
	return owner, key, c, err
}

// look reads the views of users and the record they derive from, and
// returns the drift it sees; load, if not nil, is the rule's
// (VitessRule.Load).
func (s *VitessStore) look(ctx context.Context, users []timeline.UserID, load VitessLoad) ([]reconcile.Drift, int64, error) {
	var drift []reconcile.Drift
	// The readers' follows, from their shards.
	follows := map[timeline.UserID]map[timeline.UserID]bool{}
	var followees []timeline.UserID
	rows, err := reconcile.ScanOwned(ctx, s.db, "follower_id, followee_id", "follows", "", users, func(r *sql.Rows) (int64, int64, error) {
		var u, a int64
		err := r.Scan(&u, &a)
		if follows[timeline.UserID(u)] == nil {
			follows[timeline.UserID(u)] = map[timeline.UserID]bool{}
		}
		follows[timeline.UserID(u)][timeline.UserID(a)] = true
		followees = append(followees, timeline.UserID(a))
		return u, a, err
	})
	if err != nil {
		return nil, rows, err
	}
	followed := func(u, a timeline.UserID) bool { return follows[u][a] }

	// Their followees' messages, from the authors' shards.
	msgs := map[timeline.MessageID]copied{}
	byAuthor := map[timeline.UserID][]timeline.MessageID{}
	n, err := reconcile.ScanOwned(ctx, s.db, "author_id, id, author_id, body, created_at", "messages", "", followees, func(r *sql.Rows) (int64, int64, error) {
		a, id, c, err := scanCopied(r)
		msgs[timeline.MessageID(id)] = c
		byAuthor[timeline.UserID(a)] = append(byAuthor[timeline.UserID(a)], timeline.MessageID(id))
		return a, id, err
	})
	rows += n
	if err != nil {
		return nil, rows, err
	}

	// The rule's state (what is still queued of those messages, which
	// authors are pulled), read before the mailboxes.
	may := func(timeline.UserID, timeline.UserID, timeline.MessageID) bool { return false }
	if load != nil {
		st, n, err := load(ctx, s.db, users, followees, followed)
		rows += n
		if err != nil {
			return nil, rows, err
		}
		if st.May != nil {
			may = st.May
		}
		drift = append(drift, st.Drift...)
	}

	// The mailboxes, from the readers' shards.
	have := map[timeline.UserID]map[timeline.MessageID]copied{}
	n, err = reconcile.ScanOwned(ctx, s.db, "user_id, message_id, author_id, body, created_at", "mailbox", "", users, func(r *sql.Rows) (int64, int64, error) {
		u, id, c, err := scanCopied(r)
		if have[timeline.UserID(u)] == nil {
			have[timeline.UserID(u)] = map[timeline.MessageID]copied{}
		}
		have[timeline.UserID(u)][timeline.MessageID(id)] = c
		return u, id, err
	})
	rows += n
	if err != nil {
		return nil, rows, err
	}

	// Rows of messages that no followee has: their copied authors' shards
	// first, then, for those not there either, every shard.
	var strays []timeline.MessageID
	var strayAuthors []timeline.UserID
	for _, box := range have {
		for id, c := range box {
			if _, ok := msgs[id]; !ok {
				strays = append(strays, id)
				strayAuthors = append(strayAuthors, c.author)
			}
		}
	}
	if len(strays) > 0 {
		n, err := s.messagesByID(ctx, strays, strayAuthors, msgs)
		rows += n
		if err != nil {
			return nil, rows, err
		}
	}
	for _, u := range users {
		for id, c := range have[u] {
			m, ok := msgs[id]
			kind := reconcile.Kind("")
			switch {
			case !ok:
				kind = reconcile.Deleted
			case !followed(u, m.author):
				kind = reconcile.Unfollowed
			case !c.same(m):
				kind = reconcile.Stale
			default:
				continue
			}
			drift = append(drift, reconcile.Drift{Kind: kind, View: MailboxView, User: u, Item: int64(id)})
		}
		for a := range follows[u] {
			for _, id := range byAuthor[a] {
				if _, ok := have[u][id]; !ok && !may(u, a, id) {
					drift = append(drift, reconcile.Drift{Kind: reconcile.Missing, View: MailboxView, User: u, Item: int64(id)})
				}
			}
		}
	}

	// followers: the batch's follows, on their authors' shards...
	listed := map[[2]timeline.UserID]bool{} // (author, follower)
	n, err = reconcile.ScanOwned(ctx, s.db, "followee_id, follower_id", "followers",
		"follower_id IN ("+string(mysqlx.AppendList(nil, users))+")", followees, func(r *sql.Rows) (int64, int64, error) {
			var a, u int64
			err := r.Scan(&a, &u)
			listed[[2]timeline.UserID{timeline.UserID(a), timeline.UserID(u)}] = true
			return a, u, err
		})
	rows += n
	if err != nil {
		return nil, rows, err
	}
	for _, u := range users {
		for a := range follows[u] {
			if !listed[[2]timeline.UserID{a, u}] {
				drift = append(drift, reconcile.Drift{Kind: reconcile.Missing, View: FollowersView, User: u, Item: int64(a)})
			}
		}
	}
	// ... and the batch's own followers rows, each checked against its
	// follow on the follower's shard.
	mine := map[timeline.UserID][]timeline.UserID{} // follower → authors of the batch
	n, err = reconcile.ScanOwned(ctx, s.db, "followee_id, follower_id", "followers", "", users, func(r *sql.Rows) (int64, int64, error) {
		var a, u int64
		err := r.Scan(&a, &u)
		mine[timeline.UserID(u)] = append(mine[timeline.UserID(u)], timeline.UserID(a))
		return a, u, err
	})
	rows += n
	if err != nil {
		return nil, rows, err
	}
	if len(mine) > 0 {
		back := map[[2]timeline.UserID]bool{} // (follower, author)
		var fs []timeline.UserID
		for f := range mine {
			fs = append(fs, f)
		}
		n, err = reconcile.ScanOwned(ctx, s.db, "follower_id, followee_id", "follows", "", fs, func(r *sql.Rows) (int64, int64, error) {
			var f, a int64
			err := r.Scan(&f, &a)
			back[[2]timeline.UserID{timeline.UserID(f), timeline.UserID(a)}] = true
			return f, a, err
		})
		rows += n
		if err != nil {
			return nil, rows, err
		}
		for f, as := range mine {
			for _, a := range as {
				if !back[[2]timeline.UserID{f, a}] {
					drift = append(drift, reconcile.Drift{Kind: reconcile.Extra, View: FollowersView, User: a, Item: int64(f)})
				}
			}
		}
	}
	return drift, rows, nil
}

// messagesByID adds to msgs the messages of ids that exist: first from the
// shards of authors (the authors the mailbox rows copied, ids[i]'s
// authors[i]), then, for those not found there, from every shard.
func (s *VitessStore) messagesByID(ctx context.Context, ids []timeline.MessageID, authors []timeline.UserID, msgs map[timeline.MessageID]copied) (int64, error) {
	want := map[timeline.MessageID]bool{}
	for _, id := range ids {
		want[id] = true
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	n, err := reconcile.ScanOwned(ctx, s.db, "author_id, id, author_id, body, created_at", "messages",
		"id IN ("+string(mysqlx.AppendList(nil, slices.Compact(sorted)))+")", authors, func(r *sql.Rows) (int64, int64, error) {
			a, id, c, err := scanCopied(r)
			if want[timeline.MessageID(id)] {
				msgs[timeline.MessageID(id)] = c
			}
			return a, id, err
		})
	if err != nil {
		return n, err
	}
	var rest []timeline.MessageID
	for _, id := range ids {
		if _, ok := msgs[id]; !ok {
			rest = append(rest, id)
		}
	}
	if len(rest) == 0 {
		return n, nil
	}
	slices.Sort(rest)
	for chunk := range slices.Chunk(slices.Compact(rest), reconcile.OwnedChunk) {
		q := `SELECT id, author_id, body, created_at FROM messages WHERE id IN (` + string(mysqlx.AppendList(nil, chunk)) + `)`
		rows, err := s.db.QueryContext(ctx, q)
		if err != nil {
			return n, err
		}
		for rows.Next() {
			var id int64
			var c copied
			if err := rows.Scan(&id, &c.author, &c.body, &c.created); err != nil {
				rows.Close()
				return n, err
			}
			n++
			msgs[timeline.MessageID(id)] = c
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// fix repairs the drift of user that a look still found, in one vtgate
// transaction, under the locks described at VitessChecker.
func (s *VitessStore) fix(ctx context.Context, user timeline.UserID, drift []reconcile.Drift, rule VitessRule) (int, error) {
	var fixed int
	err := mysqlx.InTx(ctx, s.db, func(tx *sql.Tx) error {
		fixed = 0
		var followees []timeline.UserID
		follows := map[timeline.UserID]bool{}
		if err := reconcile.ScanInts(ctx, tx, `SELECT followee_id FROM follows WHERE follower_id = ? ORDER BY followee_id LOCK IN SHARE MODE`, 1,
			func(v []int64) {
				followees = append(followees, timeline.UserID(v[0]))
				follows[timeline.UserID(v[0])] = true
			}, user); err != nil {
			return err
		}
		var ids []timeline.MessageID
		for _, d := range drift {
			switch {
			case d.View == MailboxView:
				ids = append(ids, timeline.MessageID(d.Item))
			case d.View == FollowersView && d.Kind == reconcile.Missing:
				n, err := s.fixFollower(ctx, tx, user, timeline.UserID(d.Item), follows[timeline.UserID(d.Item)])
				fixed += n
				if err != nil {
					return err
				}
			case d.View == FollowersView && d.Kind == reconcile.Extra:
				// user is the author; the follow to lock is the follower's.
				f := timeline.UserID(d.Item)
				var exists bool
				if err := reconcile.ScanInts(ctx, tx, `SELECT followee_id FROM follows WHERE follower_id = ? AND followee_id = ? LOCK IN SHARE MODE`, 1,
					func([]int64) { exists = true }, f, user); err != nil {
					return err
				}
				n, err := s.fixFollower(ctx, tx, f, user, exists)
				fixed += n
				if err != nil {
					return err
				}
			case rule.Fix != nil:
				n, err := rule.Fix(ctx, tx, user, d, follows)
				fixed += n
				if err != nil {
					return err
				}
			}
		}
		if len(ids) == 0 {
			return nil
		}
		n, err := s.fixMailbox(ctx, tx, user, followees, ids)
		fixed += n
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("repair %s views of user %d: %w", cmp.Or(rule.Model, VitessModelName), user, err)
	}
	return fixed, nil
}

// fixFollower makes followers hold (author, follower) exactly when the
// follow exists, as read under a lock; it returns the rows changed.
func (s *VitessStore) fixFollower(ctx context.Context, tx *sql.Tx, follower, author timeline.UserID, exists bool) (int, error) {
	q := `DELETE FROM followers WHERE followee_id = ? AND follower_id = ?`
	if exists {
		q = `INSERT IGNORE INTO followers (followee_id, follower_id) VALUES (?, ?)`
	}
	return reconcile.Exec(ctx, tx, q, author, follower)
}

// fixMailbox makes user's mailbox rows of ids what the rule says, given
// user's followees read under lock.
func (s *VitessStore) fixMailbox(ctx context.Context, tx *sql.Tx, user timeline.UserID, followees []timeline.UserID, ids []timeline.MessageID) (int, error) {
	slices.Sort(ids)
	ids = slices.Compact(ids)
	in := string(mysqlx.AppendList(nil, ids))
	// The messages of ids that followees wrote, locked against a delete.
	msgs := map[timeline.MessageID]copied{}
	for chunk := range slices.Chunk(followees, reconcile.OwnedChunk) {
		rows, err := tx.QueryContext(ctx, `SELECT id, author_id, body, created_at FROM messages WHERE author_id IN (`+
			string(mysqlx.AppendList(nil, chunk))+`) AND id IN (`+in+`) LOCK IN SHARE MODE`)
		if err := scanCopies(rows, err, msgs); err != nil {
			return 0, err
		}
	}
	have := map[timeline.MessageID]copied{}
	rows, err := tx.QueryContext(ctx, `SELECT message_id, author_id, body, created_at FROM mailbox WHERE user_id = ? AND message_id IN (`+in+`) FOR UPDATE`, user)
	if err := scanCopies(rows, err, have); err != nil {
		return 0, err
	}
	fixed := 0
	for _, id := range ids {
		m, must := msgs[id]
		c, has := have[id]
		var res sql.Result
		switch {
		case must && !has:
			res, err = tx.ExecContext(ctx, `INSERT IGNORE INTO mailbox (user_id, message_id, author_id, body, created_at) VALUES (?, ?, ?, ?, ?)`,
				user, id, m.author, m.body, m.created)
		case must && !c.same(m):
			res, err = tx.ExecContext(ctx, `UPDATE mailbox SET author_id = ?, body = ?, created_at = ? WHERE user_id = ? AND message_id = ?`,
				m.author, m.body, m.created, user, id)
		case !must && has:
			res, err = tx.ExecContext(ctx, `DELETE FROM mailbox WHERE user_id = ? AND message_id = ?`, user, id)
		default:
			continue
		}
		if err != nil {
			return fixed, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fixed, err
		}
		fixed += int(n)
	}
	return fixed, nil
}
