// Package async is the push model with asynchronous fan-out (model
// push-async), as Mastodon, Instagram and Twitter run it: a post commits its
// message and a durable fan-out job in one transaction and returns; workers
// write the followers' mailbox rows afterwards, a chunk of followers per
// transaction. Reads, follows and unfollows are the push model's.
//
// The same design on Vitess (model push-async@vitess, VitessStore) puts a
// post's job on its author's shard and writes each chunk with one
// statement per destination shard, so that no transaction spans two
// shards (see VitessWorker).
package async

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
)

// Defaults of Options.
const (
	// DefaultWorkers is the number of fan-out workers a store runs. On a
	// 2-core server (powerlaw graph, 2,000 users) four drained about 1,500
	// posts/s against two's 1,100, without slowing a closed loop of
	// posts; eight drained no more and took cores from the posts. At
	// paper scale (10,000 users), five runs each: eight drained 1,220 to
	// 1,420 posts/s against four's 1,450 to 1,660, and let posts run at
	// 0.17x to 0.20x of plain pull's rate against 0.22x to 0.26x.
	DefaultWorkers = 4
	// DefaultChunk is the followers written per transaction: a
	// celebrity's post is many transactions of this size (Instagram
	// batches its fan-out likewise), so no lock or undo log grows with
	// the audience. A transaction also claims, counts, deletes and
	// commits, so larger chunks spread that over more rows: on the
	// powerlaw graph at paper scale, four workers drained a backlog of
	// 25,210 posts (3.7 million rows) in 13.3 s on average with chunks
	// of 4,000 against 16.0 s with 1,000 (three runs each, alternated),
	// with 0.9 s of the fan-out process's CPU against 2.3 s.
	DefaultChunk = 4000
	// MaxChunk bounds Options.Chunk.
	MaxChunk = 100000
	// MaxWorkers bounds Options.Workers.
	MaxWorkers = 256
)

// Options configure a Store.
type Options struct {
	// Workers is the number of fan-out workers the store runs itself;
	// 0 means DefaultWorkers, and a negative number none (the jobs wait
	// for workers elsewhere, such as `pushpull fanout`).
	Workers int
	// Chunk is the number of followers one transaction writes; 0 means
	// DefaultChunk.
	Chunk int
}

// check reports the first field that its registry option of model (its
// options, in the order of the fields) does not take, as a
// *registry.OptionError (a negative Workers is -1, none, and a zero field
// its default).
func (o Options) check(model string, options []registry.Option) error {
	r := o.resolved()
	if o.Workers < 0 {
		r.Workers = -1
	}
	for i, v := range []int{r.Workers, r.Chunk} {
		if err := options[i].Check(model, v); err != nil {
			return err
		}
	}
	return nil
}

// resolved returns o with its defaults filled in and no negative count.
func (o Options) resolved() Options {
	switch {
	case o.Workers == 0:
		o.Workers = DefaultWorkers
	case o.Workers < 0:
		o.Workers = 0
	}
	if o.Chunk == 0 {
		o.Chunk = DefaultChunk
	}
	return o
}

// Store is the push-async model. It implements timeline.Store.
//
// Semantics. A post is acknowledged once its message and its fan-out job
// have committed; its followers' mailboxes receive it later, so a read
// right after a post may lack it. A job writes the message to the
// followers its author has when each chunk is applied, not when it was
// posted. Follow and Unfollow are the push model's and stay exact with
// jobs in flight: a follow backfills every message of the followee already
// committed (including those whose jobs are pending; the job's later
// INSERT IGNORE is then a no-op), and an unfollow removes the follow row
// and the followee's mailbox rows in one transaction, which a chunk that
// read that follow row holds off until it commits (the chunk reads
// followers with a locking read). So once the store settles (Settle), every
// mailbox holds exactly the messages of the authors its owner follows, as
// the push model's would.
//
// Durability. The job is a row in the same database as the message, so a
// worker killed mid-chunk loses only its uncommitted chunk, which the next
// worker to claim the job writes again; INSERT IGNORE into the mailbox's
// primary key (user_id, message_id) and the job's cursor make that
// harmless.
type Store struct {
	*push.Store
	*crew
	opts Options
}

var (
	_ timeline.Store    = (*Store)(nil)
	_ timeline.Settler  = (*Store)(nil)
	_ timeline.Counting = (*Store)(nil)
	_ timeline.Lagging  = (*Store)(nil)
	_ timeline.DBHolder = (*Store)(nil)
)

// Open opens the push model's database (see push.Open, whose schema holds
// the queue) and starts opts.Workers fan-out workers, which run until
// Close. Options its registry options do not take are a
// *registry.OptionError, and nothing is created.
func Open(ctx context.Context, cfg push.Config, opts Options) (*Store, error) {
	if err := opts.check(ModelName, options); err != nil {
		return nil, err
	}
	opts = opts.resolved()
	inner, err := push.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{Store: inner, crew: newCrew(opts.Workers), opts: opts}
	s.start(opts.Workers, func(int) runner {
		return &Worker{DB: inner.DB(), Chunk: opts.Chunk, Stats: s.stats, Wake: s.wake, Drowning: inner.DrowningReaders()}
	})
	return s, nil
}

// crew is the fan-out workers a store runs, and what they share: the
// nudge a post sends them, their stop, and their counts.
type crew struct {
	wake   chan struct{} // a post's nudge to an idle worker
	cancel context.CancelFunc
	done   sync.WaitGroup
	stats  *Stats
}

// runner is a worker of either model.
type runner interface{ Run(context.Context) }

func newCrew(workers int) *crew {
	return &crew{wake: make(chan struct{}, max(workers, 1)), cancel: func() {}, stats: NewStats()}
}

// start runs n workers, the i-th made by worker(i), until stop.
func (c *crew) start(n int, worker func(i int) runner) {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for i := range n {
		w := worker(i)
		c.done.Go(func() { w.Run(ctx) })
	}
}

// nudge wakes an idle worker, if one is not already woken.
func (c *crew) nudge() {
	select {
	case c.wake <- struct{}{}:
	default: // every worker is already nudged
	}
}

// stop stops the workers and waits for them (a chunk in flight rolls
// back and is applied again later).
func (c *crew) stop() {
	c.cancel()
	c.done.Wait()
}

// TakeLag implements timeline.Lagging: the fan-out lags the store's
// workers recorded since the previous call.
func (c *crew) TakeLag() *hdrhistogram.Histogram { return c.stats.TakeLag() }

// Post implements timeline.Store: the message and its fan-out job commit
// together; the mailboxes are written later by a worker.
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	msg, err := s.Writes(ModelName).Post(ctx, author, body, nil, func(tx *sql.Tx, msg timeline.Message) error {
		return queue(ctx, tx, msg)
	})
	if err != nil {
		return timeline.Message{}, err
	}
	s.nudge()
	return msg, nil
}

// queue adds msg's fan-out job in tx, beside the message (on Vitess, on
// the author's shard, where the VSchema places the job).
func queue(ctx context.Context, tx *sql.Tx, msg timeline.Message) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO fanout_jobs (message_id, author_id, posted_at) VALUES (?, ?, ?)`,
		msg.ID, msg.Author, msg.CreatedAt)
	return err
}

// Delete implements timeline.Store: the message, its fan-out job if one
// is left, and the mailbox rows written so far go together. Deleting the
// job waits for a worker that holds it to commit its chunk, so the rows
// that chunk wrote are deleted too, and no worker can claim the job
// after.
func (s *Store) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	return s.Writes(ModelName).Delete(ctx, author, id, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM fanout_jobs WHERE message_id = ?`, id); err != nil {
			return err
		}
		_, err := push.RemoveFanOut(ctx, tx, id, author)
		return err
	})
}

// Settle implements timeline.Settler: it waits until every fan-out job
// committed before the call is applied, by whichever worker (of this
// store, another store, or `pushpull fanout`), or ctx ends. With no worker
// running anywhere it waits for ctx; if the store runs none itself
// (Options.Workers -1), the error says so.
func (s *Store) Settle(ctx context.Context) error {
	err := Settle(ctx, s.DB())
	switch {
	case err == nil:
		return nil
	case s.opts.Workers == 0 && ctx.Err() != nil:
		return fmt.Errorf("push-async settle: %w; this store runs no fan-out workers (option %s -1), so the jobs wait for another store's or for `pushpull fanout` on this database", err, OptionWorkers)
	}
	return fmt.Errorf("push-async settle: %w", err)
}

// Settle waits until no fan-out job committed in db (push-async's
// database, or through vtgate push-async@vitess's keyspace) before the
// call is left, or ctx ends: it notes the newest job now, then polls
// (backing off from 1 ms to 50 ms) until every job up to it is gone.
func Settle(ctx context.Context, db *sql.DB) error {
	var newest int64
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(message_id), 0) FROM fanout_jobs`).Scan(&newest); err != nil {
		return err
	}
	pause := time.Millisecond
	for {
		var one int64
		err := db.QueryRowContext(ctx, `SELECT message_id FROM fanout_jobs WHERE message_id <= ? LIMIT 1`, newest).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("jobs up to message %d still pending: %w", newest, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Counters implements timeline.Counting with the workers' counts
// (counter.Fanout*).
func (s *Store) Counters() map[string]int64 { return s.stats.Counters() }

// Close stops the workers (a chunk in flight rolls back and is applied
// again by the next worker) and closes the store.
func (s *Store) Close() error {
	s.stop()
	return s.Store.Close()
}

// Stats are what workers did: counts since they started and the lag
// histogram since it was last taken. Workers of one store share one.
type Stats struct {
	mu                         sync.Mutex
	jobs, chunks, rows, errors int64
	lag                        *hdrhistogram.Histogram
	longest                    time.Duration // the longest transaction timed
	// What VitessWorkers' steps did and where their time went.
	looks, emptyLooks, heldLooks int64
	spent                        [stages]time.Duration
}

// stage is a part of a VitessWorker's step, timed in Stats.
type stage int

const (
	stageClaim  stage = iota // read the oldest job ids, lock the jobs
	stageRead                // read the messages and the followers
	stageRoute               // find the followers' shards
	stageWrite               // write the mailbox rows
	stageCommit              // delete or move the jobs, commit
	stages
)

// stageCounters are the counters of the stages' times.
var stageCounters = [stages]string{
	counter.FanoutClaimMicros, counter.FanoutReadMicros, counter.FanoutRouteMicros,
	counter.FanoutWriteMicros, counter.FanoutCommitMicros,
}

// look counts a read of a shard's oldest job ids that found ids (or
// none), of which the worker locked some (or none). Nil Stats count
// nothing.
func (st *Stats) look(found, locked bool) {
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.looks++
	switch {
	case !found:
		st.emptyLooks++
	case !locked:
		st.heldLooks++
	}
}

// timer times the stages of one step into st (nil: none), each from the
// end of the one before.
type timer struct {
	st   *Stats
	last time.Time
}

func (st *Stats) timer() timer { return timer{st: st, last: time.Now()} }

// lap adds the time since the last lap (or the start) to stage s.
func (t *timer) lap(s stage) {
	if t.st == nil {
		return
	}
	now := time.Now()
	t.st.mu.Lock()
	t.st.spent[s] += now.Sub(t.last)
	t.st.mu.Unlock()
	t.last = now
}

// NewStats returns empty Stats.
func NewStats() *Stats { return &Stats{lag: newLagHistogram()} }

// newLagHistogram holds lags of 1 µs to an hour, in microseconds, to 3
// significant digits.
func newLagHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
}

// chunk counts a committed chunk that wrote rows and finished the jobs
// finished, whose lags end now.
func (st *Stats) chunk(rows int64, finished []job) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.chunks++
	st.rows += rows
	for _, j := range finished {
		st.jobs++
		lag := time.Since(j.posted)
		st.lag.RecordValue(min(max(lag.Microseconds(), 1), st.lag.HighestTrackableValue()))
	}
}

// transaction notes a worker's transaction (or autocommitted statement)
// that took d from its first statement to its commit.
func (st *Stats) transaction(d time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.longest = max(st.longest, d)
}

// Longest returns the longest transaction the workers timed (those of
// push-async@vitess time each of theirs; push-async's, none), from its
// first statement to its commit.
func (st *Stats) Longest() time.Duration {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.longest
}

func (st *Stats) failed() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.errors++
}

// Counters returns the counts by counter.Fanout* keys.
func (st *Stats) Counters() map[string]int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	c := map[string]int64{
		counter.FanoutJobs:   st.jobs,
		counter.FanoutChunks: st.chunks,
		counter.FanoutRows:   st.rows,
		counter.FanoutErrors: st.errors,
	}
	if st.looks > 0 { // VitessWorkers' steps
		c[counter.FanoutLooks], c[counter.FanoutEmptyLooks], c[counter.FanoutHeldLooks] = st.looks, st.emptyLooks, st.heldLooks
		for i, name := range stageCounters {
			c[name] = st.spent[i].Microseconds()
		}
	}
	return c
}

// TakeLag returns the lags recorded since the previous call and starts a
// new histogram.
func (st *Stats) TakeLag() *hdrhistogram.Histogram {
	st.mu.Lock()
	defer st.mu.Unlock()
	h := st.lag
	st.lag = newLagHistogram()
	return h
}

// Pending returns the number of fan-out jobs in db's queue not yet
// finished.
func Pending(ctx context.Context, db *sql.DB) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM fanout_jobs`).Scan(&n)
	return n, err
}
