package recent

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/internal/mysqlx"
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
// authors. Follow tokens, indexes and hint targets are not checked.
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
