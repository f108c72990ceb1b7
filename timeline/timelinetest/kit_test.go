package timelinetest_test

import (
	"context"
	"sync"
	"testing"

	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// lateFollows is a memory store that applies follows and unfollows only
// when it is settled: the shape of a model with asynchronous fan-out. It
// meets the contract only for callers that settle before they read.
type lateFollows struct {
	*timeline.Memory
	mu      sync.Mutex
	pending []func(context.Context) error
}

var _ timeline.Settler = (*lateFollows)(nil)

func newLateFollows(t *testing.T) *lateFollows {
	s := &lateFollows{Memory: timeline.NewMemory()}
	t.Cleanup(func() { s.Close() })
	return s
}

func (s *lateFollows) later(ctx context.Context, follower, followee timeline.UserID, apply func(context.Context, timeline.UserID, timeline.UserID) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := timeline.CheckFollow(follower, followee); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, func(ctx context.Context) error { return apply(ctx, follower, followee) })
	return nil
}

func (s *lateFollows) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.later(ctx, follower, followee, s.Memory.Follow)
}

func (s *lateFollows) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.later(ctx, follower, followee, s.Memory.Unfollow)
}

func (s *lateFollows) Settle(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.pending) > 0 {
		if err := s.pending[0](ctx); err != nil {
			return err
		}
		s.pending = s.pending[1:]
	}
	return nil
}

// TestSuiteSettles runs the suite on a store whose follows land only when
// it is settled: it passes only because the suite settles before it reads.
func TestSuiteSettles(t *testing.T) {
	s := newLateFollows(t)
	timelinetest.Follow(t, s, 1, 2)
	m := timelinetest.Post(t, s, 2, "hello")
	if p, err := s.Timeline(timelinetest.Context(t), 1, timeline.Query{}); err != nil || len(p.Messages) != 0 {
		t.Fatalf("before Settle: %+v, %v; the store does not defer follows", p, err)
	}
	if got := timelinetest.WalkIDs(t, s, 1, 1); len(got) != 1 || got[0] != m.ID {
		t.Fatalf("after Settle: %v, want [%d]", got, m.ID)
	}
	timelinetest.Run(t, func(t *testing.T) timeline.Store { return newLateFollows(t) })
}

// TestRunConfigs runs the suite under two configurations and checks that
// each one's After ran after its own suite.
func TestRunConfigs(t *testing.T) {
	opened := map[string]int{}
	var configs []timelinetest.Config
	for _, name := range []string{"memory", "late follows"} {
		configs = append(configs, timelinetest.Config{
			Name: name,
			Open: func(t *testing.T) timeline.Store {
				opened[name]++
				if name == "memory" {
					s := timeline.NewMemory()
					t.Cleanup(func() { s.Close() })
					return s
				}
				return newLateFollows(t)
			},
			After: func(t *testing.T) {
				if opened[name] < 10 {
					t.Errorf("After of %s ran after %d stores were opened", name, opened[name])
				}
				opened[name] = -1
			},
		})
	}
	timelinetest.RunConfigs(t, configs)
	for name, n := range opened {
		if n != -1 {
			t.Errorf("After of %s did not run", name)
		}
	}
}

// BenchmarkMemory measures the reference store with the kit's benchmarks.
func BenchmarkMemory(b *testing.B) {
	timelinetest.RunBenchmarks(b, func(b *testing.B) timeline.Store {
		s := timeline.NewMemory()
		b.Cleanup(func() { s.Close() })
		return s
	})
}
