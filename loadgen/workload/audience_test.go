package workload

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// failingPosts fails every post.
type failingPosts struct{ timeline.Store }

func (failingPosts) Post(context.Context, timeline.UserID, string) (timeline.Message, error) {
	return timeline.Message{}, errors.New("down")
}

// TestAudienceCountsPostedAuthors: Submit tells its Audience of each post
// it made, and Since gives the mean follower count of the posts' authors
// after a mark only; failed posts count nothing.
func TestAudienceCountsPostedAuthors(t *testing.T) {
	spec := dataset.Spec{Users: 2000, Messages: 20_000, AvgFollowees: 20, Graph: dataset.GraphPowerLaw, Seed: 3,
		Activity: dataset.Activity{Mode: dataset.ActivitySkewed, PostExponent: 0.5, ReadExponent: 0.5}}
	d, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	w := &whoStore{Store: timeline.NewMemory(), readers: map[timeline.UserID]int{}, posts: map[timeline.UserID]int{}}
	var a Audience
	op := Submit(w, d, 1, Writes{Audience: &a})(0)
	ctx := context.Background()
	for range 100 {
		if err := op(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	mark := a.Mark()
	clear(w.posts)
	for range 500 {
		if err := op(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	var want float64
	for u, n := range w.posts {
		want += float64(n * len(d.Followers(uint32(u))))
	}
	want /= 500
	got, posts := a.Since(mark)
	if posts != 500 || math.Abs(got-want) > 1e-9 {
		t.Fatalf("audience since the mark: %.3f over %d posts, want %.3f over 500", got, posts, want)
	}
	if all, _ := a.Since(AudienceMark{}); all == got {
		t.Fatalf("the first 100 posts changed nothing: %.3f both", all)
	}

	mark = a.Mark()
	bad := Submit(failingPosts{w}, d, 2, Writes{Audience: &a})(0)
	for range 10 {
		if err := bad(ctx, nil); err == nil {
			t.Fatal("a failing post returned no error")
		}
	}
	if got, posts := a.Since(mark); posts != 0 || got != 0 {
		t.Fatalf("failed posts counted: %.3f over %d", got, posts)
	}
}
