package redis

import (
	"math"

	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/registry"
)

// Work is push-redis's cost model (registry.Model.Work). A newest page
// within the cap is one script over the reader's feed (5 Redis commands:
// the script, the epoch, the sentinel, the TTL, the range), and an older
// page also finds its cursor in the feed (olderFind). A page's bodies come
// from the process's message cache (the newest message_cache messages,
// registry.Demand.NewestMiss; the rest by primary key). A returning
// reader's feed (none within the window) is rebuilt by the pull merge of
// cap entries (sqlread.MergeWork) and written back whole (a command per
// thousand ids, and 5 more). A post is pull's, then reads its author's
// followers (f rows), reads the head of each follower's feed and pushes
// its id onto each active follower's feed, a script per thousand
// followers (3 commands each besides). A follow backfills the followee's
// newest cap ids into the follower's feed (a tombstone check an id, and
// the feed rewritten once), an unfollow removes them: the followee's
// messages read. The feeds are the active readers' cap newest ids.
func Work(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	capN := float64(cfg.Int(OptionCap))
	window := cfg.Duration(OptionWindow).Seconds()
	g := d.ReadFollowees()
	fetch := d.Fetch()
	bodyMiss := d.NewestMiss(float64(cfg.Int(OptionMessageCache)))
	page := registry.Work{RowsRead: bodyMiss * fetch, RedisCommands: 5, Statements: bodyMiss, CacheCalls: 1}
	older := page.Add(registry.Work{RedisCommands: olderFind(d, capN)})
	rebuild := sqlread.MergeWork(g, capN, false).Add(registry.Work{RedisCommands: 5 + math.Ceil(capN/1000), CacheCalls: 1})
	newest := page.Add(rebuild.Scale(d.ReturningReads(window)))
	a := d.PostAudience()
	scripts := math.Max(1, math.Ceil(a/fanOutChunk))
	post := pull.PostWork().Add(registry.Work{RowsRead: a, RedisCommands: 3*scripts + a*(1+d.ActiveFollowers(window)), Statements: 1, CacheCalls: 1})
	m := math.Min(d.FollowedMessages(), capN)
	follow := registry.Work{RowsRead: 1 + m, RowsWritten: 1, RedisCommands: 8 + m, Statements: 3, CacheCalls: 2}
	active := d.ActiveUsers(window) * d.Users
	timeline := math.Min(capN, g*d.FolloweeMessages())
	return registry.OpWork{Newest: newest, Older: older, Post: post, Follow: follow, Unfollow: follow},
		registry.Footprint{CacheIDs: active * timeline, CacheKeys: active}
}

// olderFind is the Redis commands an older page spends finding its
// cursor in the feed (the script's below): one LPOS over the first
// cursorLook ids, where a page that follows the one before it finds its
// cursor while its depth keeps it there; deeper, an LLEN and a binary
// search of the feed's cap ids besides. Older pages are taken to lie
// evenly from page 2 to page 2·OlderDepth - 2, as the benchmark reads them
// (2 to 5 for its mean of 3.5).
func olderFind(d registry.Demand, capN float64) float64 {
	deepest := max(2, int(math.Round(2*d.OlderDepth-2)))
	search := 1 + math.Ceil(math.Log2(capN+1))
	var sum float64
	for depth := 2; depth <= deepest; depth++ {
		sum++ // LPOS
		if (depth-1)*d.Page > cursorLook {
			sum += search
		}
	}
	return sum / float64(deepest-1)
}

// cursorLook is how many of a feed's first ids the script's below looks
// through (LPOS ... MAXLEN) for a page's cursor before it searches.
const cursorLook = 64
