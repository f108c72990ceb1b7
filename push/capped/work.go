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
// (3 rows read and 1 written a trim). In a run (Demand.Run) the trims are
// fewer: the load left each mailbox at the cap, and it is trimmed only
// once slack+1 entries more came in (runDeletes).
//
// A mailbox holds the newest cap + slack/2 entries of its timeline on
// average (in a run, cap plus the entries since the load, up to slack/2),
// so a followee's messages above its reader's floor are that share of
// theirs. A follow looks for the cap-th newest of them and backfills
// them: 2 rows read a message, one written, and 6 read and 3 written
// besides (the follow, the state row). An unfollow reads the followee's
// messages, probes the mailbox for each and deletes those it finds: one
// read a message, one read and one deleted a row found, and 13 read and 2
// written besides. Follows and unfollows balance, so a follow's entries
// push none out: the trims are the posts'. The footprint is at most cap
// mailbox rows per user. TestPostRowsMatchWork, TestFollowRowsMatchWork
// and TestRunPostRowsMatchWork count a post, a follow and an unfollow, and
// a post after the load's state, against this.
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
	deletes := full * a // every entry in pushes one out
	// A mailbox holds cap + slack/2 entries on average, the newest of
	// the timeline; a followee's messages among them are their share.
	kept := capN + slack/2
	if d.Run != nil {
		deletes = runDeletes(d, capN, slack, a)
		kept = math.Min(timeline, capN+math.Min(slack/2, (d.Run.PostsBefore+d.Run.Posts/2)*a/d.Users))
	}
	trims := deletes / (slack + 1)
	post := push.PostWork(a)
	post.RowsRead += 2*a + deletes + 3*trims
	post.RowsWritten += 2*a + deletes + trims
	post.Statements += 1 + 2*trims
	page := push.PageWork(d)
	m := d.FollowedMessages()
	above := m * math.Min(1, kept/timeline)
	follow := registry.Work{RowsRead: 2*above + 6, RowsWritten: above + 3, Statements: 7}
	unfollow := registry.Work{RowsRead: m + above + 13, RowsWritten: above + 2, Statements: 4}
	return registry.OpWork{Newest: page, Older: page, Post: post, Follow: follow, Unfollow: unfollow},
		registry.Footprint{MailboxRows: math.Min(d.MailboxRows(), d.Users*capN)}
}

// runDeletes is the rows a post's trims delete, on average, in a run's
// phase (d.Run): the load left each mailbox at its timeline's length, at
// most cap, and a mailbox is trimmed, of slack+1 rows, each time the
// entries since the load take it past cap + slack again. A user of class
// c gets a·Followees/Edges entries a post (a post's audience shared out
// over the follows); their entries since the load are a Poisson count,
// and the trims of the phase are those that the phase's entries add:
// E⌊max(0, Y − shift)/(slack+1)⌋ after the phase less before it, shift
// being how far below the cap the load left the mailbox.
func runDeletes(d registry.Demand, capN, slack, a float64) float64 {
	k := slack + 1
	edges, posts := d.Edges(), math.Max(d.Run.Posts, 1)
	if edges == 0 {
		return 0
	}
	// The posts before the phase reach the activity's expected audience;
	// the phase's own reach a (the phase's count, where the run made one:
	// registry.RunHistory.Audience).
	expected := d.MeanOverPosts(func(c registry.UserClass) float64 { return c.Followers })
	var total float64
	for _, c := range d.Classes {
		if c.Users == 0 || c.Followees == 0 {
			continue
		}
		per := a * c.Followees / edges
		shift := capN - math.Min(c.Followees*d.FolloweeMessages(), capN)
		before := d.Run.PostsBefore * expected * c.Followees / edges
		total += c.Users * k * (trimsAfter(before+posts*per, shift, k) - trimsAfter(before, shift, k))
	}
	return total / posts
}

// trimsAfter is E⌊max(0, Y − shift)/k⌋ for Y Poisson of mean x: the
// trims of a mailbox after Y entries.
func trimsAfter(x, shift, k float64) float64 {
	if x <= 0 {
		return 0
	}
	if x > 1e6 { // the Poisson's spread is small beside its mean
		return math.Max(0, (x-shift)/k-(k-1)/(2*k))
	}
	sd := math.Sqrt(x)
	var sum float64
	for y := math.Max(0, math.Floor(x-12*sd-1)); y <= x+12*sd+1; y++ {
		lg, _ := math.Lgamma(y + 1)
		sum += math.Exp(y*math.Log(x)-x-lg) * math.Floor(math.Max(0, y-shift)/k)
	}
	return sum
}
