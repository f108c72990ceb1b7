package async

import (
	"context"
	"database/sql"
	"errors"
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
// One chunk is one transaction: claim the oldest free job, insert the
// message into the mailboxes of the next Chunk followers of its author
// above the job's cursor (done_through), in follower id order, with INSERT
// IGNORE, then move the cursor past them or, when none are left, delete
// the job. A worker killed before the commit leaves the job as it was; one
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

// Step applies one chunk of the oldest job nobody else is applying, in
// one transaction. It reports whether there was such a job.
func (w *Worker) Step(ctx context.Context) (bool, error) {
	chunk := w.Chunk
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	var (
		claimed, finished bool
		rows              int64
		posted            time.Time
	)
	err := mysqlx.InTx(ctx, w.DB, func(tx *sql.Tx) error {
		claimed, finished, rows = false, false, 0
		var message, author, done uint64
		err := tx.QueryRowContext(ctx,
			`SELECT message_id, author_id, done_through, posted_at FROM fanout_jobs
			 ORDER BY message_id LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&message, &author, &done, &posted)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		claimed = true
		// The follower ending this chunk, and whether one follows it.
		var bounds []uint64
		r, err := tx.QueryContext(ctx,
			`SELECT follower_id FROM follows WHERE followee_id = ? AND follower_id > ?
			 ORDER BY follower_id LIMIT ?, 2`, author, done, chunk-1)
		if err != nil {
			return err
		}
		for r.Next() {
			var id uint64
			if err := r.Scan(&id); err != nil {
				r.Close()
				return err
			}
			bounds = append(bounds, id)
		}
		r.Close()
		if err := r.Err(); err != nil {
			return err
		}
		// The INSERT ... SELECT reads the followers with shared locks, so
		// an unfollow of one of them waits for this commit and then
		// deletes what the chunk wrote.
		more := len(bounds) == 2
		last := ^uint64(0)
		if more {
			last = bounds[0]
		}
		res, err := tx.ExecContext(ctx,
			`INSERT IGNORE INTO mailbox (user_id, message_id)
			 SELECT follower_id, ? FROM follows
			 WHERE followee_id = ? AND follower_id > ? AND follower_id <= ?`,
			message, author, done, last)
		if err != nil {
			return err
		}
		if rows, err = res.RowsAffected(); err != nil {
			return err
		}
		if more {
			_, err = tx.ExecContext(ctx, `UPDATE fanout_jobs SET done_through = ? WHERE message_id = ?`, last, message)
		} else {
			_, err = tx.ExecContext(ctx, `DELETE FROM fanout_jobs WHERE message_id = ?`, message)
			finished = true
		}
		if err != nil {
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
		w.Stats.chunk(rows, finished, time.Since(posted))
	}
	return claimed, nil
}
