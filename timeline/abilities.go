package timeline

import (
	"context"
	"database/sql"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// What a store may do beyond Store. Callers look for an ability with As,
// never with a type assertion to an anonymous interface, and fall back as
// each says. The conformance kit (package timelinetest), the benchmark and
// the command line all use these.

// Wrapper is a store in front of another (a decorator, such as the
// memcache variant): Unwrap returns the store it wraps. A wrapper
// implements an ability itself only where it adds to the wrapped store's
// (a cache's own counters, its own servers); As finds the rest.
type Wrapper interface {
	Unwrap() Store
}

// As returns ability T of s: s itself if it has T, else the first store
// down s's chain of wrappers (Wrapper) that has it, as errors.As finds an
// error in a chain.
func As[T any](s Store) (T, bool) {
	for s != nil {
		if t, ok := s.(T); ok {
			return t, true
		}
		w, ok := s.(Wrapper)
		if !ok {
			break
		}
		s = w.Unwrap()
	}
	var none T
	return none, false
}

// Settler is a store that applies part of an acknowledged write later
// (asynchronous fan-out). Settle returns once everything acknowledged before
// the call is applied, or ctx ends. The conformance suite and the
// benchmark's checks call it before they read what they wrote.
//
// Fallback: the store applies every write before it returns; there is
// nothing to wait for.
type Settler interface {
	Settle(ctx context.Context) error
}

// Quiescer is a store with background work of its own that no write waits
// for and no page depends on: bookkeeping a read or a post makes due
// (selective's flusher, which writes the rates its traffic counted and
// flips the edges they decide). Quiesce returns once the work due at the
// call is done, or ctx ends; work that later traffic makes due is not
// waited for. It is not Settle: such a store applies every write before
// it returns, and its pages are right whether the work is done or not.
// The benchmark quiesces every store it holds open before it measures a
// phase: the servers' counters are global, and a design's leftover work
// would be counted in the next design's phase.
//
// Fallback: the store does no work in the background.
type Quiescer interface {
	Quiesce(ctx context.Context) error
}

// Lagging is a Settler that measures how late it applies what it
// acknowledged: TakeLag returns the lags recorded since the previous call,
// in microseconds (for asynchronous fan-out: from a post to its last
// follower's mailbox row), and starts a new histogram. The benchmark
// settles the store after each write phase, takes the histogram and saves
// its percentiles among the model's figures; it also measures them below
// saturation, at half the rate the model's posts reached.
//
// Fallback: no lag figures.
type Lagging interface {
	TakeLag() *hdrhistogram.Histogram
}

// Counting is a store that counts its own work. Counters returns cumulative
// counts since the store was opened, under the keys package
// timeline/counter names; the benchmark takes their difference over a
// phase and turns it into figures.
//
// Fallback: the phase has no such figures.
type Counting interface {
	Counters() map[string]int64
}

// Primer is a store with state that a running service keeps warm and that
// reading every user's newest page does not build (pull-active's hint
// targets, which posts would build). The benchmark and the kit's
// benchmarks call Prime for every user before they measure, after reading
// every user's newest page once.
//
// Fallback: nothing beyond the warm reads.
type Primer interface {
	Prime(ctx context.Context, users []UserID) error
}

// Degraded is a store that keeps working while some of its servers fail
// (a memcached of several that is down): DownServers names those failing
// now. The command line warns about them, and the benchmark records them.
//
// Fallback: the store has no server it can do without.
type Degraded interface {
	DownServers() []string
}

// DBHolder is a store on MariaDB or MySQL that hands out its connection
// pool. The benchmark bulk-loads its dataset through it and measures the
// database's size; the memcache variant keys its entries by the
// database's identity.
//
// Fallback: the benchmark loads the dataset through Follow and Post and
// reports no size; the memcache variant does not wrap the store.
type DBHolder interface {
	DB() *sql.DB
}
