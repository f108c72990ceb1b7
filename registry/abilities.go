package registry

import (
	"context"
	"database/sql"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pushpull/pushpull/timeline"
)

// What a store may do beyond timeline.Store. Callers check for an ability
// with a type assertion to one of these interfaces, never to an anonymous
// one, and fall back as each says.

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

// Counting is a store that counts its own work. Counters returns cumulative
// counts since the store was opened, by the keys that package results
// documents (results.Counter*); the benchmark takes their difference over a
// phase and results turns it into figures (results.CounterFigures).
//
// Fallback: the phase has no such figures.
type Counting interface {
	Counters() map[string]int64
}

// Primer is a store with state that a running service keeps warm and that
// reading every user's newest page does not build (pull-active's hint
// targets, which posts would build). The benchmark calls Prime for every
// user before it measures, after the warm reads of Bench.WarmReads.
//
// Fallback: nothing beyond the warm reads.
type Primer interface {
	Prime(ctx context.Context, users []timeline.UserID) error
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

// Lagging is a Settler that measures how late it applies what it
// acknowledged: TakeLag returns the lags recorded since the previous call,
// in microseconds (for asynchronous fan-out: from a post to its last
// follower's mailbox row), and starts a new histogram. The benchmark
// settles the store after each write phase, takes the histogram and saves
// its percentiles among the model's figures (results.LagFigures); its
// PhaseHalfRate measures them below saturation.
//
// Fallback: no lag figures.
type Lagging interface {
	TakeLag() *hdrhistogram.Histogram
}

// Degraded is a store that keeps working while some of its servers fail
// (a memcached of several that is down): DownServers names those failing
// now. The command line warns about them, and the benchmark records them.
//
// Fallback: the store has no server it can do without.
type Degraded interface {
	DownServers() []string
}

// PartialMailbox is a store whose mailbox holds only part of what push's
// would hold (see MailboxShape), with tables of its own that say which
// part. The benchmark bulk-loads that part and those tables, so that the
// store starts as its own writes would have left it.
//
// Fallback: push's whole mailbox is loaded.
type PartialMailbox interface {
	MailboxShape() MailboxShape
}

// MailboxShape says which of push's mailbox rows a store keeps. The zero
// value keeps them all.
type MailboxShape struct {
	// Cap > 0 keeps each user's newest Cap entries only; the
	// mailbox_state table (schema.MailboxState) records each user's
	// floor (the oldest id kept, when entries were left out) and entries.
	Cap int
	// PullFrom > 0 leaves out the messages of authors with at least
	// PullFrom followers; pull_authors lists those authors and
	// pull_follows (schema.PullAuthors, schema.PullFollows) the follows
	// of them.
	PullFrom int
	// PushRatio > 0 decides each follow edge (follower u, author a) as
	// Feeding Frenzy does: pushed, with a's messages in u's mailbox, when
	// u's read rate over a's post rate is at least PushRatio (H/L); else
	// pulled. The rates are the dataset's activity rates (loadgen), scaled
	// so that users read ReadsPerPost times as often as they post
	// overall; push_edges, pull_edges and user_rates (schema.PushEdges,
	// schema.PullEdges, schema.UserRates) hold the decisions and rates.
	PushRatio, ReadsPerPost float64

	// ActiveReads > 0 keeps the mailboxes of active users only, whole,
	// and none of the others': the mean reads per user within the
	// store's activity window. A user whose share of the workload's
	// reads (loadgen's read rate, Dataset.PickReader) is p counts as
	// having read within the window with probability
	// 1 - exp(-ActiveReads * users * p), as Poisson reads would, decided
	// by a hash of the user and the dataset's seed. reader_state
	// (schema.ReaderState) flags them.
	ActiveReads float64
}
