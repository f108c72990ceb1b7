package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// Churn chooses the follows and unfollows of mixed traffic so that the
// follow graph stays the dataset's, give or take a few edges: the
// dataset's figures (followees per user, mailbox rows, the cost per
// followee) then hold for the whole run.
//
// An unfollow first undoes an edge that an earlier follow of the phase
// added; only when there is none does it remove an edge of the dataset,
// which it remembers. A follow first restores an edge that an earlier
// unfollow removed; only when there is none does it add an edge the
// dataset lacks, which it remembers. With equal weights the two kinds
// cancel out as they go, and the graph drifts by at most the difference
// between them; Restore puts back the dataset's graph exactly afterwards.
//
// A fresh follow's follower is drawn uniformly and its followee as
// Dataset.PickFollowee says (the popular first under skewed activity); a
// fresh unfollow's follower uniformly, and the edge among their followees
// uniformly.
//
// An edge is claimed while its operation runs, so that two operations
// never race on one edge, and is recorded only when its operation
// succeeded. A Churn is safe for concurrent use.
//
// It also counts the messages, in the dataset, of the followees its
// follows and unfollows touched (FolloweeMessages): what push backfills
// into a mailbox or removes from it. On a skewed graph a phase's few
// hundred follows and unfollows draw that mean far from its expectation
// (a restore touches the followee its unfollow did, and a few authors hold
// hundreds of messages each), so a check of a cost model against a phase
// takes the phase's own, as it does Audience's.
type Churn struct {
	d        *dataset.Dataset
	messages []int32 // the dataset's messages by author, indexed by user id
	mu       sync.Mutex
	added    []edge        // edges follows added that the dataset lacks
	removed  []edge        // dataset edges that unfollows removed
	busy     map[edge]bool // claimed, added or removed: not to be chosen afresh
	undone   int64         // unfollows of added edges (Undone)
	touched  tally         // follows and unfollows that succeeded, and their followees' messages
}

// ChurnMark is a Churn's count of follows and unfollows at one moment
// (Churn.Mark).
type ChurnMark struct{ m tallyMark }

type edge struct{ follower, followee uint32 }

// NewChurn returns a Churn over d's follow graph.
func NewChurn(d *dataset.Dataset) *Churn {
	messages := make([]int32, d.Spec.Users+1)
	for _, a := range d.Authors {
		messages[a]++
	}
	return &Churn{d: d, messages: messages, busy: map[edge]bool{}}
}

// touch counts a follow or unfollow of e that succeeded.
func (c *Churn) touch(e edge) { c.touched.add(int64(c.messages[e.followee])) }

// Mark returns the counts so far, for FolloweeMessages.
func (c *Churn) Mark() ChurnMark { return ChurnMark{c.touched.mark()} }

// FolloweeMessages returns the mean number of messages, in the dataset,
// of the followees of the follows and unfollows that succeeded since m,
// and how many those were (0 and 0 when none). Restore's are counted too:
// take the mark after it, or none.
func (c *Churn) FolloweeMessages(m ChurnMark) (mean float64, ops int64) { return c.touched.since(m.m) }

// inDataset reports whether the dataset has e.
func (c *Churn) inDataset(e edge) bool {
	_, ok := slices.BinarySearch(c.d.Followees[e.follower-1], e.followee)
	return ok
}

// Follow makes one follow through s.
func (c *Churn) Follow(ctx context.Context, s timeline.Store, rng *rand.Rand) error {
	e, restoring, ok := c.claimFollow(rng)
	if !ok {
		return nil // no edge could be drawn: a graph of two users, say
	}
	err := s.Follow(ctx, timeline.UserID(e.follower), timeline.UserID(e.followee))
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.touch(e)
	}
	switch {
	case err != nil && restoring:
		c.removed = append(c.removed, e)
	case err != nil:
		delete(c.busy, e)
	case restoring:
		delete(c.busy, e)
	default:
		c.added = append(c.added, e)
	}
	return err
}

// Unfollow makes one unfollow through s.
func (c *Churn) Unfollow(ctx context.Context, s timeline.Store, rng *rand.Rand) error {
	e, undoing, ok := c.claimUnfollow(rng)
	if !ok {
		return nil
	}
	err := s.Unfollow(ctx, timeline.UserID(e.follower), timeline.UserID(e.followee))
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.touch(e)
	}
	switch {
	case err != nil && undoing:
		c.added = append(c.added, e)
	case err != nil:
		delete(c.busy, e)
	case undoing:
		delete(c.busy, e)
		c.undone++
	default:
		c.removed = append(c.removed, e)
	}
	return err
}

// take removes and returns a random element of *list.
func take(list *[]edge, rng *rand.Rand) edge {
	l := *list
	i := rng.IntN(len(l))
	e := l[i]
	l[i] = l[len(l)-1]
	*list = l[:len(l)-1]
	return e
}

// draws bounds the attempts at a fresh edge.
const draws = 32

func (c *Churn) claimFollow(rng *rand.Rand) (e edge, restoring, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.removed) > 0 {
		return take(&c.removed, rng), true, true
	}
	users := c.d.Spec.Users
	for range draws {
		e = edge{uint32(1 + rng.IntN(users)), uint32(c.d.PickFollowee(rng))}
		if e.follower != e.followee && !c.busy[e] && !c.inDataset(e) {
			c.busy[e] = true
			return e, false, true
		}
	}
	return edge{}, false, false
}

func (c *Churn) claimUnfollow(rng *rand.Rand) (e edge, undoing, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.added) > 0 {
		return take(&c.added, rng), true, true
	}
	users := c.d.Spec.Users
	for range draws {
		u := uint32(1 + rng.IntN(users))
		fs := c.d.Followees[u-1]
		if len(fs) == 0 {
			continue
		}
		e = edge{u, fs[rng.IntN(len(fs))]}
		if !c.busy[e] {
			c.busy[e] = true
			return e, false, true
		}
	}
	return edge{}, false, false
}

// Undone is how many unfollows so far removed an edge that a follow of
// the Churn had added (Restore's included): the edges the graph gained
// for a while and lost, where the other unfollows removed edges of the
// dataset that a later follow (or Restore) puts back. A store that leaves
// a mark of an unfollow until the edge is followed again (push-redis's
// tombstones) keeps one for each of these.
func (c *Churn) Undone() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.undone
}

// Drift is the number of edges by which the graph differs from the
// dataset's now: edges added plus edges removed.
func (c *Churn) Drift() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.added) + len(c.removed)
}

// Restore undoes, through s, every edge the Churn added or removed, so
// that the graph is the dataset's again. Call it when no operation of
// the Churn is running.
func (c *Churn) Restore(ctx context.Context, s timeline.Store) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.added) > 0 {
		e := c.added[len(c.added)-1]
		if err := s.Unfollow(ctx, timeline.UserID(e.follower), timeline.UserID(e.followee)); err != nil {
			return fmt.Errorf("restore the follow graph: unfollow %d→%d: %w", e.follower, e.followee, err)
		}
		c.added = c.added[:len(c.added)-1]
		delete(c.busy, e)
		c.undone++
		c.touch(e)
	}
	for len(c.removed) > 0 {
		e := c.removed[len(c.removed)-1]
		if err := s.Follow(ctx, timeline.UserID(e.follower), timeline.UserID(e.followee)); err != nil {
			return fmt.Errorf("restore the follow graph: follow %d→%d: %w", e.follower, e.followee, err)
		}
		c.removed = c.removed[:len(c.removed)-1]
		delete(c.busy, e)
		c.touch(e)
	}
	return nil
}
