package redis_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/push/redis"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestReconcile poisons feeds in Redis: an id taken out, ids of an author
// not followed and of a deleted message put in, and a floor raised over
// ids the feed keeps; reconcile finds exactly that drift and the repair
// removes it (the feeds go, and are rebuilt from the record on their next
// read) under concurrent posts and follows.
func TestReconcile(t *testing.T) {
	// Redis calls get 5 s, not the default 200 ms: on a loaded machine a
	// post's call that times out pays a fence, which makes every feed
	// missing, and with it the drift made. The cap is the largest, so
	// that the concurrent posts never trim a feed (a trim cuts the oldest
	// ids, and with them the drift made among them).
	s := open(t, redis.Config{Timeout: 5 * time.Second, Cap: redis.MaxCap})
	m, err := registry.Lookup(redis.ModelName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Checker(s)
	if err != nil {
		t.Fatal(err)
	}
	do := func(build func(b redisx.Builder) redisx.Completed) redisx.Result {
		t.Helper()
		r := s.Redis().Do(timelinetest.Context(t), build)
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	add := func(user timeline.UserID, id timeline.MessageID, score float64) {
		member := strconv.FormatInt(int64(id), 10)
		do(func(b redisx.Builder) redisx.Completed {
			return b.Zadd().Key(s.FeedKey(user)).ScoreMember().ScoreMember(score, member).Build()
		})
	}
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
		gone := w.Posts[2][0]
		do(func(b redisx.Builder) redisx.Completed {
			return b.Zrem().Key(s.FeedKey(1)).Member(strconv.FormatInt(int64(gone), 10)).Build()
		})
		stray := w.Posts[9][1]
		add(3, stray, float64(stray))
		dead := w.Posts[6][2]
		timelinetest.Delete(t, s, 6, dead)
		add(5, dead, float64(dead))
		drift := []reconcile.Drift{
			{Kind: reconcile.Missing, View: redis.FeedView, User: 1, Item: int64(gone)},
			{Kind: reconcile.Unfollowed, View: redis.FeedView, User: 3, Item: int64(stray)},
			{Kind: reconcile.Deleted, View: redis.FeedView, User: 5, Item: int64(dead)},
		}
		// User 7's floor raised over the ids it keeps below.
		floor := w.Posts[1][1]
		entries, err := do(func(b redisx.Builder) redisx.Completed {
			return b.Zrange().Key(s.FeedKey(7)).Min("0").Max("-1").Withscores().Build()
		}).AsZScores()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			switch {
			case strings.HasPrefix(e.Member, "e"):
				do(func(b redisx.Builder) redisx.Completed {
					return b.Zadd().Key(s.FeedKey(7)).Xx().ScoreMember().ScoreMember(float64(floor), e.Member).Build()
				})
			case e.Score <= float64(floor):
				drift = append(drift, reconcile.Drift{Kind: reconcile.Extra, View: redis.FeedView, User: 7, Item: int64(e.Score)})
			}
		}
		if len(drift) == 3 {
			t.Fatalf("user 7's feed holds nothing below %d: %v", floor, entries)
		}
		return drift
	}})
}
