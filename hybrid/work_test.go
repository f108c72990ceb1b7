package hybrid_test

import (
	"context"
	"math"
	"testing"

	"github.com/pushpull/pushpull/hybrid"
	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestCelebrityPostRowsMatchWork counts the rows of posts by an author
// with more followers than the threshold, listed as pulled already, and
// sets them against the cost model's post for such an author: the count
// of the followers stops at the threshold (the power-law graph at 3,000
// users has authors of up to 2,999 followers, whose posts count 1,000 at
// the default threshold), and the post writes its message alone.
func TestCelebrityPostRowsMatchWork(t *testing.T) {
	const threshold, followers, posts = 5, 12, 10
	s := open(t, threshold)
	const author = timeline.UserID(1)
	for f := range followers {
		timelinetest.Follow(t, s, timeline.UserID(100+f), author)
	}
	timelinetest.PostN(t, s, author, 1) // lists the author as pulled
	c, err := cost.NewMeter(s.DB(), nil).Measure(context.Background(), posts, func() { timelinetest.PostN(t, s, author, posts) })
	if err != nil {
		t.Fatal(err)
	}
	if c.CountersUnreliable() {
		t.Fatalf("the counters could not be trusted: %v", c)
	}
	m, err := registry.Lookup(hybrid.ModelName)
	if err != nil {
		t.Fatal(err)
	}
	d := registry.Demand{Users: followers + 1, Messages: 1000, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Classes: []registry.UserClass{
			{Users: 1, Followers: followers, Posts: 1},
			{Users: followers, Followees: 1, Reads: 1},
		}}
	w, _, _, err := m.WorkFor(d, map[string]string{hybrid.OptionThreshold: "5"})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		what           string
		counted, model float64
	}{{"read", c[cost.RowsRead], w.Post.RowsRead}, {"written", c[cost.RowsWritten], w.Post.RowsWritten}} {
		t.Logf("a celebrity's post: %.2f rows %s counted, the model %.2f", x.counted, x.what, x.model)
		if math.Abs(x.counted-x.model) > 0.1*math.Max(x.counted, x.model) {
			t.Errorf("a celebrity's post: %.2f rows %s counted, the model says %.2f", x.counted, x.what, x.model)
		}
	}
}
