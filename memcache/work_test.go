package memcache_test

import (
	"context"
	"math"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// countedPush opens the variant over push under the invalidate policy,
// with readers users (100 and up) each following authors authors (1 and
// up) who posted 5 messages each, a meter of the database and memcached,
// and a function that counts what each of n operations op makes cost.
func countedPush(t *testing.T, authors, readers int) (*memcache.Store, timeline.Store, func(n int, op func()) cost.Cost) {
	t.Helper()
	s, inner := open(t, modelPush, memcache.Options{Policy: memcache.PolicyInvalidate})
	meter := cost.NewMeter(inner.(*push.Store).DB(), []string{testserver.Memcache(t)})
	for r := range readers {
		for a := 1; a <= authors; a++ {
			timelinetest.Follow(t, s, timeline.UserID(100+r), timeline.UserID(a))
		}
	}
	for a := 1; a <= authors; a++ {
		timelinetest.PostN(t, s, timeline.UserID(a), 5)
	}
	return s, inner, func(n int, op func()) cost.Cost {
		t.Helper()
		c, err := meter.Measure(context.Background(), int64(n), op)
		if err != nil {
			t.Fatal(err)
		}
		if c.CountersUnreliable() {
			t.Fatalf("the counters could not be trusted: %v", c)
		}
		return c
	}
}

// pagesOf reads the newest page of the readers users from 100 up.
func pagesOf(t *testing.T, st timeline.Store, readers int) func() {
	return func() {
		for r := range readers {
			if _, err := st.Timeline(context.Background(), timeline.UserID(100+r), timeline.Query{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRowsPerOperation counts the database rows of the variant's
// operations over push under the invalidate policy, as its cost model
// has them: a newest page that misses reads the wrapped store's page, one
// that hits reads nothing, and a post reads the wrapped store's post's
// rows and its author's followers (to bump their generations).
func TestRowsPerOperation(t *testing.T) {
	const authors, readers = 20, 10
	s, inner, counted := countedPush(t, authors, readers)
	rows := func(n int, op func()) float64 { return counted(n, op)[cost.RowsRead] }
	pages := func(st timeline.Store) func() { return pagesOf(t, st, readers) }
	page := rows(readers, pages(inner))
	miss := rows(readers, pages(s))
	hit := rows(readers, pages(s))
	innerPost := rows(1, func() { timelinetest.PostN(t, inner, 1, 1) })
	post := rows(1, func() { timelinetest.PostN(t, s, 2, 1) })
	t.Logf("rows read: push's page %.1f, a miss %.1f, a hit %.1f; push's post %.1f, the variant's %.1f", page, miss, hit, innerPost, post)
	if !(page > 0) || miss != page {
		t.Errorf("a miss read %.1f rows, push's page %.1f", miss, page)
	}
	if hit != 0 {
		t.Errorf("a hit read %.1f rows", hit)
	}
	if post != innerPost+readers {
		t.Errorf("a post read %.1f rows, push's %.1f and %d followers", post, innerPost, readers)
	}
}

// TestKeysPerOperation counts the memcached keys of the variant's
// operations over push under the invalidate policy (gets, sets and incrs,
// as a run's cost counters count them, every request reading its server's
// fence too) and sets them against its cost model at the extremes of its
// hit rate: a reader's first read since the cache was empty, a miss, a
// hit, a post to f followers and a follow and an unfollow.
func TestKeysPerOperation(t *testing.T) {
	ctx := context.Background()
	const authors, readers = 20, 10
	s, _, counted := countedPush(t, authors, readers)
	keys := func(n int, op func()) float64 {
		c := counted(n, op)
		return c[cost.MCGets] + c[cost.MCSets] + c[cost.MCIncrs]
	}
	pages := pagesOf(t, s, readers)
	first := keys(readers, pages)
	hit := keys(readers, pages)
	post := keys(1, func() { timelinetest.PostN(t, s, 1, 1) }) // every reader follows author 1
	miss := keys(readers, pages)
	follow := keys(2, func() {
		timelinetest.Follow(t, s, 100, authors+1)
		if err := s.Unfollow(ctx, 100, authors+1); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("keys: a first read %.2f, a hit %.2f, a miss %.2f, a post to %d followers %.2f, a follow or unfollow %.2f", first, hit, miss, readers, post, follow)

	// The model, for readers of 20 followees whose authors each have 10
	// followers: reads that always hit, always miss, and that are all
	// their reader's first.
	m, err := registry.Lookup(push.ModelName + "+" + memcache.Variant)
	if err != nil {
		t.Fatal(err)
	}
	model := func(postsPerSec float64, cold registry.ColdStart) registry.OpWork {
		d := registry.Demand{Users: 200, Messages: 1000, Page: 20, OlderDepth: 3.5, PostsPerSec: postsPerSec, ReadsPerSec: 1000,
			ActiveShare: 1, Cold: cold,
			Classes: []registry.UserClass{{Users: 200, Followers: readers, Followees: authors, Posts: 1, Reads: 1, Followed: 1}}}
		w, _, _, err := m.WorkFor(d.Prepared(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	warm, busy := model(0, registry.ColdStart{}), model(1e9, registry.ColdStart{})
	cold := model(0, registry.ColdStart{Span: 1e-9})
	for _, c := range []struct {
		what          string
		counted, want float64
	}{
		{"a first read", first, cold.Newest.MCKeys},
		{"a hit", hit, warm.Newest.MCKeys},
		{"a miss", miss, busy.Newest.MCKeys},
		{"a post", post, warm.Post.MCKeys},
		{"a follow or unfollow", follow, (warm.Follow.MCKeys + warm.Unfollow.MCKeys) / 2},
	} {
		if math.Abs(c.counted-c.want) > 0.05 {
			t.Errorf("%s: %.2f keys counted, the model says %.2f", c.what, c.counted, c.want)
		}
	}
}
