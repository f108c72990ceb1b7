package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/pushpull/pushpull/internal/vtstats"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
)

// probeWorkersOption is the option by which an asynchronous model on
// Vitess runs no workers of its own ("-1").
const probeWorkersOption = "workers"

// ProbeOps is how many operations of each kind the one-at-a-time probe of
// a model on Vitess runs (see probeVitess).
const ProbeOps = 20

// probeVitess runs, after the phases, ProbeOps operations of each kind on
// each model on Vitess, one after another on one goroutine, and reads the
// store's counts (package internal/vtstats) around each: a newest page,
// an older page below it, a post by a user of the dataset, a follow of one
// by a user new to it, the unfollow of that follow, and the delete of a
// post the probe made. Alone on the cluster, an operation's counts are
// its own: the shards of the keyspace it touched, its round trips, its
// commits, savepoints and sequence calls, and vtgate's cross-shard
// transactions. The workers of an asynchronous store would call its
// keyspace's shards meanwhile (where other models may live), so first each
// such store that declares the option "workers" is closed and opened again
// with none: a post of such a model is counted without its fan-out, which
// the probe leaves undone (the celebrity benchmark of package
// registry/all counts a fan-out).
func (b *bench) probeVitess(ctx context.Context) error {
	for _, m := range b.models {
		s, ok := b.open[m.Name]
		if _, declared := m.Option(probeWorkersOption); !ok || !m.OnVitess() || !m.Traits.Has(registry.Async) || !declared {
			continue
		}
		s.Close()
		delete(b.open, m.Name)
		quiet, err := b.openModel(ctx, m, "", map[string]string{probeWorkersOption: "-1"})
		if err != nil {
			return fmt.Errorf("probe %s: %w", m.Name, err)
		}
		b.open[m.Name] = quiet
	}
	for _, m := range b.models {
		s, ok := b.open[m.Name]
		if !m.OnVitess() || !ok {
			continue
		}
		if _, ok := timeline.As[timeline.Counting](s); !ok {
			continue
		}
		b.logf("probing %s, %d operations of each kind one at a time ...", m.Name, ProbeOps)
		p := probe{b: b, m: m, s: s, rng: rand.New(rand.NewPCG(uint64(b.cfg.Spec.Seed), 0x9b0be)), samples: map[string][]results.ProbeSample{}}
		if err := p.run(ctx); err != nil {
			return fmt.Errorf("probe %s: %w", m.Name, err)
		}
		rm := b.res.Model(m.Name)
		if p.lost > 0 {
			b.res.Notes = append(b.res.Notes, fmt.Sprintf("%s: the probe could not read vtgate's counts around %d operations, left out", m.Name, p.lost))
		}
		for op, samples := range p.samples {
			for k, v := range results.ProbeFigures("probe_"+op+"_", samples) {
				rm.Extra[k] = v
			}
		}
	}
	return nil
}

// probe is the probe of one model.
type probe struct {
	b       *bench
	m       registry.Model
	s       timeline.Store
	rng     *rand.Rand
	samples map[string][]results.ProbeSample // by operation
	lost    int                              // operations whose counts could not be read
}

func (p *probe) run(ctx context.Context) error {
	user := func() timeline.UserID { return timeline.UserID(1 + p.rng.IntN(p.b.users)) }
	var posts []timeline.Message
	for i := range ProbeOps {
		reader := user()
		var next timeline.Cursor
		if err := p.measure("newest", func() error {
			page, err := p.s.Timeline(ctx, reader, timeline.Query{})
			next = page.Next
			return err
		}); err != nil {
			return err
		}
		if next != "" {
			if err := p.measure("older", func() error {
				_, err := p.s.Timeline(ctx, reader, timeline.Query{Before: next})
				return err
			}); err != nil {
				return err
			}
		}
		if err := p.measure("post", func() error {
			msg, err := p.s.Post(ctx, user(), fmt.Sprintf("probe %d", i))
			posts = append(posts, msg)
			return err
		}); err != nil {
			return err
		}
		// A user the dataset does not have follows, then unfollows, one
		// it has: the follow copies the followee's messages.
		follower, followee := timeline.UserID(p.b.users+1+i), user()
		if err := p.measure("follow", func() error { return p.s.Follow(ctx, follower, followee) }); err != nil {
			return err
		}
		if err := p.measure("unfollow", func() error { return p.s.Unfollow(ctx, follower, followee) }); err != nil {
			return err
		}
	}
	for _, msg := range posts {
		if err := p.measure("delete", func() error { return p.s.Delete(ctx, msg.Author, msg.ID) }); err != nil {
			return err
		}
	}
	return nil
}

// measure runs op alone and keeps its counts as a sample of kind. Nothing
// else calls the cluster meanwhile, so a read of the counts that failed
// is made again; a sample whose counts could not be read at all is
// dropped, and counted in p.lost.
func (p *probe) measure(kind string, op func() error) error {
	before := p.counts()
	if err := op(); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	after := p.counts()
	if before == nil || after == nil {
		p.lost++
		return nil
	}
	p.samples[kind] = append(p.samples[kind], sample(p.m.Database, before, after))
	return nil
}

// counts reads the store's counts, up to three times; nil if none of the
// reads had the tablet calls.
func (p *probe) counts() map[string]int64 {
	for range 3 {
		if c := counts(p.s); c != nil {
			if _, ok := c[vtstats.TabletCalls]; ok {
				return c
			}
		}
	}
	return nil
}

// sample is what a store on keyspace counted between before and after.
func sample(keyspace string, before, after map[string]int64) results.ProbeSample {
	d := func(key string) float64 { return float64(after[key] - before[key]) }
	out := results.ProbeSample{
		Calls: d(vtstats.TabletCalls), Trips: d(vtstats.TabletTrips), Commits: d(vtstats.TabletCommits),
		Savepoints: d(vtstats.TabletSavepoints), Sequence: d(vtstats.SequenceCalls), CrossShard: d(vtstats.CrossShardTransactions),
	}
	data := vtstats.ShardTrips(keyspace, "")
	for key := range after {
		if strings.HasPrefix(key, data) && after[key] != before[key] {
			out.Shards++
		}
	}
	return out
}
