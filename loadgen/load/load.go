// Package load bulk-loads a generated dataset (package loadgen/dataset)
// into the models' empty databases, as the benchmark does before it
// measures: MariaDB's through LOAD DATA (Load), with a cache of loaded
// tables (Options.Cache) and, on a throw-away server, settings tuned for
// the load while it runs (Options.Server); the keyspaces on Vitess through
// vtgate (Vitess). A model that keeps only part of push's mailbox
// (registry.PartialMailbox) gets that part and the tables that say which,
// decided by the model's own rules.
//
// Bulk loading streams generated rows to the server with LOAD DATA LOCAL
// INFILE through the driver's reader handler: no temporary files, no
// row-at-a-time INSERTs. Rows arrive in primary-key order. A table loaded
// in one statement into an empty table, with unique and foreign-key checks
// off, takes MariaDB's (10.6+) bulk path: it builds the indexes from sorted
// rows without undo logging. The mailbox, 43 million rows at paper scale
// and most of the load, is cut into chunks of consecutive users that load
// side by side on several connections (the bulk path locks the whole
// table, so those take the ordinary one). See Options for the server
// settings a load on a throw-away server changes.
package load

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/go-sql-driver/mysql"

	"github.com/pushpull/pushpull/internal/tablecache"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	schema "github.com/pushpull/pushpull/sql"
)

// Target is one model's database, empty but with its schema applied.
type Target struct {
	Name   string       // the database's name, for progress and results
	DB     *sql.DB      // connected to the model's database
	Schema schema.Model // which tables to fill: schema.DataTables
	// Mailbox is the part of push's mailbox the model keeps
	// (registry.PartialMailbox); the zero value is all of it.
	Mailbox registry.MailboxShape
}

// Options tune Load.
type Options struct {
	// Progress gets a live line when it is a terminal, else one line per
	// table; nil for none.
	Progress io.Writer
	// Workers is how many statements load at once; 0 means
	// DefaultWorkers.
	Workers int
	// ChunkRows is about how many mailbox rows one statement loads; 0
	// means DefaultChunkRows. A mailbox no larger loads in one statement,
	// on the bulk path.
	ChunkRows int64
	// Cache, if not nil, keeps the files of loaded tables of at least
	// CacheMinRows rows (the paper's mailbox and messages), to put them
	// in place the next time the same rows go into the same table on the
	// same server version instead of loading them (see restoreCached).
	// It needs the server's data directory on this machine, as a
	// sandbox's is; tables of a server elsewhere load as without it.
	Cache *tablecache.Cache
	// CacheMinRows is the size from which a table is cached; 0 means
	// DefaultCacheMinRows.
	CacheMinRows int64
	// Server, if not nil, is an administrative connection to a
	// throw-away server (a sandbox) whose global settings the load may
	// change while it runs and restores afterwards (see tuneServer). Nil
	// leaves the server's settings alone, as a server given by DSN must
	// be.
	Server *sql.DB
}

// Defaults of Options. Two statements keep two cores busy; a third
// only adds contention on the index (measured at paper scale: one
// statement used 114 CPU seconds of the server, two side by side 153). Two
// million rows a chunk keep a chunk's transaction (and its undo log) small
// and give the workers about twenty chunks of the paper's mailbox, so that
// neither waits long for the other at the end.
const (
	DefaultWorkers         = 2
	DefaultChunkRows int64 = 2_000_000
)

// Load writes d into the targets, runs ANALYZE TABLE, and reports rows and
// speed per table. Every table and every chunk of the mailbox is one job;
// opts.Workers jobs run at once, the mailbox's chunks first, since they are
// most of the work. With opts.Cache, tables found in the cache are
// restored from it instead, and the large tables loaded are kept in it
// (see Options.Cache).
func Load(ctx context.Context, d *dataset.Dataset, targets []Target, opts Options) (*results.DataLoad, error) {
	start := time.Now()
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.ChunkRows <= 0 {
		opts.ChunkRows = DefaultChunkRows
	}
	var tables []*tableRun
	for _, t := range targets {
		sts := schema.DataTables(t.Schema)
		if sts == nil {
			return nil, fmt.Errorf("load %s: no dataset tables in schema %q", t.Name, t.Schema)
		}
		for _, st := range sts {
			tb, err := tableOf(d, st, t.Mailbox)
			if err != nil {
				return nil, fmt.Errorf("load %s: %w", t.Name, err)
			}
			run := &tableRun{target: t, table: tb, writers: []func(w *bufio.Writer, n *atomic.Int64) error{tb.write}}
			if st.Name == schema.Mailbox.Name {
				run.writers = mailboxChunks(d, t.Mailbox, opts.ChunkRows)
				if len(run.writers) > 1 {
					run.chunks = len(run.writers)
				}
			}
			tables = append(tables, run)
		}
	}
	bar := newProgress(opts.Progress)
	defer bar.close()
	if opts.Cache != nil {
		if err := restoreCached(ctx, tables, opts, bar); err != nil {
			return nil, err
		}
	}
	var big, small []loadJob
	var loadRows int64
	for _, run := range tables {
		if run.cache == results.CacheRestored {
			continue
		}
		loadRows += run.table.rows
		for _, w := range run.writers {
			j := loadJob{run: run, write: w, chunked: run.chunks > 0}
			if run.table.name == schema.Mailbox.Name {
				big = append(big, j)
			} else {
				small = append(small, j)
			}
		}
	}
	var restore func(context.Context) (*results.LoadFlush, error)
	if opts.Server != nil {
		var err error
		if restore, err = tuneServer(ctx, opts.Server, loadRows); err != nil {
			return nil, err
		}
		defer func() { // after an error below (restore is nil once done)
			if restore != nil {
				restore(context.WithoutCancel(ctx))
			}
		}()
	}
	jobs := make(chan loadJob)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(jobs)
		for _, j := range append(big, small...) {
			select {
			case jobs <- j:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	// A table to keep in the cache goes there as soon as it is loaded,
	// while the rest load.
	var stores sync.WaitGroup
	for range opts.Workers {
		g.Go(func() error {
			for j := range jobs {
				last, err := loadJobRun(gctx, j, bar)
				if err != nil {
					return err
				}
				if last && j.run.store {
					stores.Go(func() { storeCached(ctx, j.run, opts, bar) })
				}
			}
			return nil
		})
	}
	err := g.Wait()
	stores.Wait()
	if err != nil {
		return nil, err
	}
	out := &results.DataLoad{}
	for _, run := range tables {
		what := run.target.Name + "." + run.table.name
		if got := run.got.Load(); got != run.table.rows {
			return nil, fmt.Errorf("load %s: the table holds %d rows, %d were generated", what, got, run.table.rows)
		}
		if run.keptBy != nil {
			run.cache = run.keptBy.cache
		}
		secs := run.end.Sub(run.start).Seconds()
		out.Tables = append(out.Tables, results.TableLoad{Database: run.target.Name, Table: run.table.name,
			Rows: run.table.rows, Seconds: secs, RowsPerSec: float64(run.table.rows) / secs, Cache: run.cache})
	}
	for _, t := range targets {
		for _, st := range schema.DataTables(t.Schema) {
			name := st.Name
			if _, err := t.DB.ExecContext(ctx, "ANALYZE TABLE `"+name+"`"); err != nil {
				return nil, fmt.Errorf("analyze %s.%s: %w", t.Name, name, err)
			}
		}
	}
	if restore != nil {
		// Restoring flushes what the load wrote: that belongs to the
		// load, not to the phases measured after it.
		flush, err := restore(ctx)
		restore = nil
		if err != nil {
			return nil, err
		}
		out.Flush = flush
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// tableRun is the load of one table of one target, in one job or many.
type tableRun struct {
	target Target
	table  table
	chunks int // mailbox chunks; 0 for a table loaded whole
	// writers generate the rows: one per job (the chunks of the
	// mailbox, else the whole table).
	writers []func(w *bufio.Writer, n *atomic.Int64) error
	// key names the table in the load cache; cache is how the cache
	// served it (results.TableLoad.Cache).
	key, cache string
	dir        string       // the database's directory, for the cache
	ddl        string       // the table's definition (tableDefinition), for the cache
	store      bool         // keep in the cache once loaded
	keptBy     *tableRun    // the table of equal key kept in its place
	n          atomic.Int64 // rows generated so far, for progress
	got        atomic.Int64 // rows the server says it inserted

	mu         sync.Mutex
	started    int // jobs started
	finished   int // jobs finished
	start, end time.Time
	track      *tracked
}

// loadJob is one LOAD DATA statement: a whole table, or a chunk of the
// mailbox.
type loadJob struct {
	run     *tableRun
	write   func(w *bufio.Writer, n *atomic.Int64) error
	chunked bool
}

// mailboxChunks cuts the mailbox (as shape keeps it) into runs of
// consecutive users of about chunkRows rows each, and returns the writers
// of their rows in order.
func mailboxChunks(d *dataset.Dataset, shape registry.MailboxShape, chunkRows int64) []func(w *bufio.Writer, n *atomic.Int64) error {
	var out []func(w *bufio.Writer, n *atomic.Int64) error
	if shapedMailboxRows(d, shape) <= chunkRows {
		return append(out, func(w *bufio.Writer, n *atomic.Int64) error {
			return writeMailbox(d, shape, 1, uint32(d.Spec.Users), w, n)
		})
	}
	lo, rows := uint32(1), int64(0)
	for u := 1; u <= d.Spec.Users; u++ {
		rows += shapedRows(d, uint32(u), shape)
		if rows >= chunkRows || u == d.Spec.Users {
			from, to := lo, uint32(u)
			out = append(out, func(w *bufio.Writer, n *atomic.Int64) error { return writeMailbox(d, shape, from, to, w, n) })
			lo, rows = uint32(u+1), 0
		}
	}
	return out
}

// tableOf is how to stream st's rows from d, for a model that keeps shape
// of the mailbox.
func tableOf(d *dataset.Dataset, st schema.Table, shape registry.MailboxShape) (table, error) {
	var tb table
	switch st.Name {
	case schema.Follows.Name:
		tb = followsTable(d)
	case schema.Messages.Name:
		tb = messagesTable(d)
	case schema.Mailbox.Name:
		tb = mailboxTable(d, shape)
	case schema.MailboxState.Name:
		tb = mailboxStateTable(d, shape)
	case schema.PullAuthors.Name:
		tb = pullAuthorsTable(d, shape)
	case schema.PullFollows.Name:
		tb = pullFollowsTable(d, shape)
	case schema.PushEdges.Name:
		tb = edgesTable(d, shape, false)
	case schema.PullEdges.Name:
		tb = edgesTable(d, shape, true)
	case schema.UserRates.Name:
		tb = userRatesTable(d, shape)
	case schema.ReaderState.Name:
		tb = readerStateTable(d, shape)
	default:
		return table{}, fmt.Errorf("no generator for table %s", st.Name)
	}
	if len(st.Columns) != tb.fields {
		return table{}, fmt.Errorf("table %s has %d columns %v; the generator writes %d", st.Name, len(st.Columns), st.Columns, tb.fields)
	}
	tb.name, tb.columns = st.Name, st.ColumnList()
	return tb, nil
}

// table describes how to stream one table.
type table struct {
	fields  int // values per row the generator writes
	name    string
	columns string
	rows    int64
	// numeric: every field is a number, so the server need not decode
	// the rows as text (CHARACTER SET binary).
	numeric bool
	// write appends every row, tab-separated and newline-terminated, to
	// w, adding 1 to *n per row.
	write func(w *bufio.Writer, n *atomic.Int64) error
}

func followsTable(d *dataset.Dataset) table { return followsWhere(d, nil) }

// followsWhere is the follows table of the edges whose followee keep
// accepts (all of them for a nil keep), in (follower, followee) order.
func followsWhere(d *dataset.Dataset, keep func(followee uint32) bool) table {
	var edges int64
	if keep == nil {
		for _, f := range d.Followees {
			edges += int64(len(f))
		}
	} else {
		d.EachFollow(func(_, followee uint32) error {
			if keep(followee) {
				edges++
			}
			return nil
		})
	}
	return table{
		fields: 2, rows: edges, numeric: true,
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			var buf []byte
			return d.EachFollow(func(follower, followee uint32) error {
				if keep != nil && !keep(followee) {
					return nil
				}
				buf = strconv.AppendUint(buf[:0], uint64(follower), 10)
				buf = append(buf, '\t')
				buf = strconv.AppendUint(buf, uint64(followee), 10)
				buf = append(buf, '\n')
				n.Add(1)
				_, err := w.Write(buf)
				return err
			})
		},
	}
}

func messagesTable(d *dataset.Dataset) table {
	return table{
		fields: 4, rows: int64(len(d.Authors)),
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			var buf, body []byte
			return d.EachMessage(func(id uint64, author uint32) error {
				buf = strconv.AppendUint(buf[:0], id, 10)
				buf = append(buf, '\t')
				buf = strconv.AppendUint(buf, uint64(author), 10)
				buf = append(buf, '\t')
				body = d.AppendBody(body[:0], id)
				buf = appendEscaped(buf, body)
				buf = append(buf, '\t')
				buf = d.CreatedAt(id).AppendFormat(buf, "2006-01-02 15:04:05")
				buf = append(buf, '\n')
				n.Add(1)
				_, err := w.Write(buf)
				return err
			})
		},
	}
}

func mailboxTable(d *dataset.Dataset, shape registry.MailboxShape) table {
	return table{
		fields: 2, rows: shapedMailboxRows(d, shape), numeric: true,
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			return writeMailbox(d, shape, 1, uint32(d.Spec.Users), w, n)
		},
	}
}

// writeMailbox writes the mailbox rows of users from..to, as shape keeps
// them.
func writeMailbox(d *dataset.Dataset, shape registry.MailboxShape, from, to uint32, w *bufio.Writer, n *atomic.Int64) error {
	var mb dataset.Mailboxer
	var buf []byte
	var pending int64
	for u := from; u <= to; u++ {
		ids, _ := shapedMailbox(&mb, d, u, shape)
		for _, id := range ids {
			buf = strconv.AppendUint(buf[:0], uint64(u), 10)
			buf = append(buf, '\t')
			buf = strconv.AppendUint(buf, uint64(id), 10)
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		// 43 million rows: count in batches, not one atomic add per
		// row.
		if pending += int64(len(ids)); pending >= 4096 {
			n.Add(pending)
			pending = 0
		}
	}
	n.Add(pending)
	return nil
}

// appendEscaped escapes what LOAD DATA's default format treats specially:
// the escape character itself, tabs, newlines and NUL.
func appendEscaped(dst, s []byte) []byte {
	for _, c := range s {
		switch c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case 0:
			dst = append(dst, '\\', '0')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

var readerSeq atomic.Int64

// loadJobRun runs one job: a LOAD DATA of the rows job.write generates, in
// a transaction of its own on a connection of its own. last says the job
// was its table's last to finish.
func loadJobRun(ctx context.Context, job loadJob, bar *progress) (last bool, err error) {
	run := job.run
	what := run.target.Name + "." + run.table.name
	conn, err := run.target.DB.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("load %s: %w", what, err)
	}
	defer conn.Close()
	// A whole table into an empty one takes the bulk path, which needs
	// unique checks off. Chunks cannot take it (it locks the table), and
	// checking their primary key is what inserting does anyway.
	session := "SET unique_checks = 0, foreign_key_checks = 0"
	if job.chunked {
		session = "SET unique_checks = 1, foreign_key_checks = 0"
	}
	if _, err := conn.ExecContext(ctx, session); err != nil {
		return false, fmt.Errorf("load %s: %w", what, err)
	}
	pr, pw := io.Pipe()
	name := fmt.Sprintf("pushpull-%s-%d", what, readerSeq.Add(1))
	mysql.RegisterReaderHandler(name, func() io.Reader { return pr })
	defer mysql.DeregisterReaderHandler(name)

	writeErr := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(pw, 1<<20)
		err := job.write(w, &run.n)
		if err == nil {
			err = w.Flush()
		}
		pw.CloseWithError(err) // nil: a clean EOF for the server
		writeErr <- err
	}()

	charset := "utf8mb4"
	if run.table.numeric {
		charset = "binary"
	}
	run.begin(bar)
	// Inside an explicit transaction: MariaDB takes its bulk path for an
	// empty table only there.
	var got int64
	tx, err := conn.BeginTx(ctx, nil)
	if err == nil {
		var res sql.Result
		res, err = tx.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::"+name+"' INTO TABLE `"+run.table.name+
			"` CHARACTER SET "+charset+" FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' "+run.table.columns)
		if err == nil {
			// The server's own count of rows inserted: a COUNT(*)
			// would scan 43 million mailbox rows again.
			if got, err = res.RowsAffected(); err == nil {
				err = tx.Commit()
			} else {
				tx.Rollback()
			}
		} else {
			tx.Rollback()
		}
	}
	pr.CloseWithError(io.ErrClosedPipe) // unblock the writer if the server stopped reading
	werr := <-writeErr
	if err != nil {
		return false, fmt.Errorf("load %s: %w", what, err)
	}
	if werr != nil {
		return false, fmt.Errorf("load %s: generate rows: %w", what, werr)
	}
	run.got.Add(got)
	return run.finish(bar), nil
}

// begin notes that a job of the table started; the first shows the table
// in the progress line.
func (r *tableRun) begin(bar *progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started == 0 {
		r.track = bar.add(r.target.Name+"."+r.table.name, r.table.rows, &r.n)
		r.start = r.track.start
	}
	r.started++
}

// finish notes that a job of the table ended; the table's last reports it
// done and returns true.
func (r *tableRun) finish(bar *progress) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished++
	if r.finished != max(r.chunks, 1) {
		return false
	}
	r.end = time.Now()
	bar.done(r.track, r.end.Sub(r.start).Seconds())
	return true
}
