package workload

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// edgeStore is a Store that keeps only the follow graph.
type edgeStore struct {
	timeline.Store
	mu    sync.Mutex
	edges map[edge]bool
	fail  bool
}

func (s *edgeStore) Follow(_ context.Context, a, b timeline.UserID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("refused")
	}
	s.edges[edge{uint32(a), uint32(b)}] = true
	return nil
}

func (s *edgeStore) Unfollow(_ context.Context, a, b timeline.UserID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("refused")
	}
	delete(s.edges, edge{uint32(a), uint32(b)})
	return nil
}

// TestChurnKeepsTheGraph: concurrent follows and unfollows in equal
// numbers leave the graph within a few edges of the dataset's, never touch
// one edge twice at once, and Restore makes it the dataset's again, even
// after failed operations.
func TestChurnKeepsTheGraph(t *testing.T) {
	d, err := dataset.Generate(dataset.Spec{Users: 200, Messages: 10, AvgFollowees: 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	s := &edgeStore{edges: map[edge]bool{}}
	d.EachFollow(func(a, b uint32) error { s.edges[edge{a, b}] = true; return nil })
	want := len(s.edges)
	c := NewChurn(d)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(9, uint64(w)))
			for i := range 500 {
				op := c.Follow
				if (i+w)%2 == 0 {
					op = c.Unfollow
				}
				if err := op(ctx, s, rng); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if drift := c.Drift(); drift > 16 {
		t.Errorf("the graph drifted by %d edges after 4,000 balanced operations", drift)
	}
	if n := len(s.edges); n < want-16 || n > want+16 {
		t.Errorf("%d edges, the dataset has %d", n, want)
	}
	// A run of follows only adds edges; failures are not recorded.
	rng := rand.New(rand.NewPCG(1, 1))
	for range 50 {
		c.Follow(ctx, s, rng)
	}
	s.fail = true
	for range 10 {
		if err := c.Unfollow(ctx, s, rng); err == nil {
			t.Fatal("a refused unfollow succeeded")
		}
	}
	s.fail = false
	if err := c.Restore(ctx, s); err != nil {
		t.Fatal(err)
	}
	if len(s.edges) != want || c.Drift() != 0 {
		t.Fatalf("after Restore: %d edges, drift %d; the dataset has %d", len(s.edges), c.Drift(), want)
	}
	for e := range s.edges {
		if !c.inDataset(e) {
			t.Fatalf("edge %v is not the dataset's", e)
		}
	}
}

// followStore counts the followees of the follows made through it.
type followStore struct {
	timeline.Store
	mu        sync.Mutex
	followees map[timeline.UserID]int
}

func (f *followStore) Follow(ctx context.Context, a, b timeline.UserID) error {
	f.mu.Lock()
	f.followees[b]++
	f.mu.Unlock()
	return f.Store.Follow(ctx, a, b)
}

// TestFollowsPreferThePopular: under skewed activity a follow of the
// mixed traffic picks its followee in proportion to 1+followers
// (preferential attachment, as people follow on a real service), so the
// followees average E[f(1+f)]/E[1+f] followers, far above the mean; under
// uniform activity they are drawn uniformly, as in the paper's workload.
func TestFollowsPreferThePopular(t *testing.T) {
	for _, c := range []struct {
		mode    string
		popular bool
	}{{dataset.ActivitySkewed, true}, {dataset.ActivityUniform, false}} {
		spec := dataset.Spec{Users: 2000, Messages: 2_000, AvgFollowees: 20, Graph: dataset.GraphPowerLaw, Seed: 5,
			Activity: dataset.Activity{Mode: c.mode}}
		d, err := dataset.Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		in := d.Stats().Followers
		var mean, weighted, weights float64
		for _, f := range in {
			mean += float64(f)
			w := float64(1+f) * (1 - float64(f)/float64(spec.Users))
			weighted += w * float64(f)
			weights += w
		}
		mean /= float64(len(in))
		want := mean
		if c.popular {
			want = weighted / weights
		}
		fs := &followStore{Store: timeline.NewMemory(), followees: map[timeline.UserID]int{}}
		churn := NewChurn(d)
		rng := rand.New(rand.NewPCG(1, 2))
		for range 1000 {
			if err := churn.Follow(context.Background(), fs, rng); err != nil {
				t.Fatal(err)
			}
		}
		var sum, n float64
		for u, k := range fs.followees {
			sum += float64(k) * float64(in[u-1])
			n += float64(k)
		}
		got := sum / n
		t.Logf("%s: %.0f follows' followees average %.1f followers (mean %.1f, expected %.1f)", c.mode, n, got, mean, want)
		if n < 900 || got < 0.7*want || got > 1.3*want {
			t.Errorf("%s: %.0f follows, followees average %.1f followers, want about %.1f", c.mode, n, got, want)
		}
	}
}

// lossStore counts the unfollows of edges that a follow made through it
// had added to the dataset's graph.
type lossStore struct {
	edgeStore
	dataset map[edge]bool
	lost    int
}

func (s *lossStore) Unfollow(ctx context.Context, a, b timeline.UserID) error {
	s.mu.Lock()
	e := edge{uint32(a), uint32(b)}
	added := s.edges[e] && !s.dataset[e]
	s.mu.Unlock()
	err := s.edgeStore.Unfollow(ctx, a, b)
	if err == nil && added {
		s.mu.Lock()
		s.lost++
		s.mu.Unlock()
	}
	return err
}

// TestChurnCountsUndoneFollows: Undone counts the unfollows of edges the
// Churn's follows had added, those Restore makes included, as the store
// sees them; failed ones are not counted.
func TestChurnCountsUndoneFollows(t *testing.T) {
	d, err := dataset.Generate(dataset.Spec{Users: 200, Messages: 10, AvgFollowees: 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	s := &lossStore{edgeStore: edgeStore{edges: map[edge]bool{}}, dataset: map[edge]bool{}}
	d.EachFollow(func(a, b uint32) error { s.edges[edge{a, b}], s.dataset[edge{a, b}] = true, true; return nil })
	c := NewChurn(d)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(4, 2))
	for i := range 2000 {
		op := c.Follow
		if rng.IntN(2) == 0 {
			op = c.Unfollow
		}
		if i%97 == 0 {
			s.fail = true
		}
		op(ctx, s, rng)
		s.fail = false
	}
	if s.lost == 0 || c.Undone() != int64(s.lost) {
		t.Errorf("before Restore: Undone %d, the store lost %d added edges", c.Undone(), s.lost)
	}
	if err := c.Restore(ctx, s); err != nil {
		t.Fatal(err)
	}
	if c.Undone() != int64(s.lost) {
		t.Errorf("after Restore: Undone %d, the store lost %d added edges", c.Undone(), s.lost)
	}
}

// followeeLog is an edgeStore that notes the followee of every follow and
// unfollow that succeeded.
type followeeLog struct {
	edgeStore
	followees []timeline.UserID
}

func (s *followeeLog) Follow(ctx context.Context, a, b timeline.UserID) error {
	err := s.edgeStore.Follow(ctx, a, b)
	if err == nil {
		s.followees = append(s.followees, b)
	}
	return err
}

func (s *followeeLog) Unfollow(ctx context.Context, a, b timeline.UserID) error {
	err := s.edgeStore.Unfollow(ctx, a, b)
	if err == nil {
		s.followees = append(s.followees, b)
	}
	return err
}

// TestChurnCountsFolloweeMessages: FolloweeMessages gives the mean number
// of messages, in the dataset, of the followees of the follows and
// unfollows that succeeded since a mark, and how many those were; the ones
// before the mark and the failed ones count nothing.
func TestChurnCountsFolloweeMessages(t *testing.T) {
	d, err := dataset.Generate(dataset.Spec{Users: 500, Messages: 20_000, AvgFollowees: 20, Graph: dataset.GraphPowerLaw, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	messages := map[timeline.UserID]int{}
	for _, a := range d.Authors {
		messages[timeline.UserID(a)]++
	}
	s := &followeeLog{edgeStore: edgeStore{edges: map[edge]bool{}}}
	c := NewChurn(d)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 1))
	churn := func(n int) {
		for i := range n {
			op := c.Follow
			if rng.IntN(2) == 0 {
				op = c.Unfollow
			}
			s.fail = i%13 == 0
			op(ctx, s, rng)
		}
		s.fail = false
	}
	churn(300)
	mark := c.Mark()
	s.followees = nil
	if mean, ops := c.FolloweeMessages(mark); mean != 0 || ops != 0 {
		t.Fatalf("right after the mark: %v messages over %d operations, want none", mean, ops)
	}
	churn(1000)
	var sum int
	for _, f := range s.followees {
		sum += messages[f]
	}
	want := float64(sum) / float64(len(s.followees))
	mean, ops := c.FolloweeMessages(mark)
	if ops != int64(len(s.followees)) || math.Abs(mean-want) > 1e-9 {
		t.Errorf("since the mark: %v messages over %d operations, want %v over %d", mean, ops, want, len(s.followees))
	}
	t.Logf("%d follows and unfollows since the mark, their followees' messages %.1f on average", ops, mean)
}
