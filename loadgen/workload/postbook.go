package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// ErrNoPostBook is the error of a delete drawn by traffic that was given
// no PostBook to delete from.
var ErrNoPostBook = errors.New("workload: the mix deletes, but the traffic keeps no book of its posts")

// PostBook is what a traffic phase's deletes delete: the messages its
// posts left standing, and a sample of those its deletes removed, which
// StillShown checks once the store has settled. A delete takes a random
// standing message, as a user undoes one of their own recent posts; when
// none stands (the phase has just begun, or deletes outran posts) it posts
// one by a drawn author first and deletes that, both inside the one
// operation. A message whose delete failed is deleted no more, nor
// checked. Deleting only the traffic's own posts leaves the loaded
// dataset as it was, as Churn leaves the graph.
type PostBook struct {
	mu       sync.Mutex
	standing []authored
	deleted  []authored // a uniform sample of at most sampleCap
	seen     int        // deletes offered to the sample
	rng      *rand.Rand
}

type authored struct {
	author timeline.UserID
	id     timeline.MessageID
}

// deletedSampleCap bounds the deleted messages a PostBook keeps to check.
const deletedSampleCap = 500

// NewPostBook returns an empty book; seed fixes its sample.
func NewPostBook(seed int64) *PostBook {
	return &PostBook{rng: rand.New(rand.NewPCG(uint64(seed), 0xde1e7e))}
}

func (b *PostBook) add(author timeline.UserID, id timeline.MessageID) {
	b.mu.Lock()
	b.standing = append(b.standing, authored{author, id})
	b.mu.Unlock()
}

// take removes and returns a random standing message.
func (b *PostBook) take(rng *rand.Rand) (authored, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.standing)
	if n == 0 {
		return authored{}, false
	}
	i := rng.IntN(n)
	a := b.standing[i]
	b.standing[i] = b.standing[n-1]
	b.standing = b.standing[:n-1]
	return a, true
}

// deleted records a deleted message into the sample (reservoir sampling).
func (b *PostBook) deletedOne(a authored) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen++
	if len(b.deleted) < deletedSampleCap {
		b.deleted = append(b.deleted, a)
	} else if j := b.rng.IntN(b.seen); j < deletedSampleCap {
		b.deleted[j] = a
	}
}

// deleteOne deletes a standing message, or posts body by a drawn author
// and deletes that when none stands; probe, if not nil, is offered the
// delete.
func (b *PostBook) deleteOne(ctx context.Context, s timeline.Store, d *dataset.Dataset, rng *rand.Rand, body string, probe *Probe) error {
	a, ok := b.take(rng)
	if !ok {
		a.author = d.PickAuthor(rng)
		m, err := s.Post(ctx, a.author, body)
		if err != nil {
			return err
		}
		a.id = m.ID
	}
	if err := s.Delete(ctx, a.author, a.id); err != nil {
		// The message is set aside: a store may fail after its delete
		// took effect (a cache it could not update), and a second delete
		// would then find nothing.
		return err
	}
	if probe != nil {
		probe.Deleted(a.author, a.id, time.Now())
	}
	b.deletedOne(a)
	return nil
}

// Deleted is how many deletes the book recorded.
func (b *PostBook) Deleted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seen
}

// StillShown checks the sample of deleted messages on s, which should have
// settled: for each, up to followers of its author's followers (in the
// dataset's graph), whether their timeline still shows it (see Shows). It
// returns the pairs checked and those that still showed it.
func (b *PostBook) StillShown(ctx context.Context, s timeline.Store, d *dataset.Dataset, followers int) (checked, shown int, err error) {
	b.mu.Lock()
	sample := append([]authored(nil), b.deleted...)
	b.mu.Unlock()
	for _, a := range sample {
		fs := d.Followers(uint32(a.author))
		for _, f := range fs[:min(len(fs), followers)] {
			on, err := Shows(ctx, s, timeline.UserID(f), a.id)
			if err != nil {
				return checked, shown, fmt.Errorf("check deleted message %d at user %d: %w", a.id, f, err)
			}
			checked++
			if on {
				shown++
			}
		}
	}
	return checked, shown, nil
}

// Shows reports whether user's home timeline on s shows message id: on
// the newest page, or, when the newest page is full of newer messages, on
// the page of one that starts just above id (a Before query from id+1). A cache
// in front of the newest page is read through the first; the second finds
// a message the newest page has scrolled past.
func Shows(ctx context.Context, s timeline.Store, user timeline.UserID, id timeline.MessageID) (bool, error) {
	p, err := s.Timeline(ctx, user, timeline.Query{})
	if err != nil {
		return false, err
	}
	if pageHas(p, id) {
		return true, nil
	}
	if n := len(p.Messages); n < timeline.DefaultLimit || p.Messages[n-1].ID < id {
		return false, nil // the newest page reaches below id and lacks it
	}
	p, err = s.Timeline(ctx, user, timeline.Query{Before: timeline.IDCursor(id + 1), Limit: 1})
	if err != nil {
		return false, err
	}
	return pageHas(p, id), nil
}

func pageHas(p timeline.Page, id timeline.MessageID) bool {
	for _, m := range p.Messages {
		if m.ID == id {
			return true
		}
	}
	return false
}

// Fill posts n messages by authors drawn by d's activity, with workers
// goroutines, and keeps them standing in the book.
func (b *PostBook) Fill(ctx context.Context, s timeline.Store, d *dataset.Dataset, n, workers int, seed int64) error {
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for w := range max(1, workers) {
		g.Go(func() error {
			rng := workerRand(seed, "fill", w)
			var body []byte
			for next.Add(1) <= int64(n) {
				author := d.PickAuthor(rng)
				body = d.AppendBody(body[:0], rng.Uint64N(1<<40)+1)
				m, err := s.Post(gctx, author, string(body))
				if err != nil {
					return err
				}
				b.add(author, m.ID)
			}
			return nil
		})
	}
	return g.Wait()
}

// Deletes returns operations for RunPhase that each delete a standing
// message of the book (as the traffic's deletes do).
func (b *PostBook) Deletes(s timeline.Store, d *dataset.Dataset, seed int64) func(worker int) Op {
	return func(worker int) Op {
		rng := workerRand(seed, "deletes", worker)
		var buf []byte
		return func(ctx context.Context, _ *Clock) error {
			buf = d.AppendBody(buf[:0], rng.Uint64N(1<<40)+1)
			return b.deleteOne(ctx, s, d, rng, string(buf), nil)
		}
	}
}
