package recent

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// ListView is the name reconcile reports the ids of author lists under.
const ListView = "memcached list"

// Lists is the reconcile.Checker of st's author lists, over db, the
// database st derives them from: a reconcile.Looks (two looks a second
// apart; a repair deletes a drifted list, which the next read that needs
// it rebuilds from the database). Its rule: a list that decodes (a value
// that does not, or a rebuild's placeholder, is never used, and the next
// read rebuilds it) holds every id of its author at or above its floor
// (its oldest base id), every id of the author if it is complete, and
// nothing else. An id it lacks is Missing; one of a deleted message
// Deleted, one of another author's message Extra. The walk's users are the
// authors. Indexes and follow tokens are Indexes'; hint targets are not
// checked.
func (st *State) Lists(db *sql.DB) reconcile.Looks {
	return reconcile.Looks{
		List: func(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error) {
			return reconcile.UsersIn(ctx, db, after, limit, "messages.author_id")
		},
		Look: func(ctx context.Context, authors []timeline.UserID) ([]reconcile.Drift, int64, error) {
			return st.lookLists(ctx, db, authors)
		},
		Drop: func(ctx context.Context, author timeline.UserID) (int, error) {
			switch err := st.mc.Delete(ctx, st.key(author)); {
			case errors.Is(err, memcached.ErrCacheMiss):
				return 0, nil
			case err != nil:
				return 0, err
			}
			return 1, nil
		},
	}
}

// lookLists compares the lists of authors with their messages.
func (st *State) lookLists(ctx context.Context, db *sql.DB, authors []timeline.UserID) ([]reconcile.Drift, int64, error) {
	rec, err := reconcile.ReadRecord(ctx, db, authors, `SELECT author_id, id FROM messages WHERE author_id IN (%s)`)
	rows := rec.Rows
	if err != nil {
		return nil, rows, err
	}
	keys := make([]string, len(authors))
	for i, a := range authors {
		keys[i] = st.key(a)
	}
	items, err := st.mc.Get(ctx, keys)
	if err != nil {
		return nil, rows, err
	}
	var drift []reconcile.Drift
	var strays []uint64
	strayOf := map[uint64][]timeline.UserID{}
	for i, a := range authors {
		if items[i] == nil {
			continue
		}
		l, ok := decodeList(keys[i], items[i].Value)
		if !ok {
			continue
		}
		listed, ok := l.all()
		if !ok {
			continue
		}
		rows += int64(len(listed))
		has := map[uint64]bool{}
		for _, id := range listed {
			has[id] = true
		}
		for _, id := range rec.Of[a] {
			if !has[uint64(id)] && (l.complete || uint64(id) >= l.floor) {
				drift = append(drift, reconcile.Drift{Kind: reconcile.Missing, View: ListView, User: a, Item: id})
			}
			delete(has, uint64(id))
		}
		for id := range has {
			strays = append(strays, id)
			strayOf[id] = append(strayOf[id], a)
		}
	}
	if len(strays) == 0 {
		return drift, rows, nil
	}
	slices.Sort(strays)
	exists := map[uint64]bool{}
	err = reconcile.ScanInts(ctx, db, `SELECT id, author_id FROM messages WHERE id IN (`+
		string(mysqlx.AppendList(nil, slices.Compact(strays)))+`)`, 2, func(v []int64) { exists[uint64(v[0])] = true })
	for id, as := range strayOf {
		kind := reconcile.Deleted
		if exists[id] {
			kind = reconcile.Extra // another author's
		}
		for _, a := range as {
			drift = append(drift, reconcile.Drift{Kind: kind, View: ListView, User: a, Item: int64(id)})
		}
	}
	return drift, rows, err
}

// The names reconcile reports the state of indexes and follow tokens
// under.
const (
	// IndexView: the entries of Active's indexes.
	IndexView = "memcached index"
	// HomeView: the entries of Home's indexes.
	HomeView = "memcached home index"
	// TokenView: a follow token that an index built for other followees
	// still matches; the item is the followee the index and the record
	// disagree on.
	TokenView = "memcached follow token"
)

// Indexes is the reconcile.Checker of the indexes st keeps in memcached
// (Active's or Home's) and of the follow tokens they were built under,
// over db; ok is false when st keeps no index (it sends no hints). It is
// a reconcile.Looks whose users are the readers (follows.follower_id). It
// judges only an index a read would serve: one that decodes, carries the
// reader's current follow token and is younger than a list's lifetime;
// the others are rebuilt by the next read. Its rule:
//
//   - Active: every followee whose newest message is above the index's
//     floor has an entry at least as new (else Missing, the item that
//     newest message); an entry of a followee names a message of that
//     followee (a message of another author: Extra; one that does not
//     exist: Deleted). An entry of an author no longer followed is
//     allowed: a hint can land after the rebuild that followed an
//     unfollow, and reads skip it.
//   - Home: the index's followees (those it pulls and those it holds) are
//     the reader's followees, since it carries the current token (else
//     Stale, under TokenView: the token survived a follow or unfollow it
//     should have retired the index for); every message of a followee it
//     holds above its floor is an entry (Missing), and an entry of such a
//     followee names a message of theirs (Extra, Deleted). Entries of
//     authors it pulls or no longer follows are skipped, as reads skip
//     them.
//
// Active's index does not name its followees, so there a token that
// survived a follow shows as the entries the index lacks. A repair that
// still finds drift deletes the index and the follow token: every
// process then reloads the reader's followees (a missing token is a
// mismatch) and the next read rebuilds the index, and a post or follow
// meanwhile finds nothing of the reader's to change.
func (st *State) Indexes(db *sql.DB) (l reconcile.Looks, ok bool) {
	if st.active == nil {
		return l, false
	}
	return reconcile.Looks{
		List: func(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error) {
			return reconcile.UsersIn(ctx, db, after, limit, "follows.follower_id")
		},
		Look: func(ctx context.Context, users []timeline.UserID) ([]reconcile.Drift, int64, error) {
			return st.lookIndexes(ctx, db, users)
		},
		Drop: func(ctx context.Context, user timeline.UserID) (int, error) {
			n := 0
			for _, err := range st.mc.DeleteMulti(ctx, []string{st.indexKey(user), st.followKey(user)}) {
				switch {
				case err == nil:
					n++
				case !errors.Is(err, memcached.ErrCacheMiss):
					return n, err
				}
			}
			return n, nil
		},
	}, true
}

// lookIndexes reads the follows of users (and, for Active, their
// followees' newest messages), then their indexes and tokens, then the
// messages the indexes name, and returns the drift it sees.
func (st *State) lookIndexes(ctx context.Context, db *sql.DB, users []timeline.UserID) ([]reconcile.Drift, int64, error) {
	var rows int64
	follows := map[timeline.UserID][]timeline.UserID{} // ascending
	var followees []timeline.UserID
	err := reconcile.ScanInts(ctx, db, `SELECT follower_id, followee_id FROM follows WHERE follower_id IN (`+
		string(mysqlx.AppendList(nil, users))+`) ORDER BY follower_id, followee_id`, 2, func(v []int64) {
		rows++
		follows[timeline.UserID(v[0])] = append(follows[timeline.UserID(v[0])], timeline.UserID(v[1]))
		followees = append(followees, timeline.UserID(v[1]))
	})
	if err != nil || len(followees) == 0 {
		return nil, rows, err
	}
	newest := map[timeline.UserID]uint64{}
	if st.home == nil {
		slices.Sort(followees)
		err := reconcile.ScanInts(ctx, db, `SELECT author_id, MAX(id) FROM messages WHERE author_id IN (`+
			string(mysqlx.AppendList(nil, slices.Compact(followees)))+`) GROUP BY author_id`, 2, func(v []int64) {
			rows++
			newest[timeline.UserID(v[0])] = uint64(v[1])
		})
		if err != nil {
			return nil, rows, err
		}
	}

	keys := make([]string, 0, 2*len(users))
	for _, u := range users {
		keys = append(keys, st.indexKey(u), st.followKey(u))
	}
	items, err := st.mc.Get(ctx, keys)
	if err != nil {
		return nil, rows, err
	}
	now := time.Now().UnixMilli()
	type served struct {
		user    timeline.UserID
		floor   uint64
		entries []sqlread.AuthorNewest
		held    []timeline.UserID // Home: the followees the index holds
	}
	var idxs []served
	var drift []reconcile.Drift
	for i, u := range users {
		it, tok := items[2*i], items[2*i+1]
		if it == nil || tok == nil {
			continue
		}
		var x served
		var base indexBase
		if st.home == nil {
			idx, ok := decodeIndex(it.Key, it.Value)
			if !ok {
				continue
			}
			base = idx.indexBase
		} else {
			idx, ok := decodeHome(it.Key, it.Value)
			if !ok {
				continue
			}
			pushed, ok := idx.pushedAuthors()
			if !ok {
				continue
			}
			base, x.held = idx.indexBase, pushed
			if base.token == string(tok.Value) && now-base.builtAt <= recentMaxAge.Milliseconds() {
				claims := mergeSorted(pushed, idx.pulled)
				for _, a := range without(follows[u], claims) {
					drift = append(drift, reconcile.Drift{Kind: reconcile.Stale, View: TokenView, User: u, Item: int64(a)})
				}
				for _, a := range without(claims, follows[u]) {
					drift = append(drift, reconcile.Drift{Kind: reconcile.Stale, View: TokenView, User: u, Item: int64(a)})
				}
			}
		}
		if base.token != string(tok.Value) || now-base.builtAt > recentMaxAge.Milliseconds() {
			continue // retired: the next read rebuilds it
		}
		x.user, x.floor, x.entries = u, base.floor, base.entries
		rows += int64(len(x.entries))
		idxs = append(idxs, x)
	}
	if len(idxs) == 0 {
		return drift, rows, nil
	}

	// What the entries of followees name.
	view, kind := IndexView, func(e sqlread.AuthorNewest, held []timeline.UserID, fs []timeline.UserID) bool {
		_, followed := slices.BinarySearch(fs, e.Author)
		return followed
	}
	if st.home != nil {
		view = HomeView
		kind = func(e sqlread.AuthorNewest, held []timeline.UserID, fs []timeline.UserID) bool {
			_, h := slices.BinarySearch(held, e.Author)
			_, followed := slices.BinarySearch(fs, e.Author)
			return h && followed
		}
	}
	var ids []uint64
	for _, x := range idxs {
		for _, e := range x.entries {
			if kind(e, x.held, follows[x.user]) {
				ids = append(ids, e.Newest)
			}
		}
	}
	authorOf := map[uint64]timeline.UserID{}
	if len(ids) > 0 {
		slices.Sort(ids)
		err := reconcile.ScanInts(ctx, db, `SELECT id, author_id FROM messages WHERE id IN (`+
			string(mysqlx.AppendList(nil, slices.Compact(ids)))+`)`, 2, func(v []int64) {
			rows++
			authorOf[uint64(v[0])] = timeline.UserID(v[1])
		})
		if err != nil {
			return nil, rows, err
		}
	}
	for _, x := range idxs {
		has := map[uint64]bool{}
		top := map[timeline.UserID]uint64{}
		for _, e := range x.entries {
			has[e.Newest] = true
			top[e.Author] = max(top[e.Author], e.Newest)
			if !kind(e, x.held, follows[x.user]) {
				continue
			}
			switch a, ok := authorOf[e.Newest]; {
			case !ok:
				drift = append(drift, reconcile.Drift{Kind: reconcile.Deleted, View: view, User: x.user, Item: int64(e.Newest)})
			case a != e.Author:
				drift = append(drift, reconcile.Drift{Kind: reconcile.Extra, View: view, User: x.user, Item: int64(e.Newest)})
			}
		}
		if st.home == nil {
			for _, a := range follows[x.user] {
				if n := newest[a]; n > x.floor && top[a] < n {
					drift = append(drift, reconcile.Drift{Kind: reconcile.Missing, View: view, User: x.user, Item: int64(n)})
				}
			}
			continue
		}
		held := common(x.held, follows[x.user])
		if len(held) == 0 {
			continue
		}
		err := reconcile.ScanInts(ctx, db, `SELECT id, author_id FROM messages WHERE author_id IN (`+
			string(mysqlx.AppendList(nil, held))+`) AND id > ?`, 2, func(v []int64) {
			rows++
			if !has[uint64(v[0])] {
				drift = append(drift, reconcile.Drift{Kind: reconcile.Missing, View: view, User: x.user, Item: v[0]})
			}
		}, x.floor)
		if err != nil {
			return nil, rows, err
		}
	}
	return drift, rows, nil
}
