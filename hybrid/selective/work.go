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
// classes' rates (registry.Demand.ReadRate, PostRate; in a run, the reads
// the bulk load started from, reads_per_post a post), a post by an author
// of class c reaches the share of its followers who read that often, and
// a reader pulls the followees who post more than L/H times as often as
// they read. A post reads its author's pushed edges (and the message's 2
// rows) and writes a mailbox row per pushed edge; a page, newest or older,
// is push's mailbox page plus the reader's pull_edges rows, one a pulled
// edge (none for a reader who pulls nothing: the range finds no row), then
// the pulled authors' ids that fall among the mailbox's entries and the
// bodies of those that make the page (pulledRows). Follows and unfollows
// are push's.
//
// The flusher re-decides, once per flush events (option flush) of reads
// and posts, every author who posted since the last: their pushed edges
// joined to the followers' rates, 2 rows a follower; and every reader who
// read a newest page since the last (older pages are not counted): the
// reader's rates, their follows joined to the followees' rates and to
// pull_edges, 1 + 2 rows a followee + 3 a pulled edge (redecideRows). A
// flusher that keeps up does that for the distinct authors and readers of
// a flush's events (distinctAuthors, perFlush). The flusher is one
// goroutine: one that cannot keep up, in a benchmark that reads or posts
// as fast as it can, flushes back to back at its own pace (flusherPace)
// whatever the traffic; its batches grow, and in a run
// (Demand.Run) each event's share of the re-decisions is cut to what the
// flusher's second holds. The plan's steady state is a flusher that keeps
// up with the posts; its newest pages leave the readers' re-decisions out
// (how many processes, each with its flusher, share a planned rate is not
// part of a Demand, and one flusher at a plan's rate of thousands of reads
// a second would be far behind).
func Work(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	h, l := cfg.Float(OptionH), cfg.Float(OptionL)
	if h == 0 || l == 0 {
		h, l = DefaultH, DefaultL
	}
	ratio := h / l
	// readRate is the read rate the rule weighs a reader's by: the
	// workload's; in a run, the one the bulk load started the rates from,
	// reads_per_post reads for every post spread by the readers' shares,
	// which a run's seconds of traffic barely move (they decay over
	// hours), whatever the rates of its phases.
	readRate := d.ReadRate
	if d.Run != nil {
		loaded := d
		loaded.ReadsPerSec, loaded.OlderPerSec = cfg.Float(OptionReadsPerPost)*d.PostsPerSec, 0
		readRate = loaded.ReadRate
	}
	// Followers by read rate and followees by post rate, each with its
	// weight among follows, to answer "what share reads (posts) at least
	// so often" by a binary search.
	byRead := newShares(d.Classes, readRate, func(c registry.UserClass) float64 { return c.Users * c.Followees })
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
		return u.Followees * byPost.above(readRate(u)/ratio)
	})
	// pulledRows is what a page reads for the pulled edges: their
	// pull_edges rows, the pulled authors' ids between the mailbox range's
	// lowest id and the cursor (and one row more each, where each range
	// ends), and the bodies of those that make the page.
	// Of the reader's followees' posts a share q is the pulled authors'
	// (followees weighed by their followers and their posts): the Fetch()
	// mailbox entries span as many posts as Fetch()·q/(1−q) of theirs
	// (each author's scan stops at Fetch(), so at most pulled·Fetch()), and
	// the page's Fetch() entries hold Fetch()·q of them.
	byPostVolume := newShares(d.Classes, d.PostRate, func(c registry.UserClass) float64 { return c.Users * c.Followers * d.PostRate(c) })
	fetch := float64(d.Page + 1)
	pulledRows := d.MeanOverReads(func(u registry.UserClass) float64 {
		at := readRate(u) / ratio
		p := u.Followees * byPost.above(at)
		if p == 0 {
			return 0
		}
		q := byPostVolume.above(at)
		ids := p * fetch
		if q < 1 {
			ids = math.Min(ids, fetch*q/(1-q))
		}
		// Each author's range also reads the row below the floor that
		// ends it.
		return p + ids + p + math.Min(ids, fetch*q)
	})
	a := d.PostAudience()
	flush := 2 * a
	// newest is the newest pages a second of the phase: a run's phase
	// that reads none (its rates are those of the reads before it) gives
	// its flusher no reader to re-decide.
	newest := math.Max(0, d.ReadsPerSec-d.OlderPerSec)
	if d.Run != nil && d.Run.Reads == 0 {
		newest = 0
	}
	var reader, redecisions float64 // rows and re-decisions a newest page asks of the flusher
	if events := d.PostsPerSec + newest; events > 0 {
		batch := float64(cfg.Int(OptionFlushEvery)) / events
		if d.PostsPerSec > 0 {
			n := batch * d.PostsPerSec
			flush *= distinctAuthors(d, n) / n
		}
		if newest > 0 && d.Run != nil {
			n := batch * newest
			share := func(c registry.UserClass) float64 { return d.NewestRate(c) / newest }
			redecisions = perFlush(d, n, share, func(registry.UserClass) float64 { return 1 }) / n
			reader = perFlush(d, n, share, func(u registry.UserClass) float64 {
				return redecideRows(u.Followees, u.Followees*byPost.above(readRate(u)/ratio))
			}) / n
		}
		// In a run, the flusher's second: the share of it the
		// re-decisions take at its pace; past one, its batches grow and
		// each event gets less.
		authorPace, readerPace := flusherPace(d)
		if busy := d.PostsPerSec*flush/authorPace + newest*reader/readerPace; d.Run != nil && busy > 1 {
			flush, reader, redecisions = flush/busy, reader/busy, redecisions/busy
		}
	}
	post := registry.Work{RowsRead: pushedRows + 2 + flush, RowsWritten: 1 + pushedRows, Statements: 4}
	page := push.PageWork(d).Add(registry.Work{RowsRead: pulledRows, Statements: 1})
	if pulled > 0 {
		page.Statements += 2
	}
	// A newest page's re-decision: its reader's rates upserted (a row read,
	// an insert that meets it and an update: 2 rows written; one upsert
	// statement a flush) and the three statements of redecide.
	newestPage := page.Add(registry.Work{RowsRead: reader + redecisions, RowsWritten: 2 * redecisions, Statements: 3 * redecisions})
	return registry.OpWork{Newest: newestPage, Older: page, Post: post, Follow: push.FollowWork(d), Unfollow: push.FollowWork(d)},
		registry.Footprint{MailboxRows: mailbox}
}

// flusherPace is the rows a flusher that cannot keep up reads a second
// re-deciding authors and re-deciding readers: the run's machine's pace
// of one connection (Demand.SerialRowsPerSec) when a calibration measured
// it, else flusherRowsPerSec; readers at flusherReaderRowsPerSec's share
// of it.
func flusherPace(d registry.Demand) (authors, readers float64) {
	authors = flusherRowsPerSec
	if d.SerialRowsPerSec > 0 {
		authors = d.SerialRowsPerSec
	}
	return authors, authors * flusherReaderRowsPerSec / flusherRowsPerSec
}

// flusherRowsPerSec is the rows a flusher that cannot keep up reads a
// second re-deciding authors: one goroutine's statements, one after
// another. Counted on quiet runs of the benchmark on the first 2-core
// machine, which post at 3,300 to 4,000 a second (100,000 to 112,000;
// 70,000 on the same machine loaded by other work); the slower Intel
// Xeon's calibrations measure about 64,000 with a thread per connection
// and 53,000 with MariaDB's thread pool.
// It belongs to the machine and its load: a calibration measures it
// (Demand.SerialRowsPerSec), and this is the figure without one.
const flusherRowsPerSec = 100_000

// flusherReaderRowsPerSec is the rows a flusher that cannot keep up
// reads a second re-deciding readers: a reader's rows cost it an index
// lookup each (the followee's rates, the edge's pull_edges row), an
// author's one every other row, so it reads them slower (on another
// machine, at the same share of its pace for authors). Counted on the
// newest pages of the calibration's runs at 1,000 users on a quiet
// machine (evidence/plan/held-out/runs: 49,000 on the uniform graph,
// 62,700 on the power-law graph, 4.44 and 4.49 rows a page more than an
// older page at 11,000 and 14,000 pages a second).
const flusherReaderRowsPerSec = 55_000

// redecideRows is the rows a flush reads re-deciding a reader of
// followees followees of whom pulled are pulled (Store.redecide): the
// reader's rates, the pulled edges with their authors' rates, and every
// follow with its pull_edges row, if any, and the followee's rates.
func redecideRows(followees, pulled float64) float64 {
	return 1 + 2*followees + 3*pulled
}

// distinctAuthors is how many distinct authors n posts have, each drawn
// by the classes' post rates.
func distinctAuthors(d registry.Demand, n float64) float64 {
	if d.PostsPerSec <= 0 {
		return 0
	}
	return perFlush(d, n, func(c registry.UserClass) float64 { return d.PostRate(c) / d.PostsPerSec },
		func(registry.UserClass) float64 { return 1 })
}

// perFlush is the sum of value over the distinct users among n events,
// each event a user of class c with chance share(c) (one user's share).
func perFlush(d registry.Demand, n float64, share, value func(registry.UserClass) float64) float64 {
	var sum float64
	for _, c := range d.Classes {
		if p := share(c); p > 0 {
			sum += c.Users * -math.Expm1(-n*p) * value(c)
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
