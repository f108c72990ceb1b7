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
// followers (4 commands each besides: the script, the epoch, the post's
// and the author's tombstones). A post by an author unfollowed within
// the tombstones' life (tombstoneTTL; Demand.UnfollowedAudience) also
// asks, for each live feed, whether its follower is one who unfollowed
// (a command each), and a full feed is trimmed back to cap, 5 commands,
// at every cap/8+1-th id pushed onto it (feedTrims). An id that reaches a
// feed after a newer one is inserted in its place by a scan from the
// head (2 commands more): it depends on how many posts are in flight at
// once, which the model leaves out (4 to 10 % of the ids pushed in the
// benchmark's posts phase, evidence/plan/redis-posts).
// TestPostCommandsMatchWork counts the trims and the tombstones' checks.
//
// A follow clears the edge's tombstone (3 commands) and reads the
// followee's newest cap ids (a row each); its script (3 commands) stops
// at a follower with no feed, and otherwise checks for a delete's
// tombstone each id above the feed's floor and rewrites the feed once (6
// more). A follower drawn uniformly holds a feed while active within the
// window; a full feed (its timeline longer than the cap) holds the newest
// cap of the follower's g·m entries, so that only about cap·m_a/(g·m) of
// a followee's m_a messages lie above its floor, not all of them
// (followEntries). An unfollow sets the tombstone (4 commands) and reads
// the followee's newest cap + cap/8 ids (the most a feed holds); its
// script (3 commands) removes them from a live feed by rewriting it once
// (6 more), or one by one when they are 4 or fewer: no command an id.
// TestFollowCommandsMatchWork counts both. The feeds are the active
// readers' cap newest ids.
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
	perLive := 1 + d.UnfollowedAudience(tombstoneTTL.Seconds()) + feedTrims(d, capN, float64(max(1, cfg.Int(OptionCap)/8)+1))
	post := pull.PostWork().Add(registry.Work{RowsRead: a, RedisCommands: 4*scripts + a*(1+d.ActiveFollowers(window)*perLive), Statements: 1, CacheCalls: 1})
	limit := capN + math.Max(1, math.Floor(capN/8))
	live := d.ActiveUsers(window)
	follow := registry.Work{RowsRead: 1 + followedIDs(d, capN), RowsWritten: 1,
		RedisCommands: 6 + live*(6+followEntries(d, capN)), Statements: 3, CacheCalls: 2}
	gone := followedIDs(d, limit)
	remove := 6.0 // the feed read and written again once
	if gone <= 4 {
		remove = gone // LREM each
	}
	unfollow := registry.Work{RowsRead: 1 + gone, RowsWritten: 1, RedisCommands: 7 + live*remove, Statements: 3, CacheCalls: 2}
	active := d.ActiveUsers(window) * d.Users
	timeline := math.Min(capN, g*d.FolloweeMessages())
	return registry.OpWork{Newest: newest, Older: older, Post: post, Follow: follow, Unfollow: unfollow},
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

// followedIDs is how many of its newest n ids a follow's followee has,
// on average over the followees of follows and unfollows
// (Demand.MeanOverFollowed), scaled in a run's phase by the draw its
// follows and unfollows made (Demand.FolloweeDraw) and at most n: the
// rows a follow (n the cap) or an unfollow (n the most a feed holds)
// reads.
func followedIDs(d registry.Demand, n float64) float64 {
	ids := d.MeanOverFollowed(func(c registry.UserClass) float64 { return math.Min(d.MessagesOf(c), n) })
	return math.Min(n, ids*d.FolloweeDraw())
}

// followEntries is how many of a new followee's newest capN ids a follow
// adds to a live feed, on average: those above the feed's floor. A
// follower drawn uniformly, of class c, follows c.Followees authors of
// FolloweeMessages each; while that timeline fits in the cap the feed
// holds all of it (its floor is 0) and takes all the followee's ids, else
// it holds the newest cap of the timeline's entries, the stretch of time
// in which a followee of m messages posted m·cap/timeline of them.
func followEntries(d registry.Demand, capN float64) float64 {
	m, kept := followedIDs(d, capN), d.FollowedMessages()
	var sum, users float64
	perFollowee := d.FolloweeMessages()
	for _, c := range d.Classes {
		timeline := c.Followees * perFollowee
		k := m
		if timeline > capN {
			k = math.Min(m, kept*capN/timeline)
		}
		sum += c.Users * k
		users += c.Users
	}
	if users == 0 {
		return 0
	}
	return sum / users
}

// trimCommands are the commands of a feed's trim (the script's trim: its
// sentinel, its length, the id at the cap, LTRIM, the new sentinel).
const trimCommands = 5

// feedTrims is the trims' commands per id pushed onto a live feed: a
// feed whose timeline outgrows the cap (its follower's followees'
// FolloweeMessages, as in followEntries) is trimmed back to cap ids at
// every every-th id pushed onto it, and one that fits is never trimmed;
// followers weigh by how many they follow (as a post's audience). A run's
// feeds (Demand.Run) start at the cap, rebuilt by the reads before the
// posts, and are first trimmed at their every-th push: a follower of g
// followees had, by the middle of the phase, (PostsBefore + Posts/2)·
// g·PostAudience/Edges ids pushed onto its feed, and is counted with the
// trims of the steady state once that reaches every, else none.
func feedTrims(d registry.Demand, capN, every float64) float64 {
	per := trimCommands / every
	pushed := math.Inf(1)
	if d.Run != nil {
		if edges := d.Edges(); edges > 0 {
			pushed = (d.Run.PostsBefore + d.Run.Posts/2) * d.PostAudience() / edges
		}
	}
	m := d.FolloweeMessages()
	return d.MeanOverFollowers(func(c registry.UserClass) float64 {
		if c.Followees*m <= capN || c.Followees*pushed < every {
			return 0
		}
		return per
	})
}
