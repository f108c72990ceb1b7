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
	const followees, perAuthor, reader = 43, 100, timeline.UserID(1000)
	s := open(t, 0, 0, nil)
	ctx := context.Background()
	// insert runs one multi-row INSERT of a row per followee.
	insert := func(into string, row func(author int) string) {
		t.Helper()
		rows := make([]string, followees)
		for a := range rows {
			rows[a] = row(a + 1)
		}
		if _, err := s.DB().ExecContext(ctx, "INSERT INTO "+into+" VALUES "+strings.Join(rows, ",")); err != nil {
			t.Fatal(err)
		}
	}
	insert("follows (follower_id, followee_id)", func(a int) string { return fmt.Sprintf("(%d,%d)", reader, a) })
	// Each message's author drawn at random, as the benchmark's dataset
	// draws them: the authors' ids interleave and their counts vary.
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range perAuthor {
		insert("messages (author_id, body, created_at)", func(int) string {
			return fmt.Sprintf("(%d,'m%d',NOW(6))", 1+rng.IntN(followees), round)
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
	d := registry.Demand{Users: followees + 1, Messages: followees * perAuthor, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Run: &registry.RunHistory{}, Classes: []registry.UserClass{
			{Users: followees, Followers: 1, Posts: 1},
			{Users: 1, Followees: followees, Reads: 1},
		}}
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
