package workload

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// watched wraps a store for the probe's tests: it signals every delete,
// hides the messages posted after the dataset from the newest pages of
// the users in lossy (a design that writes to some readers not at all),
// and keeps showing deleted messages to the users in stale (a cache that
// missed an invalidation). late makes every new message show on a page
// only from the third read of it on (a fan-out that is behind).
type watched struct {
	timeline.Store
	loaded  timeline.MessageID
	lossy   map[timeline.UserID]bool
	stale   map[timeline.UserID]bool
	late    bool
	deletes chan timeline.MessageID

	mu      sync.Mutex
	deleted map[timeline.MessageID]timeline.Message
	reads   map[[2]int64]int // by user and newest id on the page
}

func newWatched(s timeline.Store, loaded int) *watched {
	return &watched{Store: s, loaded: timeline.MessageID(loaded), lossy: map[timeline.UserID]bool{}, stale: map[timeline.UserID]bool{},
		deletes: make(chan timeline.MessageID, 1000), deleted: map[timeline.MessageID]timeline.Message{}, reads: map[[2]int64]int{}}
}

func (w *watched) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	m, err := w.Store.Message(ctx, id)
	if err != nil {
		return err
	}
	if err := w.Store.Delete(ctx, author, id); err != nil {
		return err
	}
	w.mu.Lock()
	w.deleted[id] = m
	w.mu.Unlock()
	select {
	case w.deletes <- id:
	default:
	}
	return nil
}

func (w *watched) Timeline(ctx context.Context, u timeline.UserID, q timeline.Query) (timeline.Page, error) {
	p, err := w.Store.Timeline(ctx, u, q)
	if err != nil {
		return p, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := p.Messages[:0]
	for _, m := range p.Messages {
		switch {
		case m.ID > w.loaded && w.lossy[u]:
		case m.ID > w.loaded && w.late && w.countRead(u, m.ID) < 3:
		default:
			keep = append(keep, m)
		}
	}
	p.Messages = keep
	if w.stale[u] && q == (timeline.Query{}) {
		for _, m := range w.deleted {
			p.Messages = append([]timeline.Message{m}, p.Messages...)
		}
	}
	return p, nil
}

func (w *watched) countRead(u timeline.UserID, id timeline.MessageID) int {
	k := [2]int64{int64(u), int64(id)}
	w.reads[k]++
	return w.reads[k]
}

// runProbe runs ops operations of traffic of posts, deletes and newest
// pages on s with a probe that watches every write it can, and returns
// what the probe measured.
func runProbe(t *testing.T, s *watched, d *dataset.Dataset, ops int, cfg ProbeConfig) ProbeResult {
	t.Helper()
	ctx := context.Background()
	mix, err := ParseMix("newest=30,post=50,delete=20")
	if err != nil {
		t.Fatal(err)
	}
	p := NewProbe(ctx, s, d, cfg)
	op := Traffic(s, d, mix, nil, NewChurn(d), Writes{Book: NewPostBook(1), Probe: p}, 1)(0)
	for i := range ops {
		if i == ops/10 {
			p.Arm() // the first tenth is a warm-up, not watched
		}
		if _, err := op(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return p.Stop()
}

func totals(r ProbeResult) (pages, visible, missing, dropped int64) {
	for _, b := range r.Bands {
		pages += b.Pages
		visible += b.Visible
		missing += b.Missing
		dropped += b.Dropped
	}
	return
}

// TestProbeOnACurrentStore: on a store that shows every post at once and
// removes every deleted one at once, every watched page shows the post
// (unless it was deleted first) and stops showing a deleted one, for
// authors of every band of follower counts the traffic drew.
func TestProbeOnACurrentStore(t *testing.T) {
	ctx := context.Background()
	d := smallDataset(t)
	mem := timeline.NewMemory()
	if err := d.Apply(ctx, mem); err != nil {
		t.Fatal(err)
	}
	s := newWatched(mem, d.Stats().Messages)
	r := runProbe(t, s, d, 2_000, ProbeConfig{Every: time.Nanosecond, Seed: 1})
	pages, visible, missing, dropped := totals(r)
	if r.Errors != 0 || missing != 0 || visible+dropped != pages || visible == 0 {
		t.Fatalf("pages %d, visible %d, missing %d, dropped %d, errors %d %v", pages, visible, missing, dropped, r.Errors, r.SampleErrors)
	}
	if r.Deletes == 0 || r.StillShown != 0 || r.Gone.TotalCount() == 0 {
		t.Fatalf("%d deletes watched, %d pages gone, %d still shown", r.Deletes, r.Gone.TotalCount(), r.StillShown)
	}
	bands := 0
	for _, b := range r.Bands {
		if b.Posts > 0 {
			bands++
		}
		if b.Latency.TotalCount() != b.Visible || b.Completeness() != 1 {
			t.Fatalf("band %s: %d latencies of %d visible, completeness %v", BandLabel(b.Band), b.Latency.TotalCount(), b.Visible, b.Completeness())
		}
	}
	if bands < 2 {
		t.Fatalf("the watched posts' authors fell in %d bands of follower counts; the powerlaw graph has more", bands)
	}
}

// TestProbeCountsLateLossyAndStale: a page that shows a post only on its
// third read counts as visible (the probe reads again); a page that never shows it counts as
// missing; a page that keeps showing a deleted post counts as still
// shown.
func TestProbeCountsLateLossyAndStale(t *testing.T) {
	ctx := context.Background()
	d := smallDataset(t)
	mem := timeline.NewMemory()
	if err := d.Apply(ctx, mem); err != nil {
		t.Fatal(err)
	}
	s := newWatched(mem, d.Stats().Messages)
	s.late = true
	for u := 1; u <= len(d.Followees); u += 2 {
		s.lossy[timeline.UserID(u)] = true
	}
	for u := 2; u <= len(d.Followees); u += 4 {
		s.stale[timeline.UserID(u)] = true
	}
	r := runProbe(t, s, d, 300, ProbeConfig{Every: time.Nanosecond, Timeout: 300 * time.Millisecond, Poll: time.Millisecond, Seed: 2})
	pages, visible, missing, dropped := totals(r)
	if visible == 0 || missing == 0 || visible+missing+dropped != pages {
		t.Fatalf("pages %d, visible %d, missing %d, dropped %d", pages, visible, missing, dropped)
	}
	if r.StillShown == 0 || r.Gone.TotalCount() == 0 {
		t.Fatalf("%d pages gone, %d still shown", r.Gone.TotalCount(), r.StillShown)
	}
}

// TestProbeReportsDrowningReadersApart: on a store that never shows a
// drowning reader a new post (a design that writes to them not at all
// and does not pull), the drowning readers' pages are watched, every one
// missing, and counted apart: the other readers' stay complete.
func TestProbeReportsDrowningReadersApart(t *testing.T) {
	ctx := context.Background()
	d, err := dataset.Generate(dataset.Spec{Users: 50, Messages: 1_000, AvgFollowees: 8, Graph: dataset.GraphPowerLaw, Seed: 7,
		Drowning: dataset.Drowning{Share: 0.1, Followees: 40}})
	if err != nil {
		t.Fatal(err)
	}
	mem := timeline.NewMemory()
	if err := d.Apply(ctx, mem); err != nil {
		t.Fatal(err)
	}
	s := newWatched(mem, d.Stats().Messages)
	for _, u := range d.DrowningReaders() {
		s.lossy[timeline.UserID(u)] = true
	}
	r := runProbe(t, s, d, 600, ProbeConfig{Every: time.Nanosecond, Timeout: 50 * time.Millisecond, Poll: time.Millisecond, Seed: 3})
	dr := r.Drowning
	if dr.Pages == 0 || dr.Visible != 0 || dr.Missing == 0 || dr.Completeness() != 0 {
		t.Fatalf("drowning readers: pages %d, visible %d, missing %d", dr.Pages, dr.Visible, dr.Missing)
	}
	if pages, visible, missing, dropped := totals(r); missing != 0 || visible+dropped != pages || visible == 0 {
		t.Fatalf("other readers: pages %d, visible %d, missing %d, dropped %d", pages, visible, missing, dropped)
	}
}
