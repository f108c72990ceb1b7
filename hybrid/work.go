package hybrid

import (
	"math"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
)

// Work is hybrid's cost model (registry.Model.Work): push's, split at the
// threshold (registry.Demand.SplitAt). A post counts its author's
// followers up to the threshold (min(f, threshold) rows read, the count's
// LIMIT); below the threshold it is push's post to them, above it its
// message and the author's listing as pulled (a row written, whether
// listed before or not). A page is push's mailbox page, one lookup of the
// reader's followed celebrities in the same statement, for each of them
// its pull_follows row and a probe of its newest id (2 rows), and the
// pulled authors' part of the page's last statement (PulledPage); an
// older page's probes read the pulled authors' messages above the cursor
// too. Follows and unfollows are push's (a celebrity's followee backfills
// nothing, which the model does not count). The mailbox holds the posts
// of the authors below the threshold.
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
		// The probes' subqueries and the last statement's UNION
		// branches are parsed and planned each (about 20µs a branch,
		// package sqlread's Merge): taken as one statement more.
		page = page.Add(registry.Work{RowsRead: 2 * c, Statements: 1}).Add(PulledPage(d, threshold))
		// An older page's probe of each pulled author's newest id below
		// the cursor walks down from their newest, reading their messages
		// above the cursor: q of the entries of the OlderDepth − 1 pages
		// above it, q the pulled authors' share of the followees' posts
		// (followees weighed by their followers).
		fetch := d.Fetch()
		q := 1.0
		if all := d.MeanOverFollowees(func(u registry.UserClass) float64 { return u.Posts }); all > 0 {
			q = d.MeanOverFollowees(func(u registry.UserClass) float64 {
				if u.Followers >= threshold {
					return u.Posts
				}
				return 0
			}) / all
		}
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

// PulledPage is what a page's pulled authors add to its last statement
// when their newest messages reach the page (sqlread.MergeOver). The
// statement's floor is the Fetch()-th newest of the mailbox's Fetch() ids
// and the pulled authors' heads: below the page's own floor, since the
// mailbox's ids leave out the pulled authors' messages. Each pulled
// author whose head lies above that floor is read from its head down to
// it, at most Fetch()-1 ids (its rank's limit), and one row more where a
// range ends short of its limit; the statement merges those ids with the
// mailbox's as a UNION whose rows the window count updates in a scratch
// table. A page no pulled head reaches reads the mailbox page's bodies
// only, as push's does.
//
// A reader of g followees sees a merged stream of their messages; a
// followee of class a holds MessagesOf(a) of the g·FolloweeMessages, a
// share p of each entry, and the pulled followees together a share s. The
// mailbox's Fetch() ids span Fetch()/(1-s) entries of the stream, of which
// N ~ Poisson(Fetch()·p/(1-s)) are a pulled author's. The pulled
// followees of the reader are g times the share of follows whose followee
// is of a class at or above the threshold; whether any head reaches the
// page is taken as a Poisson count of them. Expectations are over the
// readers (weighed by Reads) and the pulled authors' classes, not of the
// mean reader: on a power-law graph a few celebrities post most of the
// messages and fill most of their followers' pages.
func PulledPage(d registry.Demand, threshold float64) registry.Work {
	fetch := d.Fetch()
	limit := int(fetch) - 1
	perFollowee := d.FolloweeMessages()
	var edges float64
	for _, c := range d.Classes {
		edges += c.Users * c.Followers
	}
	if edges <= 0 || perFollowee <= 0 {
		return registry.Work{}
	}
	// The pulled authors, by how many messages each holds: classes that
	// differ only in what their users follow are one group here.
	type pulled struct{ share, messages float64 } // of the follows; each one's messages
	var above []pulled
	group := map[float64]int{}
	for _, a := range d.Classes {
		if a.Followers >= threshold && a.Users > 0 {
			m := d.MessagesOf(a)
			i, ok := group[m]
			if !ok {
				i = len(above)
				group[m] = i
				above = append(above, pulled{0, m})
			}
			above[i].share += a.Users * a.Followers / edges
		}
	}
	// page is, for a reader of class c, the pulled heads above the floor,
	// the ids read below them, and the range ends read; it depends on the
	// class's followees alone, so each count is worked out once.
	type pageRows struct{ heads, past, ends float64 }
	pages := map[float64]pageRows{}
	page := func(c registry.UserClass) (heads, past, ends float64) {
		if r, ok := pages[c.Followees]; ok {
			return r.heads, r.past, r.ends
		}
		defer func() { pages[c.Followees] = pageRows{heads, past, ends} }()
		total := c.Followees * perFollowee
		if total <= 0 {
			return 0, 0, 0
		}
		shares := make([]float64, len(above)) // of the reader's stream
		var s float64
		for i, a := range above {
			shares[i] = math.Min(1, a.messages/total)
			s += c.Followees * a.share * shares[i]
		}
		// span solves (1-s)·span + Σ n·P(N ≥ 1 within span) = Fetch():
		// the known ids newer than the floor.
		known := func(span float64) float64 {
			k := math.Max(0, 1-s) * span
			for i, a := range above {
				k -= c.Followees * a.share * math.Expm1(-span*shares[i])
			}
			return k
		}
		span := registry.SolveIncreasing(known, fetch, fetch, 1e6*fetch, 40)
		for i, a := range above {
			n := c.Followees * a.share
			h, p, e := pastHead(span*shares[i], limit)
			heads, past, ends = heads+n*h, past+n*p, ends+n*e
		}
		return heads, past, ends
	}
	read := d.MeanOverReads(func(c registry.UserClass) float64 {
		_, past, ends := page(c)
		return past + ends
	})
	written := d.MeanOverReads(func(c registry.UserClass) float64 {
		heads, past, _ := page(c)
		return -math.Expm1(-heads)*fetch + past
	})
	return registry.Work{RowsRead: read, RowsWritten: written}
}

// pastHead is, for an author with N ~ Poisson(mu) ids at or above a merge's
// floor, the chance that their head is above it (N ≥ 1), the expected ids
// read below the head, min(N-1, limit), and the chance that the scan ends
// short of its limit (N-1 < limit), reading the row past its range.
func pastHead(mu float64, limit int) (head, past, end float64) {
	p := math.Exp(-mu) // P(N = n), from n = 0
	cum := p           // P(N ≤ n)
	for n := 1; n <= limit; n++ {
		p *= mu / float64(n)
		past += float64(n-1) * p
		end += p
		cum += p
	}
	past += float64(limit) * math.Max(0, 1-cum) // N-1 ≥ limit
	return 1 - math.Exp(-mu), past, end
}
