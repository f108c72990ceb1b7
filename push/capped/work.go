package capped

import (
	"math"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
)

// Work is push-capped's cost model (registry.Model.Work), from its
// statements. Pages within the cap are push's (push.PageWork); the
// benchmark's older pages (3.5 pages deep on average) stay within it. A
// post by an author of f followers writes push's 1+f rows (reading the f
// follows) and counts the followers' entries with one INSERT ... ON
// DUPLICATE KEY UPDATE, which reads the f follows again and, for each
// follower's state row it meets, tries the insert, reads the row and
// updates it: 2f rows read, 2f written. Once a mailbox is full (the
// timelines are longer than the cap), every entry in costs one entry out:
// the trim deletes (and reads) slack+1 rows once per slack+1 entries,
// after finding the mailbox due, locking its state row and updating it
// (3 rows read and 1 written a trim). A follow backfills at most cap of
// the followee's messages, after looking for the cap-th newest (up to cap
// rows read). The footprint is at most cap mailbox rows per user.
// TestPostRowsMatchWork counts a post's rows against this.
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
	trims := full * a / (slack + 1)
	post := push.PostWork(a)
	post.RowsRead += 2*a + full*a + 3*trims
	post.RowsWritten += 2*a + full*a + trims
	post.Statements += 1 + 2*trims
	page := push.PageWork(d)
	m := math.Min(d.FollowedMessages(), capN)
	follow := registry.Work{RowsRead: 2*m + 2, RowsWritten: m + 3, Statements: 7}
	unfollow := push.FollowWork(d)
	unfollow.RowsWritten++
	unfollow.Statements++
	return registry.OpWork{Newest: page, Older: page, Post: post, Follow: follow, Unfollow: unfollow},
		registry.Footprint{MailboxRows: math.Min(d.MailboxRows(), d.Users*capN)}
}
