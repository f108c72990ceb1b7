package capped_test

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/push/capped"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestPostRowsMatchWork counts the rows a post reads and writes once its
// followers' mailboxes are full and trimmed, and sets them against the
// cost model's post for an author of as many followers: the fan-out, the
// followers' entry counts (each an insert that meets its row, a read of
// it and an update), and the trims (every entry in pushes one out).
func TestPostRowsMatchWork(t *testing.T) {
	const limit, slack, followers = 10, 4, 20
	s := open(t, limit, slack)
	ctx := context.Background()
	const author = timeline.UserID(1)
	for f := range followers {
		timelinetest.Follow(t, s, timeline.UserID(2+f), author)
	}
	// Past the cap and a few trims, so that every follower has a state row
	// and a mailbox that is trimmed as it grows.
	timelinetest.PostN(t, s, author, 3*(limit+slack))
	meter := cost.NewMeter(s.DB(), nil)
	before, err := meter.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const posts = 5 * (slack + 1) // a whole number of trims per mailbox
	timelinetest.PostN(t, s, author, posts)
	after, err := meter.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := cost.PerOp(before, after, posts)
	if c.CountersUnreliable() {
		t.Fatalf("the counters could not be trusted: %v", c)
	}
	d := registry.Demand{Users: followers + 1, Messages: 10_000, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Classes: []registry.UserClass{
			{Users: 1, Followers: followers, Posts: 1},
			{Users: followers, Followees: 1, Reads: 1},
		}}
	m, err := registry.Lookup(capped.ModelName)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _, err := m.WorkFor(d, map[string]string{capped.OptionCap: strconv.Itoa(limit), capped.OptionSlack: strconv.Itoa(slack)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a post: %.1f rows read, %.1f written (%v); the model: %.1f, %.1f",
		c[cost.RowsRead], c[cost.RowsWritten], c, w.Post.RowsRead, w.Post.RowsWritten)
	for _, x := range []struct {
		what           string
		counted, model float64
	}{{"read", c[cost.RowsRead], w.Post.RowsRead}, {"written", c[cost.RowsWritten], w.Post.RowsWritten}} {
		if math.Abs(x.counted-x.model) > 0.1*x.model {
			t.Errorf("a post %s %.1f rows, the model says %.1f", x.what, x.counted, x.model)
		}
	}
}
