// Package selective is Feeding Frenzy's per-edge choice between push and
// pull (Silberstein et al., SIGMOD 2010): each follow edge, follower u of
// author a, is pushed, so that a's posts are fanned out to u's mailbox,
// when u reads at least H/L times as often as a posts, and pulled, so that
// u's reads fetch a's posts, otherwise. H is the cost of one fan-out row,
// L the cost of probing one pulled author on a read: an edge costs H per
// post pushed and L per read pulled, so the rule picks the cheaper side of
// every edge, and with it the cheapest mix of the two for the whole graph.
// Hybrid (package hybrid) decides per author, by follower count; this
// decides per edge, by traffic.
//
// The tables are push's, plus push_edges (the pushed edges, by author),
// pull_edges (the pulled ones, by follower) and user_rates (each user's
// exponentially decayed counts of newest-page reads and of posts, with a
// half-life of HalfLife). A post fans out with one INSERT ... SELECT over
// its author's push_edges range. A read is push's mailbox range, with the
// reader's pull_edges rows in the same statement (one consistent
// snapshot); if there are any, one more statement takes the ids of each
// pulled author's messages below the cursor and above the lowest id of
// the mailbox's range, when that range filled a page (nothing older can
// make the page), each stopping at the page's length; a third fetches the
// bodies of those that made the page. Keyset cursors are message ids in
// both parts, so paging is exact across them.
//
// Rates are counted in process and written in batches: every FlushEvery
// reads and posts, the store's flusher (a goroutine of its own, woken by
// the call that reaches the count, which does not wait for it) writes
// them to user_rates in multi-row upserts and re-decides the edges whose
// rates changed (the reading users' followees, the posting users'
// followers) at the current H/L, flipping at most FlipBatch edges; the
// rest wait for the next flush. Quiesce (timeline.Quiescer) does the
// flushes due and the flips left over now, which the benchmark asks for
// before every phase so that no other phase counts them. Close stops the
// flusher and flushes what is left, each flush bounded by FlushTimeout.
// Decay is the same for every count, so an edge's ratio moves
// only with traffic, and only touched users need a look. Turning an edge
// pull to push backfills the author's messages into the follower's mailbox
// (push.Backfill); push to pull removes them (push.RemoveAuthor); each flip
// is one transaction, whose locks serialise it with the author's posts as
// a follow's are. A counted read thus costs no write of its own; the price
// is that up to FlushEvery events are lost if the process dies, and that
// rates move in steps. Several processes each count their own traffic and
// add it to the same rows.
//
// H and L are measured by the store on its own statements: the marginal
// time of one fan-out row (the slope of a fan-out's time over the rows it
// wrote) and of one pulled author (the slope of the pulled-ids statement's
// time over the authors it probed), as least squares over exponentially
// weighted samples (the last thousand or so). Until both slopes are known
// and positive, DefaultH and DefaultL hold. Options h and l fix them (and
// turn measurement off); the bulk load of the benchmark decides its edges
// by the same rule, Pushed, at the fixed or default ratio (MailboxShape).
//
// The trade-off: posts write only the rows of followers who read their
// author often enough; reads pay one index probe per pulled followee. Each
// follow is stored twice (follows and one edge table), and a flip costs a
// backfill or a removal of the author's messages.
package selective

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
)

// ModelName is the model's name in package registry.
const ModelName = "selective"

// DefaultDatabase is the database the model uses unless told otherwise.
const DefaultDatabase = "pushpull_selective"

// Defaults of Config.
const (
	// DefaultH and DefaultL are the costs, in microseconds, of one
	// fan-out row and one pulled author's probe that hold until the
	// store has measured its own (see the package comment); their ratio
	// decides the bulk-loaded edges.
	DefaultH = 4.0
	DefaultL = 12.0
	// DefaultHalfLife is how long a read or a post counts half as much.
	DefaultHalfLife = time.Hour
	// DefaultFlushEvery is how many reads and posts a store counts
	// before it writes the counts and re-decides their edges.
	DefaultFlushEvery = 500
	// DefaultReadsPerPost is how many newest-page reads the bulk load
	// assumes for every post when it starts the rates from the dataset:
	// the benchmark's default mix (loadgen/workload's DefaultMixSpec:
	// newest=76, post=2).
	DefaultReadsPerPost = 38.0
)

// FlipBatch is how many edges one flush flips at most.
const FlipBatch = 256

// FlushTimeout bounds one flush of the flusher or of Close: a flush that
// takes longer is abandoned, and its counts are dropped.
const FlushTimeout = 30 * time.Second

// Registry options (registry.Model.Options).
const (
	OptionH            = "h"              // Config.H, a number, 0 or more
	OptionL            = "l"              // Config.L, a number, 0 or more
	OptionHalfLife     = "halflife"       // Config.HalfLife, a Go duration
	OptionFlushEvery   = "flush"          // Config.FlushEvery
	OptionReadsPerPost = "reads_per_post" // Config.ReadsPerPost
)

// Config says where the store lives and how it decides its edges.
type Config struct {
	push.Config
	// H and L are the costs of one fan-out row and of one pulled
	// author's probe, in any one unit; both 0 means measured, with
	// DefaultH and DefaultL until measured. Set one, set both.
	H, L float64
	// HalfLife is the decay of the read and post counts; 0 means
	// DefaultHalfLife.
	HalfLife time.Duration
	// FlushEvery is how many counted events trigger a flush; 0 means
	// DefaultFlushEvery.
	FlushEvery int
	// ReadsPerPost is what MailboxShape tells a bulk load; 0 means
	// DefaultReadsPerPost.
	ReadsPerPost float64
	// Now is the clock of the rates; nil means time.Now.
	Now func() time.Time
}

// check fills in c's defaults and reports the first field its registry
// option does not take, as a *registry.OptionError; H and L must be both 0
// or neither.
func (c *Config) check() error {
	if c.HalfLife == 0 {
		c.HalfLife = DefaultHalfLife
	}
	if c.FlushEvery == 0 {
		c.FlushEvery = DefaultFlushEvery
	}
	if c.ReadsPerPost == 0 {
		c.ReadsPerPost = DefaultReadsPerPost
	}
	for i, v := range []any{c.H, c.L, c.HalfLife, c.FlushEvery, c.ReadsPerPost} { // in the order of options
		if err := options[i].Check(ModelName, v); err != nil {
			return err
		}
	}
	if (c.H == 0) != (c.L == 0) {
		return &registry.OptionError{Models: []string{ModelName}, Option: OptionH + ", " + OptionL, Value: fmt.Sprintf("%g, %g", c.H, c.L),
			Reason: "set both (in one unit) or neither", Err: registry.ErrBadOption}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	return nil
}

// Store is the selective model. It implements timeline.Store; its DB is
// push's.
type Store struct {
	*push.Store
	cfg Config

	mu      sync.Mutex
	pending map[timeline.UserID]*counts // since the last flush
	events  int
	dirty   map[timeline.UserID]side // left over by a flush's flip bound

	flushing chan struct{} // held (one slot) by the flush that runs
	wake     chan struct{} // a flush is due; buffered, so it never blocks
	stop     chan struct{} // closed by Close
	flusher  sync.WaitGroup
	closed   sync.Once

	costMu        sync.Mutex
	fanout, probe regression

	pages, rowsRead, flushes, flushErrors atomic.Int64
	toPush, toPull, flipRows              atomic.Int64
}

type counts struct{ reads, posts float64 }

// side says which of a user's edges a flush re-decides.
type side uint8

const (
	asReader side = 1 << iota // the edges to the user's followees
	asAuthor                  // the edges to the user's followers
)

var (
	_ timeline.Store          = (*Store)(nil)
	_ registry.PartialMailbox = (*Store)(nil)
	_ timeline.Counting       = (*Store)(nil)
	_ timeline.DBHolder       = (*Store)(nil)
	_ timeline.Quiescer       = (*Store)(nil)
)

// Open checks cfg (a *registry.OptionError, before anything is written), connects
// to the server, creates the database and schema if needed, and returns
// the store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Schema = schema.Selective
	base, err := push.Open(ctx, cfg.Config)
	if err != nil {
		return nil, err
	}
	s := &Store{
		Store: base, cfg: cfg,
		pending:  map[timeline.UserID]*counts{},
		dirty:    map[timeline.UserID]side{},
		flushing: make(chan struct{}, 1),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	s.flusher.Go(s.flushWhenDue)
	return s, nil
}

// flushWhenDue is the flusher: it flushes each time count says a flush is
// due, until Close. A failed flush is counted (Counters), not reported:
// the calls it rides on have succeeded.
func (s *Store) flushWhenDue() {
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		if err := s.flushWithin(FlushTimeout); err != nil {
			s.flushErrors.Add(1)
		}
	}
}

// flushWithin flushes under a deadline d from now.
func (s *Store) flushWithin(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.Flush(ctx)
}

// Close stops the flusher, waiting for a flush it is running, flushes the
// counts left (within FlushTimeout), and closes the connection pool. A
// failed last flush is returned with the pool's error; the pool is closed
// either way.
func (s *Store) Close() error {
	var err error
	s.closed.Do(func() {
		close(s.stop)
		s.flusher.Wait()
		err = errors.Join(s.flushWithin(FlushTimeout), s.Store.Close())
	})
	return err
}

// Ratio returns H/L as the store decides by it now: fixed, measured, or
// the defaults'.
func (s *Store) Ratio() float64 {
	h, l := s.Costs()
	return h / l
}

// Costs returns H and L as the store decides by them now.
func (s *Store) Costs() (h, l float64) {
	if s.cfg.H > 0 {
		return s.cfg.H, s.cfg.L
	}
	s.costMu.Lock()
	defer s.costMu.Unlock()
	h, okH := s.fanout.slope()
	l, okL := s.probe.slope()
	if okH && okL {
		return h, l
	}
	return DefaultH, DefaultL
}

// MailboxShape implements registry.PartialMailbox: every edge decided by
// Pushed at the store's ratio now, from rates with ReadsPerPost reads per
// post.
func (s *Store) MailboxShape() registry.MailboxShape {
	ratio := s.Ratio()
	return registry.MailboxShape{
		PushEdge:     func(reads, posts float64) bool { return Pushed(reads, posts, ratio) },
		ReadsPerPost: s.cfg.ReadsPerPost,
	}
}

// Post implements timeline.Store: the message and its fan-out to the
// author's pushed followers (drowning readers as push.Config.Drowning
// says) commit together; the post is counted.
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	msg, err := s.Writes(ModelName).Post(ctx, author, body, nil, func(tx *sql.Tx, msg timeline.Message) error {
		list, err := s.DrowningReaders().Read(ctx)
		if err != nil {
			return err
		}
		start := time.Now()
		res, err := tx.ExecContext(ctx,
			`INSERT INTO mailbox (user_id, message_id) SELECT user_id, ? FROM push_edges WHERE author_id = ?`+
				list.Filter("user_id", strconv.FormatUint(uint64(msg.ID), 10)),
			msg.ID, author)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err == nil {
			s.sample(&s.fanout, float64(n), time.Since(start))
		}
		return err
	})
	if err == nil {
		s.count(author, counts{posts: 1})
	}
	return msg, err
}

// Follow implements timeline.Store: the follow row and the edge, decided
// by the rates as of now, commit together; a pushed edge backfills the
// followee's messages.
// The follower is marked drowning in the same transaction when the follow
// takes them past the drowning readers' count (push.Store.FollowMarking).
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.FollowMarking(ctx, ModelName, follower, followee, func(tx *sql.Tx) error {
		pushed, err := s.decide(ctx, tx, follower, followee)
		if err != nil {
			return err
		}
		if !pushed {
			_, err := tx.ExecContext(ctx, `INSERT INTO pull_edges (user_id, author_id) VALUES (?, ?)`, follower, followee)
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO push_edges (author_id, user_id) VALUES (?, ?)`, followee, follower); err != nil {
			return err
		}
		_, err = push.Backfill(ctx, tx, follower, followee, 0)
		return err
	})
}

// Delete implements timeline.Store: the message and its rows in its
// author's followers' mailboxes go together. The rows are looked for over
// every follow, pushed or not: an edge that flipped since the post may
// have left its row, and a row the read joins no message to is never
// shown.
func (s *Store) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	return s.Writes(ModelName).Delete(ctx, author, id, func(tx *sql.Tx) error {
		_, err := push.RemoveFanOut(ctx, tx, id, author)
		return err
	})
}

// Unfollow implements timeline.Store: the follow row, the edge and, for a
// pushed edge, the followee's messages in the follower's mailbox go
// together.
func (s *Store) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	return s.Writes(ModelName).Unfollow(ctx, follower, followee, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM pull_edges WHERE user_id = ? AND author_id = ?`, follower, followee); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx,
			`DELETE FROM push_edges WHERE author_id = ? AND user_id = ?`, followee, follower)
		if pushed, err := affected(res, err); err != nil || !pushed {
			return err
		}
		_, err = push.RemoveAuthor(ctx, tx, follower, followee)
		return err
	})
}

func affected(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// decide reports whether the edge follower → author is pushed under the
// rates as of now: the stored ones decayed, plus what this process
// counted since its last flush.
func (s *Store) decide(ctx context.Context, tx *sql.Tx, follower, author timeline.UserID) (bool, error) {
	now := s.seconds(s.cfg.Now())
	rows, err := tx.QueryContext(ctx, `SELECT user_id, read_rate, post_rate, as_of FROM user_rates WHERE user_id IN (?, ?)`, follower, author)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var reads, posts float64
	for rows.Next() {
		var u timeline.UserID
		var r, p, at float64
		if err := rows.Scan(&u, &r, &p, &at); err != nil {
			return false, err
		}
		decay := math.Exp2((at - now) / s.cfg.HalfLife.Seconds())
		if u == follower {
			reads = r * decay
		}
		if u == author {
			posts = p * decay
		}
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	if c := s.pending[follower]; c != nil {
		reads += c.reads
	}
	if c := s.pending[author]; c != nil {
		posts += c.posts
	}
	s.mu.Unlock()
	return Pushed(reads, posts, s.Ratio()), nil
}

// Pushed is Feeding Frenzy's rule: an edge whose follower reads reads
// times and whose author posts posts times (over the same window) is
// pushed when reads ≥ ratio × posts, ratio being H/L. An author who does
// not post costs nothing pushed.
func Pushed(reads, posts, ratio float64) bool { return reads >= ratio*posts }

// seconds is t on the scale of user_rates.at.
func (s *Store) seconds(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }

// count adds c to user's pending counts and wakes the flusher when they
// reach FlushEvery events.
func (s *Store) count(user timeline.UserID, c counts) {
	s.mu.Lock()
	p := s.pending[user]
	if p == nil {
		p = &counts{}
		s.pending[user] = p
	}
	p.reads += c.reads
	p.posts += c.posts
	s.events++
	due := s.events >= s.cfg.FlushEvery
	s.mu.Unlock()
	if due {
		select {
		case s.wake <- struct{}{}:
		default: // already woken
		}
	}
}

// Flush writes the counts of this process's reads and posts since the
// last flush to user_rates and re-decides the edges they touch, flipping
// at most FlipBatch; the rest wait for the next flush.
// A flush running in the flusher is waited for, within ctx.
func (s *Store) Flush(ctx context.Context) error {
	if err := s.lockFlush(ctx); err != nil {
		return fmt.Errorf("%s flush: %w", ModelName, err)
	}
	defer s.unlockFlush()
	if err := s.flush(ctx); err != nil {
		return fmt.Errorf("%s flush: %w", ModelName, err)
	}
	return nil
}

// Quiesce implements timeline.Quiescer: it waits for the flush the
// flusher is running, then flushes while a flush is due (FlushEvery events
// counted) or edges are left over from a flush's flip bound, until
// neither is; a flush the flusher then starts finds nothing to do. Counts
// below FlushEvery stay pending, as they would without the call, so a
// store whose flush option is larger than its traffic never flushes. That
// is its quiet state: with no traffic after the call, the store writes
// nothing until Close. Pages never wait for it: every write is applied
// before it returns, which is why selective is no timeline.Settler.
func (s *Store) Quiesce(ctx context.Context) error {
	if err := s.lockFlush(ctx); err != nil {
		return fmt.Errorf("%s quiesce: %w", ModelName, err)
	}
	defer s.unlockFlush()
	for {
		s.mu.Lock()
		due := s.events >= s.cfg.FlushEvery || len(s.dirty) > 0
		s.mu.Unlock()
		if !due {
			return nil
		}
		if err := s.flush(ctx); err != nil {
			return fmt.Errorf("%s quiesce: %w", ModelName, err)
		}
	}
}

// lockFlush takes the one flush slot, waiting for a flush that holds it
// until ctx ends.
func (s *Store) lockFlush(ctx context.Context) error {
	select {
	case s.flushing <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) unlockFlush() { <-s.flushing }

// flush writes what is pending and re-decides what it touches and what an
// earlier flush left; with neither, it does nothing and counts no flush.
// The caller holds the flush slot.
func (s *Store) flush(ctx context.Context) error {
	s.mu.Lock()
	pending, dirty := s.pending, s.dirty
	if len(pending) == 0 && len(dirty) == 0 {
		s.mu.Unlock()
		return nil
	}
	s.pending, s.events, s.dirty = map[timeline.UserID]*counts{}, 0, map[timeline.UserID]side{}
	s.mu.Unlock()
	s.flushes.Add(1)
	now := s.seconds(s.cfg.Now())
	if err := s.writeRates(ctx, pending, now); err != nil {
		// The counts are approximate: a batch that failed is dropped,
		// and its users keep their decisions until counted again.
		return err
	}
	for u, c := range pending {
		if c.reads > 0 {
			dirty[u] |= asReader
		}
		if c.posts > 0 {
			dirty[u] |= asAuthor
		}
	}
	users := make([]timeline.UserID, 0, len(dirty))
	for u := range dirty {
		users = append(users, u)
	}
	slices.Sort(users)
	budget := FlipBatch
	var err error
	for i, u := range users {
		if budget <= 0 || err != nil {
			s.mu.Lock()
			for _, v := range users[i:] {
				s.dirty[v] |= dirty[v]
			}
			s.mu.Unlock()
			break
		}
		var n int
		n, err = s.redecide(ctx, u, dirty[u], now, budget)
		budget -= n
		if budget <= 0 && err == nil {
			// u may have more flips waiting: look again next time.
			s.mu.Lock()
			s.dirty[u] |= dirty[u]
			s.mu.Unlock()
		}
	}
	return err
}

// writeRates adds pending to user_rates, decayed to now, in upserts of up
// to 500 users.
func (s *Store) writeRates(ctx context.Context, pending map[timeline.UserID]*counts, now float64) error {
	users := make([]timeline.UserID, 0, len(pending))
	for u := range pending {
		users = append(users, u)
	}
	slices.Sort(users) // one lock order for every process
	hl := strconv.FormatFloat(s.cfg.HalfLife.Seconds(), 'g', -1, 64)
	for len(users) > 0 {
		chunk := users[:min(500, len(users))]
		users = users[len(chunk):]
		q := []byte(`INSERT INTO user_rates (user_id, read_rate, post_rate, as_of) VALUES `)
		for i, u := range chunk {
			if i > 0 {
				q = append(q, ',')
			}
			c := pending[u]
			q = append(q, '(')
			q = strconv.AppendUint(q, uint64(u), 10)
			q = append(q, ',')
			q = strconv.AppendFloat(q, c.reads, 'g', -1, 64)
			q = append(q, ',')
			q = strconv.AppendFloat(q, c.posts, 'g', -1, 64)
			q = append(q, ',')
			q = strconv.AppendFloat(q, now, 'f', 6, 64)
			q = append(q, ')')
		}
		// The old counts and the new decay to the later of the two
		// times; as_of is assigned last, so the first two see the old.
		q = append(q, ` ON DUPLICATE KEY UPDATE
			read_rate = read_rate * POW(2, LEAST(0, as_of - VALUES(as_of)) / `+hl+`) + VALUES(read_rate) * POW(2, LEAST(0, VALUES(as_of) - as_of) / `+hl+`),
			post_rate = post_rate * POW(2, LEAST(0, as_of - VALUES(as_of)) / `+hl+`) + VALUES(post_rate) * POW(2, LEAST(0, VALUES(as_of) - as_of) / `+hl+`),
			as_of = GREATEST(as_of, VALUES(as_of))`...)
		if _, err := s.DB().ExecContext(ctx, string(q)); err != nil {
			return err
		}
	}
	return nil
}

// redecide flips the edges of user (on the sides given) that the rule
// decides otherwise now, at most budget of them, and returns how many it
// flipped.
func (s *Store) redecide(ctx context.Context, user timeline.UserID, sides side, now float64, budget int) (int, error) {
	var reads, posts, at float64
	err := s.DB().QueryRowContext(ctx, `SELECT read_rate, post_rate, as_of FROM user_rates WHERE user_id = ?`, user).Scan(&reads, &posts, &at)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	if err != nil {
		return 0, err
	}
	hl := s.cfg.HalfLife.Seconds()
	decay := math.Exp2((at - now) / hl)
	reads, posts = reads*decay, posts*decay
	ratio := s.Ratio()
	// other(col) is the other end's count decayed to now, 0 without a row.
	other := func(col string) string {
		return `COALESCE(r.` + col + ` * POW(2, (r.as_of - ?) / ?), 0)`
	}
	type flip struct {
		follower, author timeline.UserID
		toPush           bool
	}
	var flips []flip
	find := func(toPush bool, query string, args ...any) error {
		if len(flips) >= budget {
			return nil
		}
		rows, err := s.DB().QueryContext(ctx, query+` LIMIT `+strconv.Itoa(budget-len(flips)), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v timeline.UserID
			if err := rows.Scan(&v); err != nil {
				return err
			}
			flips = append(flips, flip{follower: user, author: v, toPush: toPush})
		}
		return rows.Err()
	}
	if sides&asReader != 0 {
		// user's followees a: pushed iff posts(a) ≤ reads(user) / ratio.
		bound := math.Inf(1)
		if ratio > 0 {
			bound = reads / ratio
		}
		if !math.IsInf(bound, 0) {
			if err := find(true, `SELECT p.author_id FROM pull_edges p LEFT JOIN user_rates r ON r.user_id = p.author_id
				WHERE p.user_id = ? AND `+other("post_rate")+` <= ?`, user, now, hl, bound); err != nil {
				return 0, err
			}
			if err := find(false, `SELECT e.followee_id FROM follows e
				LEFT JOIN pull_edges p ON p.user_id = e.follower_id AND p.author_id = e.followee_id
				LEFT JOIN user_rates r ON r.user_id = e.followee_id
				WHERE e.follower_id = ? AND p.user_id IS NULL AND `+other("post_rate")+` > ?`, user, now, hl, bound); err != nil {
				return 0, err
			}
		}
	}
	readerFlips := len(flips)
	if sides&asAuthor != 0 {
		// user's followers u: pushed iff reads(u) ≥ ratio × posts(user).
		need := ratio * posts
		if err := find(true, `SELECT p.user_id FROM pull_edges p LEFT JOIN user_rates r ON r.user_id = p.user_id
			WHERE p.author_id = ? AND `+other("read_rate")+` >= ?`, user, now, hl, need); err != nil {
			return 0, err
		}
		if err := find(false, `SELECT e.user_id FROM push_edges e LEFT JOIN user_rates r ON r.user_id = e.user_id
			WHERE e.author_id = ? AND `+other("read_rate")+` < ?`, user, now, hl, need); err != nil {
			return 0, err
		}
		for i := readerFlips; i < len(flips); i++ {
			flips[i].follower, flips[i].author = flips[i].author, user
		}
	}
	for _, f := range flips {
		if err := s.flip(ctx, f.follower, f.author, f.toPush); err != nil {
			return 0, err
		}
	}
	return len(flips), nil
}

// flip moves the edge follower → author to push (backfilling the author's
// messages) or to pull (removing them), in one transaction; an edge that
// is gone or already there is left alone.
func (s *Store) flip(ctx context.Context, follower, author timeline.UserID, toPush bool) error {
	var rows int64
	err := mysqlx.InTx(ctx, s.DB(), func(tx *sql.Tx) error {
		rows = 0
		from, to := `DELETE FROM push_edges WHERE author_id = ? AND user_id = ?`, `INSERT INTO pull_edges (author_id, user_id) VALUES (?, ?)`
		if toPush {
			from, to = `DELETE FROM pull_edges WHERE author_id = ? AND user_id = ?`, `INSERT INTO push_edges (author_id, user_id) VALUES (?, ?)`
		}
		res, err := tx.ExecContext(ctx, from, author, follower)
		if moved, err := affected(res, err); err != nil || !moved {
			return err
		}
		if _, err := tx.ExecContext(ctx, to, author, follower); err != nil {
			return err
		}
		if toPush {
			rows, err = push.Backfill(ctx, tx, follower, author, 0)
		} else {
			rows, err = push.RemoveAuthor(ctx, tx, follower, author)
		}
		return err
	})
	if err != nil {
		return err
	}
	if toPush {
		s.toPush.Add(1)
	} else {
		s.toPull.Add(1)
	}
	s.flipRows.Add(rows)
	return nil
}

// Timeline implements timeline.Store: the mailbox range merged with the
// reader's pulled authors' messages (a drowning reader's page by pull
// under push.DrowningPull, push.Store.PullDrowning); a newest page is
// counted as a read, but for a drowning reader's read by pull.
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	p, err := s.Page(ctx, ModelName, user, q, s.PullDrowning(s.read))
	if err == nil && q.Before == "" {
		// A page read by pull reads no edge: it does not make the
		// reader's edges pushed.
		if pulled, _ := s.PullsDrowning(ctx, user); !pulled {
			s.count(user, counts{reads: 1})
		}
	}
	return p, err
}

func (s *Store) read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	fetch := r.Fetch()
	msgs, pulled, err := s.mailboxAndPulled(ctx, r)
	if err != nil {
		return nil, err
	}
	s.pages.Add(1)
	s.rowsRead.Add(int64(2*len(msgs) + len(pulled))) // a mailbox entry and its message each
	if len(pulled) == 0 {
		return msgs, nil
	}
	// Early stop: a full mailbox range bounds the page from below.
	var floor timeline.MessageID
	if len(msgs) == fetch {
		floor = msgs[len(msgs)-1].ID
	}
	start := time.Now()
	ids, err := s.pulledIDs(ctx, r, pulled, floor)
	if err != nil {
		return nil, err
	}
	s.sample(&s.probe, float64(len(pulled)), time.Since(start))
	s.rowsRead.Add(int64(len(ids)))
	// Merge: both lists are newest first; the page is the Fetch newest
	// of their union (an id in both is one message).
	out := make([]timeline.Message, 0, fetch)
	var need []uint64
	i, j := 0, 0
	for len(out) < fetch && (i < len(msgs) || j < len(ids)) {
		switch {
		case j == len(ids) || (i < len(msgs) && msgs[i].ID > ids[j]):
			out = append(out, msgs[i])
			i++
		case i < len(msgs) && msgs[i].ID == ids[j]:
			out = append(out, msgs[i])
			i, j = i+1, j+1
		default:
			out = append(out, timeline.Message{ID: ids[j]})
			need = append(need, uint64(ids[j]))
			j++
		}
	}
	if len(need) == 0 {
		return out, nil
	}
	found, err := sqlread.MessagesByID(ctx, s.DB(), need)
	if err != nil {
		return nil, err
	}
	s.rowsRead.Add(int64(len(need)))
	bodies := make(map[timeline.MessageID]timeline.Message, len(found))
	for _, m := range found {
		bodies[m.ID] = m
	}
	for k := range out {
		if out[k].Author == 0 {
			m, ok := bodies[out[k].ID]
			if !ok {
				return nil, fmt.Errorf("message %d vanished", out[k].ID)
			}
			out[k] = m
		}
	}
	return out, nil
}

// mailboxAndPulled reads r's mailbox range with bodies and the reader's
// pulled authors in one statement, so that both come from one snapshot:
// a flip commits the edge and the mailbox rows together.
func (s *Store) mailboxAndPulled(ctx context.Context, r timeline.Request) ([]timeline.Message, []timeline.UserID, error) {
	q := `(SELECT b.message_id, m.author_id, m.body, m.created_at, 0 AS k
		FROM mailbox b JOIN messages m ON m.id = b.message_id WHERE b.user_id = ?`
	args := []any{r.User}
	if r.Before > 0 {
		q += ` AND b.message_id < ?`
		args = append(args, r.Before)
	}
	q += ` ORDER BY b.message_id DESC LIMIT ?)
		UNION ALL (SELECT author_id, NULL, NULL, NULL, 1 FROM pull_edges WHERE user_id = ?)`
	args = append(args, r.Fetch(), r.User)
	rows, err := s.DB().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	msgs := make([]timeline.Message, 0, r.Fetch())
	var pulled []timeline.UserID
	for rows.Next() {
		var id uint64
		var author sql.NullInt64
		var body sql.NullString
		var at sql.NullTime
		var kind int
		if err := rows.Scan(&id, &author, &body, &at, &kind); err != nil {
			return nil, nil, err
		}
		if kind == 1 {
			pulled = append(pulled, timeline.UserID(id))
			continue
		}
		msgs = append(msgs, timeline.Message{ID: timeline.MessageID(id), Author: timeline.UserID(author.Int64), Body: body.String, CreatedAt: at.Time})
	}
	return msgs, pulled, rows.Err()
}

// pulledIDs returns the ids of the authors' messages below r's cursor and
// above floor, newest first, at most r.Fetch(): one statement, a backward
// range of the (author_id, id) index per author, each stopping at
// r.Fetch(). Every value is an integer the store produced, written in as
// a literal.
func (s *Store) pulledIDs(ctx context.Context, r timeline.Request, authors []timeline.UserID, floor timeline.MessageID) ([]timeline.MessageID, error) {
	fetch := strconv.AppendInt(nil, int64(r.Fetch()), 10)
	q := make([]byte, 0, 64+120*len(authors))
	for i, a := range authors {
		if i > 0 {
			q = append(q, " UNION ALL "...)
		}
		q = append(q, `(SELECT id FROM messages WHERE author_id = `...)
		q = strconv.AppendUint(q, uint64(a), 10)
		if r.Before > 0 {
			q = append(q, ` AND id < `...)
			q = strconv.AppendUint(q, uint64(r.Before), 10)
		}
		if floor > 0 {
			q = append(q, ` AND id > `...)
			q = strconv.AppendUint(q, uint64(floor), 10)
		}
		q = append(q, ` ORDER BY id DESC LIMIT `...)
		q = append(q, fetch...)
		q = append(q, ')')
	}
	q = append(q, ` ORDER BY id DESC LIMIT `...)
	q = append(q, fetch...)
	rows, err := s.DB().QueryContext(ctx, string(q))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []timeline.MessageID
	for rows.Next() {
		var id timeline.MessageID
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// sample adds one statement's size and time to a cost regression, unless
// the costs are fixed.
func (s *Store) sample(r *regression, x float64, d time.Duration) {
	if s.cfg.H > 0 {
		return
	}
	s.costMu.Lock()
	r.add(x, float64(d.Nanoseconds())/1e3)
	s.costMu.Unlock()
}

// regression is least squares of y over x on exponentially weighted
// samples: each new sample weighs 1 and the earlier ones 1-1/memory as
// much as before.
type regression struct {
	w, x, y, xx, xy float64
	n               int
}

const (
	costMemory     = 1000 // samples: the weights' time constant
	costMinSamples = 50   // before which the slope is not trusted
)

func (r *regression) add(x, y float64) {
	const keep = 1 - 1.0/costMemory
	r.w, r.x, r.y, r.xx, r.xy = r.w*keep+1, r.x*keep+x, r.y*keep+y, r.xx*keep+x*x, r.xy*keep+x*y
	r.n++
}

// slope returns the regression's slope, and false while it is unknown:
// too few samples, too little spread in x, or not positive.
func (r *regression) slope() (float64, bool) {
	if r.n < costMinSamples {
		return 0, false
	}
	det := r.w*r.xx - r.x*r.x
	if det <= 1e-9*r.w*r.xx {
		return 0, false
	}
	b := (r.w*r.xy - r.x*r.y) / det
	return b, b > 0
}

// Counters implements timeline.Counting: pages read and the rows they
// returned, edges pushed and pulled now, flips so far and the rows they
// wrote, and H and L in nanoseconds.
func (s *Store) Counters() map[string]int64 {
	h, l := s.Costs()
	c := map[string]int64{
		counter.Pages:         s.pages.Load(),
		counter.RowsRead:      s.rowsRead.Load(),
		counter.EdgeFlipsPush: s.toPush.Load(),
		counter.EdgeFlipsPull: s.toPull.Load(),
		counter.FlipRows:      s.flipRows.Load(),
		counter.CostH:         int64(h * 1e3),
		counter.CostL:         int64(l * 1e3),
		"flushes":             s.flushes.Load(),
		"flush_errors":        s.flushErrors.Load(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if pushed, pulled, err := s.Edges(ctx); err == nil {
		c[counter.EdgesPushed], c[counter.EdgesPulled] = pushed, pulled
	}
	return c
}

// Edges returns how many edges are pushed and pulled now.
func (s *Store) Edges(ctx context.Context) (pushed, pulled int64, err error) {
	err = s.DB().QueryRowContext(ctx,
		`SELECT (SELECT COUNT(*) FROM push_edges), (SELECT COUNT(*) FROM pull_edges)`).Scan(&pushed, &pulled)
	return pushed, pulled, err
}
