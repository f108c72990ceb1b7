package pull_test

import (
	"context"
	"math"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestHybridMemcachedFollowRows counts the database rows and the
// memcached keys of a follow and of an unfollow on hybrid-memcached, each
// with the follower's next newest page (which reads the follower's
// followees again and patches the index), and sets them against the cost
// model's Follow and Unfollow for the same shape: a reader of g followees
// whose authors posted in turn, m messages each, following an author of
// as many followers and messages. The patch's keys (with the fence each
// round trip reads) are most of the pair's: 15 and 13 against a page's 3.
func TestHybridMemcachedFollowRows(t *testing.T) {
	const g, m = 20, 30
	ctx := context.Background()
	s := openHybridMemcached(t, 0)
	meter := cost.NewMeter(s.(*pull.Store).DB(), []string{testserver.Memcache(t)})
	const reader, followed = 1, 500
	for a := range g {
		timelinetest.Follow(t, s, reader, timeline.UserID(100+a))
		timelinetest.Follow(t, s, timeline.UserID(200+a), followed)
	}
	for range m {
		for a := range g {
			timelinetest.PostN(t, s, timeline.UserID(100+a), 1)
		}
		timelinetest.PostN(t, s, followed, 1)
	}
	timelinetest.Newest(t, s, reader) // builds the reader's index
	// measure is the rows read and the keys of op.
	measure := func(op func()) (rows, keys float64) {
		t.Helper()
		c, err := meter.Measure(ctx, 1, op)
		if err != nil {
			t.Fatal(err)
		}
		if c.CountersUnreliable() {
			t.Fatalf("the counters could not be trusted: %v", c)
		}
		return c[cost.RowsRead], c[cost.MCGets] + c[cost.MCSets] + c[cost.MCIncrs]
	}
	follow, followKeys := measure(func() {
		timelinetest.Follow(t, s, reader, followed)
		timelinetest.Newest(t, s, reader)
	})
	unfollow, unfollowKeys := measure(func() {
		if err := s.Unfollow(ctx, reader, followed); err != nil {
			t.Fatal(err)
		}
		timelinetest.Newest(t, s, reader)
	})
	page, pageKeys := measure(func() { timelinetest.Newest(t, s, reader) })

	model, err := registry.Lookup(pull.HybridMemcachedModelName)
	if err != nil {
		t.Fatal(err)
	}
	const users = 1000
	d := registry.Demand{Users: users, Messages: users * m, Page: timeline.DefaultLimit, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 100, ActiveShare: 1,
		Classes: []registry.UserClass{{Users: users, Followers: g, Followees: g, Posts: 1, Reads: 1, Followed: 1}}}
	w, _, _, err := model.WorkFor(d.Prepared(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rows read: a follow and the next page %.0f (the model %.1f), an unfollow and the next page %.0f (%.1f), a page %.0f (%.1f)",
		follow, w.Follow.RowsRead+w.Newest.RowsRead, unfollow, w.Unfollow.RowsRead+w.Newest.RowsRead, page, w.Newest.RowsRead)
	t.Logf("keys: a follow and the next page %.0f (the model %.1f), an unfollow and the next page %.0f (%.1f), a page %.0f (%.1f)",
		followKeys, w.Follow.MCKeys+w.Newest.MCKeys, unfollowKeys, w.Unfollow.MCKeys+w.Newest.MCKeys, pageKeys, w.Newest.MCKeys)
	for _, c := range []struct {
		what          string
		counted, want float64
	}{
		{"rows of a follow and the next page", follow, w.Follow.RowsRead + w.Newest.RowsRead},
		{"rows of an unfollow and the next page", unfollow, w.Unfollow.RowsRead + w.Newest.RowsRead},
		{"keys of a follow and the next page", followKeys, w.Follow.MCKeys + w.Newest.MCKeys},
		{"keys of an unfollow and the next page", unfollowKeys, w.Unfollow.MCKeys + w.Newest.MCKeys},
		{"keys of a page", pageKeys, w.Newest.MCKeys},
	} {
		if math.Abs(c.counted-c.want) > 0.1*c.counted {
			t.Errorf("%s: %.0f counted, the model says %.1f", c.what, c.counted, c.want)
		}
	}
}

// TestClientQueriesOverlap: pull-client's page sends its g queries
// concurrency at a time, so all but g/concurrency of them overlap others
// (registry.Work.Overlapped); one at a time, none do. (pull-client+memcache
// reads its misses as pull-client does: memcache's model adds and scales
// the work, Overlapped with the rest.)
func TestClientQueriesOverlap(t *testing.T) {
	const users, g = 1000, 40.0
	d := registry.Demand{Users: users, Messages: users * 100, Page: timeline.DefaultLimit, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 100, ActiveShare: 1,
		Classes: []registry.UserClass{{Users: users, Followers: g, Followees: g, Posts: 1, Reads: 1, Followed: 1}}}
	for _, c := range []struct {
		model, concurrency string
		want               float64
	}{{"pull-client", "8", g * 7 / 8}, {"pull-client", "1", 0}, {"pull-client", "", g * 7 / 8}} {
		model, err := registry.Lookup(c.model)
		if err != nil {
			t.Fatal(err)
		}
		opts := map[string]string{}
		if c.concurrency != "" {
			opts[pull.OptionConcurrency] = c.concurrency
		}
		w, _, _, err := model.WorkFor(d.Prepared(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(w.Newest.Overlapped-c.want) > 1e-9 || math.Abs(w.Older.Overlapped-c.want) > 1e-9 {
			t.Errorf("%s with concurrency %q: %v and %v of a page's queries overlapped, want %v", c.model, c.concurrency, w.Newest.Overlapped, w.Older.Overlapped, c.want)
		}
	}
}
