package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// The defaults and bounds of ReturningConfig.
const (
	// DefaultReturningPosts is ReturningConfig.PostsPerUser's default:
	// more than a page of new posts for a returning user on average.
	DefaultReturningPosts = 30
	// MaxReturningUsers bounds ReturningConfig.Users.
	MaxReturningUsers = 100_000
)

// ErrFewReaders: the dataset has too few users who follow anyone to
// draw the returning study's dormant and steady users from.
var ErrFewReaders = errors.New("too few users who follow anyone")

// ReturningConfig describes a returning-users study (Returning).
type ReturningConfig struct {
	// Users is how many dormant users come back, and how many steady
	// ones read beside them.
	Users int
	// Absence is how long the dormant users stay away.
	Absence time.Duration
	// PostsPerUser is the posts made while they are away, per dormant
	// user, each by one of a dormant user's followees; 0 means
	// DefaultReturningPosts.
	PostsPerUser int
	Seed         int64
}

// Returning is a study of users who come back after an absence, for the
// designs that stop writing to readers who do not read (push-active,
// push-redis: a window after which a reader's mailbox or feed is no
// longer written, and is rebuilt by pull at their next read).
//
// Users dormant and as many steady users are drawn among those who
// follow anyone (not drowning readers). All of them read their newest
// page once (Warm), so that every design holds their timelines. Then,
// for Absence (Away), posts arrive by the dormant users' followees, at an
// even pace, while the steady users read every Absence/8 and the dormant
// ones read nothing. When they come back (Return), each group's newest
// pages are read one at a time: the first read of a dormant user is what
// a design that stopped writing to them pays (a rebuild), the steady
// users' reads what it pays otherwise. A page is checked against the
// posts made while away by the reader's followees: it must show the
// newest of them (up to a page); the share it shows is the page's
// completeness, what the user sees of what they missed.
type Returning struct {
	cfg             ReturningConfig
	s               timeline.Store
	d               *dataset.Dataset
	Dormant, Steady []timeline.UserID

	mu    sync.Mutex
	posts []timeline.Message // made while away, oldest first
}

// NewReturning draws the study's users from d, by cfg.Seed.
func NewReturning(s timeline.Store, d *dataset.Dataset, cfg ReturningConfig) (*Returning, error) {
	if cfg.PostsPerUser <= 0 {
		cfg.PostsPerUser = DefaultReturningPosts
	}
	var candidates []timeline.UserID
	for u := 1; u <= d.Spec.Users; u++ {
		if len(d.Followees[u-1]) > 0 && !d.IsDrowning(uint32(u)) {
			candidates = append(candidates, timeline.UserID(u))
		}
	}
	if cfg.Users < 1 || 2*cfg.Users > len(candidates) {
		return nil, fmt.Errorf("returning study of %d dormant and %d steady users: %w (%d do)", cfg.Users, cfg.Users, ErrFewReaders, len(candidates))
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x7e7))
	rng.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
	return &Returning{cfg: cfg, s: s, d: d, Dormant: candidates[:cfg.Users], Steady: candidates[cfg.Users : 2*cfg.Users]}, nil
}

// Warm reads every dormant and steady user's newest page once.
func (r *Returning) Warm(ctx context.Context) error {
	for _, u := range slices.Concat(r.Dormant, r.Steady) {
		if _, err := r.s.Timeline(ctx, u, timeline.Query{}); err != nil {
			return fmt.Errorf("returning study: warm %d: %w", u, err)
		}
	}
	return nil
}

// Away makes the posts of the absence, PostsPerUser per dormant user
// spread evenly over Absence, each by a followee of a dormant user drawn
// at random, while the steady users read every Absence/8; it returns
// once Absence has passed and every post is acknowledged. A store that
// applies its writes later is settled (timeline.Settler).
func (r *Returning) Away(ctx context.Context) error {
	n := r.cfg.PostsPerUser * len(r.Dormant)
	every := r.cfg.Absence / time.Duration(n)
	rng := rand.New(rand.NewPCG(uint64(r.cfg.Seed), 0xa5a7))
	start := time.Now()
	end := start.Add(r.cfg.Absence)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	readErr := make(chan error, 1)
	go func() {
		readErr <- func() error {
			for next := start; ; {
				for _, u := range r.Steady {
					if _, err := r.s.Timeline(ctx, u, timeline.Query{}); err != nil {
						return err
					}
				}
				if next = next.Add(r.cfg.Absence / 8); !next.Before(end) {
					return nil
				}
				select {
				case <-time.After(time.Until(next)):
				case <-ctx.Done():
					return nil
				}
			}
		}()
	}()
	var buf []byte
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * every)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		reader := r.Dormant[rng.IntN(len(r.Dormant))]
		fs := r.d.Followees[reader-1]
		author := timeline.UserID(fs[rng.IntN(len(fs))])
		buf = r.d.AppendBody(buf[:0], rng.Uint64N(1<<40)+1)
		m, err := r.s.Post(ctx, author, string(buf))
		if err != nil {
			return fmt.Errorf("returning study: post: %w", err)
		}
		r.mu.Lock()
		r.posts = append(r.posts, m)
		r.mu.Unlock()
	}
	if wait := time.Until(end); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := <-readErr; err != nil {
		return fmt.Errorf("returning study: steady read: %w", err)
	}
	if st, ok := timeline.As[timeline.Settler](r.s); ok {
		if err := st.Settle(ctx); err != nil {
			return fmt.Errorf("returning study: %w", err)
		}
	}
	return nil
}

// Posts is how many posts the absence made.
func (r *Returning) Posts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.posts)
}

// ReturnResult is what the reads of one group of users measured.
type ReturnResult struct {
	Reads   int64
	Latency *hdrhistogram.Histogram // µs
	// Expected is the posts of the absence the pages should have shown
	// (each user's newest, up to a page), Shown those they showed;
	// Complete the pages that showed every one.
	Expected, Shown, Complete int64
}

// Completeness is Shown of Expected, 1 when nothing was expected.
func (r ReturnResult) Completeness() float64 {
	if r.Expected == 0 {
		return 1
	}
	return float64(r.Shown) / float64(r.Expected)
}

// Return reads the newest page of each of users, one at a time, and
// checks it against the posts of the absence.
func (r *Returning) Return(ctx context.Context, users []timeline.UserID) (ReturnResult, error) {
	res := ReturnResult{Latency: newHistogram()}
	for _, u := range users {
		t0 := time.Now()
		p, err := r.s.Timeline(ctx, u, timeline.Query{})
		if err != nil {
			return res, fmt.Errorf("returning study: read %d: %w", u, err)
		}
		res.Latency.RecordValue(max(1, time.Since(t0).Microseconds()))
		res.Reads++
		want := r.missed(u, timeline.DefaultLimit)
		shown := 0
		for _, id := range want {
			if slices.ContainsFunc(p.Messages, func(m timeline.Message) bool { return m.ID == id }) {
				shown++
			}
		}
		res.Expected += int64(len(want))
		res.Shown += int64(shown)
		if shown == len(want) {
			res.Complete++
		}
	}
	return res, nil
}

// missed is the newest posts of the absence, at most limit, by the
// authors u follows, newest first.
func (r *Returning) missed(u timeline.UserID, limit int) []timeline.MessageID {
	r.mu.Lock()
	defer r.mu.Unlock()
	fs := r.d.Followees[u-1]
	var ids []timeline.MessageID
	for i := len(r.posts) - 1; i >= 0 && len(ids) < limit; i-- {
		if _, ok := slices.BinarySearch(fs, uint32(r.posts[i].Author)); ok {
			ids = append(ids, r.posts[i].ID)
		}
	}
	return ids
}
