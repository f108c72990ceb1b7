package plan

import (
	"fmt"

	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// mixShares are the shares of an operation drawn by a phase: newest,
// older, post, follow, unfollow.
type mixShares = [5]float64

// phaseWork is the work per operation a design's model predicts for one
// of a run's phases, of rate operations a second drawn by shares, after
// h: the mix's work with Demand.Run set to h.
type phaseWork func(shares mixShares, rate float64, h registry.RunHistory) (registry.Work, error)

// runHistories is what the benchmark did to model m's store since the
// bulk load, before each of its phases and during it
// (registry.RunHistory), by phase name, in the order a run makes them
// (package loadgen's bench): the warm reads of a design measured warm
// (every user's newest page once), the newest pages (their warm-up, then
// the measured ones), the walk that collects the older pages' cursors
// (the newest page of each sampled user, then deeper pages; every user
// when the sample is as large), the older pages, the walk again for the
// traffic's cursors (the same users, drawn from the run's seed: new
// readers only when the older pages did not run), the mixed traffic (its warm-up, the measured
// stretch, then each step of a rate search with its warm-up at the step's
// rate, each step a phase of its own named by stepPhase), and last the
// posts. Newest pages, posts and the unfollows that
// leave a mark are counted: the older pages read the users the walk read,
// and the traffic puts back the follows it changed, but an unfollow of an
// edge one of its follows had added stays marked where a store marks
// unfollows (push-redis's tombstones: registry.Demand.UnfollowedAudience).
//
// The benchmark's churn (package loadgen/workload's Churn) keeps the
// graph the dataset's: an unfollow undoes an edge an earlier follow added,
// whose mark stays, or else removes an edge of the dataset, which a later
// follow restores, clearing its mark. A run counts the first kind
// (results.Undone); for one that predates the count they are taken as
// half the unfollows: follows and unfollows drawn alike walk the edges
// added up and down, and half the unfollows fall on each side in
// expectation, though in a single run the share can be far from half (the
// time such a walk spends above zero follows the arcsine law).
//
// A closed loop's warm-up is not counted by the run. Its workers go at
// the pace of the work they do, so a warm-up of warm seconds before a
// measured stretch of secs did the operations whose items (rows, keys,
// commands) are warm/secs those of the measured stretch: a warm-up of
// first reads that rebuild made fewer operations than the cheap reads
// after it (warmupOps). A phase that recorded its warm-up's operations
// (results.Phase.WarmupOps) is taken at its word.
func runHistories(r *results.Result, m *results.Model, reg registry.Model, work phaseWork) (map[string]registry.RunHistory, error) {
	warm := runWarmup(r)
	users := float64(r.Dataset.Users)
	out := map[string]registry.RunHistory{}
	// marked is the unfollows that leave a mark, before the phase.
	var reads, posts, marked float64
	// all: every user read a newest page (warm reads, or a walk of every
	// user), as no number of drawn reads says.
	all := reg.Bench.WarmReads
	// closed records a closed-loop phase of ops operations drawn by
	// shares, a share m of them unfollows that leave a mark, over secs
	// seconds, after its warm-up of warmOps operations (0: not recorded).
	closed := func(name string, shares mixShares, m float64, ops int64, secs float64, warmOps int64) error {
		if ops <= 0 || secs <= 0 {
			return nil
		}
		at := registry.RunHistory{ReadsBefore: reads, PostsBefore: posts, UnfollowedBefore: marked, AllRead: all}
		after := func(before, n float64) registry.RunHistory {
			return registry.RunHistory{ReadsBefore: at.ReadsBefore + before*shares[0], PostsBefore: at.PostsBefore + before*shares[2],
				UnfollowedBefore: at.UnfollowedBefore + before*m,
				AllRead:          all, Reads: n * shares[0], Posts: n * shares[2], Unfollowed: n * m}
		}
		var err error
		items := func(before, n float64) float64 {
			w, e := work(shares, float64(ops)/secs, after(before, n))
			if e != nil {
				err = e
			}
			return n * w.Items()
		}
		w := float64(warmOps)
		if warmOps <= 0 {
			w = warmupOps(warm, secs, float64(ops), items)
		}
		if err != nil {
			return err
		}
		out[name] = after(w, float64(ops))
		reads += (w + float64(ops)) * shares[0]
		posts += (w + float64(ops)) * shares[2]
		marked += (w + float64(ops)) * m
		return nil
	}
	if !m.Retrieve.Skipped {
		if err := closed("retrieve", mixShares{1, 0, 0, 0, 0}, 0, m.Retrieve.Ops, m.Retrieve.Seconds, m.Retrieve.WarmupOps); err != nil {
			return nil, err
		}
	}
	// walk is the walk that collects older pages' cursors: the newest
	// page of each sampled user (then deeper pages).
	walk := func() {
		sample := float64(reg.Bench.OlderSample)
		if sample <= 0 {
			sample = registry.DefaultOlderSample
		}
		if sample >= users {
			all = true // the walk takes every user in turn
		} else {
			reads += sample
		}
	}
	if !m.RetrieveOlder.Skipped {
		walk()
		out["retrieve_older"] = registry.RunHistory{ReadsBefore: reads, PostsBefore: posts, UnfollowedBefore: marked, AllRead: all}
	}
	if t := m.Traffic; t != nil {
		if m.RetrieveOlder.Skipped {
			// The traffic's cursors, walked as it begins. After the
			// older pages' walk it draws the same users again (the same
			// sample from the run's seed: workload's
			// TestCollectOlderPagesDrawsTheSameUsers): no one new reads.
			walk()
		}
		n, _, p, _, u, err := mixOf(t.Mix)
		if err != nil {
			return nil, err
		}
		shares := mixShares{n, 0, p, 0, 0}
		before := marked // the marks before the traffic
		half := u / 2    // the share of operations that leave a mark, by expectation
		if t.Loop == results.LoopOpen {
			at := warm * t.Total.OpsPerSec
			out["traffic"] = registry.RunHistory{ReadsBefore: reads + at*n, PostsBefore: posts + at*p, UnfollowedBefore: marked + at*half, AllRead: all,
				Reads: float64(t.Total.Ops) * n, Posts: float64(t.Total.Ops) * p, Unfollowed: float64(t.Total.Ops) * half}
			reads += (at + float64(t.Total.Ops)) * n
			posts += (at + float64(t.Total.Ops)) * p
			marked += (at + float64(t.Total.Ops)) * half
		} else if err := closed("traffic", shares, half, t.Total.Ops, t.Total.Seconds, t.Total.WarmupOps); err != nil {
			return nil, err
		}
		if s := t.Search; s != nil {
			for i, st := range s.Steps {
				reads += warm * st.RatePerSec * n
				posts += warm * st.RatePerSec * p
				marked += warm * st.RatePerSec * half
				own := registry.RunHistory{Reads: float64(st.Ops[workload.OpNewest].Ops), Posts: float64(st.Ops[workload.OpPost].Ops),
					Unfollowed: float64(st.Ops[workload.OpUnfollow].Ops) / 2}
				out[stepPhase(i)] = registry.RunHistory{ReadsBefore: reads, PostsBefore: posts, UnfollowedBefore: marked, AllRead: all,
					Reads: own.Reads, Posts: own.Posts, Unfollowed: own.Unfollowed}
				reads += own.Reads
				posts += own.Posts
				marked += own.Unfollowed
			}
		}
		if c := t.Undone; c != nil {
			// Counted, not expected.
			if h, ok := out["traffic"]; ok {
				h.UnfollowedBefore, h.Unfollowed = before+float64(c.AtStart), float64(c.AtEnd-c.AtStart)
				out["traffic"] = h
			}
			marked = before + float64(c.Total)
		}
	}
	if !m.Submit.Skipped {
		if err := closed("submit", mixShares{0, 0, 1, 0, 0}, 0, m.Submit.Ops, m.Submit.Seconds, m.Submit.WarmupOps); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stepPhase names step i of a rate search among runHistories' phases:
// its warm-up and the steps before it come after the traffic phase.
func stepPhase(i int) string { return fmt.Sprintf("step %d", i) }

// warmupOps is how many operations a closed loop made in a warm-up of
// warm seconds before n measured over secs: the w whose items, items(0,
// w), are warm/secs of the measured stretch's, items(w, n), where
// items(before, k) is the items of k operations made after before of the
// warm-up's. The first grows with w and the second does not, so w is
// found by bisection; work that does not change along the way gives
// warm/secs·n.
func warmupOps(warm, secs, n float64, items func(before, k float64) float64) float64 {
	if warm <= 0 || secs <= 0 || n <= 0 {
		return 0
	}
	short := func(w float64) bool { return items(0, w) < warm/secs*items(w, n) }
	lo, hi := 0.0, warm/secs*n
	for i := 0; short(hi) && i < 60; i++ {
		lo, hi = hi, 2*hi
	}
	for range 60 {
		mid := (lo + hi) / 2
		if short(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
