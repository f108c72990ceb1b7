package workload

import (
	"context"
	"sync"
	"testing"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// whoStore records whose timelines are read and who posts.
type whoStore struct {
	timeline.Store
	mu             sync.Mutex
	readers, posts map[timeline.UserID]int
}

func (w *whoStore) Timeline(ctx context.Context, u timeline.UserID, q timeline.Query) (timeline.Page, error) {
	if q.Before == "" {
		w.mu.Lock()
		w.readers[u]++
		w.mu.Unlock()
	}
	return w.Store.Timeline(ctx, u, q)
}

func (w *whoStore) Post(ctx context.Context, u timeline.UserID, body string) (timeline.Message, error) {
	w.mu.Lock()
	w.posts[u]++
	w.mu.Unlock()
	return w.Store.Post(ctx, u, body)
}

// TestTrafficFollowsActivity: the mixed traffic draws the readers of its
// newest pages and the authors of its posts by the dataset's activity, so
// under skewed activity the most followed users read and post far more
// often than a uniform draw would make them.
func TestTrafficFollowsActivity(t *testing.T) {
	spec := dataset.Spec{Users: 2000, Messages: 20_000, AvgFollowees: 20, Graph: dataset.GraphPowerLaw, Seed: 3,
		Activity: dataset.Activity{Mode: dataset.ActivitySkewed, PostExponent: 1, ReadExponent: 1}}
	d, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	in := d.Stats().Followers
	var meanIn float64
	for _, f := range in {
		meanIn += float64(f)
	}
	meanIn /= float64(len(in))

	w := &whoStore{Store: timeline.NewMemory(), readers: map[timeline.UserID]int{}, posts: map[timeline.UserID]int{}}
	mix, err := ParseMix("newest=50,post=50")
	if err != nil {
		t.Fatal(err)
	}
	op := Traffic(w, d, mix, nil, NewChurn(d), Writes{}, 1)(0)
	for range 20_000 {
		if _, err := op(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Under exponent 1 a user is drawn in proportion to 1+followers, so
	// the drawn users average E[f(1+f)]/E[1+f] followers: far above the
	// mean on a power-law graph.
	var sq float64
	for _, f := range in {
		sq += float64(f) * float64(1+f)
	}
	want := sq / float64(len(in)) / (1 + meanIn)
	for name, drawn := range map[string]map[timeline.UserID]int{"readers": w.readers, "authors": w.posts} {
		var sum, n float64
		for u, c := range drawn {
			sum += float64(c) * float64(in[u-1])
			n += float64(c)
		}
		got := sum / n
		t.Logf("%s: %.0f draws average %.1f followers (mean %.1f, expected %.1f)", name, n, got, meanIn, want)
		if got < 0.7*want || got > 1.3*want {
			t.Errorf("%s average %.1f followers, want about %.1f (a uniform draw gives %.1f)", name, got, want, meanIn)
		}
	}
}

// cursorStore records which cursor of each user's page at each depth its
// reads returned last, and counts the older reads that used it and those
// that used an earlier one.
type cursorStore struct {
	timeline.Store
	mu           sync.Mutex
	depth        map[userCursor]int            // a cursor returned for a user: the depth of the page it leads to
	latest       map[userDepth]timeline.Cursor // the cursor last returned for a user's page at a depth
	fresh, stale int
}

type userCursor struct {
	u timeline.UserID
	c timeline.Cursor
}

type userDepth struct {
	u timeline.UserID
	d int
}

func (s *cursorStore) Timeline(ctx context.Context, u timeline.UserID, q timeline.Query) (timeline.Page, error) {
	p, err := s.Store.Timeline(ctx, u, q)
	if err != nil {
		return p, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := 1
	if q.Before != "" {
		d = s.depth[userCursor{u, q.Before}]
		if s.latest[userDepth{u, d}] == q.Before {
			s.fresh++
		} else {
			s.stale++
		}
	}
	if p.Next != "" {
		s.depth[userCursor{u, p.Next}] = d + 1
		s.latest[userDepth{u, d + 1}] = p.Next
	}
	return p, nil
}

// TestTrafficOlderPagesFollowReads: an older page of the mixed traffic
// continues from the cursor the traffic's latest read of the page before
// it returned, not from one walked before the phase, which new posts
// would push ever deeper (an index that keeps a user's newest entries
// then cannot prove the page, the longer the phase the more often).
func TestTrafficOlderPagesFollowReads(t *testing.T) {
	ctx := context.Background()
	d, err := dataset.Generate(dataset.Spec{Users: 20, Messages: 2_000, AvgFollowees: 8, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	s := &cursorStore{Store: timeline.NewMemory(), depth: map[userCursor]int{}, latest: map[userDepth]timeline.Cursor{}}
	if err := d.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	pool, err := CollectOlderPages(ctx, s, d, 20, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := ParseMix("newest=40,older=40,post=20")
	if err != nil {
		t.Fatal(err)
	}
	op := Traffic(s, d, mix, pool, NewChurn(d), Writes{}, 1)(0)
	for range 5_000 {
		if _, err := op(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("older reads from the latest cursor: %d, from an earlier one: %d", s.fresh, s.stale)
	if s.stale > 0 || s.fresh < 1_000 {
		t.Errorf("%d older reads continued from an earlier cursor than the latest read returned (%d from the latest)", s.stale, s.fresh)
	}
}

// TestCollectOlderPagesDrawsTheSameUsers: two walks for older pages'
// cursors with the run's seed, a sample smaller than the users (as the
// benchmark walks for the older pages and again for the traffic's
// cursors), read the newest pages of the same users: the second walk makes
// no one read who had not (package loadgen/plan's run history counts it
// so).
func TestCollectOlderPagesDrawsTheSameUsers(t *testing.T) {
	ctx := context.Background()
	d, err := dataset.Generate(dataset.Spec{Users: 200, Messages: 4_000, AvgFollowees: 8, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	mem := timeline.NewMemory()
	if err := d.Apply(ctx, mem); err != nil {
		t.Fatal(err)
	}
	walk := func(seed int64) map[timeline.UserID]int {
		t.Helper()
		w := &whoStore{Store: mem, readers: map[timeline.UserID]int{}, posts: map[timeline.UserID]int{}}
		if _, err := CollectOlderPages(ctx, w, d, 50, 4, seed); err != nil {
			t.Fatal(err)
		}
		return w.readers
	}
	first, again, other := walk(1), walk(1), walk(2)
	if len(first) < 30 || len(first) >= 200 {
		t.Fatalf("the walk read %d users' newest pages, want most of a sample of 50 of 200", len(first))
	}
	for u := range again {
		if first[u] == 0 {
			t.Errorf("the second walk read user %d, whom the first did not", u)
		}
	}
	if len(again) != len(first) {
		t.Errorf("the walks read %d and %d users", len(first), len(again))
	}
	// Another seed draws other users: the test can tell.
	news := 0
	for u := range other {
		if first[u] == 0 {
			news++
		}
	}
	if news == 0 {
		t.Errorf("a walk with another seed read no one new either")
	}
}
