package active

import (
	"math"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
)

// Work is push-active's cost model (registry.Model.Work), from its
// statements. A page looks up its reader's state row, then reads push's
// page (push.PageWork); a returning reader's (one who read last more than
// a window ago, registry.Demand.ReturningReads) rebuilds first: the pull
// merge of rebuild entries over the reader's followees (a probe of each,
// then each entry and its message: 3 rows per followee and 2 per entry),
// and rebuild rows written. A post counts the author's f followers, then
// copies its id to the active ones through a join of follows and state
// rows: 3f rows read, 1+a·f written for the share a of followers active
// within the window (registry.Demand.ActiveFollowers). Follows and
// unfollows are push's, with the state row locked. The mailboxes are the
// active readers' only.
func Work(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	window := cfg.Duration(OptionWindow).Seconds()
	rebuild := float64(cfg.Int(OptionRebuild))
	active := d.ActiveFollowers(window)
	returning := d.ReturningReads(window)
	page := push.PageWork(d)
	page.RowsRead++
	page.Statements++
	newest := page.Add(registry.Work{
		RowsRead:    3*d.ReadFollowees() + 2*rebuild,
		RowsWritten: rebuild + 2,
		Statements:  6,
	}.Scale(returning))
	a := d.PostAudience()
	post := registry.Work{RowsRead: 3 * a, RowsWritten: 1 + active*a, Statements: 4}
	follow := push.FollowWork(d)
	follow.RowsRead += 2
	follow.Statements += 2
	unfollow := follow
	follow = follow.Scale(math.Max(active, 1e-9))
	return registry.OpWork{Newest: newest, Older: page, Post: post, Follow: follow, Unfollow: unfollow},
		registry.Footprint{MailboxRows: d.ActiveUsers(window) * d.MailboxRows()}
}
