package redisindex_test

import (
	"math"
	"testing"

	"github.com/pushpull/pushpull/internal/cost/costtest"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull/redisindex"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestPostCommandsMatchWork counts the commands Redis runs for a post by
// an author of 20 followers, first while none of them has an index (none
// read), then once every one has read (an index each), and sets them
// against the cost model's post for a workload whose followers read
// never, and often: the script looks at every follower's index, and
// raises the author's score in each one that is there.
func TestPostCommandsMatchWork(t *testing.T) {
	const followers, posts = 20, 10
	s := open(t, 0)
	const author = timeline.UserID(1)
	for f := range followers {
		timelinetest.Follow(t, s, timeline.UserID(2+f), author)
	}
	timelinetest.PostN(t, s, author, 3)
	// perPost is the commands of a post.
	perPost := func() float64 {
		return costtest.RedisCommands(t, testserver.Redis(t), func() { timelinetest.PostN(t, s, author, posts) }) / posts
	}
	m, err := registry.Lookup(redisindex.ModelName)
	if err != nil {
		t.Fatal(err)
	}
	model := func(readers float64) float64 {
		d := registry.Demand{Users: followers + 1, Messages: 1000, Page: 20, OlderDepth: 3.5,
			PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: readers, Classes: []registry.UserClass{
				{Users: 1, Followers: followers, Posts: 1},
				{Users: followers, Followees: 1, Reads: 1},
			}}
		w, _, _, err := m.WorkFor(d, nil)
		if err != nil {
			t.Fatal(err)
		}
		return w.Post.RedisCommands
	}
	none := perPost()
	for f := range followers {
		timelinetest.Newest(t, s, timeline.UserID(2+f)) // builds the index
	}
	all := perPost()
	for _, c := range []struct {
		what           string
		counted, model float64
	}{{"no follower has an index", none, model(0)}, {"every follower has an index", all, model(1)}} {
		t.Logf("%s: %.1f commands a post, the model %.1f", c.what, c.counted, c.model)
		if math.Abs(c.counted-c.model) > 0.1*c.model {
			t.Errorf("%s: a post ran %.1f commands, the model says %.1f", c.what, c.counted, c.model)
		}
	}
}
