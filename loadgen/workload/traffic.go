package workload

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/openloop"
	"github.com/pushpull/pushpull/timeline"
)

// Traffic returns the operations of mixed traffic on s: each call draws an
// operation type from mix and runs it, newest pages and posts as
// NewestPage and Submit do (readers and authors drawn by d's activity, so
// under skewed activity the most followed users read and post the most),
// older pages from pool (as OlderPages, whose users are drawn the same
// way), follows and unfollows through churn. The kind it returns is the operation's
// index in MixOps. The result suits openloop.Run directly and RunPhase
// through ClosedOp.
//
// Each call for a worker draws from a stream of its own: the first from
// seed and the worker, each later one from the number of calls before it
// too. A run calls it once per worker and phase (a traffic phase, each
// step of a rate search), and a phase that drew the operations of the one
// before it would post as the same authors again: their posts would pile
// up, phase after phase, on a few authors, and a pull design's pages would
// read the piles (see TestTrafficPostsSpreadOverAuthors in package
// loadgen). Callers whose stores share a database give each store's
// traffic its own seed, for the same reason.
//
// An older page is a pool entry's user and depth, read from the cursor the
// traffic's latest read of the page before it returned (the user's newest
// page, for page 2), as a reader pages down from what they just saw; the
// pool's own cursor only until the traffic has read that page. Cursors
// walked once before the phase would sink deeper into the timeline with
// every post, the longer the phase the deeper, and a store that keeps a
// user's newest entries in an index would fall back more and more.
func Traffic(s timeline.Store, d *dataset.Dataset, mix Mix, pool []OlderPage, churn *Churn, w Writes, seed int64) func(worker int) openloop.Op {
	latest := newLatestCursors(len(d.Followees))
	var mu sync.Mutex
	calls := map[int]int{} // calls so far, by worker
	return func(worker int) openloop.Op {
		mu.Lock()
		call := calls[worker]
		calls[worker]++
		mu.Unlock()
		stream := "traffic"
		if call > 0 {
			stream += "#" + strconv.Itoa(call)
		}
		rng := workerRand(seed, stream, worker)
		var buf []byte
		return func(ctx context.Context) (int, error) {
			kind := mix.pick(rng.Float64())
			var err error
			switch MixOps[kind] {
			case OpNewest:
				u := d.PickReader(rng)
				var p timeline.Page
				if p, err = s.Timeline(ctx, u, timeline.Query{}); err == nil {
					latest.put(u, 2, p.Next)
				}
			case OpOlder:
				if len(pool) == 0 {
					return kind, ErrNoOlderPages
				}
				o := pool[rng.IntN(len(pool))]
				var p timeline.Page
				if p, err = s.Timeline(ctx, o.User, timeline.Query{Before: latest.get(o.User, o.Depth, o.Cursor)}); err == nil {
					latest.put(o.User, o.Depth+1, p.Next)
				}
			case OpPost:
				buf = d.AppendBody(buf[:0], rng.Uint64N(1<<40)+1)
				author := d.PickAuthor(rng)
				var m timeline.Message
				if m, err = s.Post(ctx, author, string(buf)); err == nil {
					w.posted(d, author, m.ID)
				}
			case OpDelete:
				if w.Book == nil {
					return kind, ErrNoPostBook
				}
				buf = d.AppendBody(buf[:0], rng.Uint64N(1<<40)+1)
				err = w.Book.deleteOne(ctx, s, d, rng, string(buf), w.Probe)
			case OpFollow:
				err = churn.Follow(ctx, s, rng)
			case OpUnfollow:
				err = churn.Unfollow(ctx, s, rng)
			}
			return kind, err
		}
	}
}

// Writes are what Traffic and Submit tell of the writes they made: Book
// keeps the posts for the deletes, Probe watches some of the posts and
// deletes, Audience counts the posts' authors' followers. Any may be nil.
type Writes struct {
	Book     *PostBook
	Probe    *Probe
	Audience *Audience
}

func (w Writes) posted(d *dataset.Dataset, author timeline.UserID, id timeline.MessageID) {
	w.Audience.add(d, author)
	if w.Probe != nil {
		w.Probe.Posted(author, id, time.Now())
	}
	if w.Book != nil {
		w.Book.add(author, id)
	}
}

// latestCursors holds, per user and page depth 2 to 5 (OlderPage.Depth),
// the cursor to that page that the traffic's latest read returned.
type latestCursors struct {
	mu     sync.Mutex
	byUser [][4]timeline.Cursor // user u at index u-1; depth d at d-2
}

func newLatestCursors(users int) *latestCursors {
	return &latestCursors{byUser: make([][4]timeline.Cursor, users)}
}

// slot is where user's cursor to the page at depth is kept, nil for a
// depth out of 2..5 or a user outside the dataset.
func (l *latestCursors) slot(user timeline.UserID, depth int) *timeline.Cursor {
	if depth < 2 || depth > 5 || user < 1 || int(user) > len(l.byUser) {
		return nil
	}
	return &l.byUser[user-1][depth-2]
}

// put keeps c as the cursor to user's page at depth; an empty cursor (no
// such page), or a page slot cannot hold, keeps nothing.
func (l *latestCursors) put(user timeline.UserID, depth int, c timeline.Cursor) {
	if p := l.slot(user, depth); p != nil && c != "" {
		l.mu.Lock()
		*p = c
		l.mu.Unlock()
	}
}

// get returns the latest cursor to user's page at depth, or pooled when
// the traffic has not read there yet.
func (l *latestCursors) get(user timeline.UserID, depth int, pooled timeline.Cursor) timeline.Cursor {
	p := l.slot(user, depth)
	if p == nil {
		return pooled
	}
	l.mu.Lock()
	c := *p
	l.mu.Unlock()
	if c == "" {
		return pooled
	}
	return c
}

// ClosedOp adapts operations that report their kind to RunPhase, which
// learns the kind through the Clock.
func ClosedOp(newOp func(worker int) openloop.Op) func(worker int) Op {
	return func(worker int) Op {
		op := newOp(worker)
		return func(ctx context.Context, c *Clock) error {
			kind, err := op(ctx)
			c.SetKind(kind)
			return err
		}
	}
}
