package loadgen

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pushpull/pushpull/results"
)

// Bulk loading streams generated rows to the server with LOAD DATA LOCAL
// INFILE through the driver's reader handler: no temporary files, no
// row-at-a-time INSERTs, one statement per table. Rows arrive in primary-key
// order, and the session turns off unique and foreign-key checks, which
// lets MariaDB (10.6+) use its bulk path for an empty table: it builds the
// index from sorted rows without undo logging.

// Target is one model's database, empty but with its schema applied.
type Target struct {
	Name    string  // "pull" or "push", for progress and results
	DB      *sql.DB // connected to the model's database
	Mailbox bool    // also load the push model's mailbox
}

// Load writes d into each target in turn (the order: pull first,
// then push with its mailboxes), runs ANALYZE TABLE, and reports rows and
// speed per table. progress gets a live bar when it is a terminal, else one
// line per table.
func Load(ctx context.Context, d *Dataset, targets []Target, progress io.Writer) (*results.DataLoad, error) {
	start := time.Now()
	out := &results.DataLoad{}
	for _, t := range targets {
		tables := []table{followsTable(d), messagesTable(d)}
		if t.Mailbox {
			tables = append(tables, mailboxTable(d))
		}
		for _, tb := range tables {
			tl, err := loadTable(ctx, t, tb, progress)
			if err != nil {
				return nil, err
			}
			out.Tables = append(out.Tables, tl)
		}
		for _, tb := range tables {
			if _, err := t.DB.ExecContext(ctx, "ANALYZE TABLE `"+tb.name+"`"); err != nil {
				return nil, fmt.Errorf("analyze %s.%s: %w", t.Name, tb.name, err)
			}
		}
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// table describes how to stream one table.
type table struct {
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
		name: "follows", columns: "(follower_id, followee_id)", rows: edges,
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
		name: "messages", columns: "(id, author_id, body, created_at)", rows: int64(len(d.Authors)),
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
		name: "mailbox", columns: "(user_id, message_id)", rows: d.MailboxRows(),
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

func loadTable(ctx context.Context, t Target, tb table, progress io.Writer) (results.TableLoad, error) {
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

	bar := newProgressBar(progress, what, tb.rows, &n)
	start := time.Now()
	// Inside an explicit transaction: MariaDB takes its bulk path for an
	// empty table only there.
	tx, err := conn.BeginTx(ctx, nil)
	if err == nil {
		_, err = tx.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::"+name+"' INTO TABLE `"+tb.name+
			"` CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' "+tb.columns)
		if err == nil {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
	}
	pr.CloseWithError(io.ErrClosedPipe) // unblock the writer if the server stopped reading
	werr := <-writeErr
	secs := time.Since(start).Seconds()
	bar.done(secs)
	if err != nil {
		return results.TableLoad{}, fmt.Errorf("load %s: %w", what, err)
	}
	if werr != nil {
		return results.TableLoad{}, fmt.Errorf("load %s: generate rows: %w", what, werr)
	}
	var got int64
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+tb.name+"`").Scan(&got); err != nil {
		return results.TableLoad{}, fmt.Errorf("load %s: count rows: %w", what, err)
	}
	if got != tb.rows {
		return results.TableLoad{}, fmt.Errorf("load %s: the table holds %d rows, %d were generated", what, got, tb.rows)
	}
	return results.TableLoad{Database: t.Name, Table: tb.name, Rows: got, Seconds: secs, RowsPerSec: float64(got) / secs}, nil
}

// progressBar redraws one line on a terminal twice a second; elsewhere it
// prints only the final line.
type progressBar struct {
	w     io.Writer
	what  string
	total int64
	n     *atomic.Int64
	tty   bool
	stop  chan struct{}
	ended chan struct{}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newProgressBar(w io.Writer, what string, total int64, n *atomic.Int64) *progressBar {
	b := &progressBar{w: w, what: what, total: total, n: n, tty: w != nil && isTerminal(w), stop: make(chan struct{}), ended: make(chan struct{})}
	if !b.tty {
		close(b.ended)
		return b
	}
	start := time.Now()
	go func() {
		defer close(b.ended)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
				done := b.n.Load()
				rate := float64(done) / time.Since(start).Seconds()
				eta := "?"
				if rate > 0 {
					eta = (time.Duration(float64(b.total-done)/rate) * time.Second).Round(time.Second).String()
				}
				fmt.Fprintf(b.w, "\r  loading %-16s %12s / %s rows  %6.2fM rows/s  ETA %-8s", b.what,
					commas(done), commas(b.total), rate/1e6, eta)
			}
		}
	}()
	return b
}

func (b *progressBar) done(secs float64) {
	close(b.stop)
	<-b.ended
	if b.w == nil {
		return
	}
	if b.tty {
		fmt.Fprint(b.w, "\r\033[K")
	}
	done := b.n.Load()
	fmt.Fprintf(b.w, "  loaded  %-16s %12s rows in %6.1fs  (%.2fM rows/s)\n", b.what, commas(done), secs, float64(done)/secs/1e6)
}
