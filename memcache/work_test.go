package memcache_test

import (
	"context"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestRowsPerOperation counts the database rows of the variant's
// operations over push under the invalidate policy, as its cost model
// has them: a newest page that misses reads the wrapped store's page, one
// that hits reads nothing, and a post reads the wrapped store's post's
// rows and its author's followers (to bump their generations).
func TestRowsPerOperation(t *testing.T) {
	ctx := context.Background()
	s, inner := open(t, modelPush, memcache.Options{Policy: memcache.PolicyInvalidate})
	meter := cost.NewMeter(inner.(*push.Store).DB(), nil)
	const authors, readers = 20, 10
	for r := range readers {
		for a := 1; a <= authors; a++ {
			timelinetest.Follow(t, s, timeline.UserID(100+r), timeline.UserID(a))
		}
	}
	for a := 1; a <= authors; a++ {
		timelinetest.PostN(t, s, timeline.UserID(a), 5)
	}
	rows := func(n int, op func()) float64 {
		t.Helper()
		before, err := meter.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		op()
		after, err := meter.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := cost.PerOp(before, after, int64(n))
		if c.CountersUnreliable() {
			t.Fatalf("the counters could not be trusted: %v", c)
		}
		return c[cost.RowsRead]
	}
	pages := func(st timeline.Store) func() {
		return func() {
			for r := range readers {
				if _, err := st.Timeline(ctx, timeline.UserID(100+r), timeline.Query{}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
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
