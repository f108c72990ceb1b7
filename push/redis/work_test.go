package redis

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/cost/costtest"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestPageCommandsMatchWork counts the commands Redis runs for newest
// pages and for older pages 2 to 5 deep, each read with the cursor of the
// page before it, and sets them against the cost model's: 5 a newest page,
// and an older page's find (olderFind) besides, with the benchmark's depths
// (a mean of 3.5).
func TestPageCommandsMatchWork(t *testing.T) {
	if !strings.Contains(helpers, "'MAXLEN', "+strconv.Itoa(cursorLook)+")") {
		t.Fatalf("the script's below looks through other than cursorLook (%d) ids", cursorLook)
	}
	ctx := context.Background()
	const capN = 120
	s, err := Open(ctx, Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: testserver.Redis(t), Cap: capN})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.Follow(t, s, 1, 3)
	timelinetest.PostN(t, s, 2, capN/2)
	timelinetest.PostN(t, s, 3, capN/2)
	timelinetest.Newest(t, s, 1) // builds the feed
	// measure is the commands of each of n calls of read.
	measure := func(n int, read func()) float64 {
		return costtest.RedisCommands(t, testserver.Redis(t), func() {
			for range n {
				read()
			}
		}) / float64(n)
	}
	const page, reads = 20, 20
	newest := measure(reads, func() { timelinetest.Newest(t, s, 1) })
	var cursors []timeline.Cursor // of pages 2 to 5
	p := timelinetest.Newest(t, s, 1)
	for range 4 {
		cursors = append(cursors, p.Next)
		var err error
		if p, err = s.Timeline(ctx, 1, timeline.Query{Limit: page, Before: p.Next}); err != nil {
			t.Fatal(err)
		}
	}
	older := measure(reads, func() {
		for _, c := range cursors {
			if _, err := s.Timeline(ctx, 1, timeline.Query{Limit: page, Before: c}); err != nil {
				t.Fatal(err)
			}
		}
	}) / float64(len(cursors))
	d := registry.Demand{Page: page, OlderDepth: 3.5}
	want := 5 + olderFind(d, capN)
	t.Logf("commands per newest page %.2f, per older page %.2f (model 5, %.2f)", newest, older, want)
	if math.Abs(newest-5) > 0.25 {
		t.Errorf("a newest page ran %.2f commands, the model says 5", newest)
	}
	if math.Abs(older-want) > 0.5 {
		t.Errorf("an older page ran %.2f commands, the model says %.2f", older, want)
	}
}

// TestFollowCommandsMatchWork counts the Redis commands of a follow, an
// unfollow and a post on push-redis, for a follower whose feed is full
// (its g authors' m messages each, posted in turn, are more than the cap)
// and for one with no feed, and sets them against the cost model's
// Follow, Unfollow and Post for the same shape: a follow adds only the
// followee's ids above the feed's floor (cap/g of its m), not all m, and
// an unfollow rewrites the feed once whatever the followee's ids. A post
// by an author unfollowed lately checks each live follower against the
// unfollow's tombstones too, one command the model leaves out. (A single
// operation may count one command of the client's own besides.)
func TestFollowCommandsMatchWork(t *testing.T) {
	ctx := context.Background()
	const capN, g, m = 120, 20, 30
	s, err := Open(ctx, Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: testserver.Redis(t), Cap: capN})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const reader, idle, followed = 1, 2, 500
	for a := range g {
		timelinetest.Follow(t, s, reader, timeline.UserID(100+a))
	}
	for range m {
		for a := range g {
			timelinetest.PostN(t, s, timeline.UserID(100+a), 1)
		}
		timelinetest.PostN(t, s, followed, 1)
	}
	timelinetest.Newest(t, s, reader) // builds the reader's feed; idle has none
	// count is the commands of op.
	count := func(op func()) float64 {
		t.Helper()
		return costtest.RedisCommands(t, testserver.Redis(t), op)
	}
	// posts is the commands of a post by author, over 5 of them.
	posts := func(author timeline.UserID) float64 {
		t.Helper()
		return count(func() { timelinetest.PostN(t, s, author, 5) }) / 5
	}
	unfollow := func(follower timeline.UserID) func() {
		return func() {
			if err := s.Unfollow(ctx, follower, followed); err != nil {
				t.Fatal(err)
			}
		}
	}
	counted := map[string]float64{
		"follow with a feed":    count(func() { timelinetest.Follow(t, s, reader, followed) }),
		"post with a feed":      posts(followed),
		"unfollow with a feed":  count(unfollow(reader)),
		"follow with no feed":   count(func() { timelinetest.Follow(t, s, idle, followed) }),
		"unfollow with no feed": count(unfollow(idle)),
	}
	// idle follows and unfollows one of the reader's authors, whose
	// posts then check their one live follower, the reader, against the
	// unfollow's tombstone.
	timelinetest.Follow(t, s, idle, 100)
	if err := s.Unfollow(ctx, idle, 100); err != nil {
		t.Fatal(err)
	}
	counted["post after an unfollow"] = posts(100)

	d := oneFollowerDemand(g, m)
	live := workFor(t, d, capN)
	d.ActiveShare = 0 // no reader holds a feed
	none := workFor(t, d, capN)
	want := map[string]float64{
		"follow with a feed":    live.Follow.RedisCommands,
		"post with a feed":      live.Post.RedisCommands,
		"unfollow with a feed":  live.Unfollow.RedisCommands,
		"follow with no feed":   none.Follow.RedisCommands,
		"unfollow with no feed": none.Unfollow.RedisCommands,
		// A workload with no unfollows has no tombstones: the model
		// checks none, one command less a live follower
		// (TestPostCommandsMatchWork counts them).
		"post after an unfollow": live.Post.RedisCommands + 1,
	}
	for what, n := range counted {
		t.Logf("%s: %.0f commands, the model %.1f", what, n, want[what])
		if math.Abs(n-want[what]) > 1.5 || strings.HasPrefix(what, "post") && math.Abs(n-want[what]) > 0.5 {
			t.Errorf("%s ran %.0f commands, the model says %.1f", what, n, want[what])
		}
	}
}

// TestPostCommandsMatchWork counts the Redis commands of posts onto a
// full feed, which is trimmed back to the cap at every cap/8+1-th id
// pushed onto it (5 commands), and of posts by an author unfollowed
// lately, whose fan-out asks of each live feed whether its follower is the
// one who unfollowed (a command), and sets them against the cost model's
// Post: for a workload whose feeds outgrow the cap, and one whose
// unfollows reach every author within the tombstones' life.
func TestPostCommandsMatchWork(t *testing.T) {
	ctx := context.Background()
	const capN, g, m = 16, 4, 10 // a timeline of 40 ids, more than the cap
	every := max(1, capN/8) + 1
	s, err := Open(ctx, Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: testserver.Redis(t), Cap: capN})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const reader, other = 1, 2
	for a := range g {
		timelinetest.Follow(t, s, reader, timeline.UserID(100+a))
		timelinetest.PostN(t, s, timeline.UserID(100+a), m)
	}
	timelinetest.Newest(t, s, reader) // builds the feed: the newest cap ids
	// posts is the commands of n posts by author, per post.
	posts := func(author timeline.UserID, n int) float64 {
		t.Helper()
		return costtest.RedisCommands(t, testserver.Redis(t), func() { timelinetest.PostN(t, s, author, n) }) / float64(n)
	}
	full := posts(100, 4*every) // four trims
	// other follows and unfollows the reader's author 101: its posts
	// then check the reader's feed against the tombstone.
	timelinetest.Follow(t, s, other, 101)
	if err := s.Unfollow(ctx, other, 101); err != nil {
		t.Fatal(err)
	}
	unfollowed := posts(101, 4*every)

	d := oneFollowerDemand(g, m)
	quiet := workFor(t, d, capN)
	d.UnfollowsPerSec = 1e6 // every author unfollowed within the tombstones' life
	churned := workFor(t, d, capN)
	for _, c := range []struct {
		what           string
		counted, model float64
	}{{"post onto a full feed", full, quiet.Post.RedisCommands}, {"post after an unfollow", unfollowed, churned.Post.RedisCommands}} {
		t.Logf("%s: %.2f commands, the model %.2f", c.what, c.counted, c.model)
		if math.Abs(c.counted-c.model) > 0.05 {
			t.Errorf("%s ran %.2f commands, the model says %.2f", c.what, c.counted, c.model)
		}
	}
}

// oneFollowerDemand is a workload of 1,000 users, each following g
// authors of m messages and followed by one reader, all active.
func oneFollowerDemand(g, m float64) registry.Demand {
	const users = 1000
	return registry.Demand{Users: users, Messages: users * m, Page: timeline.DefaultLimit, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 100, ActiveShare: 1,
		Classes: []registry.UserClass{{Users: users, Followers: 1, Followees: g, Posts: 1, Reads: 1, Followed: 1}}}
}

// workFor is the model's work for d with a cap of capN.
func workFor(t *testing.T, d registry.Demand, capN int) registry.OpWork {
	t.Helper()
	model, err := registry.Lookup(ModelName)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _, err := model.WorkFor(d.Prepared(), map[string]string{OptionCap: strconv.Itoa(capN)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}
