package hybrid

import (
	"math"

	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
)

// Work is hybrid's cost model (registry.Model.Work): push's, split at the
// threshold (registry.Demand.SplitAt). A post counts its author's
// followers up to the threshold (min(f, threshold) rows read); below the
// threshold it is push's post to them, above it its message and the
// author's listing as pulled (a row written, whether listed before or
// not). A page
// is push's mailbox page, one lookup of the reader's followed celebrities,
// and for each of them a probe of their newest ids (3 rows each, as the
// pull merge's step 1), then their ids that fall among the mailbox's
// entries, each a row of the merge's scratch table with the mailbox's
// ids; an older page's probes read the pulled authors' messages above
// the cursor too. Follows and
// unfollows are push's (a celebrity's followee backfills nothing, which
// the model does not count). The mailbox holds the posts of the authors
// below the threshold.
func Work(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	threshold := float64(cfg.Int(OptionThreshold))
	split := d.SplitAt(threshold)
	post := push.PostWork(split.AudienceBelow)
	post.RowsRead += d.MeanOverPosts(func(c registry.UserClass) float64 { return math.Min(c.Followers, threshold) })
	// A pulled author's post lists them (INSERT IGNORE: a row written,
	// listed or not).
	post.RowsWritten += split.PostShare
	post.Statements++
	page := push.PageWork(d).Add(registry.Work{RowsRead: 1, Statements: 1})
	older := page
	if c := split.ReadFolloweesAbove; c > 0 {
		pulled := sqlread.MergeWork(c, 0, false)
		pulled.Statements = 1
		page = page.Add(pulled)
		// The merge (sqlread.MergeOver) takes as floor the Fetch()-th
		// newest of the mailbox's Fetch() ids and the c heads: about the
		// (Fetch() − c)-th mailbox entry. It reads the pulled authors'
		// ids between their heads and the floor: of the reader's
		// followees' posts a share q is theirs (followees weighed by
		// their followers), so (Fetch() − c)·q/(1−q) fall there, the c
		// heads known already, at most Fetch() an author. Those ids and
		// the Fetch() known ones are rows of the statement's derived
		// table, which its window function (the count of the ids)
		// updates each.
		fetch := float64(d.Page + 1)
		q := 1.0
		if all := d.MeanOverFollowees(func(u registry.UserClass) float64 { return u.Posts }); all > 0 {
			q = d.MeanOverFollowees(func(u registry.UserClass) float64 {
				if u.Followers >= threshold {
					return u.Posts
				}
				return 0
			}) / all
		}
		ids := c * fetch
		if q < 1 {
			ids = math.Min(ids, math.Max(0, (fetch-c)*q/(1-q)-c))
		}
		if ids > 0 {
			page = page.Add(registry.Work{RowsRead: ids, RowsWritten: fetch + ids})
		}
		// An older page's probe of each pulled author's newest id below
		// the cursor walks down from their newest, reading their messages
		// above the cursor: q of the entries of the OlderDepth − 1 pages
		// above it.
		older = page.Add(registry.Work{RowsRead: math.Max(0, d.OlderDepth-1) * fetch * q})
	}
	mailbox := d.MailboxRows()
	for _, c := range d.Classes {
		if c.Followers >= threshold {
			mailbox -= c.Users * d.MessagesOf(c) * c.Followers
		}
	}
	return registry.OpWork{Newest: page, Older: older, Post: post, Follow: push.FollowWork(d), Unfollow: push.FollowWork(d)},
		registry.Footprint{MailboxRows: mailbox}
}
