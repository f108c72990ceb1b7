package selective_test

import (
	"context"
	"math"
	"testing"

	"github.com/pushpull/pushpull/hybrid/selective"
	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/cost/costtest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// followed opens a store whose readers (ids 100 on) each follow the same
// followees authors (ids 1 on), every edge pushed (followed before anyone
// posted or read), and gives each author perAuthor messages, their ids
// interleaved.
func followed(t *testing.T, cfg selective.Config, readers, followees, perAuthor int) *selective.Store {
	t.Helper()
	s := open(t, cfg)
	for r := range readers {
		for a := range followees {
			timelinetest.Follow(t, s, timeline.UserID(100+r), timeline.UserID(1+a))
		}
	}
	for range perAuthor {
		for a := range followees {
			timelinetest.PostN(t, s, timeline.UserID(1+a), 1)
		}
	}
	return s
}

// modelWork is selective's cost model for d at its default options.
func modelWork(t *testing.T, d registry.Demand) registry.OpWork {
	t.Helper()
	m, err := registry.Lookup(selective.ModelName)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _, err := m.WorkFor(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// within fails t when counted is off the model's figure by more than 10 %.
func within(t *testing.T, what string, counted, model float64) {
	t.Helper()
	t.Logf("%s: %.2f counted, the model %.2f", what, counted, model)
	if math.Abs(counted-model) > 0.1*math.Max(counted, model) {
		t.Errorf("%s: %.2f counted, the model says %.2f", what, counted, model)
	}
}

// TestOlderPageRowsMatchWork counts the rows of older pages whose reader
// pulls no edge, and sets them against the cost model's older page: the
// mailbox's range with its messages, and nothing for pull_edges, whose
// range finds no row (the model once added 6 rows a page for it, which
// the benchmark's older pages never read: 42.0 counted, 48 predicted, on
// the uniform and the power-law graphs, at 1,000 and 3,000 users).
func TestOlderPageRowsMatchWork(t *testing.T) {
	const followees, perAuthor, reader, pages = 10, 10, timeline.UserID(100), 20
	s := followed(t, selective.Config{}, 1, followees, perAuthor)
	first := timelinetest.Newest(t, s, reader)
	if first.Next == "" {
		t.Fatal("the first page has no next page")
	}
	c := costtest.Counted(t, s.DB(), pages, func() {
		for range pages {
			timelinetest.Page(t, s, reader, timeline.Query{Before: first.Next})
		}
	})
	// Readers who read far more often than their followees post: every
	// edge pushed, as in the store.
	d := registry.Demand{Users: followees + 1, Messages: followees * perAuthor, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 100, OlderPerSec: 100, ActiveShare: 1, Classes: []registry.UserClass{
			{Users: followees, Followers: 1, Posts: 1},
			{Users: 1, Followees: followees, Reads: 1},
		}}
	w := modelWork(t, d)
	within(t, "an older page's rows read", c[cost.RowsRead], w.Older.RowsRead)
	if c[cost.RowsWritten] != 0 || w.Older.RowsWritten != 0 {
		t.Errorf("an older page wrote %.2f rows, the model says %.2f: it writes none", c[cost.RowsWritten], w.Older.RowsWritten)
	}
}

// TestReaderRedecisionRowsMatchWork counts the rows of a flush after
// newest pages by distinct readers, and sets them per reader against what
// the cost model adds to a newest page in a run whose flusher keeps up (100
// reads a second), in a workload where every read of a flush is a distinct
// reader's: the
// reader's rates written (an upsert), and the re-decision of their every
// follow (the reader's rates, the follows joined to pull_edges and to
// the followees' rates).
func TestReaderRedecisionRowsMatchWork(t *testing.T) {
	const readers, followees = 8, 12
	s := followed(t, selective.Config{FlushEvery: 1_000_000}, readers, followees, 3)
	ctx := context.Background()
	readAll := func() {
		for r := range readers {
			timelinetest.Newest(t, s, timeline.UserID(100+r))
		}
	}
	// The readers' first flush inserts their rates; later ones update them.
	readAll()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	readAll()
	c := costtest.Counted(t, s.DB(), readers, func() {
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	})
	// A million readers of whom a flush of 500 events sees 500 distinct.
	d := registry.Demand{Users: 1_000_000 + followees, Messages: 1e7, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 0, ReadsPerSec: 100, ActiveShare: 1, Run: &registry.RunHistory{Reads: 1000}, Classes: []registry.UserClass{
			{Users: followees, Followers: 1_000_000, Posts: 1},
			{Users: 1_000_000, Followees: followees, Reads: 1},
		}}
	w := modelWork(t, d)
	within(t, "a reader's re-decision, rows read", c[cost.RowsRead], w.Newest.RowsRead-w.Older.RowsRead)
	within(t, "a reader's re-decision, rows written", c[cost.RowsWritten], w.Newest.RowsWritten-w.Older.RowsWritten)
}

// TestPulledPageRowsMatchWork counts the rows of pages whose reader pulls
// half their followees, who post twice as often as the pushed half (their
// posts interleaved), and sets them against the cost model's pages for
// such a split at H/L = 1000: the mailbox's range, a pull_edges row a
// pulled edge, the pulled authors' ids among the mailbox range's entries
// (two a pushed entry) and the bodies of the page's pulled entries (two
// thirds of it).
func TestPulledPageRowsMatchWork(t *testing.T) {
	const half, rounds, reader, pages = 5, 30, timeline.UserID(100), 10
	s := open(t, selective.Config{H: 1000, L: 1, FlushEvery: 1_000_000})
	pulledAuthor := func(a int) timeline.UserID { return timeline.UserID(1 + a) }
	pushedAuthor := func(a int) timeline.UserID { return timeline.UserID(1 + half + a) }
	for a := range half {
		// Counted posts and no read: the reader pulls these authors.
		timelinetest.PostN(t, s, pulledAuthor(a), 1)
		timelinetest.Follow(t, s, reader, pulledAuthor(a))
		timelinetest.Follow(t, s, reader, pushedAuthor(a))
	}
	for range rounds {
		for a := range half {
			timelinetest.PostN(t, s, pulledAuthor(a), 1)
			timelinetest.PostN(t, s, pushedAuthor(a), 1)
			timelinetest.PostN(t, s, pulledAuthor(a), 1)
		}
	}
	if pushed, pulled, err := s.Edges(context.Background()); err != nil || pushed != half || pulled != half {
		t.Fatalf("%d edges pushed and %d pulled (%v), want %d each", pushed, pulled, err, half)
	}
	newest := costtest.Counted(t, s.DB(), pages, func() {
		for range pages {
			timelinetest.Newest(t, s, reader)
		}
	})
	first := timelinetest.Newest(t, s, reader)
	older := costtest.Counted(t, s.DB(), pages, func() {
		for range pages {
			timelinetest.Page(t, s, reader, timeline.Query{Before: first.Next})
		}
	})
	// Posts: 2 for each pulled author, 1 for each pushed one, of 1.5 a
	// second (0.2 and 0.1 each); reads: 150 a second, the pushed authors'
	// 1000 × 0.1 and under the pulled ones' 1000 × 0.2.
	d := registry.Demand{Users: 2*half + 1, Messages: 3 * half * rounds, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1.5, ReadsPerSec: 150, ActiveShare: 1, Classes: []registry.UserClass{
			{Users: half, Followers: 1, Posts: 2},
			{Users: half, Followers: 1, Posts: 1},
			{Users: 1, Followees: 2 * half, Reads: 1},
		}}
	m, err := registry.Lookup(selective.ModelName)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _, err := m.WorkFor(d, map[string]string{selective.OptionH: "1000", selective.OptionL: "1"})
	if err != nil {
		t.Fatal(err)
	}
	within(t, "a newest page's rows read", newest[cost.RowsRead], w.Newest.RowsRead)
	within(t, "an older page's rows read", older[cost.RowsRead], w.Older.RowsRead)
}

// TestRunSplitsEdgesAsLoaded: in a run, the cost model splits the edges
// as the store does, by the rates the bulk load started (reads_per_post
// reads for every post, which a run's seconds barely move), not by the
// rates of the phase it predicts: a post phase that reads little pushes
// every edge a load at 38 reads a post pushed.
func TestRunSplitsEdgesAsLoaded(t *testing.T) {
	const followers = 50
	for _, reads := range []float64{10, 100_000} {
		d := registry.Demand{Users: 110, Messages: 10_000, Page: 20, OlderDepth: 3.5,
			PostsPerSec: 1000, ReadsPerSec: reads, ActiveShare: 1, Run: &registry.RunHistory{Posts: 1000},
			Classes: []registry.UserClass{
				{Users: 10, Followers: followers, Posts: 1, Reads: 1}, // 100 posts a second each
				{Users: 100, Followees: 5, Reads: 1},                  // readers who do not post
			}}
		w := modelWork(t, d)
		if want := 1.0 + followers; math.Abs(w.Post.RowsWritten-want) > 1e-9 {
			t.Errorf("%g reads a second: a post writes %.2f rows, want %.0f: every edge pushed, as loaded", reads, w.Post.RowsWritten, want)
		}
	}
}

// TestFlusherBehindReadsAtTheMachinesPace: in a run that posts faster than
// the flusher re-decides, a post's share of the re-decisions is the
// flusher's pace over the post rate: selective's own figure without a
// measured pace, the machine's (Demand.SerialRowsPerSec) with one.
func TestFlusherBehindReadsAtTheMachinesPace(t *testing.T) {
	const posts = 10_000
	for _, pace := range []float64{0, 40_000, 70_000} {
		d := registry.Demand{Users: 1_000_000, Messages: 1e7, Page: 20, OlderDepth: 3.5,
			PostsPerSec: posts, ActiveShare: 1, Run: &registry.RunHistory{Posts: 1000}, SerialRowsPerSec: pace,
			Classes: []registry.UserClass{{Users: 1_000_000, Followers: 50, Followees: 50, Posts: 1, Reads: 1}}}
		w := modelWork(t, d)
		want := pace / posts
		if pace == 0 {
			want = 100_000.0 / posts
		}
		// A post reads its pushed edges, the message's 2 rows and its
		// share of the flush; it writes 1 row and a row per pushed edge.
		if flush := w.Post.RowsRead - w.Post.RowsWritten - 1; math.Abs(flush-want) > 1e-6*want {
			t.Errorf("pace %.0f: a post's share of the flush is %.3f rows, want %.3f", pace, flush, want)
		}
	}
}
