// Package dataset is the benchmark's synthetic dataset: the Spec that
// describes it, the follow graphs (uniform, Zipf, power-law, one read from
// an edge list, a celebrity's audience), the message authors and bodies,
// the users' activity and the workload's pickers that follow it, and the
// mailbox rows fan-out on write would hold. It is pure and deterministic:
// it reads no clock and no global random source, and imports nothing of
// the project but package timeline.
//
// The dataset is synthetic. A Spec describes it (PaperSpec is the one from
// Kazuho Oku's 2008 benchmark: 10,000 users, 1,000,000 messages, 42.9
// followees per user) and Generate turns it into a Dataset deterministically:
// the same Spec gives byte-identical data on every run and every machine, so
// the push and pull stores, the in-memory reference store and reruns months
// apart all see the same users, follows and messages. To keep that promise
// the graph and the authors come from seeded math/rand/v2 PCG streams, the
// bodies from a tiny fully specified per-message generator, and everything
// past turning the Spec's two float parameters into integers is integer
// arithmetic: never the global generator, the rand.Rand helpers whose
// algorithms are not pinned down, math functions that may round differently
// between CPUs, or map iteration order.
//
// A Dataset keeps the follow graph and the message authors in compact
// []uint32 form; message bodies and times are derived on demand from the seed
// and the message id, so a million messages cost four megabytes. Iterators
// (EachFollow, EachMessage, EachMailbox) hand rows to a bulk loader in the
// primary-key order of the target tables without building them in memory.
package dataset

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// Graph shapes for Spec.Graph.
const (
	// GraphUniform is a G(n,m) random graph: every ordered pair of distinct
	// users is equally likely to be a follow.
	GraphUniform = "uniform"
	// GraphZipf gives followees Zipf-distributed popularity, so a few
	// authors have very many followers (celebrities) and most have few.
	GraphZipf = "zipf"
	// GraphPowerLaw makes both degree distributions heavy-tailed, as in
	// the Twitter graph Kwak et al. crawled in 2009 (WWW 2010): follower
	// counts are a power law with exponent Spec.InExponent (they measured
	// 2.276), followee counts a heavier-than-exponential tail of exponent
	// about Spec.OutExponent, and the mean followee count stays
	// AvgFollowees exactly. At the paper's 10,000 users the most followed
	// authors have thousands of followers (up to all 9,999 other users),
	// half the users have fewer than about 20. See generatePowerLaw.
	GraphPowerLaw = "powerlaw"
	// GraphEdges is a follow graph read from a file (Spec.EdgeList; see
	// ReadEdgeList).
	GraphEdges = "edges"
)

// Defaults of the GraphZipf and GraphPowerLaw parameters (used when the
// Spec's field is 0).
const (
	DefaultZipfS       = 1.1
	DefaultInExponent  = 2.3
	DefaultOutExponent = 2.5
)

// Limits that keep ids in uint32 and the generator's integer arithmetic
// exact.
const (
	MaxUsers    = math.MaxInt32
	MaxMessages = math.MaxUint32
	MaxZipfS    = 64
	// The power-law exponents a GraphPowerLaw Spec accepts: below 1.5 the
	// most popular users' weights leave the rest almost nothing, above
	// 10 the tail is too short to tell from uniform.
	MinPowerLawExponent = 1.5
	MaxPowerLawExponent = 10
)

// Spec describes a dataset. The zero values of Graph, ZipfS, InExponent,
// OutExponent and Activity mean GraphUniform, DefaultZipfS,
// DefaultInExponent, DefaultOutExponent and the graph's default activity
// (see Activity).
type Spec struct {
	Users        int     // number of users, ids 1..Users
	Messages     int     // number of messages, ids 1..Messages
	AvgFollowees float64 // average followees per user; the graph has round(Users*AvgFollowees) follows
	// Followees, if > 0, makes every user follow exactly this many others
	// (for "users who follow 1,000 authors" runs) and overrides
	// AvgFollowees. Not with GraphPowerLaw, which draws followee counts,
	// nor GraphEdges.
	Followees int
	Graph     string  // GraphUniform, GraphZipf, GraphPowerLaw or GraphEdges
	ZipfS     float64 // Zipf exponent for GraphZipf, > 1
	// InExponent and OutExponent are GraphPowerLaw's exponents of the
	// follower and followee count distributions (P(d) ~ d^-exponent),
	// in [MinPowerLawExponent, MaxPowerLawExponent].
	InExponent, OutExponent float64
	// EdgeList is GraphEdges's graph; Users and AvgFollowees must be its
	// (EdgeList.Spec sets them).
	EdgeList *EdgeList
	// Celebrity, if > 0, gives user 1 exactly this many followers, drawn
	// at random, on a GraphUniform or GraphZipf graph: each chosen user
	// follows user 1 in place of one of their own followees, and each user
	// not chosen who followed user 1 follows another author instead, so
	// every followee count, and the mean, stays as drawn. It is how a
	// sweep measures what one author's post costs as their audience grows
	// (with ActivityCelebrity, every post of the workload is user 1's).
	Celebrity int
	// Drowning adds readers who follow far more authors than anyone
	// else (see Drowning); not with GraphEdges, whose file fixes the
	// follows.
	Drowning Drowning
	// Activity is how often each user posts and reads.
	Activity Activity
	Seed     int64
}

// PaperSpec is the dataset of Kazuho Oku's 2008 push-vs-pull benchmark:
// 10,000 users, 1,000,000 messages, 42.9 followees per user on average.
func PaperSpec() Spec {
	return Spec{
		Users:        10_000,
		Messages:     1_000_000,
		AvgFollowees: 42.9,
		Graph:        GraphUniform,
		Seed:         1,
	}
}

// Scaled returns s with Users and Messages multiplied by f (rounded, at least
// 2 users and 1 message) and the per-user follow counts kept, capped at
// Users-1 so that a small scale stays valid. The follow count per user is
// what the timeline cost depends on, which is why it does not shrink. The
// error reports an invalid s, a bad factor, or a scaled spec out of limits.
func (s Spec) Scaled(f float64) (Spec, error) {
	if err := s.Validate(); err != nil {
		return s, err
	}
	if !(f > 0) || math.IsInf(f, 0) {
		return s, &SpecError{Field: "scale", Value: strconv.FormatFloat(f, 'g', -1, 64), Reason: "must be a finite number > 0"}
	}
	scale := func(field string, n, atLeast int, limit float64) (int, error) {
		x := math.Round(float64(n) * f)
		if x > limit { // checked before converting, which would overflow
			return 0, &SpecError{Field: field, Value: strconv.FormatFloat(x, 'f', -1, 64),
				Reason: fmt.Sprintf("%d scaled by %g is above the limit %.0f", n, f, limit)}
		}
		return max(int(x), atLeast), nil
	}
	out := s
	var err error
	if s.Graph == GraphEdges {
		// The file fixes the users and the follows: only the messages
		// scale.
		if out.Messages, err = scale("Messages", s.Messages, 1, min(MaxMessages, math.MaxInt)); err != nil {
			return s, err
		}
		return out, out.Validate()
	}
	if out.Users, err = scale("Users", s.Users, 2, MaxUsers); err != nil {
		return s, err
	}
	if out.Messages, err = scale("Messages", s.Messages, 1, min(MaxMessages, math.MaxInt)); err != nil {
		return s, err
	}
	if limit := float64(out.Users - 1); out.AvgFollowees > limit {
		out.AvgFollowees = limit
	}
	out.Followees = min(out.Followees, out.Users-1)
	out.Drowning = out.Drowning.scaled(f, out.Users)
	return out, out.Validate()
}

// SpecError reports an invalid Spec field (or an invalid scale factor, Field
// "scale").
type SpecError struct {
	Field  string // Spec field name, e.g. "Users"
	Value  string // the offending value
	Reason string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("loadgen: invalid Spec.%s = %s: %s", e.Field, e.Value, e.Reason)
}

// Validate reports the first invalid field of s as a *SpecError.
func (s Spec) Validate() error {
	bad := func(field string, v any, format string, args ...any) error {
		return &SpecError{Field: field, Value: fmt.Sprint(v), Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case s.Users < 2:
		return bad("Users", s.Users, "need at least 2 users so that anyone can follow anyone")
	case s.Users > MaxUsers:
		return bad("Users", s.Users, "at most %d", MaxUsers)
	case s.Messages < 0:
		return bad("Messages", s.Messages, "must not be negative")
	case int64(s.Messages) > MaxMessages:
		return bad("Messages", s.Messages, "at most %d", int64(MaxMessages))
	case math.IsNaN(s.AvgFollowees) || s.AvgFollowees < 0 || s.AvgFollowees > float64(s.Users-1):
		return bad("AvgFollowees", s.AvgFollowees, "must be in 0..Users-1 (%d)", s.Users-1)
	case s.Followees < 0 || s.Followees > s.Users-1:
		return bad("Followees", s.Followees, "must be in 0..Users-1 (%d); 0 means use AvgFollowees", s.Users-1)
	case s.Celebrity < 0 || s.Celebrity > s.Users-1:
		return bad("Celebrity", s.Celebrity, "must be in 0..Users-1 (%d); 0 means no celebrity", s.Users-1)
	case s.Celebrity > 0 && s.Graph != "" && s.Graph != GraphUniform && s.Graph != GraphZipf:
		return bad("Celebrity", s.Celebrity, "goes with the %s and %s graphs, which do not draw follower counts themselves", GraphUniform, GraphZipf)
	}
	switch s.Graph {
	case "", GraphUniform:
	case GraphZipf:
		if s.ZipfS != 0 && !(s.ZipfS > 1 && s.ZipfS <= MaxZipfS) {
			return bad("ZipfS", s.ZipfS, "must be in (1, %d]; 0 means %g", MaxZipfS, DefaultZipfS)
		}
	case GraphPowerLaw:
		for _, e := range []struct {
			field  string
			v, def float64
		}{{"InExponent", s.InExponent, DefaultInExponent}, {"OutExponent", s.OutExponent, DefaultOutExponent}} {
			if e.v != 0 && !(e.v >= MinPowerLawExponent && e.v <= MaxPowerLawExponent) {
				return bad(e.field, e.v, "must be in [%g, %g]; 0 means %g", float64(MinPowerLawExponent), float64(MaxPowerLawExponent), e.def)
			}
		}
		if s.Followees > 0 {
			return bad("Followees", s.Followees, "the %s graph draws followee counts; leave Followees 0 and set AvgFollowees", GraphPowerLaw)
		}
	case GraphEdges:
		switch {
		case s.EdgeList == nil:
			return bad("EdgeList", "nil", "the %s graph needs an EdgeList (ReadEdgeList)", GraphEdges)
		case s.Users != s.EdgeList.Users:
			return bad("Users", s.Users, "the edge list %s has %d users", s.EdgeList.Source, s.EdgeList.Users)
		case s.Followees > 0:
			return bad("Followees", s.Followees, "the edge list fixes who follows whom")
		case s.AvgFollowees != s.EdgeList.AvgFollowees():
			return bad("AvgFollowees", s.AvgFollowees, "the edge list %s has %v", s.EdgeList.Source, s.EdgeList.AvgFollowees())
		}
	default:
		return bad("Graph", strconv.Quote(s.Graph), "want %q, %q, %q or %q", GraphUniform, GraphZipf, GraphPowerLaw, GraphEdges)
	}
	if err := s.Drowning.validate(); err != nil {
		return err
	}
	if s.Drowning.Share > 0 && s.Graph == GraphEdges {
		return &SpecError{Field: "Drowning", Value: s.Drowning.String(), Reason: "the edge list fixes who follows whom"}
	}
	if s.Graph != GraphEdges && s.EdgeList != nil {
		return bad("EdgeList", s.EdgeList.Source, "an edge list goes with Graph %q", GraphEdges)
	}
	return s.Activity.validate()
}

// withDefaults fills in the zero-value defaults, so a Dataset's Spec says
// what was actually generated.
func (s Spec) withDefaults() Spec {
	if s.Graph == "" {
		s.Graph = GraphUniform
	}
	if s.Graph == GraphZipf && s.ZipfS == 0 {
		s.ZipfS = DefaultZipfS
	}
	if s.Graph == GraphPowerLaw {
		if s.InExponent == 0 {
			s.InExponent = DefaultInExponent
		}
		if s.OutExponent == 0 {
			s.OutExponent = DefaultOutExponent
		}
	}
	s.Activity = s.Activity.withDefaults(s.Graph)
	return s
}

// Edges is the number of follows a valid s generates, not counting the
// drowning readers' (Spec.Drowning), which replace their graph rows.
func (s Spec) Edges() int64 {
	if s.Graph == GraphEdges && s.EdgeList != nil {
		return s.EdgeList.Edges
	}
	if s.Followees > 0 {
		return int64(s.Users) * int64(s.Followees)
	}
	// One IEEE multiplication and Round: exact and the same on every CPU.
	return int64(math.Round(float64(s.Users) * s.AvgFollowees))
}

// Dataset is a generated dataset. Users are 1..Spec.Users and messages
// 1..Spec.Messages. The exported slices are shared with the derived indexes
// and must be treated as read-only. A Dataset is safe for concurrent reads.
type Dataset struct {
	Spec Spec
	// Followees[u-1] lists whom user u follows, ascending, without u
	// itself and without duplicates.
	Followees [][]uint32
	// Authors[id-1] is the author of message id.
	Authors []uint32

	byAuthor  csr // author -> message ids, ascending
	followers csr // user -> follower ids, ascending
	bodySeed  uint64
	// posters and readers draw users by their activity; nil means
	// uniformly.
	posters, readers *aliasTable
	// followed draws the followee of a workload's follow in proportion
	// to 1+followers under ActivitySkewed; nil means uniformly.
	followed *aliasTable
	// celebrity, if not 0, is the author of every post of the workload
	// (ActivityCelebrity).
	celebrity uint32
	// drowning are the drowning readers (Spec.Drowning), ascending.
	drowning []uint32
	// readShares are the users' shares of the reads, scaled to a mean of
	// 1 (ReadShare), computed once.
	readShares     []float64
	readSharesOnce sync.Once
}

// csr is a compressed sparse row index: the list of key k (1-based) is
// ids[off[k-1]:off[k]]. One flat slice instead of a slice per key saves the
// 24-byte headers and keeps the lists contiguous for the mailbox merge.
type csr struct {
	off []int
	ids []uint32
}

func (c *csr) list(k uint32) []uint32 {
	if k == 0 || int(k) >= len(c.off) {
		return nil
	}
	return c.ids[c.off[k-1]:c.off[k]:c.off[k]]
}

func (c *csr) count(k int) int { return c.off[k] - c.off[k-1] }

// Generate builds the dataset s describes. It validates s first.
func Generate(s Spec) (*Dataset, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	d := &Dataset{Spec: s, bodySeed: streamSeed(s.Seed, streamBodies)}
	switch s.Graph {
	case GraphPowerLaw:
		d.Followees = generatePowerLaw(s)
	case GraphEdges:
		d.Followees = s.EdgeList.Followees
	default:
		d.Followees = generateFollows(s)
		if s.Celebrity > 0 {
			if err := setCelebrity(s, d.Followees); err != nil {
				return nil, err
			}
		}
	}
	d.drowning = setDrowning(s, d.Followees)
	edges := 0
	for _, fs := range d.Followees {
		edges += len(fs)
	}
	// Followers by counting sort over the follow lists in follower order,
	// so each user's followers come out ascending.
	d.followers = buildCSR(s.Users, edges, func(emit func(key, val uint32)) {
		for i, fs := range d.Followees {
			for _, f := range fs {
				emit(f, uint32(i+1))
			}
		}
	})
	switch s.Activity.Mode {
	case ActivitySkewed:
		d.posters = d.activityTable(s.Activity.PostExponent)
		d.readers = d.activityTable(s.Activity.ReadExponent)
		d.followed = d.activityTable(1)
	case ActivityCelebrity:
		d.celebrity = d.mostFollowed()
	}
	d.Authors = generateAuthors(s, d.posters)
	// ByAuthor likewise over the messages in id order.
	d.byAuthor = buildCSR(s.Users, int(s.Messages), func(emit func(key, val uint32)) {
		for i, a := range d.Authors {
			emit(a, uint32(i+1))
		}
	})
	return d, nil
}

// buildCSR builds a csr over keys 1..n from the (key, val) pairs each calls
// emit with, twice: once to count, once to place. Values keep emit order
// within a key.
func buildCSR(n, total int, each func(emit func(key, val uint32))) csr {
	off := make([]int, n+1)
	each(func(k, _ uint32) { off[k]++ })
	for k := 1; k <= n; k++ {
		off[k] += off[k-1]
	}
	ids := make([]uint32, total)
	next := make([]int, n+1)
	copy(next, off)
	each(func(k, v uint32) {
		ids[next[k-1]] = v
		next[k-1]++
	})
	return csr{off: off, ids: ids}
}

// ByAuthor returns the ids of author's messages, ascending (nil for an
// unknown user). The slice is shared: do not modify it.
func (d *Dataset) ByAuthor(author uint32) []uint32 { return d.byAuthor.list(author) }

// Followers returns who follows user, ascending (nil for an unknown user).
// The slice is shared: do not modify it.
func (d *Dataset) Followers(user uint32) []uint32 { return d.followers.list(user) }

// baseTime is when the dataset's first message was posted (id 0 would be
// exactly then): the month Oku ran his benchmark.
var baseTime = time.Date(2008, time.September, 1, 0, 0, 0, 0, time.UTC)

// MessageInterval separates consecutive messages' CreatedAt.
const MessageInterval = time.Second

// CreatedAt is message id's creation time: a fixed base plus id seconds, so
// times increase with ids as they do in a live store.
func (d *Dataset) CreatedAt(id uint64) time.Time {
	return baseTime.Add(time.Duration(id) * MessageInterval)
}

// EachFollow calls fn for every follow in (follower, followee) order,
// stopping at and returning fn's first error.
func (d *Dataset) EachFollow(fn func(follower, followee uint32) error) error {
	for i, fs := range d.Followees {
		for _, f := range fs {
			if err := fn(uint32(i+1), f); err != nil {
				return err
			}
		}
	}
	return nil
}

// EachMessage calls fn for every message in id order, stopping at and
// returning fn's first error. Use AppendBody and CreatedAt for the rest of
// the row.
func (d *Dataset) EachMessage(fn func(id uint64, author uint32) error) error {
	for i, a := range d.Authors {
		if err := fn(uint64(i+1), a); err != nil {
			return err
		}
	}
	return nil
}

// Stats summarizes a dataset.
type Stats struct {
	Users, Messages            int
	Edges                      int64
	AvgFollowees, AvgFollowers float64
	MaxFollowees, MaxFollowers int
	MailboxRows                int64
	// Followees and Followers are the out- and in-degree distributions:
	// each user's followee and follower count, user u at index u-1.
	Followees, Followers []int
}

// Stats computes the dataset's summary without iterating mailbox rows.
func (d *Dataset) Stats() Stats {
	st := Stats{
		Users:       d.Spec.Users,
		Messages:    len(d.Authors),
		Edges:       int64(len(d.followers.ids)),
		MailboxRows: d.MailboxRows(),
	}
	st.Followees, st.Followers = make([]int, st.Users), make([]int, st.Users)
	for i, fs := range d.Followees {
		st.Followees[i] = len(fs)
		st.Followers[i] = d.followers.count(i + 1)
		st.MaxFollowees = max(st.MaxFollowees, st.Followees[i])
		st.MaxFollowers = max(st.MaxFollowers, st.Followers[i])
	}
	// Every follow has one follower and one followee, so the two averages
	// are equal; both are reported because they answer different
	// questions (read cost vs fan-out cost).
	st.AvgFollowees = float64(st.Edges) / float64(st.Users)
	st.AvgFollowers = st.AvgFollowees
	return st
}

// String is a one-line summary, e.g. "10,000 users, 1,000,000 messages,
// 429,000 follows (42.90 followees/user avg, max 70; max 71 followers),
// 42,903,716 mailbox rows".
func (st Stats) String() string {
	return fmt.Sprintf("%s users, %s messages, %s follows (%.2f followees/user avg, max %s; max %s followers), %s mailbox rows",
		Commas(int64(st.Users)), Commas(int64(st.Messages)), Commas(st.Edges),
		st.AvgFollowees, Commas(int64(st.MaxFollowees)), Commas(int64(st.MaxFollowers)),
		Commas(st.MailboxRows))
}

// Commas formats n with thousands separators, as the summaries of the
// dataset and of its load print counts.
func Commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	b := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		b = append(b, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// ErrNotEmpty is returned by Apply when the store assigns message ids other
// than 1..N, which means it already held messages and the dataset's ids
// would not match the store's.
var ErrNotEmpty = errors.New("loadgen: store is not empty")

// Apply feeds the dataset into st through the public Store API: every
// follow first, then every message in id order, so that an empty store
// assigns the same ids 1..N and holds exactly the dataset. It is slow (one
// call per row) and meant for tests comparing stores on small datasets; the
// bulk loader is for real runs.
func (d *Dataset) Apply(ctx context.Context, st timeline.Store) error {
	err := d.EachFollow(func(follower, followee uint32) error {
		return st.Follow(ctx, timeline.UserID(follower), timeline.UserID(followee))
	})
	if err != nil {
		return fmt.Errorf("loadgen: apply follows: %w", err)
	}
	var buf []byte
	return d.EachMessage(func(id uint64, author uint32) error {
		buf = d.AppendBody(buf[:0], id)
		m, err := st.Post(ctx, timeline.UserID(author), string(buf))
		if err != nil {
			return fmt.Errorf("loadgen: apply message %d: %w", id, err)
		}
		if m.ID != timeline.MessageID(id) {
			return fmt.Errorf("%w: it assigned id %d to dataset message %d", ErrNotEmpty, m.ID, id)
		}
		return nil
	})
}
