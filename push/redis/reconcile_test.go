package redis_test

import (
	"strconv"
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
// not followed and of a deleted message put in their places, and a floor
// raised over ids the feed keeps; reconcile finds exactly that drift and the repair
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
	// edit runs a Lua script over one feed: KEYS[1] the feed, ARGV[1] an id.
	edit := func(user timeline.UserID, id timeline.MessageID, src string) {
		t.Helper()
		err := s.Redis().Run(timelinetest.Context(t), false, redisx.NewScript(src), redisx.Call{
			Keys: []string{s.FeedKey(user)}, Args: []string{strconv.FormatInt(int64(id), 10)},
		}).Error()
		if err != nil {
			t.Fatal(err)
		}
	}
	// insert puts the id in its place, newest first.
	const insert = `
for i, v in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
	if not tonumber(v) or tonumber(v) < tonumber(ARGV[1]) then
		return redis.call('LINSERT', KEYS[1], 'BEFORE', v, ARGV[1])
	end
end
return redis.error_reply('no sentinel')`
	reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
		gone := w.Posts[2][0]
		edit(1, gone, `return redis.call('LREM', KEYS[1], 1, ARGV[1])`)
		stray := w.Posts[9][1]
		edit(3, stray, insert)
		dead := w.Posts[6][2]
		timelinetest.Delete(t, s, 6, dead)
		edit(5, dead, insert)
		drift := []reconcile.Drift{
			{Kind: reconcile.Missing, View: redis.FeedView, User: 1, Item: int64(gone)},
			{Kind: reconcile.Unfollowed, View: redis.FeedView, User: 3, Item: int64(stray)},
			{Kind: reconcile.Deleted, View: redis.FeedView, User: 5, Item: int64(dead)},
		}
		// User 7's floor raised over the ids it keeps below.
		floor := w.Posts[1][1]
		edit(7, floor, `local t = redis.call('LINDEX', KEYS[1], -1)
return redis.call('LSET', KEYS[1], -1, string.match(t, '^(.*:)') .. ARGV[1])`)
		items, err := do(func(b redisx.Builder) redisx.Completed {
			return b.Lrange().Key(s.FeedKey(7)).Start(0).Stop(-1).Build()
		}).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range items {
			if id, err := strconv.ParseInt(v, 10, 64); err == nil && id <= int64(floor) {
				drift = append(drift, reconcile.Drift{Kind: reconcile.Extra, View: redis.FeedView, User: 7, Item: id})
			}
		}
		if len(drift) == 3 {
			t.Fatalf("user 7's feed holds nothing below %d: %v", floor, items)
		}
		return drift
	}})
}
