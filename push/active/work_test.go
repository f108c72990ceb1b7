package active_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/push/active"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestRebuildRowsMatchWork counts the rows of a newest page whose reader
// is inactive, in the benchmark's shape (43 followees of 100 messages
// each, their ids interleaved, a rebuild of the default 800 entries), and
// of the next page, read from the rebuilt mailbox, and sets them against
// the cost model's newest page for a reader who is inactive (every read a
// cold one) and its older page (a reader active already); and the entries
// the rebuild wrote, and its rows (the cold read's beyond the warm one's),
// against the rebuild's own in the model (registry.Work.Rebuilt,
// RebuildRowsRead and RebuildRowsWritten), which a calibration prices by
// the entries instead of the rows.
func TestRebuildRowsMatchWork(t *testing.T) {
	rebuildRows(t, []followeeGroup{{authors: 43, posts: 1}}, 43*100)
}

// TestRebuildRowsMatchWorkSkewed is TestRebuildRowsMatchWork for a reader
// whose followees post at very different rates, as on the power-law graph,
// where a few prolific authors are followed by nearly everyone: 8 authors
// of about 300 messages and 16 of about 20. The merge's equal shares reach
// far back among the rare authors, so its floor falls deep and its last
// statement reads many of the prolific authors' ids: more than 3 rows an
// entry read and written where the followees who post alike take about 2.
func TestRebuildRowsMatchWorkSkewed(t *testing.T) {
	rebuildRows(t, []followeeGroup{{authors: 8, posts: 15}, {authors: 16, posts: 1}}, 8*300+16*20)
}

// followeeGroup is authors followees who post at relative rate posts.
type followeeGroup struct {
	authors int
	posts   float64
}

// rebuildRows loads a reader who follows groups, whose messages (each of
// an author drawn by the groups' rates, as the benchmark's dataset draws
// them) number messages, and checks a cold and a warm newest page against
// the cost model (see TestRebuildRowsMatchWork).
func rebuildRows(t *testing.T, groups []followeeGroup, messages int) {
	t.Helper()
	const reader = timeline.UserID(1000)
	var weights []float64
	var classes []registry.UserClass
	for _, g := range groups {
		for range g.authors {
			weights = append(weights, g.posts)
		}
		classes = append(classes, registry.UserClass{Users: float64(g.authors), Followers: 1, Posts: g.posts})
	}
	followees := len(weights)
	s := open(t, 0, 0, nil)
	ctx := context.Background()
	// insert runs one multi-row INSERT of n rows.
	insert := func(into string, n int, row func(i int) string) {
		t.Helper()
		rows := make([]string, n)
		for i := range rows {
			rows[i] = row(i)
		}
		if _, err := s.DB().ExecContext(ctx, "INSERT INTO "+into+" VALUES "+strings.Join(rows, ",")); err != nil {
			t.Fatal(err)
		}
	}
	insert("follows (follower_id, followee_id)", followees, func(a int) string { return fmt.Sprintf("(%d,%d)", reader, a+1) })
	// Each message's author drawn at random by the rates: the authors'
	// ids interleave and their counts vary.
	var total float64
	for _, w := range weights {
		total += w
	}
	rng := rand.New(rand.NewPCG(1, 2))
	author := func() int {
		x := rng.Float64() * total
		for a, w := range weights {
			if x -= w; x < 0 {
				return a + 1
			}
		}
		return followees
	}
	for i := 0; i < messages; i += followees {
		insert("messages (author_id, body, created_at)", min(followees, messages-i), func(j int) string {
			return fmt.Sprintf("(%d,'m%d',NOW(6))", author(), i+j)
		})
	}
	meter := cost.NewMeter(s.DB(), nil)
	count := func(read func()) cost.Cost {
		t.Helper()
		before, err := meter.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		read()
		after, err := meter.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := cost.PerOp(before, after, 1)
		if c.CountersUnreliable() {
			t.Fatalf("the counters could not be trusted: %v", c)
		}
		return c
	}
	cold := count(func() { timelinetest.Newest(t, s, reader) })
	if n := s.Counters()[counter.Rebuilds]; n != 1 {
		t.Fatalf("%d rebuilds, want the cold read's", n)
	}
	warm := count(func() { timelinetest.Newest(t, s, reader) })
	m, err := registry.Lookup(active.ModelName)
	if err != nil {
		t.Fatal(err)
	}
	// One reader, who has not read since a load that left them inactive.
	d := registry.Demand{Users: float64(followees + 1), Messages: float64(messages), Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Run: &registry.RunHistory{},
		Classes: append(classes, registry.UserClass{Users: 1, Followees: float64(followees), Reads: 1})}
	w, _, _, err := m.WorkFor(d, map[string]string{active.OptionActiveReads: "1e-9"})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		what           string
		counted, model float64
	}{
		{"a cold read's rows read", cold[cost.RowsRead], w.Newest.RowsRead},
		{"a cold read's rows written", cold[cost.RowsWritten], w.Newest.RowsWritten},
		{"a warm read's rows read", warm[cost.RowsRead], w.Older.RowsRead},
		// The rebuild's own: its entries, priced by a calibration in
		// their stead, and its rows, the cold read's beyond the warm one's.
		{"a cold read's entries rebuilt", float64(s.Counters()[counter.RebuildRows]), w.Newest.Rebuilt},
		{"a rebuild's rows read", cold[cost.RowsRead] - warm[cost.RowsRead], w.Newest.RebuildRowsRead},
		{"a rebuild's rows written", cold[cost.RowsWritten] - warm[cost.RowsWritten], w.Newest.RebuildRowsWritten},
	} {
		t.Logf("%s: %.0f, the model %.0f", x.what, x.counted, x.model)
		if math.Abs(x.counted-x.model) > 0.1*x.model {
			t.Errorf("%s: %.0f, the model says %.0f", x.what, x.counted, x.model)
		}
	}
}
