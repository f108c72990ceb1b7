package workload

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// The defaults of ProbeConfig.
const (
	// DefaultProbeEvery watches at most two of the traffic's posts and
	// two of its deletes a second: with three pages each, a few percent
	// of the reads of traffic at a few hundred operations a second.
	DefaultProbeEvery = 500 * time.Millisecond
	// DefaultProbeFollowers is how many of the author's followers'
	// pages each watch reads.
	DefaultProbeFollowers = 3
	// DefaultVisibleTimeout is how long a watched page may take to show
	// a post, or to stop showing a deleted one, before it counts as
	// missing (or still shown).
	DefaultVisibleTimeout = 5 * time.Second
	// DefaultProbePoll is the pause between two reads of a watched page
	// that did not yet show what was looked for: the resolution of the
	// times measured for a store that is not current at once.
	DefaultProbePoll = 5 * time.Millisecond
	// maxWatches bounds the watches under way; a post or delete offered
	// while that many are is not watched.
	maxWatches = 64
)

// ProbeConfig describes a Probe.
type ProbeConfig struct {
	// Every is the least time between two posts watched, and between two
	// deletes; 0 means DefaultProbeEvery.
	Every time.Duration
	// Followers is the pages each watch reads; 0 means
	// DefaultProbeFollowers.
	Followers int
	// Timeout is the longest a page is watched; 0 means
	// DefaultVisibleTimeout.
	Timeout time.Duration
	// Poll is the pause between two reads of a page; 0 means
	// DefaultProbePoll.
	Poll time.Duration
	Seed int64
}

func (c *ProbeConfig) defaults() {
	if c.Every <= 0 {
		c.Every = DefaultProbeEvery
	}
	if c.Followers <= 0 {
		c.Followers = DefaultProbeFollowers
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultVisibleTimeout
	}
	if c.Poll <= 0 {
		c.Poll = DefaultProbePoll
	}
}

// FollowerBands are the lower bounds of the bands of follower counts a
// Probe reports by: 0, 1-9, 10-99, 100-999, 1,000-9,999 and 10,000 or more
// followers.
var FollowerBands = []int{0, 1, 10, 100, 1000, 10000}

// BandLabel names the band of FollowerBands that starts at FollowerBands[i].
func BandLabel(i int) string {
	if i == len(FollowerBands)-1 {
		return dataset.Commas(int64(FollowerBands[i])) + "+"
	}
	if FollowerBands[i] == FollowerBands[i+1]-1 {
		return dataset.Commas(int64(FollowerBands[i]))
	}
	return dataset.Commas(int64(FollowerBands[i])) + "-" + dataset.Commas(int64(FollowerBands[i+1]-1))
}

// band is the index in FollowerBands of the band of n followers.
func band(n int) int {
	for i := len(FollowerBands) - 1; i > 0; i-- {
		if n >= FollowerBands[i] {
			return i
		}
	}
	return 0
}

// A Probe watches some of the posts and deletes of traffic as they are
// acknowledged (Traffic reports them through Posted and Deleted), to
// measure how soon and how completely a post shows and how soon a delete
// takes effect. It posts nothing itself: what it measures is the traffic's
// own writes, by the authors the traffic draws; the pages it reads are
// its only load.
//
//   - A watched post: Followers of its author's followers (in the
//     dataset's graph), drawn at random, have their newest page read
//     until it shows the post (see Shows). Post-to-visible is the time
//     from the post's acknowledgement to the start of the first read that
//     showed it, reported by the author's follower count (FollowerBands);
//     a page that has not shown it after Timeout is missing.
//     Completeness is the share of watched pages that showed it, leaving
//     out readers who unfollowed the author meanwhile and posts deleted
//     before they showed.
//   - A watched delete: Followers of its author's followers have their
//     pages read until they no longer show the message; delete-to-gone is
//     the time from the delete's acknowledgement to the start of that
//     read, and a page still showing it after Timeout is still shown.
//   - Drowning readers (dataset.Drowning), who follow far more authors
//     than anyone, are few among any author's followers: a watched post
//     whose author has some reads one of their pages beside the others,
//     and their pages count apart (ProbeResult.Drowning), so that a
//     design that treats them otherwise shows what they see.
//
// At most one post and one delete are watched per Every, and a watch
// starts only once the probe is armed (Arm), so that a warm-up is not
// measured.
type Probe struct {
	cfg ProbeConfig
	s   timeline.Store
	d   *dataset.Dataset
	ctx context.Context

	mu         sync.Mutex
	armed      bool
	stopped    bool
	nextPost   time.Time
	nextDelete time.Time
	inFlight   int
	rng        *rand.Rand
	deleted    map[timeline.MessageID]bool // deletes acknowledged of the posts under watch
	watching   map[timeline.MessageID]bool
	res        ProbeResult
	wg         sync.WaitGroup
}

// ProbeResult is what a Probe measured.
type ProbeResult struct {
	// Bands are the figures of the watched posts by the follower count of
	// their authors, by FollowerBands index (a band without a watched
	// post has zero counts).
	Bands []BandResult
	// Deletes is the deletes watched; Gone the delete-to-gone time of
	// each page read (µs); StillShown the pages that still showed the
	// message after the timeout.
	Deletes    int64
	Gone       *hdrhistogram.Histogram
	StillShown int64
	// Unwatched counts the posts and deletes offered while maxWatches
	// were under way.
	Unwatched int64
	// Errors counts the probe's reads that failed; SampleErrors holds
	// the first few.
	Errors       int64
	SampleErrors []string
	// Drowning is the figures of the pages of drowning readers
	// (dataset.Dataset.IsDrowning), kept out of Bands; Band is -1. Each
	// watched post whose author has a drowning follower reads one of
	// theirs beside the others.
	Drowning BandResult
}

// BandResult is a ProbeResult's figures for the posts of authors with a
// band of follower counts.
type BandResult struct {
	Band int // index in FollowerBands
	// Posts is the posts watched; Pages the pages read for them; Visible
	// those that showed the post within the timeout, Missing those that
	// did not, Dropped those whose reader had unfollowed the author by
	// then or whose post was deleted first (counted in neither).
	Posts, Pages, Visible, Missing, Dropped int64
	// Latency is the post-to-visible time of the Visible pages (µs).
	Latency *hdrhistogram.Histogram
}

// Completeness is the share of watched pages that showed the post: Visible
// out of Visible and Missing; 1 with none watched.
func (b BandResult) Completeness() float64 {
	if b.Visible+b.Missing == 0 {
		return 1
	}
	return float64(b.Visible) / float64(b.Visible+b.Missing)
}

// NewProbe returns a probe of s, whose users follow as d's graph says;
// its reads run under ctx. It watches nothing until armed.
func NewProbe(ctx context.Context, s timeline.Store, d *dataset.Dataset, cfg ProbeConfig) *Probe {
	cfg.defaults()
	p := &Probe{cfg: cfg, s: s, d: d, ctx: ctx, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x9b0be)),
		deleted: map[timeline.MessageID]bool{}, watching: map[timeline.MessageID]bool{}}
	for i := range FollowerBands {
		p.res.Bands = append(p.res.Bands, BandResult{Band: i, Latency: newHistogram()})
	}
	p.res.Gone = newHistogram()
	p.res.Drowning = BandResult{Band: -1, Latency: newHistogram()}
	return p
}

// Config is the probe's configuration, defaults filled in.
func (p *Probe) Config() ProbeConfig { return p.cfg }

// Arm starts the watching.
func (p *Probe) Arm() {
	p.mu.Lock()
	p.armed = true
	p.mu.Unlock()
}

// Stop watches nothing more, waits for the watches under way (each at
// most about the timeout), and returns what they measured.
func (p *Probe) Stop() ProbeResult {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res
}

// claim decides whether to watch a write acknowledged at ack, whose next
// watch may start at *next, and if so draws the pages to read from
// author's followers.
func (p *Probe) claim(next *time.Time, ack time.Time, author timeline.UserID) ([]timeline.UserID, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed || p.stopped || ack.Before(*next) {
		return nil, false
	}
	if p.inFlight >= maxWatches {
		p.res.Unwatched++
		return nil, false
	}
	*next = ack.Add(p.cfg.Every)
	p.inFlight++
	p.wg.Add(1)
	fs := p.d.Followers(uint32(author))
	watch := make([]timeline.UserID, 0, p.cfg.Followers)
	for _, i := range p.rng.Perm(len(fs))[:min(len(fs), p.cfg.Followers)] {
		watch = append(watch, timeline.UserID(fs[i]))
	}
	if u, ok := p.drowningFollower(fs); ok && !slices.Contains(watch, u) {
		watch = append(watch, u)
	}
	return watch, true
}

// drowningFollower draws one of the drowning readers among fs, if any.
func (p *Probe) drowningFollower(fs []uint32) (timeline.UserID, bool) {
	if len(p.d.DrowningReaders()) == 0 {
		return 0, false
	}
	var drowning []uint32
	for _, f := range fs {
		if p.d.IsDrowning(f) {
			drowning = append(drowning, f)
		}
	}
	if len(drowning) == 0 {
		return 0, false
	}
	return timeline.UserID(drowning[p.rng.IntN(len(drowning))]), true
}

func (p *Probe) release() {
	p.mu.Lock()
	p.inFlight--
	p.mu.Unlock()
	p.wg.Done()
}

// Posted offers the traffic's post of id by author, acknowledged at ack.
func (p *Probe) Posted(author timeline.UserID, id timeline.MessageID, ack time.Time) {
	watch, ok := p.claim(&p.nextPost, ack, author)
	if !ok {
		return
	}
	p.mu.Lock()
	p.watching[id] = true
	p.mu.Unlock()
	go func() {
		defer p.release()
		slot := band(len(p.d.Followers(uint32(author))))
		// of is the figures a reader's page counts in.
		of := func(u timeline.UserID) *BandResult {
			if p.d.IsDrowning(uint32(u)) {
				return &p.res.Drowning
			}
			return &p.res.Bands[slot]
		}
		seen, missing := p.watch(watch, id, ack, true, func(u timeline.UserID, d time.Duration) {
			p.mu.Lock()
			of(u).Latency.RecordValue(max(1, d.Microseconds()))
			p.mu.Unlock()
		})
		dropped := map[timeline.UserID]bool{}
		p.mu.Lock()
		gone := p.deleted[id]
		delete(p.deleted, id)
		delete(p.watching, id)
		p.mu.Unlock()
		for _, u := range missing {
			if gone {
				dropped[u] = true
			} else if on, err := p.s.Follows(p.ctx, u, author); err == nil && !on {
				dropped[u] = true
			} else if err != nil {
				p.fail(err)
			}
		}
		p.mu.Lock()
		for _, b := range []*BandResult{&p.res.Bands[slot], &p.res.Drowning} {
			counted := false
			for _, u := range watch {
				if of(u) != b {
					continue
				}
				counted = true
				b.Pages++
				switch {
				case slices.Contains(seen, u):
					b.Visible++
				case dropped[u]:
					b.Dropped++
				default:
					b.Missing++
				}
			}
			if counted {
				b.Posts++
			}
		}
		p.mu.Unlock()
	}()
}

// Deleted offers the traffic's delete of id by author, acknowledged at
// ack.
func (p *Probe) Deleted(author timeline.UserID, id timeline.MessageID, ack time.Time) {
	p.mu.Lock()
	if p.watching[id] {
		p.deleted[id] = true
	}
	p.mu.Unlock()
	watch, ok := p.claim(&p.nextDelete, ack, author)
	if !ok {
		return
	}
	go func() {
		defer p.release()
		_, still := p.watch(watch, id, ack, false, func(_ timeline.UserID, d time.Duration) {
			p.mu.Lock()
			p.res.Gone.RecordValue(max(1, d.Microseconds()))
			p.mu.Unlock()
		})
		p.mu.Lock()
		p.res.Deletes++
		p.res.StillShown += int64(len(still))
		p.mu.Unlock()
	}()
}

func (p *Probe) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.res.Errors++
	if len(p.res.SampleErrors) < 5 {
		p.res.SampleErrors = append(p.res.SampleErrors, err.Error())
	}
}

// watch reads the pages of users, each on its own, until it shows message
// id (want true) or no longer does (want false), or the timeout from since
// passes; record gets, for each page that came round, the time from since
// to the start of the read that showed it. A watch for a post ends early
// once the post is deleted. It returns the users whose page came round
// and those whose did not.
func (p *Probe) watch(users []timeline.UserID, id timeline.MessageID, since time.Time, want bool, record func(timeline.UserID, time.Duration)) (done, pending []timeline.UserID) {
	deadline := since.Add(p.cfg.Timeout)
	came := make([]bool, len(users))
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p.ctx.Err() == nil {
				start := time.Now()
				on, err := Shows(p.ctx, p.s, u, id)
				switch {
				case err != nil:
					p.fail(err)
				case on == want:
					record(u, start.Sub(since))
					came[i] = true
					return
				}
				if want {
					p.mu.Lock()
					gone := p.deleted[id]
					p.mu.Unlock()
					if gone {
						return // deleted before this page showed it
					}
				}
				if !time.Now().Before(deadline) {
					return
				}
				select {
				case <-time.After(p.cfg.Poll):
				case <-p.ctx.Done():
				}
			}
		}()
	}
	wg.Wait()
	for i, u := range users {
		if came[i] {
			done = append(done, u)
		} else {
			pending = append(pending, u)
		}
	}
	return done, pending
}
