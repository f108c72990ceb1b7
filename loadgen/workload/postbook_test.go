package workload

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// deleteLog records the deletes a store was asked for and can refuse some.
type deleteLog struct {
	timeline.Store
	mu      sync.Mutex
	deletes []timeline.MessageID
	refuse  int // the next refuse deletes fail
}

var errRefused = errors.New("refused")

func (s *deleteLog) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	s.mu.Lock()
	if s.refuse > 0 {
		s.refuse--
		s.mu.Unlock()
		return errRefused
	}
	s.deletes = append(s.deletes, id)
	s.mu.Unlock()
	return s.Store.Delete(ctx, author, id)
}

func smallDataset(t *testing.T) *dataset.Dataset {
	t.Helper()
	d, err := dataset.Generate(dataset.Spec{Users: 50, Messages: 1_000, AvgFollowees: 8, Graph: dataset.GraphPowerLaw, Seed: 7,
		Activity: dataset.Activity{Mode: dataset.ActivitySkewed, PostExponent: 0.5, ReadExponent: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestTrafficDeletesItsOwnPosts: the traffic's deletes remove messages its
// own posts made, never the dataset's, each at most once, even when some
// deletes fail; and once done, no follower's page shows a deleted
// message.
func TestTrafficDeletesItsOwnPosts(t *testing.T) {
	ctx := context.Background()
	d := smallDataset(t)
	s := &deleteLog{Store: timeline.NewMemory()}
	if err := d.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	loaded := timeline.MessageID(d.Stats().Messages)
	mix, err := ParseMix("newest=50,post=30,delete=20")
	if err != nil {
		t.Fatal(err)
	}
	book := NewPostBook(1)
	op := Traffic(s, d, mix, nil, NewChurn(d), Writes{Book: book}, 1)(0)
	kinds := map[string]int{}
	for i := range 3_000 {
		if i == 1_500 {
			s.mu.Lock()
			s.refuse = 5
			s.mu.Unlock()
		}
		kind, err := op(ctx)
		if err != nil && !errors.Is(err, errRefused) {
			t.Fatal(err)
		}
		if err == nil {
			kinds[MixOps[kind]]++
		}
	}
	if kinds[OpDelete] < 400 || book.Deleted() != kinds[OpDelete] {
		t.Fatalf("%d deletes succeeded, the book recorded %d", kinds[OpDelete], book.Deleted())
	}
	seen := map[timeline.MessageID]bool{}
	for _, id := range s.deletes {
		if id <= loaded {
			t.Fatalf("the traffic deleted message %d of the loaded dataset (1..%d)", id, loaded)
		}
		if seen[id] {
			t.Fatalf("message %d deleted twice", id)
		}
		seen[id] = true
		if _, err := s.Message(ctx, id); !errors.Is(err, timeline.ErrNotFound) {
			t.Fatalf("deleted message %d: %v", id, err)
		}
	}
	checked, shown, err := book.StillShown(ctx, s, d, 3)
	if err != nil || checked == 0 || shown != 0 {
		t.Fatalf("after the deletes %d of %d pages still show one (%v)", shown, checked, err)
	}
}

// hideDeletes is a store whose deletes leave the message on the pages of
// user hidden: a cache that missed an invalidation.
type hideDeletes struct {
	timeline.Store
	user    timeline.UserID
	mu      sync.Mutex
	deleted map[timeline.MessageID]timeline.Message
}

func (s *hideDeletes) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	m, err := s.Store.Message(ctx, id)
	if err != nil {
		return err
	}
	if err := s.Store.Delete(ctx, author, id); err != nil {
		return err
	}
	s.mu.Lock()
	s.deleted[id] = m
	s.mu.Unlock()
	return nil
}

func (s *hideDeletes) Timeline(ctx context.Context, u timeline.UserID, q timeline.Query) (timeline.Page, error) {
	p, err := s.Store.Timeline(ctx, u, q)
	if err != nil || u != s.user || q != (timeline.Query{}) {
		return p, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.deleted {
		p.Messages = append([]timeline.Message{m}, p.Messages...)
	}
	return p, nil
}

// TestStillShownFindsAStaleCache: a store that keeps showing a deleted
// message on one user's newest page is caught by StillShown, and by Shows
// only for that user.
func TestStillShownFindsAStaleCache(t *testing.T) {
	ctx := context.Background()
	d := smallDataset(t)
	mem := timeline.NewMemory()
	if err := d.Apply(ctx, mem); err != nil {
		t.Fatal(err)
	}
	book := NewPostBook(1)
	if err := book.Fill(ctx, mem, d, 30, 2, 1); err != nil {
		t.Fatal(err)
	}
	// The followed author of the first standing message sets who is stale.
	a := book.standing[0]
	fs := d.Followers(uint32(a.author))
	if len(fs) == 0 {
		t.Skip("the drawn author has no followers")
	}
	s := &hideDeletes{Store: mem, user: timeline.UserID(fs[0]), deleted: map[timeline.MessageID]timeline.Message{}}
	del := book.Deletes(s, d, 1)(0)
	for range 30 {
		if err := del(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	checked, shown, err := book.StillShown(ctx, s, d, 3)
	if err != nil {
		t.Fatal(err)
	}
	if shown == 0 || shown >= checked {
		t.Fatalf("%d of %d checked pages show a deleted message; want some, on user %d's page only", shown, checked, s.user)
	}
	if on, err := Shows(ctx, s, s.user, a.id); err != nil || !on {
		t.Fatalf("user %d's stale page: Shows %v, %v", s.user, on, err)
	}
	for _, f := range fs[1:] {
		if on, _ := Shows(ctx, s, timeline.UserID(f), a.id); on {
			t.Fatalf("user %d's page shows deleted message %d", f, a.id)
		}
	}
}

// TestShowsBelowTheNewestPage: a message more than a page below the top
// of a timeline is found through the page that starts above it.
func TestShowsBelowTheNewestPage(t *testing.T) {
	ctx := context.Background()
	s := timeline.NewMemory()
	if err := s.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	first, err := s.Post(ctx, 2, "the one looked for")
	if err != nil {
		t.Fatal(err)
	}
	for range timeline.DefaultLimit + 5 {
		if _, err := s.Post(ctx, 2, "newer"); err != nil {
			t.Fatal(err)
		}
	}
	if on, err := Shows(ctx, s, 1, first.ID); err != nil || !on {
		t.Fatalf("Shows: %v, %v", on, err)
	}
	if on, err := Shows(ctx, s, 3, first.ID); err != nil || on {
		t.Fatalf("a non-follower: Shows %v, %v", on, err)
	}
	if err := s.Delete(ctx, 2, first.ID); err != nil {
		t.Fatal(err)
	}
	if on, err := Shows(ctx, s, 1, first.ID); err != nil || on {
		t.Fatalf("after the delete: Shows %v, %v", on, err)
	}
}
