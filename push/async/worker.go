package async

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
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
// One chunk is one transaction: claim the oldest free jobs, insert each
// one's message into the mailboxes of the next followers of its author
// above the job's cursor (done_through), in follower id order, with INSERT
// IGNORE, then move the cursor past them or, when none are left, delete
// the job; at most Chunk followers in all. A worker killed before the commit leaves the job as it was; one
// killed after leaves it a chunk further. Either way nothing is lost, and
// a chunk written again writes no row twice.
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

	// beforeCommit, if set, runs inside each chunk's transaction after its
	// writes and before its commit: tests stop a worker there.
	beforeCommit func()
}

// Run applies jobs until ctx ends. A failing database (down, restarting)
// is retried with a pause growing from 10 ms to a second, and counted in
// Stats' errors; Run itself never fails.
func (w *Worker) Run(ctx context.Context) {
	poll := w.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	var pause time.Duration
	for ctx.Err() == nil {
		worked, err := w.Step(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			if w.Stats != nil {
				w.Stats.failed()
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
		case <-w.Wake:
		case <-time.After(pause):
		}
	}
}

// maxJobsPerTransaction bounds the jobs one transaction claims: the
// oldest free ones, applied in order while the chunk's budget of
// followers lasts, so that the posts of ordinary authors (tens of
// followers each) share a commit.
const maxJobsPerTransaction = 64

// job is a claimed row of fanout_jobs.
type job struct {
	message, author, done uint64
	posted                time.Time
}

// Step applies, in one transaction, one chunk of the oldest jobs nobody
// else is applying: at most Chunk followers' rows, over as many jobs (up
// to 64) as that covers. It reports whether there was such a job.
func (w *Worker) Step(ctx context.Context) (bool, error) {
	chunk := w.Chunk
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	var (
		claimed  bool
		rows     int64
		finished []time.Time // when the jobs finished were posted
		ended    []uint64    // and their messages
	)
	// READ COMMITTED: the claim locks the jobs it returns and no gap, so
	// posts queue their jobs while a chunk runs.
	err := mysqlx.InTxOptions(ctx, w.DB, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, func(tx *sql.Tx) error {
		claimed, rows, finished, ended = false, 0, finished[:0], ended[:0]
		jobs, err := claim(ctx, tx, min(chunk, maxJobsPerTransaction))
		if err != nil || len(jobs) == 0 {
			return err
		}
		claimed = true
		budget := int64(chunk)
		for _, j := range jobs {
			if budget <= 0 {
				break // the rest stay queued, released by the commit
			}
			n, done, err := apply(ctx, tx, j, budget)
			if err != nil {
				return err
			}
			rows += n
			if done {
				finished = append(finished, j.posted)
				ended = append(ended, j.message)
				budget -= max(n, 1)
			} else {
				budget = 0
			}
		}
		if err := deleteJobs(ctx, tx, ended); err != nil {
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
func apply(ctx context.Context, tx *sql.Tx, j job, budget int64) (rows int64, done bool, err error) {
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
func deleteJobs(ctx context.Context, tx *sql.Tx, messages []uint64) error {
	if len(messages) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`DELETE FROM fanout_jobs WHERE message_id IN (`)
	args := make([]any, len(messages))
	for i, m := range messages {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteByte('?')
		args[i] = m
	}
	q.WriteByte(')')
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}
