package redis_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/internal/redisx/redistest"
	"github.com/pushpull/pushpull/internal/sandbox"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push/redis"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Redis: true}) }

// open opens a store in a fresh database (and so under fresh Redis keys)
// and closes it when t ends.
func open(t testing.TB, cfg redis.Config) *redis.Store {
	t.Helper()
	cfg.DSN, cfg.Database, cfg.Redis = testserver.DSN(t), testserver.Database(t), testserver.Redis(t)
	s, err := redis.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the suite at the defaults, where every reader's
// feed is rebuilt once and then read; with a cap of 3, where almost every
// page crosses the floor and posts trim; and without the message cache,
// where every page's bodies come from MariaDB.
func TestConformance(t *testing.T) {
	timelinetest.RunConfigs(t, []timelinetest.Config{
		{Name: "defaults", Open: func(t *testing.T) timeline.Store { return open(t, redis.Config{}) }},
		{Name: "cap 3", Open: func(t *testing.T) timeline.Store { return open(t, redis.Config{Cap: 3}) }},
		{Name: "no message cache", Open: func(t *testing.T) timeline.Store {
			return open(t, redis.Config{Cap: 5, MessageCache: -1, Window: time.Hour})
		}},
	})
}

// TestFeedServesPages checks that the pages come from the feed once it is
// built, that posts reach it, that a cap trims it and pages below the cap
// come from MariaDB, and that nothing falls back.
func TestFeedServesPages(t *testing.T) {
	s := open(t, redis.Config{Cap: 4})
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.PostN(t, s, 2, 3)
	c0 := s.Counters()
	timelinetest.Newest(t, s, 1) // builds the feed
	c1 := s.Counters()
	if c1[counter.Rebuilds]-c0[counter.Rebuilds] != 1 || c1[counter.RebuildRows]-c0[counter.RebuildRows] != 3 {
		t.Fatalf("first read: counters %v -> %v, want one rebuild of 3 ids", c0, c1)
	}
	posted := timelinetest.PostN(t, s, 2, 6)
	c2 := s.Counters()
	if c2[counter.PushedRows]-c1[counter.PushedRows] != 6 {
		t.Fatalf("6 posts pushed %d feed entries", c2[counter.PushedRows]-c1[counter.PushedRows])
	}
	page := timelinetest.Newest(t, s, 1)
	if len(page.Messages) != 9 || page.Messages[0].ID != posted[5].ID {
		t.Fatalf("newest page %v", timelinetest.IDs(page.Messages))
	}
	walked := timelinetest.WalkIDs(t, s, 1, 2)
	if len(walked) != 9 {
		t.Fatalf("walk %v, want 9 ids", walked)
	}
	c3 := s.Counters()
	if c3[counter.FeedPages] <= c2[counter.FeedPages] || c3[counter.PagesBelowCap] == c2[counter.PagesBelowCap] || c3[counter.CacheErrors] != 0 || c3[counter.Rebuilds] != 1 {
		t.Fatalf("counters %v, want pages from the feed, some below its cap, no fallback and no second rebuild", c3)
	}
}

// feedIDs returns the ids user's feed holds in Redis, newest first, the
// sentinel left out (every member but the sentinel is a decimal id).
func feedIDs(t *testing.T, s *redis.Store, user timeline.UserID) []timeline.MessageID {
	t.Helper()
	members, err := s.Redis().Do(context.Background(), func(b redisx.Builder) redisx.Completed {
		return b.Lrange().Key(s.FeedKey(user)).Start(0).Stop(-1).Build()
	}).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	var ids []timeline.MessageID
	for _, m := range members {
		if id, err := strconv.ParseInt(m, 10, 64); err == nil {
			ids = append(ids, timeline.MessageID(id))
		}
	}
	return ids
}

// TestFollowMergesUnfollowRemoves: a follow merges the followee's recent
// posts into a built feed, and an unfollow takes them out of it, in Redis
// itself: no rebuild, and the pages come from the feed.
func TestFollowMergesUnfollowRemoves(t *testing.T) {
	s := open(t, redis.Config{Cap: 10})
	timelinetest.Follow(t, s, 1, 2)
	own := timelinetest.PostN(t, s, 2, 3)
	followee := timelinetest.PostN(t, s, 3, 12) // more than the cap
	timelinetest.Newest(t, s, 1)                // builds the feed
	c0 := s.Counters()
	if got := feedIDs(t, s, 1); !slices.Equal(got, timelinetest.NewestFirst(own)) {
		t.Fatalf("built feed %v, want user 2's %v", got, timelinetest.IDs(own))
	}

	timelinetest.Follow(t, s, 1, 3)
	// The followee's newest 10 (the cap) merged; its older two lie below
	// the floor the merge raised, and so do user 2's, which are older.
	if got, want := feedIDs(t, s, 1), timelinetest.NewestFirst(followee[2:]); !slices.Equal(got, want) {
		t.Fatalf("feed after the follow %v, want %v", got, want)
	}
	want := timelinetest.NewestFirst(own, followee)
	if got := timelinetest.WalkIDs(t, s, 1, 4); !slices.Equal(got, want) {
		t.Fatalf("timeline after the follow %v, want %v", got, want)
	}

	timelinetest.Unfollow(t, s, 1, 3)
	if got := feedIDs(t, s, 1); len(got) != 0 {
		t.Fatalf("feed after the unfollow %v, want none of user 3's", got)
	}
	if got := timelinetest.WalkIDs(t, s, 1, 4); !slices.Equal(got, timelinetest.NewestFirst(own)) {
		t.Fatalf("timeline after the unfollow %v, want user 2's %v", got, timelinetest.IDs(own))
	}
	c1 := s.Counters()
	if c1[counter.Rebuilds] != c0[counter.Rebuilds] || c1[counter.CacheErrors] != 0 || c1[counter.FeedPages] == c0[counter.FeedPages] {
		t.Fatalf("counters %v -> %v: want pages from the feed, no rebuild, no fallback", c0, c1)
	}
}

// TestTrimIsAmortised: a feed grows past its cap by posts until it holds
// Cap + Cap/8 ids, and the post after that trims it back to Cap at once:
// one trim per Cap/8 + 1 posts, never more ids than that.
func TestTrimIsAmortised(t *testing.T) {
	const cap, slack = 16, 2 // slack: Cap/8
	s := open(t, redis.Config{Cap: cap})
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.PostN(t, s, 2, cap)
	timelinetest.Newest(t, s, 1) // builds the feed with cap ids
	sizes := []int{len(feedIDs(t, s, 1))}
	for range 3 * (slack + 1) {
		timelinetest.Post(t, s, 2, "one more")
		sizes = append(sizes, len(feedIDs(t, s, 1)))
	}
	want := []int{cap}
	for range 3 {
		for i := 1; i <= slack; i++ {
			want = append(want, cap+i)
		}
		want = append(want, cap)
	}
	if !slices.Equal(sizes, want) {
		t.Fatalf("feed sizes after each post %v, want %v", sizes, want)
	}
	if c := s.Counters(); c[counter.Rebuilds] != 1 {
		t.Fatalf("counters %v: want the one rebuild", c)
	}
}

// TestRedisRestartUnderTraffic: readers and writers run while the
// redis-server is killed and restarted (redistest.RestartUnderTraffic):
// no read fails, nothing acknowledged is lost, and the feeds are rebuilt
// on read and serve the pages again.
func TestRedisRestartUnderTraffic(t *testing.T) {
	redistest.RestartUnderTraffic(t, redistest.RestartCase{
		Open: func(t *testing.T, addr string) redistest.Store {
			s, err := redis.Open(context.Background(), redis.Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: addr, Cap: 50})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Rebuilds: counter.Rebuilds, Served: counter.FeedPages, FellBack: counter.CacheErrors,
	})
}

// TestFeedsAreCompact: a feed at the default cap, filled to just before a
// trim, takes no more memory than the same ids in a sorted set kept
// compact (a listpack, as the sandbox keeps sets of up to
// sandbox.RedisListpackEntries members), and at least 4 times less than
// in a skiplist, Redis's encoding of larger sets.
func TestFeedsAreCompact(t *testing.T) {
	s := open(t, redis.Config{})
	timelinetest.Follow(t, s, 1, 2)
	n := s.Cap() + s.Cap()/8 // filled to just before a trim
	timelinetest.PostN(t, s, 2, s.Cap()+1)
	timelinetest.Newest(t, s, 1) // builds the feed with Cap ids
	timelinetest.PostN(t, s, 2, n-s.Cap())
	if got := len(feedIDs(t, s, 1)); got != n {
		t.Fatalf("feed of %d ids, want %d", got, n)
	}
	rc := s.Redis()
	do := func(build func(b redisx.Builder) redisx.Completed) redisx.Result {
		return rc.Do(context.Background(), build)
	}
	// toSet copies the feed's ids into a sorted set (score = member = id).
	toSet := redisx.NewScript(`
local ids = redis.call('LRANGE', KEYS[1], 0, -2)
for i = 1, #ids, 500 do
	local batch = {}
	for j = i, math.min(i + 499, #ids) do
		batch[#batch + 1] = ids[j]
		batch[#batch + 1] = ids[j]
	end
	redis.call('ZADD', KEYS[2], unpack(batch))
end
return redis.call('OBJECT', 'ENCODING', KEYS[2])`)
	setLimit := func(n int) {
		if err := do(func(b redisx.Builder) redisx.Completed {
			return b.ConfigSet().ParameterValue().ParameterValue("zset-max-listpack-entries", strconv.Itoa(n)).Build()
		}).Error(); err != nil {
			t.Fatal(err)
		}
	}
	copyTo := func(key, wantEnc string) {
		enc, err := rc.Run(context.Background(), false, toSet, redisx.Call{Keys: []string{s.FeedKey(1), key}}).ToString()
		if err != nil || enc != wantEnc {
			t.Fatalf("the copy's encoding is %q (%v), want %s", enc, err, wantEnc)
		}
	}
	compactKey, skipKey := s.FeedKey(1)+":listpack", s.FeedKey(1)+":skiplist"
	copyTo(compactKey, "listpack")
	setLimit(128)
	defer setLimit(sandbox.RedisListpackEntries)
	copyTo(skipKey, "skiplist")
	usage := func(key string) int64 {
		n, err := do(func(b redisx.Builder) redisx.Completed { return b.MemoryUsage().Key(key).Build() }).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	list, compact, skip := usage(s.FeedKey(1)), usage(compactKey), usage(skipKey)
	t.Logf("a feed of %d ids and its sentinel: %d bytes as a list (%.1f an id); the ids in a sorted set: %d bytes as a listpack (%.1f an id), %d as a skiplist (%.1f an id)",
		n, list, float64(list)/float64(n), compact, float64(compact)/float64(n), skip, float64(skip)/float64(n))
	if list > compact || list*4 > skip {
		t.Fatalf("the feed takes %d bytes, the same ids in a sorted set %d as a listpack and %d as a skiplist: want no more than the listpack and at least 4 times less than the skiplist", list, compact, skip)
	}
}
