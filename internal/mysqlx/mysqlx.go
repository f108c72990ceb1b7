// Package mysqlx holds what both SQL stores need from MySQL/MariaDB:
// connection settings that make the stores correct (strict mode, utf8mb4,
// UTC times), a pool sized for concurrent load, database creation, and
// transactions that retry on deadlock.
package mysqlx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pushpull/pushpull/timeline"
)

// Options configure Open.
type Options struct {
	// DSN is a go-sql-driver DSN naming the server, e.g.
	// "user:pass@tcp(127.0.0.1:3306)/" or "root@unix(/path/sock)/".
	// A database name in it is overridden by Database.
	DSN string
	// Database to use; created if missing.
	Database string
	// MaxConns caps the pool; 0 means 64. Idle connections are kept up to
	// the same number, so a steady load never reconnects (database/sql's
	// default of 2 idle connections churns under 8 workers).
	MaxConns int
	// Vitess: the server must be a vtgate, and Database an existing
	// keyspace (a keyspace's shards are made with the cluster, not by
	// CREATE DATABASE). Without it, the server must not be one.
	Vitess bool
	// Shard, with Vitess, is one shard of the keyspace ("-80"): the pool's
	// sessions target it, and vtgate sends their statements to that shard
	// unplanned and unrouted, as they are written. "" routes by the
	// VSchema.
	Shard string
}

// validShard is a shard's name: a key range ("-80", "40-80", "80-") or
// "0".
var validShard = regexp.MustCompile(`^([0-9a-f]*-[0-9a-f]*|0)$`)

// ErrWrongServer means a store meant for MariaDB was opened on a vtgate,
// or one meant for Vitess on a plain server.
var ErrWrongServer = errors.New("wrong kind of server")

var validName = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// Open connects to opts.Database, creating it (utf8mb4, binary collation)
// if needed. A server that cannot be reached gives an error matching
// timeline.ErrUnavailable, now and from every later call on the pool that
// finds it down (see conn.go): a connection refused or dropped, not an
// error the server sent, nor the end of the caller's context.
func Open(ctx context.Context, opts Options) (*sql.DB, error) {
	if !validName.MatchString(opts.Database) {
		return nil, fmt.Errorf("database name %q: want 1-64 letters, digits or '_'", opts.Database)
	}
	if opts.Shard != "" && (!opts.Vitess || !validShard.MatchString(opts.Shard)) {
		return nil, fmt.Errorf("shard %q: want a key range such as -80 of a keyspace on Vitess", opts.Shard)
	}
	cfg, err := Config(opts.DSN)
	if err != nil {
		return nil, err
	}
	// Create the database over a connection that names none.
	cfg.DBName = ""
	admin, err := connect(ctx, cfg, 1)
	if err != nil {
		return nil, err
	}
	var version string
	if err := admin.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		admin.Close()
		return nil, fmt.Errorf("connect to %s: %w", cfg.Addr, err)
	}
	vtgate := strings.HasSuffix(version, "-Vitess")
	switch {
	case vtgate && !opts.Vitess:
		admin.Close()
		return nil, fmt.Errorf("%w: %s is a vtgate (open a model made for Vitess, named ...@vitess)", ErrWrongServer, cfg.Addr)
	case !vtgate && opts.Vitess:
		admin.Close()
		return nil, fmt.Errorf("%w: %s is not a vtgate (version %s)", ErrWrongServer, cfg.Addr, version)
	case !vtgate:
		_, err = admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+opts.Database+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
		if err != nil {
			admin.Close()
			return nil, fmt.Errorf("create database %s: %w", opts.Database, err)
		}
		// The push model's fan-out is exact only under REPEATABLE READ,
		// where INSERT ... SELECT locks the rows and gaps it reads, so
		// that a concurrent Follow and Post cannot both miss each other.
		// Pin it per session rather than trust the server's default.
		// MariaDB before 11.1 and MySQL before 5.7.20 spell the variable
		// tx_isolation. (vtgate passes such a setting on to every shard
		// under the name it was given, whatever the shards run, so on
		// Vitess the shards' default, REPEATABLE READ, stands.)
		isolationVar := "transaction_isolation"
		if strings.Contains(version, "MariaDB") {
			isolationVar = "tx_isolation"
		}
		cfg.Params[isolationVar] = "'REPEATABLE-READ'"
	}
	admin.Close()
	cfg.DBName = opts.Database
	if opts.Shard != "" {
		cfg.DBName += ":" + opts.Shard
	}
	n := opts.MaxConns
	if n <= 0 {
		n = 64
	}
	return connect(ctx, cfg, n)
}

// Config parses dsn and sets what the stores rely on.
func Config(dsn string) (*mysql.Config, error) {
	if dsn == "" {
		return nil, errors.New("no DSN given")
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DSN: %w", err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	// Interpolating parameters client-side saves the prepare and close
	// round trips of server-side prepared statements.
	cfg.InterpolateParams = true
	cfg.Collation = "utf8mb4_bin"
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	// Strict mode for all tables: an over-long value is an error, never a
	// silent truncation. time_zone keeps DATETIME values in UTC.
	cfg.Params["sql_mode"] = "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,NO_AUTO_VALUE_ON_ZERO'"
	cfg.Params["time_zone"] = "'+00:00'"
	return cfg, nil
}

func connect(ctx context.Context, cfg *mysql.Config, maxConns int) (*sql.DB, error) {
	conn, err := newConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Addr, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, cfg.Timeout+time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		// A server that answered with an error (bad password, unknown
		// setting) is reachable, and the caller's own deadline or
		// cancellation is the caller's; the rest, this ping's own
		// timeout included, is the server's.
		var me *mysql.MySQLError
		switch {
		case errors.Is(err, timeline.ErrUnavailable): // it names the server
			return nil, fmt.Errorf("connect: %w", err)
		case errors.As(err, &me) || ctx.Err() != nil:
			return nil, fmt.Errorf("connect to MySQL at %s %s: %w", cfg.Net, cfg.Addr, err)
		}
		return nil, fmt.Errorf("connect to MySQL at %s %s: %w: %w", cfg.Net, cfg.Addr, timeline.ErrUnavailable, err)
	}
	return db, nil
}

// retryable reports whether err is a transient conflict that the
// transaction should simply run again: a deadlock, or a lock wait timeout.
// Concurrent Follow and Post on the push model can deadlock on purpose:
// their INSERT ... SELECTs lock each other's index ranges, which is what
// keeps a concurrent follow from missing a concurrent post.
func retryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// InTx runs fn in a transaction, committing if it returns nil, and runs it
// again (up to 10 times, with a short growing pause) after a deadlock or
// a lock wait timeout.
func InTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	return InTxOptions(ctx, db, nil, fn)
}

// InTxOptions is InTx with transaction options (an isolation level); nil
// means the session's REPEATABLE READ.
func InTxOptions(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	const attempts = 10
	var err error
	for i := range attempts {
		if err = inTx(ctx, db, opts, fn); err == nil || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(i+1) * time.Millisecond):
		}
	}
	return fmt.Errorf("gave up after %d tries, each ended by a deadlock or a lock wait timeout: %w", attempts, err)
}

func inTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// ScanMessages reads (id, author_id, body, created_at) rows.
func ScanMessages(rows *sql.Rows, capacity int) ([]timeline.Message, error) {
	defer rows.Close()
	out := make([]timeline.Message, 0, capacity)
	for rows.Next() {
		var m timeline.Message
		if err := rows.Scan(&m.ID, &m.Author, &m.Body, &m.CreatedAt); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// AppendList appends xs to q as a comma-separated list of decimal
// literals, for an IN (...) the caller opens and closes. Statements that
// carry many ids are built this way: every id is an integer the store
// produced itself, so there is nothing to escape.
func AppendList[T ~uint64 | ~int64](q []byte, xs []T) []byte {
	for i, x := range xs {
		if i > 0 {
			q = append(q, ',')
		}
		q = strconv.AppendUint(q, uint64(x), 10) // ids are positive
	}
	return q
}
