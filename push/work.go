package push

import "github.com/pushpull/pushpull/registry"

// Work is push's cost model (registry.Model.Work), from its statements:
//
//   - a page, newest or older, is one backward range scan of the mailbox
//     joined to the messages: Fetch() = page+1 mailbox rows and as many
//     message rows, in one statement (PageWork);
//   - a post inserts its message and copies its id to every follower
//     with one INSERT ... SELECT over the followee index: it reads the
//     author's f followers and the row its write guard checks, and
//     writes 1+f rows (PostWork);
//   - a follow inserts the follow and backfills the followee's m messages
//     (2m rows read: the messages and the mailbox's unique check; 1+m
//     written); an unfollow deletes the follow and those rows, joined
//     through the messages (FollowWork).
//
// The footprint is the mailbox: every kept message once per follower of
// its author.
func Work(d registry.Demand, _ registry.Config) (registry.OpWork, registry.Footprint) {
	page := PageWork(d)
	return registry.OpWork{
		Newest: page, Older: page,
		Post:   PostWork(d.PostAudience()),
		Follow: FollowWork(d), Unfollow: FollowWork(d),
	}, registry.Footprint{MailboxRows: d.MailboxRows()}
}

// PageWork is the work of a page read from a whole mailbox: Fetch() rows
// of the mailbox and of the messages, one statement.
func PageWork(d registry.Demand) registry.Work {
	fetch := float64(d.Page + 1)
	return registry.Work{RowsRead: 2 * fetch, Statements: 1}
}

// PostWork is the work of push's post by an author of audience followers:
// the message row, the followers read and their mailbox rows written, and
// the row of pushpull_meta the write guard reads (sql.GuardFrom); the
// statements are the message's INSERT, the fan-out's and the commit.
func PostWork(audience float64) registry.Work {
	return registry.Work{RowsRead: 1 + audience, RowsWritten: 1 + audience, Statements: 3}
}

// FollowWork is the work of a follow or an unfollow on push's tables: the
// follow row and the followee's messages backfilled into (or removed from)
// the follower's mailbox.
func FollowWork(d registry.Demand) registry.Work {
	m := d.FollowedMessages()
	return registry.Work{RowsRead: 2 * m, RowsWritten: 1 + m, Statements: 3}
}
