package pull

import (
	"math"

	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/registry"
)

// Cost models of the pull strategies (registry.Model.Work). Every pull
// design posts the same way, a message row in two statements, and follows
// and unfollows a follow row; what differs is the read. The SQL
// strategies' rows per followee and per entry are counted on the
// benchmark's uniform graph at 1,000 users (pushpull bench --cost); their
// shape (per followee, per entry) is each statement's.

// PostWork is a pull post: the message row written, and on MariaDB the
// row of pushpull_meta its write guard reads (sql.GuardFrom).
func PostWork() registry.Work { return registry.Work{RowsRead: 1, RowsWritten: 1, Statements: 2} }

// followWork is a pull follow or unfollow: the follow row.
func followWork() registry.Work { return registry.Work{RowsRead: 1, RowsWritten: 1, Statements: 2} }

// sqlWork builds a model of a strategy that reads the tables alone, from
// its newest and older page's work for a reader of g followees.
func sqlWork(newest, older func(d registry.Demand, g float64) registry.Work) registry.WorkModel {
	return func(d registry.Demand, _ registry.Config) (registry.OpWork, registry.Footprint) {
		g := d.ReadFollowees()
		return registry.OpWork{
			Newest: newest(d, g), Older: older(d, g),
			Post: PostWork(), Follow: followWork(), Unfollow: followWork(),
		}, registry.Footprint{}
	}
}

// spWork: the stored procedure probes every followee and copies up to
// about half a page of each into a MEMORY table, then sorts it.
var spWork = sqlWork(
	func(_ registry.Demand, g float64) registry.Work {
		return registry.Work{RowsRead: 12.9 * g, RowsWritten: 10.8 * g, Statements: 1}
	},
	func(_ registry.Demand, g float64) registry.Work {
		return registry.Work{RowsRead: 12.8 * g, RowsWritten: 11.8 * g, Statements: 1}
	})

// clientWork: a query per followee reading its newest entries, then the
// merge in the client. The queries go concurrency (the option) at a time,
// so all but g/concurrency of them overlap others.
func clientWork(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	lanes := float64(max(1, cfg.Int(OptionConcurrency)))
	page := func(_ registry.Demand, g float64) registry.Work {
		return registry.Work{RowsRead: 12.5 * g, Statements: g + 1, Overlapped: g * (1 - 1/lanes)}
	}
	return sqlWork(page, page)(d, cfg)
}

// unionWork: the newest id of each followee (3 rows each), then one UNION
// ALL of the top followees' newest entries (about 10 rows per entry of a
// newest page, 12.3 of an older).
var unionWork = sqlWork(
	func(d registry.Demand, g float64) registry.Work {
		return registry.Work{RowsRead: 3*g + 10*d.Fetch(), RowsWritten: 5.4 * g, Statements: 2}
	},
	func(d registry.Demand, g float64) registry.Work {
		return registry.Work{RowsRead: 3*g + 12.3*d.Fetch(), RowsWritten: 5.4 * g, Statements: 2}
	})

// mergeWork: sqlread.PageWork of a page.
var mergeWork = sqlWork(
	func(d registry.Demand, _ float64) registry.Work { return sqlread.PageWork(d, false) },
	func(d registry.Demand, _ float64) registry.Work { return sqlread.PageWork(d, true) })

// recentReadWork is the database's part of a read of the lists kept in
// memcached: the followees when the process does not hold them
// (followee_cache readers of all are held) and the bodies it does not
// hold (the newest message_cache messages, registry.Demand.NewestMiss).
func recentReadWork(d registry.Demand, cfg registry.Config, g float64) registry.Work {
	followeeMiss := registry.Miss(float64(cfg.Int(OptionFolloweeCache)), d.Readers())
	bodyMiss := d.NewestMiss(float64(cfg.Int(OptionMessageCache)))
	w := registry.Work{RowsRead: followeeMiss*g + bodyMiss*d.Fetch()}
	w.Statements = followeeMiss + bodyMiss
	return w
}

// recentWork is pull-recent's: a page is one multi-get of the follow
// token and every followee's list (g+2 keys), a post appends to its
// author's list (a get of the list's state and an append), a follow or an
// unfollow renews the follower's token and rereads the follower's
// followees (about 0.7 rows per followee, counted at 1,000 users). The
// lists are every author's newest recent_len ids.
func recentWork(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	g := d.ReadFollowees()
	page := recentReadWork(d, cfg, g).Add(registry.Work{MCKeys: g + 2, CacheCalls: 1})
	post := PostWork().Add(registry.Work{MCKeys: 2, CacheCalls: 1})
	follow := followWork().Add(registry.Work{RowsRead: 0.7 * g, MCKeys: 1, CacheCalls: 1, Statements: 1})
	return registry.OpWork{Newest: page, Older: page, Post: post, Follow: follow, Unfollow: follow},
		registry.Footprint{CacheIDs: d.Users * float64(cfg.Int(OptionRecentLen)), CacheKeys: 2 * d.Users}
}

// activeWork is pull-active's: pull-recent's, except that a reader who
// follows more than twice active_len authors reads an index of the
// followees who posted last, and that a post also fetches its author's
// hint targets and appends a hint to the index of each of its followers
// who has one.
//
// A page is counted reader by reader: a reader of c followees below the
// index's threshold reads c+2 keys, one above it the index, the follow
// token and a key more, then the lists of the Fetch() authors the index
// puts first on a newest page, and of every author it holds (active_len)
// on an older one, whose cursor the index cannot cut. On a skewed graph
// the readers above the threshold follow several times the mean, so the
// keys they leave out are theirs, not g each.
//
// A post hints the followers above the threshold: an author of a
// followers has, among the u users of a class of c followees, about
// u·(1 − exp(−c·a/E)) followers (E follows in all), each follow of the
// class's users landing on the author with chance a/E and no user
// following an author twice. Below saturation it is the author's
// followers times the share of follows made by those users
// (FollowerShareOver), but the most followed authors of a power-law graph
// are followed by nearly every heavy follower there is, far fewer than
// that product. TestActiveKeysOnPowerLawAgainstCountedRun counts both.
func activeWork(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	w, f := recentWork(d, cfg)
	l := float64(cfg.Int(OptionActiveLen))
	heavy := d.FolloweesOver(2 * l)
	g := d.ReadFollowees()
	pageKeys := func(indexed float64) float64 {
		return d.MeanOverReads(func(c registry.UserClass) float64 {
			if c.Followees > 2*l {
				return indexed + 3
			}
			return c.Followees + 2
		})
	}
	calls := registry.Work{CacheCalls: 1 + heavy}
	w.Newest = recentReadWork(d, cfg, g).Add(calls).Add(registry.Work{MCKeys: pageKeys(d.Fetch())})
	w.Older = recentReadWork(d, cfg, g).Add(calls).Add(registry.Work{MCKeys: pageKeys(l)})
	w.Post = w.Post.Add(registry.Work{MCKeys: 1 + d.HeavyFollowersOfPost(2*l), CacheCalls: 1})
	f.CacheIDs += d.Users * heavy * l
	return w, f
}

// patchCalls are the round trips to memcached with which a page patches
// an index after a follow or an unfollow, besides its own: the follow
// token read, the placeholder put and read back, the index stored.
const patchCalls = 4

// homeWindow is how long a reader's home index lives after it was built
// (a little over the lists' ten minutes): the readers who read within it
// are registered, and posts hint their indexes.
const homeWindow = 11 * 60.0

// hybridMemcachedWork is hybrid-memcached's: a page of a reader whose
// index lives is one multi-get of the index, the follow token and each
// followed celebrity's list (registry.Demand.SplitAt); a returning reader
// (none within homeWindow) rebuilds it as pull-recent reads, registering
// with each followee in the database and in memcached (a row and a key
// each). A post writes its row, appends to its author's list, and, below
// the threshold, hints the index of each registered follower. A follow or
// an unfollow writes its row and renews the follower's token; the
// follower's next page reads the follower's g followees again (g+1 rows,
// the end of the range with them) and patches the index: 4 round trips to
// memcached besides the page's, each a key and the server's fence (the
// follow token, the placeholder put in the index's place and read back,
// the patched index stored). A follow of an author below the threshold
// also counts the author's followers (up to the threshold: is the author
// a celebrity now?), registers the follower with the author (a row
// written, and one more round trip: the author's hint targets appended
// to) and the patch reads the author's ids above the index's floor: the
// index holds the newest home_len of the follower's followees' messages,
// so about home_len·m_a/(g·m) of an author of m_a messages among
// followees of m each. TestHybridMemcachedFollowRows counts the rows and
// keys of both. A page the index cannot prove (below its floor, or met
// while another read patches it) is read from the database, about 200
// rows, and left out: 0.0002 to 0.0007 of the default mix's operations
// in rate searches at 3,000 users.
func hybridMemcachedWork(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	threshold := float64(cfg.Int(OptionThreshold))
	split := d.SplitAt(threshold)
	g := d.ReadFollowees()
	returning := d.ReturningReads(homeWindow)
	page := recentReadWork(d, cfg, g).Add(registry.Work{MCKeys: 3 + split.ReadFolloweesAbove, CacheCalls: 1})
	rebuild := registry.Work{RowsRead: g, RowsWritten: g, MCKeys: 2*g + 3, Statements: 2, CacheCalls: 3}
	newest := page.Add(rebuild.Scale(returning))
	registered := d.ActiveFollowers(homeWindow)
	post := PostWork().Add(registry.Work{MCKeys: 3 + split.AudienceBelow*registered, CacheCalls: 2})
	changed := followWork().Add(registry.Work{RowsRead: g + 1, MCKeys: 2 + 2*patchCalls, CacheCalls: 1 + patchCalls, Statements: 1})
	keep, perFollowee := float64(cfg.Int(OptionHomeLen)), g*d.FolloweeMessages()
	pushed := d.MeanOverFollowed(func(c registry.UserClass) float64 {
		if c.Followers >= threshold || perFollowee <= 0 {
			return 0
		}
		return 1
	})
	counted := d.MeanOverFollowed(func(c registry.UserClass) float64 {
		if c.Followers >= threshold {
			return 0
		}
		return math.Min(c.Followers+1, threshold)
	})
	patched := d.MeanOverFollowed(func(c registry.UserClass) float64 {
		if c.Followers >= threshold || perFollowee <= 0 {
			return 0
		}
		return math.Min(keep+1, keep*d.MessagesOf(c)/perFollowee)
	})
	follow := changed.Add(registry.Work{RowsRead: counted + patched, RowsWritten: pushed, MCKeys: 2 * pushed, CacheCalls: pushed, Statements: 3 * pushed})
	unfollow := changed
	return registry.OpWork{Newest: newest, Older: page, Post: post, Follow: follow, Unfollow: unfollow},
		registry.Footprint{
			CacheIDs:  d.Users*float64(cfg.Int(OptionRecentLen)) + d.ActiveUsers(homeWindow)*d.Users*float64(cfg.Int(OptionHomeLen)),
			CacheKeys: 2*d.Users + d.ActiveUsers(homeWindow)*d.Users,
		}
}
