package selective

import (
	"math"
	"sort"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
)

// Work is selective's cost model (registry.Model.Work). An edge is
// pushed when its follower reads at least H/L times as often as its
// author posts (option h and l, else DefaultH and DefaultL): with the
// classes' rates (registry.Demand.ReadRate, PostRate), a post by an author
// of class c reaches the share of its followers who read that often, and
// a reader pulls the followees who post more than L/H times as often as
// they read. A post reads its author's pushed edges (and the message's 2
// rows) and writes a mailbox row per pushed edge; a page is push's mailbox
// page plus the reader's pull_edges range (about 6 rows), then 3 rows per
// pulled author. Follows and unfollows are push's.
//
// The flusher re-decides, once per flush events (option flush) of reads
// and posts, every author who posted since the last: their pushed edges
// joined to the followers' rates, 2 rows a follower. A flusher that keeps
// up does that for the distinct authors of a flush's posts
// (distinctAuthors). One that cannot, in a benchmark that posts as fast
// as it can, re-decides at its own pace, about flusherRowsPerSec rows a
// second whatever the posts: in a run (Demand.Run) a post's share is the
// smaller of the two; the plan's steady state is a flusher that keeps up.
func Work(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	h, l := cfg.Float(OptionH), cfg.Float(OptionL)
	if h == 0 || l == 0 {
		h, l = DefaultH, DefaultL
	}
	ratio := h / l
	// Followers by read rate and followees by post rate, each with its
	// weight among follows, to answer "what share reads (posts) at least
	// so often" by a binary search.
	byRead := newShares(d.Classes, d.ReadRate, func(c registry.UserClass) float64 { return c.Users * c.Followees })
	byPost := newShares(d.Classes, d.PostRate, func(c registry.UserClass) float64 { return c.Users * c.Followers })
	// pushedTo is the share of an author's followers who read at least
	// ratio times as often as the author (of class c) posts.
	pushedTo := func(c registry.UserClass) float64 { return byRead.atLeast(ratio * d.PostRate(c)) }
	pushedRows := d.MeanOverPosts(func(c registry.UserClass) float64 { return c.Followers * pushedTo(c) })
	var mailbox float64
	for _, c := range d.Classes {
		mailbox += c.Users * d.MessagesOf(c) * c.Followers * pushedTo(c)
	}
	// pulled is the followees a reader pulls: edges whose author posts
	// more than 1/ratio times as often as the reader reads.
	pulled := d.MeanOverReads(func(u registry.UserClass) float64 {
		return u.Followees * byPost.above(d.ReadRate(u)/ratio)
	})
	a := d.PostAudience()
	flush := 2 * a
	if d.PostsPerSec > 0 {
		batch := float64(cfg.Int(OptionFlushEvery)) * d.PostsPerSec / (d.PostsPerSec + d.ReadsPerSec)
		flush *= distinctAuthors(d, batch) / batch
		if d.Run != nil {
			flush = math.Min(flush, flusherRowsPerSec/d.PostsPerSec)
		}
	}
	post := registry.Work{RowsRead: pushedRows + 2 + flush, RowsWritten: 1 + pushedRows, Statements: 4}
	page := push.PageWork(d).Add(registry.Work{RowsRead: 6 + 3*pulled, Statements: 1})
	if pulled > 0 {
		page.Statements += 2
	}
	return registry.OpWork{Newest: page, Older: page, Post: post, Follow: push.FollowWork(d), Unfollow: push.FollowWork(d)},
		registry.Footprint{MailboxRows: mailbox}
}

// flusherRowsPerSec is the rows a flusher that cannot keep up reads a
// second re-deciding authors: one goroutine's statements, one after
// another. Counted on this machine's quiet runs of the benchmark, which
// post at 3,300 to 4,000 a second (100,000 to 112,000; 70,000 on a
// machine loaded by other work).
const flusherRowsPerSec = 100_000

// distinctAuthors is how many distinct authors n posts have, each drawn
// by the classes' post rates.
func distinctAuthors(d registry.Demand, n float64) float64 {
	var sum float64
	for _, c := range d.Classes {
		if share := d.PostRate(c) / d.PostsPerSec; share > 0 {
			sum += c.Users * -math.Expm1(-n*share)
		}
	}
	return sum
}

// shares answers what share of a weight lies at or above a value.
type shares struct {
	values, cum []float64 // values ascending; cum[i] the weight of values[i:]
}

func newShares(cs []registry.UserClass, value, weight func(registry.UserClass) float64) shares {
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return value(cs[idx[a]]) < value(cs[idx[b]]) })
	s := shares{values: make([]float64, len(cs)), cum: make([]float64, len(cs)+1)}
	for k, i := range idx {
		s.values[k] = value(cs[i])
	}
	for k := len(idx) - 1; k >= 0; k-- {
		s.cum[k] = s.cum[k+1] + weight(cs[idx[k]])
	}
	return s
}

// atLeast is the share of the weight whose value is at least v.
func (s shares) atLeast(v float64) float64 {
	if s.cum[0] == 0 {
		return 0
	}
	return s.cum[sort.SearchFloat64s(s.values, v)] / s.cum[0]
}

// above is the share of the weight whose value is above v.
func (s shares) above(v float64) float64 {
	if s.cum[0] == 0 {
		return 0
	}
	k := sort.Search(len(s.values), func(i int) bool { return s.values[i] > v })
	return s.cum[k] / s.cum[0]
}
