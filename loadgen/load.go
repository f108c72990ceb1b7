package loadgen

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"golang.org/x/sync/errgroup"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pushpull/pushpull/results"
	schema "github.com/pushpull/pushpull/sql"
)

// Bulk loading streams generated rows to the server with LOAD DATA LOCAL
// INFILE through the driver's reader handler: no temporary files, no
// row-at-a-time INSERTs, one statement per table. Rows arrive in primary-key
// order, and the session turns off unique and foreign-key checks, which
// lets MariaDB (10.6+) use its bulk path for an empty table: it builds the
// index from sorted rows without undo logging.

// Target is one model's database, empty but with its schema applied.
type Target struct {
	Name   string       // the database's name, for progress and results
	DB     *sql.DB      // connected to the model's database
	Schema schema.Model // which tables to fill: schema.DataTables
}

// Load writes d into the targets, runs ANALYZE TABLE, and reports rows and
// speed per table. The mailbox, by far the largest table, loads on a lane
// of its own while the other tables load one after another on a second
// lane (pull first, then push), so the two cores are both busy; InnoDB
// gains nothing from two writers on one index, so the mailbox itself is one
// statement. progress gets a live line when it is a terminal, else one line
// per table.
func Load(ctx context.Context, d *Dataset, targets []Target, progress io.Writer) (*results.DataLoad, error) {
	start := time.Now()
	type job struct {
		t  Target
		tb table
	}
	var small, big []job
	for _, t := range targets {
		tables := schema.DataTables(t.Schema)
		if tables == nil {
			return nil, fmt.Errorf("load %s: no dataset tables in schema %q", t.Name, t.Schema)
		}
		for _, st := range tables {
			tb, err := tableOf(d, st)
			if err != nil {
				return nil, fmt.Errorf("load %s: %w", t.Name, err)
			}
			if st.Name == schema.Mailbox.Name {
				big = append(big, job{t, tb})
			} else {
				small = append(small, job{t, tb})
			}
		}
	}
	bar := newProgress(progress)
	defer bar.close()
	loaded := make([][]results.TableLoad, 2)
	g, gctx := errgroup.WithContext(ctx)
	for lane, jobs := range [][]job{small, big} {
		g.Go(func() error {
			for _, j := range jobs {
				tl, err := loadTable(gctx, j.t, j.tb, bar)
				if err != nil {
					return err
				}
				loaded[lane] = append(loaded[lane], tl)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := &results.DataLoad{Tables: append(loaded[0], loaded[1]...)}
	for _, t := range targets {
		for _, st := range schema.DataTables(t.Schema) {
			name := st.Name
			if _, err := t.DB.ExecContext(ctx, "ANALYZE TABLE `"+name+"`"); err != nil {
				return nil, fmt.Errorf("analyze %s.%s: %w", t.Name, name, err)
			}
		}
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// tableOf is how to stream st's rows from d.
func tableOf(d *Dataset, st schema.Table) (table, error) {
	var tb table
	switch st.Name {
	case schema.Follows.Name:
		tb = followsTable(d)
	case schema.Messages.Name:
		tb = messagesTable(d)
	case schema.Mailbox.Name:
		tb = mailboxTable(d)
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
	// write appends every row, tab-separated and newline-terminated, to
	// w, adding 1 to *n per row.
	write func(w *bufio.Writer, n *atomic.Int64) error
}

func followsTable(d *Dataset) table {
	var edges int64
	for _, f := range d.Followees {
		edges += int64(len(f))
	}
	return table{
		fields: 2, rows: edges,
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			var buf []byte
			return d.EachFollow(func(follower, followee uint32) error {
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

func messagesTable(d *Dataset) table {
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

func mailboxTable(d *Dataset) table {
	return table{
		fields: 2, rows: d.MailboxRows(),
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			var buf []byte
			var pending int64
			err := d.EachMailbox(func(user uint32, id uint64) error {
				buf = strconv.AppendUint(buf[:0], uint64(user), 10)
				buf = append(buf, '\t')
				buf = strconv.AppendUint(buf, id, 10)
				buf = append(buf, '\n')
				// 43 million rows: count in batches, not one atomic
				// add per row.
				if pending++; pending == 4096 {
					n.Add(pending)
					pending = 0
				}
				_, err := w.Write(buf)
				return err
			})
			n.Add(pending)
			return err
		},
	}
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

func loadTable(ctx context.Context, t Target, tb table, bar *progress) (results.TableLoad, error) {
	what := t.Name + "." + tb.name
	conn, err := t.DB.Conn(ctx)
	if err != nil {
		return results.TableLoad{}, fmt.Errorf("load %s: %w", what, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET unique_checks = 0, foreign_key_checks = 0"); err != nil {
		return results.TableLoad{}, fmt.Errorf("load %s: %w", what, err)
	}
	var n atomic.Int64
	pr, pw := io.Pipe()
	name := fmt.Sprintf("pushpull-%s-%d", what, readerSeq.Add(1))
	mysql.RegisterReaderHandler(name, func() io.Reader { return pr })
	defer mysql.DeregisterReaderHandler(name)

	writeErr := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(pw, 1<<20)
		err := tb.write(w, &n)
		if err == nil {
			err = w.Flush()
		}
		pw.CloseWithError(err) // nil: a clean EOF for the server
		writeErr <- err
	}()

	track := bar.add(what, tb.rows, &n)
	start := time.Now()
	// Inside an explicit transaction: MariaDB takes its bulk path for an
	// empty table only there.
	var got int64
	tx, err := conn.BeginTx(ctx, nil)
	if err == nil {
		var res sql.Result
		res, err = tx.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::"+name+"' INTO TABLE `"+tb.name+
			"` CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' "+tb.columns)
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
	secs := time.Since(start).Seconds()
	bar.done(track, secs)
	if err != nil {
		return results.TableLoad{}, fmt.Errorf("load %s: %w", what, err)
	}
	if werr != nil {
		return results.TableLoad{}, fmt.Errorf("load %s: generate rows: %w", what, werr)
	}
	if got != tb.rows {
		return results.TableLoad{}, fmt.Errorf("load %s: the table holds %d rows, %d were generated", what, got, tb.rows)
	}
	return results.TableLoad{Database: t.Name, Table: tb.name, Rows: got, Seconds: secs, RowsPerSec: float64(got) / secs}, nil
}

// progress shows the tables being loaded: on a terminal one line redrawn
// twice a second with every active table's rows, rate and ETA; elsewhere
// only a line per finished table.
type progress struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	live  []*tracked
	stop  chan struct{}
	ended chan struct{}
}

type tracked struct {
	what  string
	total int64
	n     *atomic.Int64
	start time.Time
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, tty: w != nil && isTerminal(w), stop: make(chan struct{}), ended: make(chan struct{})}
	if !p.tty {
		close(p.ended)
		return p
	}
	go func() {
		defer close(p.ended)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.redraw()
				p.mu.Unlock()
			}
		}
	}()
	return p
}

func (p *progress) redraw() {
	line := "\r\033[K  loading"
	for _, t := range p.live {
		done := t.n.Load()
		rate := float64(done) / time.Since(t.start).Seconds()
		eta := "?"
		if rate > 0 {
			eta = time.Duration(float64(t.total-done) / rate * float64(time.Second)).Round(time.Second).String()
		}
		line += fmt.Sprintf("  %s %3.0f%% %.2fM rows/s ETA %s", t.what, 100*float64(done)/float64(max(t.total, 1)), rate/1e6, eta)
	}
	fmt.Fprint(p.w, line)
}

func (p *progress) add(what string, total int64, n *atomic.Int64) *tracked {
	t := &tracked{what: what, total: total, n: n, start: time.Now()}
	p.mu.Lock()
	p.live = append(p.live, t)
	p.mu.Unlock()
	return t
}

func (p *progress) done(t *tracked, secs float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.live {
		if x == t {
			p.live = append(p.live[:i], p.live[i+1:]...)
			break
		}
	}
	if p.w == nil {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	done := t.n.Load()
	fmt.Fprintf(p.w, "  loaded  %-16s %12s rows in %6.1fs  (%.2fM rows/s)\n", t.what, commas(done), secs, float64(done)/secs/1e6)
}

func (p *progress) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.ended
}
