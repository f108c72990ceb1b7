package load

import (
	"context"
	"database/sql"
	"fmt"
)

// redoPerRow is about how many bytes of redo log loading one row writes on
// the ordinary path, with room to spare: page splits and the undo log's
// pages are logged too.
const redoPerRow = 100

// maxLoadRedo caps the redo log a load asks for.
const maxLoadRedo = 32 << 30

// tuneServer readies a throw-away server for a bulk load and returns what
// puts it back. It makes the redo log large enough to hold what the load
// writes (innodb_log_file_size, which MariaDB resizes online since 10.9;
// about 70 bytes a row on the ordinary path, half that on the bulk path):
// with the sandbox's 2 GB log a paper-scale load fills it halfway through,
// and from then on every statement waits for dirty pages to be flushed so
// that the log can move on, flushing pages that the next rows dirty again.
// With room in the log the pages stay in the buffer pool until the load is
// done, and restoring the size flushes each of them once: part of the load's
// time, so that the phases measured after it start on a quiet server. A
// server that cannot resize its log online loads as it is.
//
// Nothing else needs changing for a load: the sandbox has no binary log,
// the adaptive hash index is off by default since MariaDB 10.5, the buffer
// pool (6 GB) holds the paper's push database, and the load's own sessions
// turn unique and foreign-key checks off (see loadJobRun). The doublewrite
// buffer would be worth turning off, but only a restart can.
//
// rows is how many rows the load inserts.
func tuneServer(ctx context.Context, db *sql.DB, rows int64) (restore func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	var old int64
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_log_file_size").Scan(&old); err != nil {
		return nil, fmt.Errorf("load: read the redo log size: %w", err)
	}
	want := min(rows*redoPerRow, maxLoadRedo)
	want = (want + 1<<28 - 1) &^ (1<<28 - 1) // in steps of 256 MiB
	if want <= old {
		return none, nil
	}
	var ioCap, ioCapMax int64
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max").Scan(&ioCap, &ioCapMax); err != nil {
		return nil, fmt.Errorf("load: read the I/O capacity: %w", err)
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf("SET GLOBAL innodb_log_file_size = %d", want)); err != nil {
		return none, nil
	}
	return func(ctx context.Context) error {
		// Shrinking the log waits for a checkpoint, which flushes every
		// page the load dirtied: at the sandbox's innodb_io_capacity
		// (200 pages a second, 2,000 when hurried) two gigabytes take
		// a minute, at the disk's speed seconds.
		for _, set := range []string{
			fmt.Sprintf("innodb_io_capacity_max = %d", max(ioCapMax, loadIOCapacity)),
			fmt.Sprintf("innodb_io_capacity = %d", max(ioCap, loadIOCapacity)),
			fmt.Sprintf("innodb_log_file_size = %d", old),
			fmt.Sprintf("innodb_io_capacity = %d", ioCap),
			fmt.Sprintf("innodb_io_capacity_max = %d", ioCapMax),
		} {
			if _, err := db.ExecContext(ctx, "SET GLOBAL "+set); err != nil {
				return fmt.Errorf("load: restore the server's settings: %s: %w", set, err)
			}
		}
		return nil
	}, nil
}

// loadIOCapacity is the page flushing rate (pages a second) of the flush
// that ends a load: a local disk's, not a shared server's.
const loadIOCapacity = 100_000
