package async

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/push"
)

// DefaultPoll is how often an idle Worker looks for jobs that no nudge
// announced (posted through another process, or left by a worker that
// died).
const DefaultPoll = 100 * time.Millisecond

// Worker applies fan-out jobs from the queue of one push database, a chunk
// per transaction, until its context ends. Any number of workers, in any
// number of processes, may serve one queue: a job is claimed with
// SELECT ... FOR UPDATE SKIP LOCKED, so each chunk is applied by one worker
// at a time, and the oldest job not being worked on goes first.
//
// One chunk is one transaction: claim the oldest free jobs, count the
// followers each has left above its cursor (done_through), as far as
// the budget goes (see plan), and write, for
// the first jobs that fit a budget of Chunk followers together, their
// messages to all of those followers in one INSERT IGNORE ... SELECT that
// joins the jobs to the follows index inside the server; then, if the
// budget ends inside a job, write that job's message to the followers
// that fit, in follower id order, and move its cursor past them; then
// delete the finished jobs. A worker killed before the commit leaves the
// jobs as they were; one killed after leaves them a chunk further. Either
// way nothing is lost, and a chunk written again writes no row twice.
//
// Past the claim, every statement finds its jobs by the queue's primary
// key, never by a scan (an index hint makes sure, or a LIMIT where the
// server takes no hint). The queue empties and fills many times a
// second, so the server's statistics often describe an empty table, for
// which a scan looks cheaper; and a scan's locking read waits on every job
// that another worker has claimed, one after the other. At paper scale
// with eight workers, one chunk of 215 rows waited 15 s that way, until
// the backlog was gone.
type Worker struct {
	DB *sql.DB // a pool on the push database (push.Store.DB)
	// Chunk is the followers per transaction; 0 means DefaultChunk.
	Chunk int
	// Stats receives the worker's counts and lags; nil for none.
	Stats *Stats
	// Wake, when it delivers, ends an idle wait early (a post was just
	// queued); nil waits the whole Poll.
	Wake <-chan struct{}
	// Poll is the idle wait between looks at an empty queue; 0 means
	// DefaultPoll.
	Poll time.Duration
	// Drowning is what the fan-out writes to drowning readers: the
	// store's copy of them (push.Store.DrowningReaders); nil writes to
	// everyone.
	Drowning *push.DrowningReaders

	// beforeCommit, if set, runs inside each chunk's transaction after its
	// writes and before its commit: tests stop a worker there.
	beforeCommit func()
	// perJob is a running average of the followers of the jobs this
	// worker finished (0 before the first), which sizes its claims.
	perJob float64
}

// Run applies jobs until ctx ends. A failing database (down, restarting)
// is retried with a pause growing from 10 ms to a second, and counted in
// Stats' errors; Run itself never fails.
func (w *Worker) Run(ctx context.Context) { loop(ctx, w.Step, w.Stats, w.Wake, w.Poll) }

// loop runs step, which applies a chunk and reports whether there was
// one, until ctx ends: again at once after a chunk, after a pause growing
// from 10 ms to a second after a failure (counted in stats, if not nil),
// and after poll (0: DefaultPoll), or a message on wake, when there was
// nothing to do.
func loop(ctx context.Context, step func(context.Context) (bool, error), stats *Stats, wake <-chan struct{}, poll time.Duration) {
	if poll <= 0 {
		poll = DefaultPoll
	}
	var pause time.Duration
	for ctx.Err() == nil {
		worked, err := step(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			if stats != nil {
				stats.failed()
			}
			pause = min(max(2*pause, 10*time.Millisecond), time.Second)
		case worked:
			pause = 0
			continue
		default:
			pause = poll
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-time.After(pause):
		}
	}
}

// maxJobsPerTransaction bounds the jobs one transaction claims: the
// oldest free ones, applied in order while the chunk's budget of
// followers lasts, so that the posts of ordinary authors (tens of
// followers each) share a commit.
const maxJobsPerTransaction = 64

// claimSize is how many jobs to claim for a chunk of budget followers:
// twice what fit by the average so far (each job counted as at least one
// follower), and one more, at most maxJobsPerTransaction, and that many
// before the first average. The jobs beyond those that fit are locked
// and read for nothing, and plan counts a round of them at most: when
// every claimed job was counted, claiming 64 jobs where about ten fit
// drained a fifth fewer posts per second on the powerlaw graph.
func claimSize(budget int64, perJob float64) int {
	most := min(budget, maxJobsPerTransaction)
	if perJob <= 0 {
		return int(most)
	}
	n := int64(math.Ceil(2*float64(budget)/max(perJob, 1))) + 1
	return int(min(n, most))
}

// averagePerJob is the running average of followers per job, avg, moved
// by a chunk that wrote rows and finished jobs: the mean of the first
// chunk, then an eighth of the way to each later one's (near enough: a
// partial job's rows count too). No job finished leaves it as it was.
func averagePerJob(avg float64, rows int64, jobs int) float64 {
	if jobs == 0 {
		return avg
	}
	per := float64(rows) / float64(jobs)
	if avg == 0 {
		return per
	}
	return avg + (per-avg)/8
}

// job is a claimed row of fanout_jobs.
type job struct {
	message, author, done uint64
	posted                time.Time
}

// Step applies, in one transaction, one chunk of the oldest jobs nobody
// else is applying: about Chunk followers' rows, over as many jobs (up to
// 64) as that covers. It reports whether there was such a job.
func (w *Worker) Step(ctx context.Context) (bool, error) {
	chunk := w.Chunk
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	var (
		claimed  bool
		rows     int64
		finished []job // deleted by the chunk
	)
	// READ COMMITTED: the claim locks the jobs it returns and no gap, so
	// posts queue their jobs while a chunk runs.
	err := mysqlx.InTxOptions(ctx, w.DB, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, func(tx *sql.Tx) error {
		claimed, rows, finished = false, 0, nil
		jobs, err := claim(ctx, tx, claimSize(int64(chunk), w.perJob))
		if err != nil || len(jobs) == 0 {
			return err
		}
		claimed = true
		whole, part, budget, err := plan(ctx, tx, jobs, int64(chunk), w.perJob)
		if err != nil {
			return err
		}
		n, err := applyWhole(ctx, tx, whole, w.Drowning)
		if err != nil {
			return err
		}
		rows += n
		finished = whole
		if part != nil {
			n, done, err := apply(ctx, tx, *part, budget, w.Drowning)
			if err != nil {
				return err
			}
			rows += n
			if done { // its followers went while the chunk was planned
				finished = append(finished, *part)
			}
		}
		if err := deleteJobs(ctx, tx, messages(finished)); err != nil {
			return err
		}
		if w.beforeCommit != nil {
			w.beforeCommit()
		}
		return ctx.Err() // a worker stopped here commits nothing
	})
	if err != nil {
		return false, err
	}
	w.perJob = averagePerJob(w.perJob, rows, len(finished))
	if claimed && w.Stats != nil {
		w.Stats.chunk(rows, finished)
	}
	return claimed, nil
}

// claim locks up to n of the oldest jobs no other transaction holds.
func claim(ctx context.Context, tx *sql.Tx, n int) ([]job, error) {
	r, err := tx.QueryContext(ctx,
		`SELECT message_id, author_id, done_through, posted_at FROM fanout_jobs
		 ORDER BY message_id LIMIT ? FOR UPDATE SKIP LOCKED`, n)
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

// plan splits the claimed jobs, oldest first, by the followers each has
// left above its cursor (read without locks, so only an estimate): whole
// are the first jobs that fit the budget of followers together, each
// counted as at least one; part, if the budget runs out inside a job, is
// that job, of which the chunk writes the budget left (left). Jobs after
// those stay queued, released by the commit.
//
// The jobs are counted in at most maxCountRounds statements, each of as
// many of the next jobs as the budget left would fit by their average
// (perJob, the worker's, before the chunk has counted any; then the
// chunk's own), the last of all the claimed jobs left. A claim takes more
// jobs than fit, so that a chunk of small jobs fills its budget; counting
// them all at once read the followers of the jobs it left queued too,
// again at each claim while a backlog lasted (TestBacklogRowsMatchWork:
// 13,359 rows read where the jobs applied needed 8,160).
//
// Each job's followers are counted only up to the budget left + 1, which
// tells whether it fits: a celebrity's job, counted whole at every chunk,
// would read its followers left again at each of its f/budget chunks,
// f²/2budget rows in all (12.5 billion for an author of ten million
// followers and the default chunk); bounded, each chunk counts at most
// budget+1 of them (TestCelebrityFanOutRowsMatchWork). A count is a
// bounded index read per job, from the authors and cursors the claim
// locked.
func plan(ctx context.Context, tx *sql.Tx, jobs []job, budget int64, perJob float64) (whole []job, part *job, left int64, err error) {
	left = budget
	for i, round := 0, 1; i < len(jobs) && left > 0; round++ {
		n := len(jobs) - i // the last round counts every job left
		if round < maxCountRounds {
			avg := perJob
			if i > 0 { // the i jobs taken so far, whole, spent budget-left
				avg = float64(budget-left) / float64(i)
			}
			n = 1
			if avg > 0 {
				n = min(len(jobs)-i, int(math.Ceil(float64(left)/max(avg, 1))))
			}
		}
		count, err := countLeft(ctx, tx, jobs[i:i+n], left+1)
		if err != nil {
			return nil, nil, 0, err
		}
		w, p, rest := split(jobs[i:i+n], count, left)
		whole = append(whole, w...)
		if p != nil {
			return whole, p, rest, nil
		}
		i, left = i+n, rest
	}
	return whole, nil, left, nil
}

// split takes jobs, oldest first, while their followers left (count, by
// message; each job counted as at least one) fit budget: whole are those
// that fit; part, if the budget runs out inside a job, is that job; left
// is the budget the whole jobs leave, which a chunk writes of part.
func split(jobs []job, count map[uint64]int64, budget int64) (whole []job, part *job, left int64) {
	for i, j := range jobs {
		n := max(count[j.message], 1)
		if n > budget {
			return whole, &jobs[i], budget
		}
		whole = append(whole, j)
		if budget -= n; budget == 0 {
			break
		}
	}
	return whole, nil, budget
}

// maxCountRounds bounds the statements that count a chunk's jobs (plan).
const maxCountRounds = 3

// countLeft counts, in one statement, the followers each of jobs has
// above its cursor, up to most; it returns them by message.
func countLeft(ctx context.Context, tx *sql.Tx, jobs []job, most int64) (map[uint64]int64, error) {
	var q strings.Builder
	args := make([]any, 0, 4*len(jobs))
	for i, j := range jobs {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		q.WriteString(`SELECT ?, COUNT(*) FROM (SELECT 1 FROM follows WHERE followee_id = ? AND follower_id > ? LIMIT ?) c`)
		args = append(args, j.message, j.author, j.done, most)
	}
	r, err := tx.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	count := make(map[uint64]int64, len(jobs))
	for r.Next() {
		var m uint64
		var n int64
		if err := r.Scan(&m, &n); err != nil {
			return nil, err
		}
		count[m] = n
	}
	return count, r.Err()
}

// applyWhole writes the message of each of jobs to every follower its
// author has above the job's cursor, all in one INSERT IGNORE ... SELECT
// inside the server, and returns the mailbox rows written. The followers
// are read with shared locks, as in apply, and so are the jobs, which the
// chunk holds already: by the primary key, forced (see Worker).
func applyWhole(ctx context.Context, tx *sql.Tx, jobs []job, drowning *push.DrowningReaders) (int64, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	filter, err := drowning.Filter(ctx, "f.follower_id", "j.message_id")
	if err != nil {
		return 0, err
	}
	q, args := inList(`INSERT IGNORE INTO mailbox (user_id, message_id)
		 SELECT STRAIGHT_JOIN f.follower_id, j.message_id FROM fanout_jobs j FORCE INDEX (PRIMARY)
		 JOIN follows f ON f.followee_id = j.author_id AND f.follower_id > j.done_through
		 WHERE j.message_id IN `, messages(jobs))
	res, err := tx.ExecContext(ctx, q+filter+` LOCK IN SHARE MODE`, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// inList returns prefix followed by a parenthesized list of placeholders,
// one per id, and the ids as its arguments.
func inList(prefix string, ids []uint64) (string, []any) {
	var q strings.Builder
	q.WriteString(prefix)
	q.WriteByte('(')
	args := make([]any, len(ids))
	for i, id := range ids {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteByte('?')
		args[i] = id
	}
	q.WriteByte(')')
	return q.String(), args
}

// messages returns the message ids of jobs.
func messages(jobs []job) []uint64 {
	ids := make([]uint64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.message
	}
	return ids
}

// apply writes j's message to at most budget of its author's followers
// above its cursor, then moves the cursor past them or, when none are
// left, reports the job done (the caller deletes it). It returns the
// mailbox rows written.
//
// The rows go from the follows index to the mailbox inside the server,
// with one INSERT IGNORE ... SELECT, as push's own fan-out does: no
// follower list crosses the network and no statement grows with the
// chunk. A first index-only read finds where the chunk ends: the
// follower budget places past the cursor, if there is one.
//
// The followers are read with shared locks, so an unfollow of one of them
// waits for the commit and then deletes what the chunk wrote; a follow
// committed meanwhile is not waited for, as its backfill writes the
// message (committed before its job could be claimed).
func apply(ctx context.Context, tx *sql.Tx, j job, budget int64, drowning *push.DrowningReaders) (rows int64, done bool, err error) {
	var end uint64 // the first follower past the chunk
	err = tx.QueryRowContext(ctx,
		`SELECT follower_id FROM follows WHERE followee_id = ? AND follower_id > ?
		 ORDER BY follower_id LIMIT 1 OFFSET ?`, j.author, j.done, budget).Scan(&end)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		done = true
	case err != nil:
		return 0, false, err
	}
	q := `INSERT IGNORE INTO mailbox (user_id, message_id)
		 SELECT follower_id, ? FROM follows WHERE followee_id = ? AND follower_id > ?`
	args := []any{j.message, j.author, j.done}
	if !done {
		q += ` AND follower_id < ?`
		args = append(args, end)
	}
	filter, err := drowning.Filter(ctx, "follower_id", strconv.FormatUint(j.message, 10))
	if err != nil {
		return 0, false, err
	}
	q += filter
	res, err := tx.ExecContext(ctx, q+` LOCK IN SHARE MODE`, args...)
	if err != nil {
		return 0, false, err
	}
	if rows, err = res.RowsAffected(); err != nil || done {
		return rows, done, err
	}
	// Follower ids are whole numbers: the next chunk starts at end.
	_, err = tx.ExecContext(ctx, `UPDATE fanout_jobs SET done_through = ? WHERE message_id = ?`, end-1, j.message)
	return rows, false, err
}

// deleteJobs deletes the finished jobs of messages, in one statement.
// Its LIMIT, which no more rows could match, stands for the index hint
// that a DELETE does not take (see Worker).
func deleteJobs(ctx context.Context, tx *sql.Tx, messages []uint64) error {
	if len(messages) == 0 {
		return nil
	}
	q, args := inList(`DELETE FROM fanout_jobs WHERE message_id IN `, messages)
	_, err := tx.ExecContext(ctx, q+` LIMIT `+strconv.Itoa(len(messages)), args...)
	return err
}
