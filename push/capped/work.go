package capped

import (
	"math"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
)

// Work is push-capped's cost model (registry.Model.Work), from its
// statements. Pages within the cap are push's (push.PageWork); the
// benchmark's older pages (3.5 pages deep on average) stay within it. A
// post by an author of f followers writes push's 1+f rows and counts the
// followers' entries with one INSERT ... ON DUPLICATE KEY UPDATE (f rows
// written and f updated, the follows and the state rows read: 4f rows
// read with the fan-out's). Once a mailbox is full (the timelines are
// longer than the cap), every entry in costs one entry out: the trim
// deletes (and reads) slack+1 rows once per slack+1 entries, and updates
// the state row. A follow backfills at most cap of the followee's messages,
// after looking for the cap-th newest (up to cap rows read). The footprint
// is at most cap mailbox rows per user.
func Work(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	capN := float64(cfg.Int(OptionCap))
	slack := float64(cfg.Int(OptionSlack))
	if slack == 0 {
		slack = math.Max(1, math.Floor(capN/8))
	}
	timeline := d.ReadFollowees() * d.FolloweeMessages() // entries a whole mailbox would hold
	full := 0.0
	if timeline > capN {
		full = 1
	}
	a := d.PostAudience()
	post := push.PostWork(a)
	post.RowsRead += 3 * a
	post.RowsWritten += a + full*(a+a/(slack+1))
	post.Statements += 1 + full*2*a/(slack+1)
	page := push.PageWork(d)
	m := math.Min(d.FollowedMessages(), capN)
	follow := registry.Work{RowsRead: 2*m + 2, RowsWritten: m + 3, Statements: 7}
	unfollow := push.FollowWork(d)
	unfollow.RowsWritten++
	unfollow.Statements++
	return registry.OpWork{Newest: page, Older: page, Post: post, Follow: follow, Unfollow: unfollow},
		registry.Footprint{MailboxRows: math.Min(d.MailboxRows(), d.Users*capN)}
}
