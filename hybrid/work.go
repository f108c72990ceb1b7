package hybrid

import (
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
)

// Work is hybrid's cost model (registry.Model.Work): push's, split at the
// threshold (registry.Demand.SplitAt). A post counts its author's
// followers (f rows read); below the threshold it is push's post to them,
// above it only its message. A page is push's mailbox page, one lookup
// of the reader's followed celebrities, and for each of them a probe of
// their newest ids (3 rows each, as the pull merge's step 1). Follows and
// unfollows are push's (a celebrity's followee backfills nothing, which
// the model does not count). The mailbox holds the posts of the authors
// below the threshold.
func Work(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	split := d.SplitAt(float64(cfg.Int(OptionThreshold)))
	a := d.PostAudience()
	post := push.PostWork(split.AudienceBelow)
	post.RowsRead += a
	post.Statements++
	page := push.PageWork(d).Add(registry.Work{RowsRead: 1, Statements: 1})
	if c := split.ReadFolloweesAbove; c > 0 {
		pulled := sqlread.MergeWork(c, 0, false)
		pulled.Statements = 1
		page = page.Add(pulled)
	}
	mailbox := d.MailboxRows()
	for _, c := range d.Classes {
		if c.Followers >= float64(cfg.Int(OptionThreshold)) {
			mailbox -= c.Users * d.MessagesOf(c) * c.Followers
		}
	}
	return registry.OpWork{Newest: page, Older: page, Post: post, Follow: push.FollowWork(d), Unfollow: push.FollowWork(d)},
		registry.Footprint{MailboxRows: mailbox}
}
