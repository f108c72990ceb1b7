package async

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestCelebrityFanOutRowsMatchWork counts the rows the worker reads and
// writes to apply the post of an author of many chunks of followers,
// chunk after chunk, and sets them against the cost model's later work for
// such an author: each chunk counts no more of the followers left than it
// could write (counting them all at every chunk read 16,644 rows here, 7,443 now,
// growing with the square of the followers).
func TestCelebrityFanOutRowsMatchWork(t *testing.T) {
	const followers, chunk = 2500, 300
	s, _ := open(t, Options{Workers: -1})
	celebrity(t, s, followers)
	timelinetest.Post(t, s, 1, "to everyone")
	ctx := context.Background()
	// The statistics of the tables just filled, now: recomputed in the
	// background, they would count 9,000 rows read in the middle.
	if _, err := s.DB().ExecContext(ctx, `ANALYZE TABLE follows, mailbox, fanout_jobs`); err != nil {
		t.Fatal(err)
	}
	c, err := cost.NewMeter(s.DB(), nil).Measure(ctx, 1, func() { drain(t, &Worker{DB: s.DB(), Chunk: chunk}) })
	if err != nil {
		t.Fatal(err)
	}
	if c.CountersUnreliable() {
		t.Fatalf("the counters could not be trusted: %v", c)
	}
	d := registry.Demand{Users: followers + 1, Messages: 1000, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Classes: []registry.UserClass{
			{Users: 1, Followers: followers, Posts: 1},
			{Users: followers, Followees: 1, Reads: 1},
		}}
	m, err := registry.Lookup(ModelName)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _, err := m.WorkFor(d, map[string]string{OptionChunk: strconv.Itoa(chunk)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the fan-out read %.0f rows and wrote %.0f; the model: %.0f, %.0f", c[cost.RowsRead], c[cost.RowsWritten], w.Later.RowsRead, w.Later.RowsWritten)
	for _, x := range []struct {
		what           string
		counted, model float64
	}{{"read", c[cost.RowsRead], w.Later.RowsRead}, {"written", c[cost.RowsWritten], w.Later.RowsWritten}} {
		if math.Abs(x.counted-x.model) > 0.1*x.model {
			t.Errorf("the fan-out %s %.0f rows, the model says %.0f", x.what, x.counted, x.model)
		}
	}
	if w.LargestPost != w.Later {
		t.Errorf("the largest post %+v, the only author's %+v", w.LargestPost, w.Later)
	}
}
