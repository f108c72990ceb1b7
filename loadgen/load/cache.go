package load

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/internal/tablecache"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/results"
)

// DefaultCacheMinRows is the size from which a load keeps a table in its
// cache: at paper scale the mailbox (43 million rows, most of the load's
// time) and the messages (1 million), not the follow graph, which loads in
// a second or two.
const DefaultCacheMinRows int64 = 1_000_000

// cacheFormat changes when what an entry holds, or how it is restored,
// does: older entries then stop matching.
const cacheFormat = "pushpull load cache 1"

// The load cache (Options.Cache) uses InnoDB's transportable
// tablespaces. After a table is loaded, FLUSH TABLES ... FOR EXPORT writes
// its pages and a description of it (.cfg) next to its file (.ibd), which
// the cache copies. The next load of the same table discards the empty
// table's tablespace, copies the two files in, and IMPORT TABLESPACE
// adopts them: InnoDB rewrites each page's tablespace id, which at paper
// scale takes seconds where inserting the rows takes a minute and a half
// of two cores.
//
// An entry's key is a digest of the exact rows the load would insert (the
// generator's output, so a change to the generator misses the cache), the
// table's definition and the server's version and page size. A restored
// table is read once through every index, which puts its pages in the
// buffer pool as a load leaves them (so that the phases after it start on
// the same server state) and counts its rows. An entry that fails to
// import or holds the wrong number of rows is removed, and the table
// loads as without the cache.

// restoreCached computes the cache keys of the tables of at least
// opts.CacheMinRows rows whose files are on this machine, restores those
// found in opts.Cache, and marks the others for the load to store once
// loaded (tableRun.store): of tables with equal keys (equal rows and
// definition, such as two models' messages) only the first, whose outcome
// the others take (tableRun.keptBy).
func restoreCached(ctx context.Context, tables []*tableRun, opts Options, bar *progress) error {
	minRows := opts.CacheMinRows
	if minRows <= 0 {
		minRows = DefaultCacheMinRows
	}
	servers := map[string]*serverFiles{}
	var cands []*tableRun
	for _, run := range tables {
		if run.table.rows < minRows {
			continue
		}
		sf, ok := servers[run.target.Name]
		if !ok {
			var err error
			if sf, err = filesOf(ctx, run.target.DB); err != nil {
				return fmt.Errorf("load %s: %w", run.target.Name, err)
			}
			servers[run.target.Name] = sf
			if sf.dir == "" {
				bar.note("  the load cache skips %s: its files are not on this machine", run.target.Name)
			}
		}
		if sf.dir == "" {
			continue
		}
		run.dir = sf.dir
		cands = append(cands, run)
	}
	if len(cands) == 0 {
		return nil
	}
	start := time.Now()
	if err := cacheKeys(ctx, cands, servers, opts.Workers); err != nil {
		return err
	}
	bar.note("  load cache %s: looked up %d tables (%.1fs to digest their rows)", opts.Cache.Path(), len(cands), time.Since(start).Seconds())
	storing := map[string]*tableRun{}
	markStore := func(run *tableRun) {
		if first := storing[run.key]; first != nil {
			run.keptBy = first
			return
		}
		storing[run.key] = run
		run.store = true
	}
	for _, run := range cands {
		entry, ok := opts.Cache.Lookup(run.key)
		if !ok {
			markStore(run)
			continue
		}
		if err := restoreTable(ctx, run, entry, opts.Workers); err != nil {
			if ctx.Err() != nil {
				return err
			}
			bar.note("  the load cache's %s.%s did not restore, so it loads: %v", run.target.Name, run.table.name, err)
			opts.Cache.Remove(run.key)
			markStore(run)
			continue
		}
		bar.note("  restored %-15s %12s rows in %6.1fs  (from the load cache)", run.target.Name+"."+run.table.name, dataset.Commas(run.table.rows), run.end.Sub(run.start).Seconds())
	}
	return nil
}

// serverFiles is what the cache needs to know of a database's server.
type serverFiles struct {
	dir      string // the database's directory, "" if not on this machine
	version  string // @@version
	pageSize int64  // @@innodb_page_size
}

// filesOf finds db's database directory, if it is on this machine and the
// server keeps a file per table.
func filesOf(ctx context.Context, db *sql.DB) (*serverFiles, error) {
	var datadir, name string
	var perTable int
	sf := &serverFiles{}
	if err := db.QueryRowContext(ctx, "SELECT @@datadir, DATABASE(), @@version, @@innodb_page_size, @@innodb_file_per_table").
		Scan(&datadir, &name, &sf.version, &sf.pageSize, &perTable); err != nil {
		return nil, fmt.Errorf("find the server's files: %w", err)
	}
	dir := filepath.Join(datadir, name)
	if st, err := os.Stat(dir); err == nil && st.IsDir() && perTable == 1 {
		sf.dir = dir
	}
	return sf, nil
}

// cacheKeys digests each run's rows and definition (run.ddl) into
// run.key, the chunks of all runs side by side on workers goroutines.
func cacheKeys(ctx context.Context, runs []*tableRun, servers map[string]*serverFiles, workers int) error {
	digests := make([][][]byte, len(runs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for i, run := range runs {
		digests[i] = make([][]byte, len(run.writers))
		for j, write := range run.writers {
			g.Go(func() error {
				if gctx.Err() != nil {
					return gctx.Err()
				}
				h := sha256.New()
				w := bufio.NewWriterSize(h, 1<<16)
				var n atomic.Int64
				if err := write(w, &n); err != nil {
					return fmt.Errorf("load %s.%s: generate rows: %w", run.target.Name, run.table.name, err)
				}
				w.Flush()
				digests[i][j] = h.Sum(nil)
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, run := range runs {
		ddl, err := tableDefinition(ctx, run.target.DB, run.table.name)
		if err != nil {
			return fmt.Errorf("load %s.%s: %w", run.target.Name, run.table.name, err)
		}
		run.ddl = ddl
		sf := servers[run.target.Name]
		h := sha256.New()
		field := func(s string) { fmt.Fprintf(h, "%d:%s\n", len(s), s) }
		field(cacheFormat)
		field(sf.version)
		field(strconv.FormatInt(sf.pageSize, 10))
		field(ddl)
		field(run.table.columns)
		field(strconv.FormatInt(run.table.rows, 10))
		for _, d := range digests[i] {
			h.Write(d)
		}
		run.key = hex.EncodeToString(h.Sum(nil))
	}
	return nil
}

var autoIncrement = regexp.MustCompile(` AUTO_INCREMENT=\d+`)

// tableDefinition is SHOW CREATE TABLE's statement, without the
// AUTO_INCREMENT counter, which is data, not definition.
func tableDefinition(ctx context.Context, db *sql.DB, name string) (string, error) {
	var tn, ddl string
	if err := db.QueryRowContext(ctx, "SHOW CREATE TABLE `"+name+"`").Scan(&tn, &ddl); err != nil {
		return "", fmt.Errorf("read the table's definition: %w", err)
	}
	return autoIncrement.ReplaceAllString(ddl, ""), nil
}

// files are the paths of run's table's data file (.ibd) and of the
// description FLUSH TABLES ... FOR EXPORT writes beside it (.cfg).
func (run *tableRun) files() (ibd, cfg string) {
	base := filepath.Join(run.dir, run.table.name)
	return base + ".ibd", base + ".cfg"
}

// restoreTable puts the files of entry in place of run's empty table, reads
// it through every index and checks its row count. On failure it leaves
// the table as it found it: empty, with a tablespace of its own.
func restoreTable(ctx context.Context, run *tableRun, entry string, workers int) (err error) {
	run.start = time.Now()
	name := run.table.name
	conn, err := run.target.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET foreign_key_checks = 0"); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "ALTER TABLE `"+name+"` DISCARD TABLESPACE"); err != nil {
		return err
	}
	ibd, cfg := run.files()
	defer func() {
		os.Remove(cfg) // IMPORT leaves it behind
		if err == nil {
			return
		}
		bg := context.WithoutCancel(ctx)
		_, e1 := conn.ExecContext(bg, "DROP TABLE `"+name+"`")
		os.Remove(ibd)
		_, e2 := conn.ExecContext(bg, run.ddl)
		if e := errors.Join(e1, e2); e != nil {
			err = fmt.Errorf("%w; and remaking the empty table failed: %w", err, e)
		}
	}()
	for _, f := range []string{ibd, cfg} {
		if err := tablecache.CopyOut(entry, filepath.Base(f), f); err != nil {
			return err
		}
	}
	if _, err := conn.ExecContext(ctx, "ALTER TABLE `"+name+"` IMPORT TABLESPACE"); err != nil {
		return err
	}
	rows, err := readThrough(ctx, run.target.DB, name, workers)
	if err != nil {
		return fmt.Errorf("read the restored table: %w", err)
	}
	if rows != run.table.rows {
		return fmt.Errorf("the restored table holds %d rows, %d were generated", rows, run.table.rows)
	}
	run.got.Store(rows)
	run.end = time.Now()
	run.cache = results.CacheRestored
	return nil
}

// readThrough reads table through each of its indexes, in key ranges of
// the index's first column side by side, and returns the rows its primary
// key holds. Four ranges a worker: a scan waits on its page reads as much
// as it computes (measured on the paper's mailbox, 43 million rows: 18 s
// with two ranges, 12 s with eight, on two cores).
func readThrough(ctx context.Context, db *sql.DB, table string, workers int) (int64, error) {
	rs, err := db.QueryContext(ctx, `SELECT index_name, column_name FROM information_schema.statistics
		WHERE table_schema = DATABASE() AND table_name = ? AND seq_in_index = 1`, table)
	if err != nil {
		return 0, err
	}
	type index struct{ name, column string }
	var idx []index
	for rs.Next() {
		var x index
		if err := rs.Scan(&x.name, &x.column); err != nil {
			rs.Close()
			return 0, err
		}
		idx = append(idx, x)
	}
	if err := rs.Close(); err != nil {
		return 0, err
	}
	ranges := 4 * max(workers, 1)
	var primary atomic.Int64
	for _, x := range idx {
		from := "`" + table + "` FORCE INDEX (`" + x.name + "`)"
		var lo, hi sql.NullInt64
		if err := db.QueryRowContext(ctx, "SELECT MIN(`"+x.column+"`), MAX(`"+x.column+"`) FROM "+from).Scan(&lo, &hi); err != nil {
			return 0, err
		}
		parts := []string{""}
		if lo.Valid && hi.Valid && hi.Int64 > lo.Int64 {
			parts = parts[:0]
			step := (hi.Int64 - lo.Int64 + int64(ranges)) / int64(ranges)
			for a := lo.Int64; a <= hi.Int64; a += step {
				parts = append(parts, fmt.Sprintf(" WHERE `%s` BETWEEN %d AND %d", x.column, a, min(a+step-1, hi.Int64)))
			}
		}
		g, gctx := errgroup.WithContext(ctx)
		for _, where := range parts {
			g.Go(func() error {
				var n int64
				if err := db.QueryRowContext(gctx, "SELECT COUNT(*) FROM "+from+where).Scan(&n); err != nil {
					return err
				}
				if x.name == "PRIMARY" {
					primary.Add(n)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return 0, err
		}
	}
	return primary.Load(), nil
}

// storeCached keeps run's files in the cache. A table that cannot be kept
// is only reported: the load itself succeeded.
func storeCached(ctx context.Context, run *tableRun, opts Options, bar *progress) {
	start := time.Now()
	what := run.target.Name + "." + run.table.name
	err := func() error {
		conn, err := run.target.DB.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		// FOR EXPORT writes the table's pages and its .cfg, and keeps
		// both unchanged until UNLOCK TABLES.
		if _, err := conn.ExecContext(ctx, "FLUSH TABLES `"+run.table.name+"` FOR EXPORT"); err != nil {
			return err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "UNLOCK TABLES")
		ibd, cfg := run.files()
		return opts.Cache.Store(run.key, []string{ibd, cfg})
	}()
	if err != nil {
		bar.note("  %s is not kept in the load cache: %v", what, err)
		return
	}
	run.cache = results.CacheStored
	bar.note("  kept     %-15s in the load cache in %.1fs", what, time.Since(start).Seconds())
}
