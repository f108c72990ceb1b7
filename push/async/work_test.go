package async

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
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
	c := measureDrain(t, s, &Worker{DB: s.DB(), Chunk: chunk})
	d := registry.Demand{Users: followers + 1, Messages: 1000, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Classes: []registry.UserClass{
			{Users: 1, Followers: followers, Posts: 1},
			{Users: followers, Followees: 1, Reads: 1},
		}}
	w := workFor(t, d, chunk)
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

// TestBacklogRowsMatchWork applies a backlog of posts, more than one
// chunk fits, and sets the rows the worker reads against the cost model's
// later work for them: a chunk counts the followers of the jobs it
// applies, not of every job it claimed and leaves queued (counting those
// too read 13,000 rows here where the model says 8,160, and again at each
// claim while the backlog lasted).
func TestBacklogRowsMatchWork(t *testing.T) {
	const authors, followers, chunk = 40, 100, 1000
	s, _ := open(t, Options{Workers: -1})
	// Authors 1..40, each followed by users 101..200.
	if _, err := s.DB().Exec(`INSERT INTO follows (follower_id, followee_id) SELECT f.seq, a.seq FROM seq_1_to_40 a, seq_101_to_200 f`); err != nil {
		t.Fatal(err)
	}
	for a := timeline.UserID(1); a <= authors; a++ {
		timelinetest.Post(t, s, a, "hello")
	}
	st := NewStats()
	c := measureDrain(t, s, &Worker{DB: s.DB(), Chunk: chunk, Stats: st})
	if n := st.Counters()["fanout_rows"]; n != authors*followers {
		t.Fatalf("the fan-out wrote %d rows, want %d", n, authors*followers)
	}
	d := registry.Demand{Users: authors + followers, Messages: 1000, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Classes: []registry.UserClass{
			{Users: authors, Followers: followers, Posts: 1},
			{Users: followers, Followees: authors, Reads: 1},
		}}
	w := workFor(t, d, chunk)
	read, written := authors*w.Later.RowsRead, authors*w.Later.RowsWritten
	t.Logf("the backlog read %.0f rows and wrote %.0f; the model: %.0f, %.0f", c[cost.RowsRead], c[cost.RowsWritten], read, written)
	if math.Abs(c[cost.RowsRead]-read) > 0.1*read {
		t.Errorf("the backlog read %.0f rows, the model says %.0f", c[cost.RowsRead], read)
	}
	if math.Abs(c[cost.RowsWritten]-written) > 0.1*written {
		t.Errorf("the backlog wrote %.0f rows, the model says %.0f", c[cost.RowsWritten], written)
	}
}

// workFor is push-async's cost model for d with chunks of chunk followers.
func workFor(t *testing.T, d registry.Demand, chunk int) registry.OpWork {
	t.Helper()
	m, err := registry.Lookup(ModelName)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _, err := m.WorkFor(d, map[string]string{OptionChunk: strconv.Itoa(chunk)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// measureDrain counts what w does to drain s's queue, on the database's
// counters. The statistics of the tables just filled are taken first:
// recomputed in the background, they counted 9,000 rows read in the
// middle of a drain.
func measureDrain(t *testing.T, s *Store, w *Worker) cost.Cost {
	t.Helper()
	ctx := context.Background()
	if _, err := s.DB().ExecContext(ctx, `ANALYZE TABLE follows, mailbox, fanout_jobs`); err != nil {
		t.Fatal(err)
	}
	c, err := cost.NewMeter(s.DB(), nil).Measure(ctx, 1, func() { drain(t, w) })
	if err != nil {
		t.Fatal(err)
	}
	if c.CountersUnreliable() {
		t.Fatalf("the counters could not be trusted: %v", c)
	}
	return c
}
