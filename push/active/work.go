package active

import (
	"math"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
)

// RebuildWork is the work of one rebuild of entries entries for a reader
// of followees authors: the pull merge over the followees (3 rows per
// followee; its batch rounds and last statement read about 2.25 rows per
// entry and write as many, the entries and the scratch rows), the entries
// written (Rebuilt; the rows are the rebuild's, RebuildRowsRead and
// RebuildRowsWritten), the state row's lock and update: six statements.
func RebuildWork(followees, entries float64) registry.Work {
	read, written := 3*followees+2.25*entries, 2.25*entries+2
	return registry.Work{
		RowsRead: read, RowsWritten: written, Statements: 6,
		Rebuilt: entries, RebuildRowsRead: read, RebuildRowsWritten: written,
	}
}

// Work is push-active's cost model (registry.Model.Work), from its
// statements. A page looks up its reader's state row, then reads push's
// page (push.PageWork); a cold reader's (registry.Demand.ColdReads: in
// the steady state one who read last more than a window ago, in a run
// also one the load left inactive, by the option active_reads, who has
// not read since) rebuilds first (RebuildWork): the pull merge of the
// newest rebuild entries of the timeline (at most all of it) over the
// reader's followees and the entries written to the mailbox, whose CPU a
// calibration prices per entry (registry.Work.Rebuilt), not per row.
// TestRebuildRowsMatchWork counts a cold and a
// warm read in the benchmark's shape: 43 followees of 100 messages, each
// message's author drawn at random, as the dataset draws them (with every
// author's ids evenly interleaved a rebuild reads and writes about 2 per
// entry, the rounds ending together). A post counts the author's f
// followers, then copies its id to the active ones through a join of
// follows and state rows: 3f rows read, 1+a·f written for the share a of
// followers active (registry.Demand.ActiveAudience: within the window,
// and in a run not still as the load left them). Follows and
// unfollows are push's, with the state row locked. The mailboxes are the
// active readers' only.
func Work(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	window := cfg.Duration(OptionWindow).Seconds()
	rebuild := math.Min(float64(cfg.Int(OptionRebuild)), d.ReadFollowees()*d.FolloweeMessages())
	active := d.ActiveAudience(window, cfg.Float(OptionActiveReads))
	returning := d.ColdReads(window, cfg.Float(OptionActiveReads))
	page := push.PageWork(d)
	page.RowsRead++
	page.Statements++
	newest := page.Add(RebuildWork(d.ReadFollowees(), rebuild).Scale(returning))
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
