package redisindex

import (
	"context"
	"fmt"
	"strconv"

	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// The views of the Redis indexes that reconcile reports: a member (a
// followee) of an index, and its score.
const (
	IndexView = "redis index"
	ScoreView = "redis index score"
)

// ErrNotMine is what Checker returns for a store of another model.
var ErrNotMine = fmt.Errorf("not a %s store", ModelName)

// Checker is pull-redis's registry.Model.Reconcile: a reconcile.Looks (two
// looks a second apart; a repair drops a drifted index, which the
// reader's next newest page rebuilds from the record) under this rule: a
// complete index (its sentinel, of the current epoch, scored -1) holds
// exactly its reader's followees, each scored by the id of their newest
// message (0 for none); a missing index, or one being built, holds
// nothing to check. A followee the index lacks is Missing, a member the
// reader does not follow Unfollowed, and a score that is not the
// followee's newest id WrongState. It writes nothing to MariaDB.
func Checker(s timeline.Store) (reconcile.Checker, error) {
	rs, ok := s.(*Store)
	if !ok {
		return nil, fmt.Errorf("%s reconcile: %T: %w", ModelName, s, ErrNotMine)
	}
	return reconcile.Looks{
		List: func(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error) {
			return reconcile.UsersIn(ctx, rs.DB(), after, limit, "follows.follower_id")
		},
		Look: rs.lookIndexes,
		Drop: func(ctx context.Context, user timeline.UserID) (int, error) {
			n, err := rs.rc.Do(ctx, func(b redisx.Builder) redisx.Completed {
				return b.Del().Key(rs.IndexKey(user)).Build()
			}).AsInt64()
			return int(n), err
		},
	}, nil
}

// lookIndexes reads the record of users (their follows, and their
// followees' newest ids), then their indexes, and returns the drift it
// sees.
func (s *Store) lookIndexes(ctx context.Context, users []timeline.UserID) ([]reconcile.Drift, int64, error) {
	rec, err := reconcile.ReadRecord(ctx, s.DB(), users, `SELECT m.author_id, MAX(m.id) FROM follows f
		JOIN messages m ON m.author_id = f.followee_id WHERE f.follower_id IN (%s) GROUP BY m.author_id`)
	if err != nil {
		return nil, rec.Rows, err
	}
	keys := make([]string, len(users))
	for i, u := range users {
		keys[i] = s.IndexKey(u)
	}
	sets, entries, err := redisx.ReadSets(ctx, s.rc, s.fence.Key(), keys)
	rows := rec.Rows + entries
	if err != nil {
		return nil, rows, err
	}
	followees := map[timeline.UserID][]timeline.UserID{}
	for e := range rec.Follows {
		followees[e[0]] = append(followees[e[0]], e[1])
	}
	var drift []reconcile.Drift
	for i, u := range users {
		set := sets[i]
		if !set.Valid || set.Sentinel != -1 {
			continue // missing, or being built
		}
		for _, a := range followees[u] {
			member := strconv.FormatInt(int64(a), 10)
			score, ok := set.Members[member]
			var newest int64
			if ids := rec.Of[a]; len(ids) > 0 {
				newest = ids[0]
			}
			switch {
			case !ok:
				drift = append(drift, reconcile.Drift{Kind: reconcile.Missing, View: IndexView, User: u, Item: int64(a)})
			case int64(score) != newest:
				drift = append(drift, reconcile.Drift{Kind: reconcile.WrongState, View: ScoreView, User: u, Item: int64(a), Have: int64(score), Want: newest})
			}
			delete(set.Members, member)
		}
		for member := range set.Members {
			if a, err := strconv.ParseInt(member, 10, 64); err == nil {
				drift = append(drift, reconcile.Drift{Kind: reconcile.Unfollowed, View: IndexView, User: u, Item: a})
			}
		}
	}
	return drift, rows, nil
}
