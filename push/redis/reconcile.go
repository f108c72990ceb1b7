package redis

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// FeedView is the name reconcile reports the entries of Redis feeds under.
const FeedView = "redis feed"

// DefaultSettle is Checker's wait between the two looks at a feed.
const DefaultSettle = time.Second

// Checker is push-redis's reconcile.Checker. Its rule: a complete feed
// (one whose sentinel, of the current epoch, holds a floor F >= 0) holds
// exactly the ids of its reader's timeline above F; a missing feed, or one
// being rebuilt, holds nothing to check (the next read builds it from the
// record). An id the feed lacks is Missing; one of a deleted message
// Deleted, of an author the reader does not follow Unfollowed, and one at
// or below the floor Extra.
//
// MariaDB and Redis share no snapshot, and a write changes Redis after it
// commits, so a feed may lag the record for the time a write's Redis
// part takes. A check therefore looks twice, Settle apart, at the users
// where it saw drift (each look reads the record first, then the feed),
// and reports only what both looks found. A repair looks again and, if
// the drift is still there, deletes the feed: the reader's next read
// rebuilds it from the record, as after a fence, and a post or follow
// meanwhile finds no feed to write to, so nothing it adds is lost (the
// record has it). It writes nothing to MariaDB.
type Checker struct {
	Store *Store
	// Settle is the wait between the two looks; 0 means DefaultSettle.
	Settle time.Duration
}

var _ reconcile.Checker = Checker{}

// NewChecker is the model's registry.Model.Reconcile.
func NewChecker(s timeline.Store) (reconcile.Checker, error) {
	rs, ok := s.(*Store)
	if !ok {
		return nil, fmt.Errorf("%s reconcile: %T: %w", ModelName, s, push.ErrNotMine)
	}
	return Checker{Store: rs}, nil
}

// Users implements reconcile.Checker: the followers (a user who follows
// no one has nothing in a feed).
func (c Checker) Users(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error) {
	return reconcile.UsersIn(ctx, c.Store.DB(), after, limit, "follows.follower_id")
}

// Check implements reconcile.Checker.
func (c Checker) Check(ctx context.Context, users []timeline.UserID) (reconcile.Batch, error) {
	first, rows, err := c.look(ctx, users)
	if err != nil || len(first) == 0 {
		return reconcile.Batch{Rows: rows}, err
	}
	t := time.NewTimer(cmp.Or(c.Settle, DefaultSettle))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return reconcile.Batch{Rows: rows}, ctx.Err()
	case <-t.C:
	}
	second, more, err := c.look(ctx, driftUsers(first))
	b := reconcile.Batch{Rows: rows + more}
	for _, k := range slices.SortedFunc(maps.Keys(second), compareKeys) {
		if _, ok := first[k]; ok {
			b.Drift = append(b.Drift, second[k])
		}
	}
	return b, err
}

// Repair implements reconcile.Checker: the feed goes if a look still
// finds drift of d's in it.
func (c Checker) Repair(ctx context.Context, user timeline.UserID, drift []reconcile.Drift) (int, error) {
	now, _, err := c.look(ctx, []timeline.UserID{user})
	if err != nil {
		return 0, err
	}
	if !slices.ContainsFunc(drift, func(d reconcile.Drift) bool { _, ok := now[d.Key()]; return ok }) {
		return 0, nil
	}
	n, err := c.Store.rc.Do(ctx, func(b redisx.Builder) redisx.Completed {
		return b.Del().Key(c.Store.FeedKey(user)).Build()
	}).AsInt64()
	return int(n), err
}

// look reads the record of users, then their feeds, and returns the
// drift it sees and the rows and entries it read.
func (c Checker) look(ctx context.Context, users []timeline.UserID) (map[reconcile.Key]reconcile.Drift, int64, error) {
	s := c.Store
	var rows int64
	followed := map[[2]timeline.UserID]bool{}
	timelines := map[timeline.UserID][]timeline.MessageID{}
	err := mysqlx.InTxOptions(ctx, s.DB(), &sql.TxOptions{ReadOnly: true}, func(tx *sql.Tx) error {
		clear(followed)
		clear(timelines)
		rows = 0
		in := string(mysqlx.AppendList(nil, users))
		if err := push.ScanInts(ctx, tx, `SELECT follower_id, followee_id FROM follows WHERE follower_id IN (`+in+`)`, 2, func(v []int64) {
			rows++
			followed[[2]timeline.UserID{timeline.UserID(v[0]), timeline.UserID(v[1])}] = true
		}); err != nil {
			return err
		}
		return push.ScanInts(ctx, tx, `SELECT f.follower_id, m.id FROM follows f JOIN messages m ON m.author_id = f.followee_id
			WHERE f.follower_id IN (`+in+`)`, 2, func(v []int64) {
			rows++
			timelines[timeline.UserID(v[0])] = append(timelines[timeline.UserID(v[0])], timeline.MessageID(v[1]))
		})
	})
	if err != nil {
		return nil, rows, err
	}
	epoch, err := s.rc.Do(ctx, func(b redisx.Builder) redisx.Completed { return b.Get().Key(s.fence.Key()).Build() }).ToString()
	if redisx.IsNil(err) {
		return nil, rows, nil // no epoch: no feed is valid
	}
	if err != nil {
		return nil, rows, err
	}
	sentinel := "e" + epoch
	drift := map[reconcile.Key]reconcile.Drift{}
	strays := map[timeline.UserID][]timeline.MessageID{}
	for _, u := range users {
		entries, err := s.rc.Do(ctx, func(b redisx.Builder) redisx.Completed {
			return b.Zrange().Key(s.FeedKey(u)).Min("0").Max("-1").Withscores().Build()
		}).AsZScores()
		if err != nil {
			return nil, rows, err
		}
		rows += int64(len(entries))
		floor, complete := timeline.MessageID(0), false
		have := map[timeline.MessageID]bool{}
		for _, e := range entries {
			if e.Member == sentinel {
				floor, complete = timeline.MessageID(e.Score), e.Score >= 0
				continue
			}
			if id, err := strconv.ParseInt(e.Member, 10, 64); err == nil {
				have[timeline.MessageID(id)] = true
			}
		}
		if !complete {
			continue // missing, of another epoch, or being rebuilt
		}
		for _, id := range timelines[u] {
			if id <= floor {
				continue // at or below the floor: a stray if held
			}
			if !have[id] {
				d := reconcile.Drift{Kind: reconcile.Missing, View: FeedView, User: u, Item: int64(id)}
				drift[d.Key()] = d
			}
			delete(have, id)
		}
		for id := range have {
			strays[u] = append(strays[u], id)
		}
	}
	// What a feed holds beside its timeline above the floor: ids of
	// deleted messages, of authors not followed, or at or below it.
	var ids []timeline.MessageID
	for _, s := range strays {
		ids = append(ids, s...)
	}
	authors := map[timeline.MessageID]timeline.UserID{}
	if len(ids) > 0 {
		slices.Sort(ids)
		err := push.ScanInts(ctx, s.DB(), `SELECT id, author_id FROM messages WHERE id IN (`+
			string(mysqlx.AppendList(nil, slices.Compact(ids)))+`)`, 2, func(v []int64) {
			authors[timeline.MessageID(v[0])] = timeline.UserID(v[1])
		})
		if err != nil {
			return nil, rows, err
		}
	}
	for u, ids := range strays {
		for _, id := range ids {
			kind := reconcile.Extra
			switch a, ok := authors[id]; {
			case !ok:
				kind = reconcile.Deleted
			case !followed[[2]timeline.UserID{u, a}]:
				kind = reconcile.Unfollowed
			}
			d := reconcile.Drift{Kind: kind, View: FeedView, User: u, Item: int64(id)}
			drift[d.Key()] = d
		}
	}
	return drift, rows, nil
}

func driftUsers(drift map[reconcile.Key]reconcile.Drift) []timeline.UserID {
	var us []timeline.UserID
	for k := range drift {
		us = append(us, k.User)
	}
	slices.Sort(us)
	return slices.Compact(us)
}

func compareKeys(a, b reconcile.Key) int {
	switch {
	case a.User != b.User:
		return int(a.User - b.User)
	case a.Item != b.Item:
		if a.Item < b.Item {
			return -1
		}
		return 1
	case a.Kind != b.Kind:
		if a.Kind < b.Kind {
			return -1
		}
		return 1
	}
	return 0
}
