// Package workload is what the benchmark does to the stores once the
// dataset is loaded: the operations of the paper's benchmark (newest and
// older pages, posts, and reads mixed with posts), the mixed traffic of a
// production feed in a Mix's proportions with its follows and unfollows
// (Traffic, Churn), the bookkeeping that tells how stale a served page was
// (PostLog), and the closed-loop driver that runs operations on workers
// and measures them (RunPhase). Operations draw their users by the
// dataset's activity (package loadgen/dataset); Traffic's also suit the
// open loop of package loadgen/openloop, which drives them at a planned
// rate.
package workload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// The operations of the paper's benchmark, as Ops for RunPhase. Each worker
// gets its own random source, seeded from the run's seed and its index, so a
// run's choice of users is reproducible.

func workerRand(seed int64, phase string, worker int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(NamedSeed(seed, phase)), uint64(worker)))
}

// NamedSeed is seed mixed with name (its FNV-1a hash): a seed of its own
// for each name, the same for the same name and seed.
func NamedSeed(seed int64, name string) int64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return int64(uint64(seed) ^ h)
}

// NewestPage reads the newest page (default limit) of the home timeline of
// a user drawn by d's activity (Dataset.PickReader: uniformly for the
// paper's benchmark).
func NewestPage(s timeline.Store, d *dataset.Dataset, seed int64) func(worker int) Op {
	return func(worker int) Op {
		rng := workerRand(seed, "newest", worker)
		return func(ctx context.Context, _ *Clock) error {
			_, err := s.Timeline(ctx, d.PickReader(rng), timeline.Query{})
			return err
		}
	}
}

// Submit posts a message by an author drawn by d's activity
// (Dataset.PickAuthor), with a body drawn like the dataset's, and tells w
// of each post made.
func Submit(s timeline.Store, d *dataset.Dataset, seed int64, w Writes) func(worker int) Op {
	return func(worker int) Op {
		rng := workerRand(seed, "submit", worker)
		var buf []byte
		return func(ctx context.Context, _ *Clock) error {
			buf = d.AppendBody(buf[:0], rng.Uint64N(1<<40)+1)
			author := d.PickAuthor(rng)
			m, err := s.Post(ctx, author, string(buf))
			if err == nil {
				w.posted(d, author, m.ID)
			}
			return err
		}
	}
}

// Mixed reads the newest page with probability readRatio and posts
// otherwise.
func Mixed(s timeline.Store, d *dataset.Dataset, readRatio float64, seed int64) func(worker int) Op {
	read, write := NewestPage(s, d, seed), Submit(s, d, seed, Writes{})
	return func(worker int) Op {
		rng := workerRand(seed, "mixed", worker)
		r, w := read(worker), write(worker)
		return func(ctx context.Context, c *Clock) error {
			if rng.Float64() < readRatio {
				return r(ctx, c)
			}
			return w(ctx, c)
		}
	}
}

// OlderPage is one cursor into a timeline, 2 to 5 pages deep.
type OlderPage struct {
	User   timeline.UserID
	Cursor timeline.Cursor
	Depth  int // the page number the cursor leads to
}

// ErrNoOlderPages means no sampled user had a second page.
var ErrNoOlderPages = errors.New("no sampled timeline has a second page")

// CollectOlderPages walks the timelines of `sample` users drawn by d's
// activity (Dataset.PickReader), or of every user once when there are no
// more users than that, with s itself (cursors belong to the store that
// issued them) and keeps the cursors of their pages 2 to 5. Keyset cursors
// stay valid while new messages arrive, so the pool can be built once and
// replayed.
func CollectOlderPages(ctx context.Context, s timeline.Store, d *dataset.Dataset, sample, workers int, seed int64) ([]OlderPage, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x01de))
	var mu sync.Mutex
	var out []OlderPage
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	users := len(d.Followees)
	for i := range sample {
		user := d.PickReader(rng)
		if sample >= users {
			if i >= users {
				break
			}
			user = timeline.UserID(1 + i)
		}
		g.Go(func() error {
			q := timeline.Query{}
			for depth := 2; depth <= 5; depth++ {
				p, err := s.Timeline(gctx, user, q)
				if err != nil {
					return fmt.Errorf("collect older pages of user %d: %w", user, err)
				}
				if p.Next == "" {
					return nil
				}
				mu.Lock()
				out = append(out, OlderPage{User: user, Cursor: p.Next, Depth: depth})
				mu.Unlock()
				q.Before = p.Next
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrNoOlderPages
	}
	// Goroutines finish in any order: sort for a reproducible pool.
	slices.SortFunc(out, func(a, b OlderPage) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Depth, b.Depth))
	})
	return out, nil
}

// OlderPages reads one page, 2 to 5 deep, of a random timeline from pool.
func OlderPages(s timeline.Store, pool []OlderPage, seed int64) func(worker int) Op {
	return func(worker int) Op {
		rng := workerRand(seed, "older", worker)
		return func(ctx context.Context, _ *Clock) error {
			p := pool[rng.IntN(len(pool))]
			_, err := s.Timeline(ctx, p.User, timeline.Query{Before: p.Cursor})
			return err
		}
	}
}

// Noop is a Store that does nothing: running the benchmark's phases on it
// measures the harness itself, which must be far faster than any real
// store for the figures to mean anything.
type Noop struct{}

var _ timeline.Store = Noop{}

func (Noop) Post(context.Context, timeline.UserID, string) (timeline.Message, error) {
	return timeline.Message{}, nil
}
func (Noop) Follow(context.Context, timeline.UserID, timeline.UserID) error    { return nil }
func (Noop) Unfollow(context.Context, timeline.UserID, timeline.UserID) error  { return nil }
func (Noop) Delete(context.Context, timeline.UserID, timeline.MessageID) error { return nil }
func (Noop) Timeline(context.Context, timeline.UserID, timeline.Query) (timeline.Page, error) {
	return timeline.Page{}, nil
}
func (Noop) AuthorTimeline(context.Context, timeline.UserID, timeline.Query) (timeline.Page, error) {
	return timeline.Page{}, nil
}
func (Noop) Message(context.Context, timeline.MessageID) (timeline.Message, error) {
	return timeline.Message{}, nil
}
func (Noop) Followees(context.Context, timeline.UserID, timeline.FollowQuery) (timeline.FollowPage, error) {
	return timeline.FollowPage{}, nil
}
func (Noop) Followers(context.Context, timeline.UserID, timeline.FollowQuery) (timeline.FollowPage, error) {
	return timeline.FollowPage{}, nil
}
func (Noop) Follows(context.Context, timeline.UserID, timeline.UserID) (bool, error) {
	return false, nil
}
func (Noop) Close() error { return nil }

// NewestPageOf reads the newest page of one of users, drawn uniformly
// (the drowning readers of a dataset, say).
func NewestPageOf(s timeline.Store, users []uint32, seed int64) func(worker int) Op {
	return func(worker int) Op {
		rng := workerRand(seed, "newest-of", worker)
		return func(ctx context.Context, _ *Clock) error {
			_, err := s.Timeline(ctx, timeline.UserID(users[rng.IntN(len(users))]), timeline.Query{})
			return err
		}
	}
}
