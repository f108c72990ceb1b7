package redis

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// FeedView is the name reconcile reports the entries of Redis feeds under.
const FeedView = "redis feed"

// FeedOrderView is the name reconcile reports a feed's id under when it
// is newer than the id before it (Have; Want is the id itself): a feed
// holds its ids newest first.
const FeedOrderView = "redis feed order"

// Checker is push-redis's registry.Model.Reconcile: a reconcile.Looks
// (two looks a second apart; a repair drops a drifted feed, which the
// reader's next read rebuilds from the record, as after a fence) under
// this rule: a complete feed (its sentinel, of the current epoch, holds a
// floor F >= 0) holds exactly the ids of its reader's timeline above F,
// newest first, each once; a missing feed, or one being rebuilt, holds
// nothing to check. An id the feed lacks is Missing; one of a deleted
// message Deleted, of an author the reader does not follow Unfollowed,
// one at or below the floor or held twice Extra, and one newer than the
// id before it WrongState (FeedOrderView). A drowning reader's feed
// (Config.Drowning) may lack what push.Drowning.Requires does not
// require: any id under push.DrowningPull, those the hash did not keep
// under push.DrowningLossy. It writes nothing to MariaDB.
func Checker(s timeline.Store) (reconcile.Checker, error) {
	rs, ok := s.(*Store)
	if !ok {
		return nil, fmt.Errorf("%s reconcile: %T: %w", ModelName, s, push.ErrNotMine)
	}
	return reconcile.Looks{
		List: func(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error) {
			return reconcile.UsersIn(ctx, rs.DB(), after, limit, "follows.follower_id")
		},
		Look: rs.lookFeeds,
		Drop: func(ctx context.Context, user timeline.UserID) (int, error) {
			n, err := rs.rc.Do(ctx, func(b redisx.Builder) redisx.Completed {
				return b.Del().Key(rs.FeedKey(user)).Build()
			}).AsInt64()
			return int(n), err
		},
	}, nil
}

// lookFeeds reads the record of users, then their feeds, and returns the
// drift it sees.
func (s *Store) lookFeeds(ctx context.Context, users []timeline.UserID) ([]reconcile.Drift, int64, error) {
	rec, err := reconcile.ReadRecord(ctx, s.DB(), users, `SELECT f.follower_id, m.id FROM follows f
		JOIN messages m ON m.author_id = f.followee_id WHERE f.follower_id IN (%s)`)
	if err != nil {
		return nil, rec.Rows, err
	}
	keys := make([]string, len(users))
	for i, u := range users {
		keys[i] = s.FeedKey(u)
	}
	lists, entries, err := redisx.ReadLists(ctx, s.rc, s.fence.Key(), keys)
	rows := rec.Rows + entries
	if err != nil {
		return nil, rows, err
	}
	keeps := map[timeline.UserID]int{}
	if s.drowning.On() {
		if keeps, err = push.DrowningKeeps(ctx, s.DB(), users, false); err != nil {
			return nil, rows, err
		}
	}
	var drift []reconcile.Drift
	strays := map[timeline.UserID][]timeline.MessageID{}
	for i, u := range users {
		list := lists[i]
		if !list.Valid || list.Sentinel < 0 {
			continue // missing, or being rebuilt
		}
		floor := timeline.MessageID(list.Sentinel)
		have := map[timeline.MessageID]bool{}
		prev := timeline.MessageID(0)
		for _, m := range list.Items {
			n, err := strconv.ParseInt(m, 10, 64)
			if err != nil {
				continue
			}
			id := timeline.MessageID(n)
			switch {
			case have[id]:
				drift = append(drift, reconcile.Drift{Kind: reconcile.Extra, View: FeedView, User: u, Item: n})
			case prev != 0 && id > prev:
				drift = append(drift, reconcile.Drift{Kind: reconcile.WrongState, View: FeedOrderView, User: u, Item: n, Have: int64(prev), Want: n})
			}
			have[id], prev = true, id
		}
		for _, id := range rec.Of[u] {
			if timeline.MessageID(id) <= floor {
				continue // held at or below the floor, it is a stray
			}
			if !have[timeline.MessageID(id)] && s.drowning.Requires(keeps, u, timeline.MessageID(id)) {
				drift = append(drift, reconcile.Drift{Kind: reconcile.Missing, View: FeedView, User: u, Item: id})
			}
			delete(have, timeline.MessageID(id))
		}
		for id := range have {
			strays[u] = append(strays[u], id)
		}
	}
	more, err := judgeStrays(ctx, s.DB(), rec, strays)
	return append(drift, more...), rows, err
}

// judgeStrays says what each id a feed holds beside its timeline above the
// floor is: of a deleted message, of an author not followed, or at or
// below the floor.
func judgeStrays(ctx context.Context, db *sql.DB, rec reconcile.Record, strays map[timeline.UserID][]timeline.MessageID) ([]reconcile.Drift, error) {
	var ids []timeline.MessageID
	for _, s := range strays {
		ids = append(ids, s...)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	slices.Sort(ids)
	authors := map[timeline.MessageID]timeline.UserID{}
	err := reconcile.ScanInts(ctx, db, `SELECT id, author_id FROM messages WHERE id IN (`+
		string(mysqlx.AppendList(nil, slices.Compact(ids)))+`)`, 2, func(v []int64) {
		authors[timeline.MessageID(v[0])] = timeline.UserID(v[1])
	})
	var drift []reconcile.Drift
	for u, ids := range strays {
		for _, id := range ids {
			kind := reconcile.Extra
			switch a, ok := authors[id]; {
			case !ok:
				kind = reconcile.Deleted
			case !rec.Follows[[2]timeline.UserID{u, a}]:
				kind = reconcile.Unfollowed
			}
			drift = append(drift, reconcile.Drift{Kind: kind, View: FeedView, User: u, Item: int64(id)})
		}
	}
	return drift, err
}
