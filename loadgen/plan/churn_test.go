package plan

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/timeline"
)

// followeeRecorder is the reference memory store, noting the followee of
// every follow and unfollow it is asked for.
type followeeRecorder struct {
	*timeline.Memory
	followees []timeline.UserID
}

func (r *followeeRecorder) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	r.followees = append(r.followees, followee)
	return r.Memory.Follow(ctx, follower, followee)
}

func (r *followeeRecorder) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	r.followees = append(r.followees, followee)
	return r.Memory.Unfollow(ctx, follower, followee)
}

// TestChurnFolloweesMessages: the messages of the followee a benchmark's
// follow or unfollow touches (the rows push backfills into a mailbox or
// removes from it), drawn by the benchmark's own Churn on the power-law
// graph the benchmark generates, average what the plan's
// FollowedMessages expects, within 10 %, over 40 phases' worth of 250
// follows and unfollows each. One phase alone strays far from it (a
// restore touches its unfollow's followee again, and a few authors hold
// hundreds of messages), which is why a check takes the phase's own count
// (results.Phase.FolloweeMessages).
func TestChurnFolloweesMessages(t *testing.T) {
	for _, scale := range []float64{0.1, 0.3} {
		s, err := dataset.PaperSpec().Scaled(scale)
		if err != nil {
			t.Fatal(err)
		}
		s.Graph = dataset.GraphPowerLaw
		d, err := dataset.Generate(s)
		if err != nil {
			t.Fatal(err)
		}
		messages := make([]float64, s.Users+1)
		for _, a := range d.Authors {
			messages[a]++
		}
		const phases, ops = 40, 250
		var sum, low, high float64
		low = math.Inf(1)
		ctx := context.Background()
		for p := range phases {
			rec := &followeeRecorder{Memory: timeline.NewMemory()}
			churn := workload.NewChurn(d)
			rng := rand.New(rand.NewPCG(uint64(s.Users), uint64(p)))
			for range ops {
				op := churn.Follow
				if rng.IntN(2) == 0 {
					op = churn.Unfollow
				}
				if err := op(ctx, rec, rng); err != nil {
					t.Fatal(err)
				}
			}
			var m float64
			for _, f := range rec.followees {
				m += messages[f]
			}
			m /= float64(len(rec.followees))
			sum += m
			low, high = math.Min(low, m), math.Max(high, m)
		}
		counted := sum / phases
		w := Workload{Users: s.Users, AvgFollowees: s.AvgFollowees, Graph: dataset.GraphPowerLaw,
			MessagesPerUser: float64(s.Messages) / float64(s.Users), NewestPerSec: 1, PostsPerSec: 1, FollowsPerSec: 1}
		dm, err := w.Demand()
		if err != nil {
			t.Fatal(err)
		}
		predicted := dm.FollowedMessages()
		t.Logf("%d users: a follow's or unfollow's followee has %.1f messages over %d phases (%.1f to %.1f by phase), %.1f expected",
			s.Users, counted, phases, low, high, predicted)
		if math.Abs(predicted/counted-1) > 0.10 {
			t.Errorf("%d users: a follow's or unfollow's followee has %.1f messages, the plan expects %.1f", s.Users, counted, predicted)
		}
	}
}
