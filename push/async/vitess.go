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
	"sync"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// VitessModelName is VitessStore's name in package registry.
const VitessModelName = ModelName + registry.VitessSuffix

// DefaultVitessChunk is Options.Chunk's default on Vitess: the followers
// one chunk reads from its author shard, over one job or many. Its
// mailbox rows go in one statement per destination shard, each well
// under a tablet's 10,000-row limit, and a chunk's transaction on the
// author shard stays far below a second.
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
//     time, over as many of a shard's jobs as a chunk covers, and report
//     each job's lag from post to last mailbox row.
//   - Delete removes the message and its job together on the author's
//     shard, then the mailbox rows written so far, as push@vitess does.
//
// The guarantees are push-async's: once the store settles (Settle) every
// mailbox holds exactly the messages of the authors its owner follows; a
// worker killed at any point loses nothing, since a job leaves the queue
// only in the transaction that commits after its last rows are written,
// and a chunk written again writes no row twice.
type VitessStore struct {
	*push.VitessStore
	*crew
	opts   Options
	shards []Shard // a pool targeting each shard of the keyspace, for the workers
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
	held := newHeldJobs()
	s.start(opts.Workers, func(i int) runner {
		return &VitessWorker{DB: inner.DB(), Shards: s.shards, Chunk: opts.Chunk, Stats: s.stats, Wake: s.wake, next: i, held: held}
	})
	return s, nil
}

// OpenShards opens a pool on each shard of the keyspace cfg.Database
// (push.DefaultVitessDatabase if ""), in the order vtgate lists them: the
// Shards of as many as workers VitessWorkers, each of which uses at most
// two connections of a shard at a time (its chunk's transaction and a
// statement writing mailbox rows).
func OpenShards(ctx context.Context, cfg push.Config, workers int) ([]Shard, error) {
	if cfg.Database == "" {
		cfg.Database = push.DefaultVitessDatabase
	}
	names, err := shardNames(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var pools []Shard
	for _, name := range names {
		db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: cfg.DSN, Database: cfg.Database, Shard: name, MaxConns: 2 * workers, Vitess: true})
		if err != nil {
			closeAll(pools)
			return nil, err
		}
		pools = append(pools, Shard{Name: name, DB: db})
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

func closeAll(pools []Shard) {
	for _, s := range pools {
		s.DB.Close()
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
// on each shard its followers live on. It applies about Chunk followers'
// rows, over as many of the shard's oldest jobs (up to 64) as that
// covers, as push-async's Worker does, so that the posts of ordinary
// authors share a transaction:
//
//  1. read the ids of the shard's oldest jobs, then lock those of them no
//     other worker holds (SELECT ... FOR UPDATE SKIP LOCKED, by primary
//     key, so that nothing but the job rows is locked);
//  2. read, without locks, the jobs' messages and how many followers each
//     has left above its cursor (counted up to the chunk's budget), and
//     take the oldest jobs that fit the chunk's budget of followers, and
//     if the budget ends inside a job, that job's next followers up to it
//     (a celebrity's post goes a chunk at a time); then read those
//     followers, without locks, so that follows of the authors never wait
//     for a chunk;
//  3. find the shards the followers' mailboxes are on (the hash vindex,
//     computed in the process once vtgate agrees with it: see route), and
//     write each shard's rows, of all the chunk's messages, with one
//     INSERT IGNORE ... SELECT from that shard's follows, sent to that
//     shard alone, every shard at once: it writes only the followers that
//     still follow the authors, reading their follows rows with shared
//     locks, so that an unfollow racing it either removes what it wrote or
//     is seen;
//  4. delete the jobs whose last followers were written, move the cursor
//     of a job the budget ended in, and commit.
//
// So no transaction spans two shards, and none grows with the audience or
// the backlog: a chunk's transaction holds at most 64 job rows for the
// time one chunk takes. A worker killed before step 4 commits leaves the
// jobs as they were, and the next worker writes the chunk again, which
// INSERT IGNORE makes harmless. A delete of a message waits for its job's
// row, so it removes what the chunk wrote.
//
// A chunk's time is its round trips one after the other, whatever its
// size, and the lag of a job one to three chunk times; so the shards are
// written at once, by statements that name no follower, on shards the
// worker computes itself. Written one after the other, each naming its
// followers, they had taken 49 to 57 percent of a chunk on 2 shards
// (evidence/vitess-async-batch-3). Workers of one store (OpenVitess) know
// which jobs each of them holds, and a look that finds only those ends
// without a transaction.
//
// A job whose id the first read returned but which another worker
// finished before the lock leaves a gap lock until the chunk commits,
// which holds off the jobs of posts whose ids fall in that gap (REPEATABLE
// READ, the shards' isolation): a post on that shard can wait for the
// chunk's commit.
type VitessWorker struct {
	DB     *sql.DB // a pool on the keyspace, routed by vtgate (push.VitessStore.DB)
	Shards []Shard // each shard of the keyspace (OpenShards)
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
	// written and before the jobs' transaction commits: a test stops a
	// worker there. nil for none.
	Between func()

	next   int       // the shard to look at first
	perJob float64   // followers per finished job so far, which sizes claims (claimSize)
	held   *heldJobs // the jobs the store's workers hold; nil: not shared
	// checked: route compared its own shards of users with vtgate's;
	// hashed: they agreed, and it computes them from then on.
	checked, hashed bool
}

// heldJobs are the jobs that the workers of one store hold, by shard, so
// that a worker passes over them without asking the shard to lock what it
// cannot: a look at a shard whose every job another worker of the store
// holds costs its read of the ids alone, not a transaction's begin, lock
// and rollback too. Workers of other processes are still passed over by
// the lock (SKIP LOCKED).
type heldJobs struct {
	mu   sync.Mutex
	jobs map[string]map[uint64]bool
}

func newHeldJobs() *heldJobs { return &heldJobs{jobs: map[string]map[uint64]bool{}} }

// free returns those of ids (a shard's) that no worker of the store holds.
// A nil h holds none.
func (h *heldJobs) free(shard string, ids []uint64) []uint64 {
	if h == nil {
		return ids
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	held := h.jobs[shard]
	return slices.DeleteFunc(ids, func(id uint64) bool { return held[id] })
}

// hold notes jobs of shard as held, until the returned release runs.
func (h *heldJobs) hold(shard string, jobs []job) (release func()) {
	if h == nil {
		return func() {}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	held := h.jobs[shard]
	if held == nil {
		held = map[uint64]bool{}
		h.jobs[shard] = held
	}
	for _, j := range jobs {
		held[j.message] = true
	}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, j := range jobs {
			delete(held, j.message)
		}
	}
}

// Shard is a pool that targets one shard of a keyspace.
type Shard struct {
	Name string // the shard's key range, as vtgate names it ("-80")
	DB   *sql.DB
}

// vitessCandidates is how many more of a shard's oldest job ids than it
// means to claim a worker reads before it locks them: enough to pass
// those that other workers hold.
const vitessCandidates = 3 * maxJobsPerTransaction

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

// Step applies one chunk of the oldest jobs nobody else is applying, on
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

// fan is what a chunk writes of one job: its message, to the followers
// of its author above from up to through (in follower id order), read in
// step 2.
type fan struct {
	msg           timeline.Message
	from, through uint64
	followers     []uint64
}

// stepShard applies a chunk of the oldest jobs of shard that it can lock:
// see VitessWorker.
func (w *VitessWorker) stepShard(ctx context.Context, shard Shard) (bool, error) {
	chunk := w.Chunk
	if chunk <= 0 {
		chunk = DefaultVitessChunk
	}
	claim := claimSize(int64(chunk), w.perJob)
	clock := w.Stats.timer()
	var ids []uint64
	err := scanIDs(shard.DB.QueryContext(ctx, `SELECT message_id FROM fanout_jobs ORDER BY message_id LIMIT `+strconv.Itoa(claim+vitessCandidates)))(&ids)
	if err != nil || len(ids) == 0 {
		if err == nil {
			w.Stats.look(false, false)
			clock.lap(stageClaim)
		}
		return false, err
	}
	if ids = w.held.free(shard.Name, ids); len(ids) == 0 {
		w.Stats.look(true, false)
		clock.lap(stageClaim)
		return false, nil // all held by the store's other workers
	}
	start := time.Now()
	tx, err := shard.DB.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	jobs, err := lockJobs(ctx, tx, ids, claim)
	if err != nil {
		return false, err
	}
	w.Stats.look(true, len(jobs) > 0)
	clock.lap(stageClaim)
	if len(jobs) == 0 {
		return false, nil // all held by other workers, or finished
	}
	defer w.held.hold(shard.Name, jobs)()
	fans, finished, part, err := readChunk(ctx, tx, jobs, int64(chunk))
	if err != nil {
		return false, err
	}
	clock.lap(stageRead)
	written, err := w.write(ctx, fans, &clock)
	if err != nil {
		return false, err
	}
	clock.lap(stageWrite)
	if w.Between != nil {
		w.Between()
	}
	if err := deleteJobs(ctx, tx, messages(finished)); err != nil {
		return false, err
	}
	if part != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE fanout_jobs SET done_through = ? WHERE message_id = ?`, part.done, part.message); err != nil {
			return false, err
		}
	}
	if err := ctx.Err(); err != nil { // a worker stopped here commits nothing
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	clock.lap(stageCommit)
	w.perJob = averagePerJob(w.perJob, written, len(finished))
	if w.Stats != nil {
		w.Stats.chunk(written, finished)
		w.Stats.transaction(time.Since(start))
	}
	return true, nil
}

// scanIDs returns a function that scans the single-column rows of a query
// (its result and error) into ids, and closes them.
func scanIDs(rows *sql.Rows, err error) func(ids *[]uint64) error {
	return func(ids *[]uint64) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id uint64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			*ids = append(*ids, id)
		}
		return rows.Err()
	}
}

// lockJobs locks, oldest first, up to n of the jobs of ids that no other
// transaction holds, by primary key: the index is forced so that the
// server looks up the ids, where a scan of the queue would lock every job
// it passes and the end of the table (see Worker).
func lockJobs(ctx context.Context, tx *sql.Tx, ids []uint64, n int) ([]job, error) {
	q := mysqlx.AppendList([]byte(`SELECT message_id, author_id, done_through, posted_at FROM fanout_jobs FORCE INDEX (PRIMARY) WHERE message_id IN (`), ids)
	r, err := tx.QueryContext(ctx, string(q)+`) ORDER BY message_id LIMIT `+strconv.Itoa(n)+` FOR UPDATE SKIP LOCKED`)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var jobs []job
	for r.Next() {
		var j job
		if err := r.Scan(&j.message, &j.author, &j.done, &j.posted); err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, r.Err()
}

// readChunk reads, without locks, what a chunk of budget followers writes
// of the locked jobs (step 2 of VitessWorker): the messages and followers
// of the oldest jobs that fit, and those of part, the job the budget ends
// in, up to it, with part's cursor moved past them. finished are the jobs
// the chunk completes: those that fit, those whose message is gone, and
// part if its followers ran out before the budget. Jobs after those stay
// queued, released by the commit.
func readChunk(ctx context.Context, tx *sql.Tx, jobs []job, budget int64) (fans []fan, finished []job, part *job, err error) {
	// Each job's message, and its followers left counted up to one past
	// the budget, so that a celebrity's chunk counts no more of them than
	// it writes.
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		parts[i] = fmt.Sprintf(`SELECT m.id, m.body, m.created_at,
			  (SELECT COUNT(*) FROM (SELECT 1 FROM followers WHERE followee_id = %d AND follower_id > %d ORDER BY follower_id LIMIT %d) c)
			 FROM messages m WHERE m.id = %d AND m.author_id = %d`, j.author, j.done, budget+1, j.message, j.author)
	}
	r, err := tx.QueryContext(ctx, strings.Join(parts, ` UNION ALL `))
	if err != nil {
		return nil, nil, nil, err
	}
	msgs := make(map[uint64]timeline.Message, len(jobs))
	count := make(map[uint64]int64, len(jobs))
	for r.Next() {
		var id uint64
		var m timeline.Message
		var n int64
		if err := r.Scan(&id, &m.Body, &m.CreatedAt, &n); err != nil {
			r.Close()
			return nil, nil, nil, err
		}
		msgs[id], count[id] = m, n
	}
	r.Close()
	if err := r.Err(); err != nil {
		return nil, nil, nil, err
	}
	var live []job
	for _, j := range jobs {
		if _, ok := msgs[j.message]; ok {
			live = append(live, j)
		} else {
			finished = append(finished, j) // deleted by hand: nothing to fan out
		}
	}
	whole, part, left := split(live, count, budget)
	byJob := map[uint64]*fan{}
	for _, j := range whole {
		fans = append(fans, fan{from: j.done})
	}
	for i, j := range whole {
		f := &fans[i]
		f.msg = msgs[j.message]
		f.msg.ID, f.msg.Author = timeline.MessageID(j.message), timeline.UserID(j.author)
		byJob[j.message] = f
	}
	finished = append(finished, whole...)
	if len(whole) > 0 {
		// This read sees the jobs as locked: InnoDB takes a transaction's
		// snapshot at its first read without locks, after the lock.
		q := mysqlx.AppendList([]byte(`SELECT j.message_id, f.follower_id FROM fanout_jobs j FORCE INDEX (PRIMARY)
			 JOIN followers f ON f.followee_id = j.author_id AND f.follower_id > j.done_through
			 WHERE j.message_id IN (`), messages(whole))
		r, err := tx.QueryContext(ctx, string(append(q, ')')))
		if err != nil {
			return nil, nil, nil, err
		}
		for r.Next() {
			var id, u uint64
			if err := r.Scan(&id, &u); err != nil {
				r.Close()
				return nil, nil, nil, err
			}
			f := byJob[id]
			f.followers = append(f.followers, u)
			f.through = max(f.through, u)
		}
		r.Close()
		if err := r.Err(); err != nil {
			return nil, nil, nil, err
		}
	}
	if part == nil {
		return fans, finished, nil, nil
	}
	followers, err := readFollowers(ctx, tx, *part, int(left))
	if err != nil {
		return nil, nil, nil, err
	}
	f := fan{msg: msgs[part.message], from: part.done, followers: followers}
	f.msg.ID, f.msg.Author = timeline.MessageID(part.message), timeline.UserID(part.author)
	if len(followers) > 0 {
		f.through = followers[len(followers)-1]
		fans = append(fans, f)
	}
	if int64(len(followers)) < left { // its followers went while the chunk was planned
		return fans, append(finished, *part), nil, nil
	}
	moved := *part
	moved.done = f.through
	return fans, finished, &moved, nil
}

// readFollowers reads up to n followers of j's author above its cursor,
// in id order, without locks.
func readFollowers(ctx context.Context, tx *sql.Tx, j job, n int) ([]uint64, error) {
	var out []uint64
	err := scanIDs(tx.QueryContext(ctx,
		`SELECT follower_id FROM followers WHERE followee_id = ? AND follower_id > ? ORDER BY follower_id LIMIT `+strconv.Itoa(n),
		j.author, j.done))(&out)
	return out, err
}

// write writes each of fans' messages into the mailboxes of its followers
// that still follow its author, with one statement on each shard the
// followers live on, all shards at once, and returns the rows written
// (step 3 of VitessWorker). A shard's statement names no follower: the
// shard's follows rows are those of its own users, so each message's
// range of follower ids there (above the job's cursor, up to the chunk's
// last follower) reads exactly the followers the chunk writes on that
// shard, and any who followed since, whose rows their follow's backfill
// writes too.
func (w *VitessWorker) write(ctx context.Context, fans []fan, clock *timer) (int64, error) {
	var users []uint64
	for _, f := range fans {
		users = append(users, f.followers...)
	}
	slices.Sort(users)
	users = slices.Compact(users)
	groups, err := w.route(ctx, users)
	if err != nil {
		return 0, err
	}
	clock.lap(stageRoute)
	shardOf := make(map[uint64]string, len(users))
	for name, us := range groups {
		for _, u := range us {
			shardOf[u] = name
		}
	}
	pools := make(map[string]*sql.DB, len(w.Shards))
	for _, s := range w.Shards {
		pools[s.Name] = s.DB
	}
	names := slices.Sorted(maps.Keys(groups))
	written := make([]int64, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		db := pools[name]
		if db == nil {
			return 0, fmt.Errorf("users fall on shard %s, which the worker has no pool for", name)
		}
		// The messages with followers on this shard, each with its range.
		var parts []string
		var args []any
		for _, f := range fans {
			if !slices.ContainsFunc(f.followers, func(u uint64) bool { return shardOf[u] == name }) {
				continue
			}
			parts = append(parts, `SELECT ? AS id, ? AS author_id, ? AS body, ? AS created_at, ? AS lo, ? AS hi`)
			args = append(args, uint64(f.msg.ID), uint64(f.msg.Author), f.msg.Body, f.msg.CreatedAt, f.from, f.through)
		}
		q := `INSERT IGNORE INTO mailbox (user_id, message_id, author_id, body, created_at)
			 SELECT f.follower_id, m.id, m.author_id, m.body, m.created_at
			 FROM (` + strings.Join(parts, ` UNION ALL `) + `) m
			 JOIN follows f ON f.followee_id = m.author_id AND f.follower_id > m.lo AND f.follower_id <= m.hi
			 LOCK IN SHARE MODE`
		wg.Go(func() {
			start := time.Now()
			res, err := db.ExecContext(ctx, q, args...)
			if err == nil {
				written[i], err = res.RowsAffected()
			}
			errs[i] = err
			if err == nil && w.Stats != nil {
				w.Stats.transaction(time.Since(start))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	var n int64
	for _, r := range written {
		n += r
	}
	return n, nil
}

// route groups users by their shards (step 3 of VitessWorker). The
// worker's first chunk asks vtgate (ShardsOf) and computes the hash
// vindex itself (HashShards) too; if both agree, as they do on a keyspace
// with this project's VSchema, it computes the shards itself from then
// on, which costs vtgate no statement, and otherwise it keeps asking
// vtgate.
func (w *VitessWorker) route(ctx context.Context, users []uint64) (map[string][]uint64, error) {
	names := make([]string, len(w.Shards))
	for i, s := range w.Shards {
		names[i] = s.Name
	}
	if w.hashed {
		return HashShards(names, users)
	}
	if w.checked {
		return ShardsOf(ctx, w.DB, users)
	}
	// The check asks for users 1 to 64 too, so that a vindex other than
	// hash cannot agree by chance on a chunk of few users.
	sample := slices.Clone(users)
	for u := range uint64(64) {
		sample = append(sample, u+1)
	}
	slices.Sort(sample)
	sample = slices.Compact(sample)
	theirs, err := ShardsOf(ctx, w.DB, sample)
	if err != nil {
		return nil, err
	}
	w.checked = true
	ours, err := HashShards(names, sample)
	w.hashed = err == nil && sameGroups(ours, theirs)
	return w.route(ctx, users)
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
