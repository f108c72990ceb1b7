package load

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/pushpull/pushpull/results"
)

// redoPerRow is about how many bytes of redo log loading one row writes on
// the ordinary path, with room to spare: page splits and the undo log's
// pages are logged too.
const redoPerRow = 100

// maxLoadRedo caps the redo log a load asks for.
const maxLoadRedo = 32 << 30

// tuneServer readies a throw-away server for a bulk load and returns what
// ends it: a flush of the pages the load dirtied, and the server's
// settings put back.
//
// It makes the redo log large enough to hold what the load writes
// (innodb_log_file_size, which MariaDB resizes online since 10.9; about 70
// bytes a row on the ordinary path, half that on the bulk path): with the
// sandbox's 2 GB log a paper-scale load fills it halfway through, and from
// then on every statement waits for dirty pages to be flushed so that the
// log can move on, flushing pages that the next rows dirty again. With
// room in the log the pages stay in the buffer pool until the load is
// done. A server that cannot resize its log online loads as it is.
//
// Either way the load ends with every page it dirtied written (see
// flushDirty), at the pace of a local disk, not the background's 200
// pages a second: part of the load's time, so that the phases measured
// after it start on a quiet server. Left to the background, a load that
// fits in the log (3,000 users of the paper's graph do) is written
// during the measured phases, and a design pays for it by chance: a
// compressed mailbox compresses every page it writes.
//
// Nothing else needs changing for a load: the sandbox has no binary log,
// the adaptive hash index is off by default since MariaDB 10.5, the buffer
// pool (6 GB) holds the paper's push database, and the load's own sessions
// turn unique and foreign-key checks off (see loadJobRun). The doublewrite
// buffer would be worth turning off, but only a restart can.
//
// rows is how many rows the load inserts.
func tuneServer(ctx context.Context, db *sql.DB, rows int64) (restore func(context.Context) (*results.LoadFlush, error), err error) {
	var old, ioCap, ioCapMax int64
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_log_file_size, @@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max").Scan(&old, &ioCap, &ioCapMax); err != nil {
		return nil, fmt.Errorf("load: read the redo log size and I/O capacity: %w", err)
	}
	want := min(rows*redoPerRow, maxLoadRedo)
	want = (want + 1<<28 - 1) &^ (1<<28 - 1) // in steps of 256 MiB
	resized := false
	if want > old {
		_, err := db.ExecContext(ctx, fmt.Sprintf("SET GLOBAL innodb_log_file_size = %d", want))
		resized = err == nil
	}
	return func(ctx context.Context) (*results.LoadFlush, error) {
		// Pages are written at the disk's speed, not at the sandbox's
		// innodb_io_capacity (200 pages a second, 2,000 when hurried),
		// at which two gigabytes take a minute.
		set := []string{
			fmt.Sprintf("innodb_io_capacity_max = %d", max(ioCapMax, loadIOCapacity)),
			fmt.Sprintf("innodb_io_capacity = %d", max(ioCap, loadIOCapacity)),
		}
		if resized {
			// Shrinking the log waits for a checkpoint, which writes
			// most of what the load dirtied; flushDirty the rest.
			set = append(set, fmt.Sprintf("innodb_log_file_size = %d", old))
		}
		back := []string{
			fmt.Sprintf("innodb_io_capacity = %d", ioCap),
			fmt.Sprintf("innodb_io_capacity_max = %d", ioCapMax),
		}
		start := time.Now()
		first, err := dirtyPages(ctx, db)
		if err != nil {
			return nil, err
		}
		flush := &results.LoadFlush{DirtyPages: first, LeftPages: first}
		err = setGlobals(ctx, db, set)
		if err == nil {
			flush.LeftPages, err = flushDirty(ctx, db)
		}
		if err2 := setGlobals(context.WithoutCancel(ctx), db, back); err == nil {
			err = err2
		}
		flush.Seconds = time.Since(start).Seconds()
		return flush, err
	}, nil
}

// setGlobals sets each "variable = value" of set in turn, and stops at
// the first that fails.
func setGlobals(ctx context.Context, db *sql.DB, set []string) error {
	for _, s := range set {
		if _, err := db.ExecContext(ctx, "SET GLOBAL "+s); err != nil {
			return fmt.Errorf("load: set the server's %s: %w", s, err)
		}
	}
	return nil
}

// flushDirty writes the buffer pool's dirty pages and returns how many
// are left: it asks the page cleaner to keep none
// (innodb_max_dirty_pages_pct = 0, its low-water mark 0 too), waits until
// none are left, and puts both settings back. The wait is bounded: it
// ends, without an error, when the count has not fallen for flushStall
// (another client of the server keeps dirtying pages).
func flushDirty(ctx context.Context, db *sql.DB) (left int64, err error) {
	var pct, lwm string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct, @@GLOBAL.innodb_max_dirty_pages_pct_lwm").Scan(&pct, &lwm); err != nil {
		return 0, fmt.Errorf("load: read the dirty page settings: %w", err)
	}
	if left, err = dirtyPages(ctx, db); err != nil || left == 0 {
		return left, err
	}
	err = setGlobals(ctx, db, []string{"innodb_max_dirty_pages_pct_lwm = 0", "innodb_max_dirty_pages_pct = 0"})
	if err == nil {
		lowest, since := left, time.Now()
		for left > 0 && time.Since(since) < flushStall {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(flushPoll):
			}
			if err != nil {
				break
			}
			if left, err = dirtyPages(ctx, db); err != nil {
				break
			}
			if left < lowest {
				lowest, since = left, time.Now()
			}
		}
	}
	// The maximum first: the low-water mark may not exceed it.
	if err2 := setGlobals(context.WithoutCancel(ctx), db, []string{"innodb_max_dirty_pages_pct = " + pct,
		"innodb_max_dirty_pages_pct_lwm = " + lwm}); err == nil {
		err = err2
	}
	return left, err
}

// How often flushDirty looks at the dirty pages, and how long it waits
// for their count to fall before it gives up.
const (
	flushPoll  = 20 * time.Millisecond
	flushStall = 10 * time.Second
)

// dirtyPages is the buffer pool's count of dirty pages.
func dirtyPages(ctx context.Context, db *sql.DB) (int64, error) {
	var name string
	var n int64
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'").Scan(&name, &n); err != nil {
		return 0, fmt.Errorf("load: count the dirty pages: %w", err)
	}
	return n, nil
}

// loadIOCapacity is the page flushing rate (pages a second) of the flush
// that ends a load: a local disk's, not a shared server's.
const loadIOCapacity = 100_000
