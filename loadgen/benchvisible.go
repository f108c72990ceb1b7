package loadgen

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
)

// visibility records what a probe measured.
func visibility(cfg workload.ProbeConfig, r workload.ProbeResult) *results.Visibility {
	v := &results.Visibility{
		EveryMs: msOf(cfg.Every), FollowersPerProbe: cfg.Followers, PollMs: msOf(cfg.Poll), TimeoutMs: msOf(cfg.Timeout),
		Deletes: r.Deletes, GonePages: r.Gone.TotalCount(), StillShown: r.StillShown,
		Unwatched: r.Unwatched, Errors: r.Errors, SampleErrors: r.SampleErrors,
	}
	if v.GonePages > 0 {
		v.GoneP50Ms, v.GoneP99Ms, v.GoneMaxMs = quantilesMs(r.Gone)
	}
	all := hdrhistogram.New(1, 10*60*1_000_000, 3)
	var t results.VisibleBand
	for _, b := range r.Bands {
		if b.Posts == 0 {
			continue
		}
		all.Merge(b.Latency)
		vb := results.VisibleBand{Followers: workload.BandLabel(b.Band), Posts: b.Posts, Pages: b.Pages, Visible: b.Visible, Missing: b.Missing, Dropped: b.Dropped}
		vb.P50Ms, vb.P99Ms, vb.MaxMs = quantilesMs(b.Latency)
		v.Bands = append(v.Bands, vb)
		t.Posts += b.Posts
		t.Pages += b.Pages
		t.Visible += b.Visible
		t.Missing += b.Missing
		t.Dropped += b.Dropped
	}
	t.Followers = "all"
	t.P50Ms, t.P99Ms, t.MaxMs = quantilesMs(all)
	v.Total = t
	if d := r.Drowning; d.Pages > 0 {
		v.Drowning = &results.VisibleBand{Followers: "drowning readers", Posts: d.Posts, Pages: d.Pages, Visible: d.Visible, Missing: d.Missing, Dropped: d.Dropped}
		v.Drowning.P50Ms, v.Drowning.P99Ms, v.Drowning.MaxMs = quantilesMs(d.Latency)
	}
	return v
}

// quantilesMs are the median, 99th percentile and maximum of h (µs) in
// ms; zeros for an empty h.
func quantilesMs(h *hdrhistogram.Histogram) (p50, p99, maxMs float64) {
	if h.TotalCount() == 0 {
		return 0, 0, 0
	}
	return float64(h.ValueAtQuantile(50)) / 1000, float64(h.ValueAtQuantile(99)) / 1000, float64(h.Max()) / 1000
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// deletedStillShown checks, once m's traffic store has settled, the
// sample of the messages its traffic deleted, and records what it found.
func (b *bench) deletedStillShown(ctx context.Context, s timeline.Store, book *workload.PostBook, v *results.Visibility) error {
	followers := workload.DefaultProbeFollowers
	if b.cfg.Probe != nil && b.cfg.Probe.Followers > 0 {
		followers = b.cfg.Probe.Followers
	}
	checked, shown, err := book.StillShown(ctx, s, b.data, followers)
	if err != nil {
		return err
	}
	v.TrafficDeletes, v.DeletedChecked, v.DeletedShown = int64(book.Deleted()), int64(checked), int64(shown)
	_, v.DeletedSettled = timeline.As[timeline.Settler](s)
	return nil
}

// celebrityWatched is how many of the celebrity's followers' pages are
// read from the delete's acknowledgement on, to time when it is gone.
const celebrityWatched = 20

// DefaultCelebrityCheck bounds the followers whose pages the celebrity
// delete reads after settling: all of them at the paper's scale.
const DefaultCelebrityCheck = 20_000

// deleteStudy measures m's deletes in a phase of their own (see
// BenchConfig.Deletes): it posts Deletes messages by authors drawn by the
// dataset's activity (unmeasured), settles, deletes them all with the
// run's workers, measuring the deletes' latency and cost, settles again
// and reads the pages of a sample of the deleted messages' followers; then
// the celebrity delete.
func (b *bench) deleteStudy(ctx context.Context, m registry.Model, s timeline.Store) error {
	n := b.cfg.Deletes
	book := workload.NewPostBook(b.cfg.Spec.Seed)
	// A worker may start one more delete than the phase measures.
	if err := book.Fill(ctx, s, b.data, n+b.cfg.Concurrency, b.cfg.Concurrency, b.cfg.Spec.Seed); err != nil {
		return fmt.Errorf("%s: the messages to delete: %w", m.Name, err)
	}
	if err := settleStore(ctx, s); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	name := m.Name + "/delete"
	b.logf("phase %s (%d deletes, %d workers)", name, n, b.cfg.Concurrency)
	start, finish := b.metered(ctx, name, nil)
	pr, err := workload.RunPhase(ctx, workload.PhaseConfig{
		Name: name, Workers: b.cfg.Concurrency, Ops: int64(n), Progress: b.cfg.Progress, OnMeasure: start,
	}, book.Deletes(s, b.data, b.cfg.Spec.Seed))
	if err != nil {
		return err
	}
	d := &results.Deletes{Phase: results.PhaseFromHistogram(pr.Latency, pr.Ops, pr.Errors, pr.Seconds)}
	d.Phase.Cost = finish(pr.Ops + pr.Errors)
	b.checkErrors(name, pr.ErrorRate(), pr.SampleErrors)
	b.logf("  = %s: %.0f deletes/s, p50 %.2f ms, p99 %.2f ms, %d errors", name, d.Phase.OpsPerSec, d.Phase.P50Ms, d.Phase.P99Ms, d.Phase.Errors)
	t0 := time.Now()
	if err := settleStore(ctx, s); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	d.SettleS = time.Since(t0).Seconds()
	checked, shown, err := book.StillShown(ctx, s, b.data, workload.DefaultProbeFollowers)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	d.Checked, d.StillShown = int64(checked), int64(shown)
	if d.Celebrity, err = b.celebrityDelete(ctx, s, true); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	c := d.Celebrity
	b.logf("  celebrity delete: user %d's post, %d followers: deleted in %.1f ms, gone from %d watched pages %.1f ms after, settled in %.1f ms; %d of %d pages still show it",
		c.Author, c.Followers, c.DeleteMs, c.Watched, c.WatchedGoneMaxMs, c.SettleMs, c.StillShown, c.Checked)
	if d.StillShown > 0 || c.StillShown > 0 {
		b.res.Failures = append(b.res.Failures, fmt.Sprintf("%s: deleted messages still shown after settling: %d of %d pages, and %d of %d of the celebrity's followers",
			m.Name, d.StillShown, d.Checked, c.StillShown, c.Checked))
	}
	b.res.Model(m.Name).Deletes = d
	return nil
}

// celebrityDelete posts a message by the most followed author, settles,
// deletes it (measuring the delete, and, when metered, the rows it
// deleted: not while other writes run), reads the pages of 20 followers
// from the delete's acknowledgement on until each no longer shows it,
// settles again, and reads the pages of the author's followers (at most
// DefaultCelebrityCheck).
func (b *bench) celebrityDelete(ctx context.Context, s timeline.Store, metered bool) (*results.CelebrityDelete, error) {
	author := b.mostFollowed()
	fs := b.data.Followers(author)
	msg, err := s.Post(ctx, timeline.UserID(author), "a post its author will delete")
	if err != nil {
		return nil, err
	}
	if err := settleStore(ctx, s); err != nil {
		return nil, err
	}
	c := &results.CelebrityDelete{Author: int64(author), Followers: len(fs)}
	var finish func(int64) cost.Cost
	if metered {
		var start func()
		start, finish = b.metered(ctx, "celebrity delete", nil)
		start()
	}
	t0 := time.Now()
	if err := s.Delete(ctx, timeline.UserID(author), msg.ID); err != nil {
		return nil, fmt.Errorf("the celebrity delete: %w", err)
	}
	acked := time.Now()
	c.DeleteMs = msOf(acked.Sub(t0))
	// Pages of a sample of the followers, read from the acknowledgement
	// on until each no longer shows the post.
	watch := workload.NewProbe(ctx, s, b.data, workload.ProbeConfig{Every: time.Nanosecond, Followers: celebrityWatched, Seed: b.cfg.Spec.Seed})
	watch.Arm()
	watch.Deleted(timeline.UserID(author), msg.ID, acked)
	w := watch.Stop()
	c.Watched, c.WatchedStillShown = int(w.Gone.TotalCount()+w.StillShown), int(w.StillShown)
	c.WatchedGoneMaxMs = float64(w.Gone.Max()) / 1000
	t1 := time.Now()
	if err := settleStore(ctx, s); err != nil {
		return nil, err
	}
	c.SettleMs = msOf(time.Since(t1))
	c.GoneMs = c.DeleteMs + c.SettleMs
	if finish != nil {
		if co := finish(1); co != nil {
			c.RowsDeleted = co[cost.RowsDeleted]
		}
	}
	check := fs[:min(len(fs), DefaultCelebrityCheck)]
	var shown atomic.Int64
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range b.cfg.Concurrency {
		g.Go(func() error {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(check)) {
					return nil
				}
				on, err := workload.Shows(gctx, s, timeline.UserID(check[i]), msg.ID)
				if err != nil {
					return fmt.Errorf("check the celebrity's deleted post at user %d: %w", check[i], err)
				}
				if on {
					shown.Add(1)
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	c.Checked, c.StillShown = len(check), int(shown.Load())
	return c, nil
}

// settleStore waits, for a store that applies writes later, until what it
// acknowledged is applied (bounded by SettleTimeout).
func settleStore(ctx context.Context, s timeline.Store) error {
	st, ok := timeline.As[timeline.Settler](s)
	if !ok {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, SettleTimeout)
	defer cancel()
	return st.Settle(sctx)
}
