package async

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// VitessModelName is VitessStore's name in package registry.
const VitessModelName = ModelName + registry.VitessSuffix

// DefaultVitessChunk is Options.Chunk's default on Vitess: the followers
// one chunk reads from the author's shard. Its mailbox rows go in one
// statement per destination shard, each well under vtgate's 10,000-row
// limit, and a chunk's transaction on the author's shard stays far below
// a second.
const DefaultVitessChunk = 1000

// MaxVitessChunk bounds Options.Chunk on Vitess: a chunk's read of the
// followers returns at most this many rows, the most a tablet returns.
const MaxVitessChunk = 10000

// VitessStore is push-async on a Vitess keyspace sharded by user (model
// push-async@vitess): push@vitess's tables, reads, follows and unfollows
// (push.VitessStore), with the fan-out taken out of the post.
//
//   - A post is one transaction on its author's shard: the message and a
//     row of fanout_jobs, which the VSchema places by author_id. It calls
//     that shard and the message sequence, whatever the author's
//     following.
//   - Workers (VitessWorker) apply the jobs, a chunk of followers at a
//     time, and report each job's lag from post to last mailbox row.
//   - Delete removes the message and its job together on the author's
//     shard, then the mailbox rows written so far, as push@vitess does.
//
// The guarantees are push-async's: once the store settles (Settle) every
// mailbox holds exactly the messages of the authors its owner follows; a
// worker killed at any point loses nothing, since a job leaves the queue
// only in the transaction that writes its last chunk, and a chunk written
// again writes no row twice.
type VitessStore struct {
	*push.VitessStore
	*crew
	opts   Options
	shards []*sql.DB // a pool targeting each shard of the keyspace, for the workers
}

var (
	_ timeline.Store    = (*VitessStore)(nil)
	_ timeline.Settler  = (*VitessStore)(nil)
	_ timeline.Counting = (*VitessStore)(nil)
	_ timeline.Lagging  = (*VitessStore)(nil)
	_ timeline.DBHolder = (*VitessStore)(nil)
)

// OpenVitess opens push@vitess's keyspace (see push.OpenVitess; its
// schema holds the queue) and starts opts.Workers workers (VitessWorker)
// over all of its shards, which run until Close. A zero opts.Chunk is
// DefaultVitessChunk. Options its registry options do not take are a
// *registry.OptionError, and nothing is created.
func OpenVitess(ctx context.Context, cfg push.Config, opts Options) (*VitessStore, error) {
	if opts.Chunk == 0 {
		opts.Chunk = DefaultVitessChunk
	}
	if err := opts.check(VitessModelName, vitessOptions); err != nil {
		return nil, err
	}
	opts = opts.resolved()
	inner, err := push.OpenVitess(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &VitessStore{VitessStore: inner, crew: newCrew(opts.Workers), opts: opts}
	if opts.Workers > 0 {
		if s.shards, err = OpenShards(ctx, cfg, opts.Workers); err != nil {
			inner.Close()
			return nil, fmt.Errorf("open %s store: %w", VitessModelName, err)
		}
	}
	s.start(opts.Workers, func(i int) runner {
		return &VitessWorker{DB: inner.DB(), Shards: s.shards, Chunk: opts.Chunk, Stats: s.stats, Wake: s.wake, next: i}
	})
	return s, nil
}

// OpenShards opens a pool of at most conns connections on each shard of
// the keyspace cfg.Database (push.DefaultVitessDatabase if ""), in the
// order vtgate lists them: the Shards of a VitessWorker.
func OpenShards(ctx context.Context, cfg push.Config, conns int) ([]*sql.DB, error) {
	if cfg.Database == "" {
		cfg.Database = push.DefaultVitessDatabase
	}
	names, err := shardNames(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var pools []*sql.DB
	for _, name := range names {
		db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: cfg.DSN, Database: cfg.Database, Shard: name, MaxConns: conns, Vitess: true})
		if err != nil {
			closeAll(pools)
			return nil, err
		}
		pools = append(pools, db)
	}
	return pools, nil
}

// shardNames asks vtgate for the shards of cfg's keyspace.
func shardNames(ctx context.Context, cfg push.Config) ([]string, error) {
	db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: cfg.DSN, Database: cfg.Database, MaxConns: 1, Vitess: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SHOW VITESS_SHARDS`)
	if err != nil {
		return nil, fmt.Errorf("list shards: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var ks string
		if err := rows.Scan(&ks); err != nil {
			return nil, err
		}
		if name, ok := strings.CutPrefix(ks, cfg.Database+"/"); ok {
			names = append(names, name)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("vtgate lists no shard of keyspace %s", cfg.Database)
	}
	return names, nil
}

func closeAll(pools []*sql.DB) {
	for _, db := range pools {
		db.Close()
	}
}

// Post implements timeline.Store: the message and its fan-out job commit
// together, on the author's shard; the mailboxes are written later by a
// worker.
func (s *VitessStore) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	msg, err := s.Writes(VitessModelName).Post(ctx, author, body, nil, func(tx *sql.Tx, msg timeline.Message) error {
		return queue(ctx, tx, msg)
	})
	if err != nil {
		return timeline.Message{}, err
	}
	s.nudge()
	return msg, nil
}

// Delete implements timeline.Store: the message and its job, if one is
// left, on the author's shard, then the mailbox rows written so far
// (push.VitessStore.RemoveFanOut). Deleting the job waits for a worker
// that holds it to commit its chunk, whose mailbox rows are written by
// then, so they are deleted too, and no worker can claim the job after.
func (s *VitessStore) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	return s.Writes(VitessModelName).Delete(ctx, author, id, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM fanout_jobs WHERE author_id = ? AND message_id = ?`, author, id); err != nil {
			return err
		}
		return s.RemoveFanOut(ctx, tx, author, id)
	})
}

// Settle implements timeline.Settler: it waits until every fan-out job
// committed before the call is applied, or ctx ends (see Settle).
func (s *VitessStore) Settle(ctx context.Context) error {
	if err := Settle(ctx, s.DB()); err != nil {
		if s.opts.Workers == 0 {
			return fmt.Errorf("%s settle: %w; this store runs no fan-out workers (option %s -1)", VitessModelName, err, OptionWorkers)
		}
		return fmt.Errorf("%s settle: %w", VitessModelName, err)
	}
	return nil
}

// Counters implements timeline.Counting: the workers' counts
// (counter.Fanout*) and vtgate's tablet calls (push.VitessStore's).
func (s *VitessStore) Counters() map[string]int64 {
	c := s.stats.Counters()
	for k, v := range s.VitessStore.Counters() {
		c[k] = v
	}
	return c
}

// Stats returns the counts of the store's workers.
func (s *VitessStore) Stats() *Stats { return s.stats }

// Close stops the workers (a chunk in flight rolls back on the author's
// shard and is applied again by the next worker) and closes the store.
func (s *VitessStore) Close() error {
	s.stop()
	closeAll(s.shards)
	return s.VitessStore.Close()
}

// VitessWorker applies the fan-out jobs of a push-async@vitess keyspace,
// until its context ends. Any number of workers, in any number of
// processes, may serve one keyspace. A job lives on its author's shard,
// and the worker looks for jobs on each shard in turn, through a pool
// that targets that shard.
//
// One chunk is one transaction on the author's shard, plus one statement
// on each shard its followers live on:
//
//  1. lock the oldest free job (SELECT ... FOR UPDATE SKIP LOCKED, by
//     primary key, so that nothing but the job row is locked), and read
//     the message and the next Chunk followers above the job's cursor,
//     without locks, so that follows of the author never wait for it;
//  2. ask vtgate which shard each follower's mailbox is on (a query of
//     the hash vindex, which vtgate answers itself), and write each
//     shard's rows with one INSERT IGNORE ... SELECT from that shard's
//     follows, by the followers' ids: a single-shard statement, which
//     writes only the followers that still follow the author, reading
//     their follows rows with shared locks, so that an unfollow racing
//     it either removes what it wrote or is seen;
//  3. move the job's cursor past the chunk, or delete the job after its
//     last chunk, and commit.
//
// So no transaction spans two shards, and none grows with the audience: a
// chunk's transaction holds one job row for the time one chunk takes. A
// worker killed before step 3 commits leaves the job as it was, and the
// next worker writes the chunk again, which INSERT IGNORE makes harmless.
// A delete of the message waits for the job row, so it removes what the
// chunk wrote.
type VitessWorker struct {
	DB     *sql.DB   // a pool on the keyspace, routed by vtgate (push.VitessStore.DB)
	Shards []*sql.DB // a pool targeting each shard (OpenShards)
	// Chunk is the followers per chunk; 0 means DefaultVitessChunk.
	Chunk int
	// Stats receives the worker's counts and lags; nil for none.
	Stats *Stats
	// Wake, when it delivers, ends an idle wait early; nil waits the
	// whole Poll.
	Wake <-chan struct{}
	// Poll is the idle wait between looks at empty queues; 0 means
	// DefaultVitessPoll.
	Poll time.Duration
	// Between, if set, runs in each chunk after its mailbox rows are
	// written and before the job's transaction commits: a test stops a
	// worker there. nil for none.
	Between func()

	next int // the shard to look at first
}

// vitessCandidates is how many of the oldest jobs of a shard a worker
// reads before it tries to lock one: enough to pass those other workers
// hold.
const vitessCandidates = 8

// DefaultVitessPoll is VitessWorker.Poll's default. A look at empty
// queues is a call to every shard, and a post through the same store
// wakes a worker at once: the poll finds only the jobs of other
// processes' posts and of workers that died.
const DefaultVitessPoll = time.Second

// Run applies jobs until ctx ends, retrying a failing cluster with a
// growing pause, as Worker.Run does.
func (w *VitessWorker) Run(ctx context.Context) {
	poll := w.Poll
	if poll <= 0 {
		poll = DefaultVitessPoll
	}
	loop(ctx, w.Step, w.Stats, w.Wake, poll)
}

// Step applies one chunk of the oldest job nobody else is applying, on
// the first shard, in turn, that has one. It reports whether there was
// such a job.
func (w *VitessWorker) Step(ctx context.Context) (bool, error) {
	for range w.Shards {
		shard := w.Shards[w.next%len(w.Shards)]
		w.next++
		worked, err := w.stepShard(ctx, shard)
		if err != nil || worked {
			return worked, err
		}
	}
	return false, nil
}

// stepShard applies a chunk of the first job of shard that it can lock.
func (w *VitessWorker) stepShard(ctx context.Context, shard *sql.DB) (bool, error) {
	rows, err := shard.QueryContext(ctx, `SELECT message_id FROM fanout_jobs ORDER BY message_id LIMIT `+strconv.Itoa(vitessCandidates))
	if err != nil {
		return false, err
	}
	var ids []uint64
	for rows.Next() {
		var id uint64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return false, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	for _, id := range ids {
		worked, err := w.apply(ctx, shard, id)
		if err != nil || worked {
			return worked, err
		}
	}
	return false, nil
}

// apply applies a chunk of job id if it can lock it: see VitessWorker.
func (w *VitessWorker) apply(ctx context.Context, shard *sql.DB, id uint64) (bool, error) {
	chunk := w.Chunk
	if chunk <= 0 {
		chunk = DefaultVitessChunk
	}
	start := time.Now()
	tx, err := shard.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	j := job{message: id}
	err = tx.QueryRowContext(ctx,
		`SELECT author_id, done_through, posted_at FROM fanout_jobs WHERE message_id = ? FOR UPDATE SKIP LOCKED`, id).
		Scan(&j.author, &j.done, &j.posted)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // another worker's, or finished: the rollback ends any gap lock at once
	}
	if err != nil {
		return false, err
	}
	var msg timeline.Message
	err = tx.QueryRowContext(ctx, `SELECT body, created_at FROM messages WHERE id = ? AND author_id = ?`, id, j.author).
		Scan(&msg.Body, &msg.CreatedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows): // deleted by hand: nothing to fan out
		return true, w.finish(ctx, tx, start, j, 0, true)
	case err != nil:
		return false, err
	}
	msg.ID, msg.Author = timeline.MessageID(id), timeline.UserID(j.author)
	followers, err := readFollowers(ctx, tx, j, chunk)
	if err != nil {
		return false, err
	}
	written, err := w.write(ctx, msg, followers)
	if err != nil {
		return false, err
	}
	if w.Between != nil {
		w.Between()
	}
	if len(followers) == chunk {
		j.done = followers[len(followers)-1]
	}
	return true, w.finish(ctx, tx, start, j, written, len(followers) < chunk)
}

// readFollowers reads up to n followers of j's author above its cursor,
// in id order, without locks.
func readFollowers(ctx context.Context, tx *sql.Tx, j job, n int) ([]uint64, error) {
	rows, err := tx.QueryContext(ctx,
		`SELECT follower_id FROM followers WHERE followee_id = ? AND follower_id > ? ORDER BY follower_id LIMIT `+strconv.Itoa(n),
		j.author, j.done)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []uint64
	for rows.Next() {
		var u uint64
		if err := rows.Scan(&u); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// finish moves j's cursor, or deletes it when done, and commits the
// chunk's transaction, begun at start; then it counts the chunk.
func (w *VitessWorker) finish(ctx context.Context, tx *sql.Tx, start time.Time, j job, written int64, done bool) error {
	var err error
	if done {
		_, err = tx.ExecContext(ctx, `DELETE FROM fanout_jobs WHERE message_id = ?`, j.message)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE fanout_jobs SET done_through = ? WHERE message_id = ?`, j.done, j.message)
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil { // a worker stopped here commits nothing
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if w.Stats != nil {
		var finished []job
		if done {
			finished = []job{j}
		}
		w.Stats.chunk(written, finished)
		w.Stats.transaction(time.Since(start))
	}
	return nil
}

// write writes msg into the mailboxes of followers that still follow its
// author, with one statement per shard the followers live on, and returns
// the rows written.
func (w *VitessWorker) write(ctx context.Context, msg timeline.Message, followers []uint64) (int64, error) {
	groups, err := ShardsOf(ctx, w.DB, followers)
	if err != nil {
		return 0, err
	}
	var written int64
	for _, shard := range slices.Sorted(maps.Keys(groups)) {
		start := time.Now()
		q := mysqlx.AppendList([]byte(`INSERT IGNORE INTO mailbox (user_id, message_id, author_id, body, created_at)
			SELECT follower_id, `+strconv.FormatUint(uint64(msg.ID), 10)+`, followee_id, ?, ? FROM follows
			WHERE followee_id = ? AND follower_id IN (`), groups[shard])
		res, err := w.DB.ExecContext(ctx, string(append(q, ')')), msg.Body, msg.CreatedAt, msg.Author)
		if err != nil {
			return written, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return written, err
		}
		written += n
		if w.Stats != nil {
			w.Stats.transaction(time.Since(start))
		}
	}
	return written, nil
}

// ShardsOf groups users by the shard their rows live on in db's keyspace
// (sharded by the hash vindex, sql/vitess_vschema.json), as vtgate
// computes it: by querying the vindex, which vtgate answers without
// calling a tablet.
func ShardsOf(ctx context.Context, db *sql.DB, users []uint64) (map[string][]uint64, error) {
	out := map[string][]uint64{}
	if len(users) == 0 {
		return out, nil
	}
	q := mysqlx.AppendList([]byte(`SELECT id, shard FROM hash WHERE id IN (`), users)
	rows, err := db.QueryContext(ctx, string(append(q, ')')))
	if err != nil {
		return nil, fmt.Errorf("shards of users: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u uint64
		var shard string
		if err := rows.Scan(&u, &shard); err != nil {
			return nil, err
		}
		out[shard] = append(out[shard], u)
	}
	return out, rows.Err()
}
