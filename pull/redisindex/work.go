package redisindex

import (
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/registry"
)

// Work is pull-redis's cost model (registry.Model.Work). A newest page is
// one script over the reader's index (5 Redis commands) and
// sqlread.MergeOver of the Fetch() followees it names (sqlread.OverWork:
// on a uniform graph about 2.35 rows read and 1.4 written per entry, on a
// skewed one more, as the followees who post most have more ids above the
// Fetch()-th head); a returning reader
// (none within the window) rebuilds the index first: each followee's
// newest id (3 rows) and a command each. Older pages are pull-merge's
// (sqlread.PageWork). A post is pull's, then reads its author's
// followers (f rows) and runs one script over their indexes: 3 commands,
// a look for each follower's index (f), and a raise of the author's score
// in each index there, those of the followers active within the window
// (TestPostCommandsMatchWork counts both). Follows and unfollows add the
// followee's newest id to, or remove it from, the index: a row and a few
// commands.
func Work(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	window := cfg.Duration(OptionWindow).Seconds()
	g := d.ReadFollowees()
	newest := sqlread.OverWork(d).Add(registry.Work{RedisCommands: 5, CacheCalls: 1})
	rebuild := registry.Work{RowsRead: 3 * g, RedisCommands: g + 2, Statements: 1, CacheCalls: 2}
	newest = newest.Add(rebuild.Scale(d.ReturningReads(window)))
	a := d.PostAudience()
	active := d.ActiveFollowers(window)
	post := pull.PostWork().Add(registry.Work{RowsRead: a, RedisCommands: 3 + a + a*active, Statements: 1, CacheCalls: 1})
	follow := registry.Work{RowsRead: 2, RowsWritten: 1, RedisCommands: 4, Statements: 3, CacheCalls: 2}
	return registry.OpWork{Newest: newest, Older: sqlread.PageWork(d, true), Post: post, Follow: follow, Unfollow: follow},
		registry.Footprint{CacheIDs: d.ActiveUsers(window) * d.Users * g, CacheKeys: d.ActiveUsers(window) * d.Users}
}
