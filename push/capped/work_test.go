package capped_test

import (
	"context"
	"math"
	"math/rand/v2"
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
	const author = timeline.UserID(1)
	for f := range followers {
		timelinetest.Follow(t, s, timeline.UserID(2+f), author)
	}
	// Past the cap and a few trims, so that every follower has a state row
	// and a mailbox that is trimmed as it grows.
	timelinetest.PostN(t, s, author, 3*(limit+slack))
	const posts = 5 * (slack + 1) // a whole number of trims per mailbox
	c := rowsOf(t, s, posts, func() { timelinetest.PostN(t, s, author, posts) })
	d := registry.Demand{Users: followers + 1, Messages: 10_000, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Classes: []registry.UserClass{
			{Users: 1, Followers: followers, Posts: 1},
			{Users: followers, Followees: 1, Reads: 1},
		}}
	w := work(t, d, limit, slack)
	matchRows(t, "a post", c, w.Post)
}

// TestFollowRowsMatchWork counts the rows of a follow and of an unfollow
// by a reader whose mailbox is cut to the cap, and sets them against the
// cost model's, for the steady state's mailbox of cap + slack/2 entries:
// the follow backfills only the followee's messages above the reader's
// floor (their share of that many newest entries), and the unfollow
// deletes those, after reading the followee's messages and probing the
// mailbox for each. (The follow brings the mailbox to cap + slack, not
// past it: follows and unfollows balanced, the trims are the posts'.)
func TestFollowRowsMatchWork(t *testing.T) {
	const limit, slack, followees, rounds = 40, 20, 5, 52
	s := open(t, limit, slack)
	const reader, followee = timeline.UserID(100), timeline.UserID(followees + 1)
	for a := 1; a <= followees; a++ {
		timelinetest.Follow(t, s, reader, timeline.UserID(a))
	}
	// Round after round, a post by each followee and by the one to be
	// followed, so that their ids interleave; 260 entries in bring the
	// reader's mailbox to cap + slack/2 (trimmed to 40 at 61, every 21).
	for range rounds {
		for a := range followees + 1 {
			timelinetest.PostN(t, s, followee-timeline.UserID(a), 1) // the followee first
		}
	}
	follow := rowsOf(t, s, 1, func() { timelinetest.Follow(t, s, reader, followee) })
	unfollow := rowsOf(t, s, 1, func() { timelinetest.Unfollow(t, s, reader, followee) })
	d := registry.Demand{Users: followees + 2, Messages: (followees + 1) * rounds, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Classes: []registry.UserClass{
			{Users: followees + 1, Followers: 1, Posts: 1, Followed: 1},
			{Users: 1, Followees: followees, Reads: 1},
		}}
	w := work(t, d, limit, slack)
	matchRows(t, "a follow", follow, w.Follow)
	matchRows(t, "an unfollow", unfollow, w.Unfollow)
}

// TestRunPostRowsMatchWork counts the rows of posts made just after the
// state a bulk load leaves (every mailbox cut to the cap, its count at
// the cap) and sets them against the cost model's post in a run of as
// many posts since the load (registry.RunHistory): a mailbox is trimmed
// only once slack+1 entries more came in, so these first posts trim less
// than the steady state's every entry in, one out.
func TestRunPostRowsMatchWork(t *testing.T) {
	const limit, slack, authors, followers, follows, posts = 10, 4, 30, 30, 3, 30
	s := open(t, limit, slack)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	for f := range followers {
		for _, a := range rng.Perm(authors)[:follows] {
			timelinetest.Follow(t, s, timeline.UserID(100+f), timeline.UserID(1+a))
		}
	}
	for a := range authors {
		timelinetest.PostN(t, s, timeline.UserID(1+a), 2*limit)
	}
	// The load's state: every mailbox trimmed to the cap.
	if _, err := s.DB().ExecContext(ctx, `UPDATE mailbox_state SET due = 1`); err != nil {
		t.Fatal(err)
	}
	for f := range followers {
		if _, err := s.Trim(ctx, timeline.UserID(100+f)); err != nil {
			t.Fatal(err)
		}
	}
	c := rowsOf(t, s, posts, func() {
		for range posts {
			timelinetest.PostN(t, s, timeline.UserID(1+rng.IntN(authors)), 1)
		}
	})
	d := registry.Demand{Users: authors + followers, Messages: 2 * limit * authors, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Run: &registry.RunHistory{Posts: posts}, Classes: []registry.UserClass{
			{Users: authors, Followers: followers * follows / authors, Posts: 1},
			{Users: followers, Followees: follows, Reads: 1},
		}}
	matchRows(t, "a post after the load", c, work(t, d, limit, slack).Post)
}

// rowsOf is the cost per operation of n operations that do makes, as
// MariaDB's counters count them.
func rowsOf(t *testing.T, s *capped.Store, n int, do func()) cost.Cost {
	t.Helper()
	ctx := context.Background()
	meter := cost.NewMeter(s.DB(), nil)
	before, err := meter.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	do()
	after, err := meter.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := cost.PerOp(before, after, int64(n))
	if c.CountersUnreliable() {
		t.Fatalf("the counters could not be trusted: %v", c)
	}
	return c
}

// work is the cost model's work for d with a cap and a slack.
func work(t *testing.T, d registry.Demand, limit, slack int) registry.OpWork {
	t.Helper()
	m, err := registry.Lookup(capped.ModelName)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _, err := m.WorkFor(d, map[string]string{capped.OptionCap: strconv.Itoa(limit), capped.OptionSlack: strconv.Itoa(slack)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// matchRows fails t unless what's rows read and written are within 10%
// of the model's.
func matchRows(t *testing.T, what string, c cost.Cost, model registry.Work) {
	t.Helper()
	t.Logf("%s: %.1f rows read, %.1f written (%v); the model: %.1f, %.1f",
		what, c[cost.RowsRead], c[cost.RowsWritten], c, model.RowsRead, model.RowsWritten)
	for _, x := range []struct {
		what           string
		counted, model float64
	}{{"read", c[cost.RowsRead], model.RowsRead}, {"written", c[cost.RowsWritten], model.RowsWritten}} {
		if math.Abs(x.counted-x.model) > 0.1*x.model {
			t.Errorf("%s %s %.1f rows, the model says %.1f", what, x.what, x.counted, x.model)
		}
	}
}
