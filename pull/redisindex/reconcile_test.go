package redisindex_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull/redisindex"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestReconcile poisons indexes in Redis: a followee taken out, an author
// not followed put in, and a score lowered; reconcile finds exactly that
// drift and the repair removes it (the indexes go, and are rebuilt from
// the record on their next read) under concurrent posts and follows.
func TestReconcile(t *testing.T) {
	// Redis calls get 5 s, not 200 ms: on a loaded machine a post's call
	// that times out pays a fence, which makes every index missing, and
	// with it the drift made.
	s, err := redisindex.Open(context.Background(), redisindex.Config{
		DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: testserver.Redis(t), Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m, err := registry.Lookup(redisindex.ModelName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Checker(s)
	if err != nil {
		t.Fatal(err)
	}
	set := func(user, member timeline.UserID, score timeline.MessageID, build func(b redisx.Builder, key, member string, score float64) redisx.Completed) {
		t.Helper()
		err := s.Redis().Do(timelinetest.Context(t), func(b redisx.Builder) redisx.Completed {
			return build(b, s.IndexKey(user), strconv.FormatInt(int64(member), 10), float64(score))
		}).Error()
		if err != nil {
			t.Fatal(err)
		}
	}
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
		if !w.Followed(1, 2) || w.Followed(3, 9) || !w.Followed(5, 6) {
			t.Fatal("the world changed")
		}
		set(1, 2, 0, func(b redisx.Builder, key, member string, _ float64) redisx.Completed {
			return b.Zrem().Key(key).Member(member).Build()
		})
		set(3, 9, w.Posts[9][2], func(b redisx.Builder, key, member string, score float64) redisx.Completed {
			return b.Zadd().Key(key).ScoreMember().ScoreMember(score, member).Build()
		})
		set(5, 6, w.Posts[6][0], func(b redisx.Builder, key, member string, score float64) redisx.Completed {
			return b.Zadd().Key(key).Xx().ScoreMember().ScoreMember(score, member).Build()
		})
		return []reconcile.Drift{
			{Kind: reconcile.Missing, View: redisindex.IndexView, User: 1, Item: 2},
			{Kind: reconcile.Unfollowed, View: redisindex.IndexView, User: 3, Item: 9},
			{Kind: reconcile.WrongState, View: redisindex.ScoreView, User: 5, Item: 6},
		}
	}})
}
