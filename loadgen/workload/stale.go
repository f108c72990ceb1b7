package workload

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// PostLog remembers when each message posted during a phase was
// acknowledged, per author, so that a reader can tell how stale a page it
// was served is.
type PostLog struct {
	mu       sync.Mutex
	byAuthor map[timeline.UserID][]posted // ascending ids
}

type posted struct {
	id  timeline.MessageID
	ack time.Time // when Post returned
}

// NewPostLog returns an empty log.
func NewPostLog() *PostLog { return &PostLog{byAuthor: map[timeline.UserID][]posted{}} }

func (l *PostLog) add(author timeline.UserID, id timeline.MessageID, ack time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.byAuthor[author]
	i := sort.Search(len(ps), func(i int) bool { return ps[i].id > id })
	ps = append(ps, posted{})
	copy(ps[i+1:], ps[i:])
	ps[i] = posted{id, ack}
	l.byAuthor[author] = ps
}

// Staleness is how long before readStart the page stopped being current:
// the age of the oldest message by one of followees that was acknowledged
// before the read began yet is newer than everything on the page. 0 means
// the page was current.
func (l *PostLog) Staleness(followees []uint32, page timeline.Page, readStart time.Time) time.Duration {
	var top timeline.MessageID
	if len(page.Messages) > 0 {
		top = page.Messages[0].ID
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var worst time.Duration
	for _, f := range followees {
		ps := l.byAuthor[timeline.UserID(f)]
		i := sort.Search(len(ps), func(i int) bool { return ps[i].id > top })
		for ; i < len(ps); i++ {
			if ps[i].ack.Before(readStart) {
				worst = max(worst, readStart.Sub(ps[i].ack))
			}
		}
	}
	return worst
}

// StalenessMixed is Mixed that also measures, for every page read, how
// stale it was (see PostLog.Staleness), into stale.
func StalenessMixed(s timeline.Store, d *dataset.Dataset, readRatio float64, seed int64, log *PostLog, stale *StaleStats) func(worker int) Op {
	return func(worker int) Op {
		rng := workerRand(seed, "stale", worker)
		var buf []byte
		return func(ctx context.Context, _ *Clock) error {
			if rng.Float64() >= readRatio {
				author := d.PickAuthor(rng)
				buf = d.AppendBody(buf[:0], rng.Uint64N(1<<40)+1)
				m, err := s.Post(ctx, author, string(buf))
				if err == nil {
					log.add(author, m.ID, time.Now())
				}
				return err
			}
			user := d.PickReader(rng)
			start := time.Now()
			p, err := s.Timeline(ctx, user, timeline.Query{})
			if err == nil {
				stale.record(log.Staleness(d.Followees[user-1], p, start))
			}
			return err
		}
	}
}

// StaleStats aggregates staleness over the pages read.
type StaleStats struct {
	mu    sync.Mutex
	pages int64
	stale int64
	max   time.Duration
}

func (s *StaleStats) record(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages++
	if d > 0 {
		s.stale++
	}
	s.max = max(s.max, d)
}

// Result returns pages read, how many of them were stale, and the largest
// staleness seen.
func (s *StaleStats) Result() (pages, stale int64, maxStaleness time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pages, s.stale, s.max
}

// Reset forgets the pages recorded so far (e.g. during a warm-up).
func (s *StaleStats) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages, s.stale, s.max = 0, 0, 0
}
