package mysqlx

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pushpull/pushpull/timeline"
)

// A store's pool talks to the server through connector, which wraps
// go-sql-driver's: every error of its connections that says the server
// could not be reached, or stopped answering on a connection (a refused
// or vanished socket, a broken pipe, EOF on the wire, the driver's
// ErrInvalidConn or driver.ErrBadConn, a network error that is not the
// caller's deadline), comes back as an unavailableError, which matches
// timeline.ErrUnavailable. So every operation of every store reports a
// server that is down as unavailable, without a store doing anything.
//
// What does not match: an error the server sent (a *mysql.MySQLError:
// duplicate key, syntax, lock wait timeout), and whatever a call returns
// once its own context has ended (its deadline, as context.DeadlineExceeded,
// or its cancellation): the server may be fine, the caller gave up.
//
// The wrappers forward every optional interface of go-sql-driver's
// connections, statements and rows (see TestWrappedInterfaces), or
// database/sql would take slower paths (a prepared statement per query,
// say), and leave every other error as the driver returned it: database/sql
// compares some of them by identity (io.EOF from Rows.Next, driver.ErrSkip,
// driver.ErrRemoveArgument).

// unavailableError is a failure to reach the server at addr. It matches
// timeline.ErrUnavailable and unwraps to the driver's error, so that
// database/sql still finds driver.ErrBadConn in it and retries on a new
// connection.
type unavailableError struct {
	addr string // "unix /path/to/sock", "tcp 127.0.0.1:3306"
	err  error
}

func (e *unavailableError) Error() string {
	return fmt.Sprintf("MySQL at %s: %v: %v", e.addr, timeline.ErrUnavailable, e.err)
}

func (e *unavailableError) Unwrap() error { return e.err }

// Is makes the error match timeline.ErrUnavailable.
func (e *unavailableError) Is(target error) bool { return target == timeline.ErrUnavailable }

// connFailure reports whether err says the server could not be reached or
// dropped the connection, rather than answered.
func connFailure(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) {
		return true
	}
	// A network operation that failed, its own timeouts included (the
	// driver's dial timeout, say); a bare context error is not one, though
	// context.DeadlineExceeded is a net.Error too.
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// callerEnded reports whether ctx, the context of the call that failed,
// has ended: then the failure is the caller's, whatever the driver says.
// (nil: the call has no context, such as Close.)
func callerEnded(ctx context.Context) bool {
	if ctx == nil {
		return false
	}
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// mapErr returns err as an unavailableError if it is a connection failure
// and the call's context (ctx, or nil) has not ended; otherwise err as it
// is.
func (c *connector) mapErr(ctx context.Context, err error) error {
	if err == nil || callerEnded(ctx) || !connFailure(err) {
		return err
	}
	var ue *unavailableError
	if errors.As(err, &ue) {
		return err
	}
	return &unavailableError{addr: c.addr, err: err}
}

// connector wraps go-sql-driver's connector.
type connector struct {
	inner driver.Connector
	addr  string
}

var _ driver.Connector = (*connector)(nil)

func newConnector(cfg *mysql.Config) (*connector, error) {
	inner, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return &connector{inner: inner, addr: cfg.Net + " " + cfg.Addr}, nil
}

// Connect implements driver.Connector.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, c.mapErr(ctx, err)
	}
	mc, ok := dc.(mysqlConn)
	if !ok {
		dc.Close()
		return nil, fmt.Errorf("%w: connection %T", errDriverChanged, dc)
	}
	return &conn{c: c, dc: mc}, nil
}

// errDriverChanged means go-sql-driver no longer implements an interface
// that the wrappers forward: they must follow it (TestWrappedInterfaces
// says which).
var errDriverChanged = errors.New("mysqlx: go-sql-driver lacks an interface the connection wrapper forwards")

// Driver implements driver.Connector.
func (c *connector) Driver() driver.Driver { return c.inner.Driver() }

// mysqlConn is what go-sql-driver's connections implement (and Connect
// asserts): driver.Conn and every optional interface conn forwards.
type mysqlConn interface {
	driver.Conn
	driver.Execer
	driver.ExecerContext
	driver.Queryer
	driver.QueryerContext
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// conn wraps one of go-sql-driver's connections.
type conn struct {
	c  *connector
	dc mysqlConn
}

var _ mysqlConn = (*conn)(nil)

func (cn *conn) Prepare(query string) (driver.Stmt, error) {
	st, err := cn.dc.Prepare(query)
	if err != nil {
		return nil, cn.c.mapErr(nil, err)
	}
	return cn.stmt(st, query)
}

func (cn *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := cn.dc.PrepareContext(ctx, query)
	if err != nil {
		return nil, cn.c.mapErr(ctx, err)
	}
	return cn.stmt(st, query)
}

func (cn *conn) Close() error { return cn.c.mapErr(nil, cn.dc.Close()) }

func (cn *conn) Begin() (driver.Tx, error) {
	tx, err := cn.dc.Begin()
	if err != nil {
		return nil, cn.c.mapErr(nil, err)
	}
	return &connTx{c: cn.c, tx: tx}, nil
}

func (cn *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := cn.dc.BeginTx(ctx, opts)
	if err != nil {
		return nil, cn.c.mapErr(ctx, err)
	}
	return &connTx{c: cn.c, tx: tx, ctx: ctx}, nil
}

func (cn *conn) Exec(query string, args []driver.Value) (driver.Result, error) {
	r, err := cn.dc.Exec(query, args)
	return r, cn.c.mapErr(nil, err)
}

func (cn *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	observe(ctx, query, args)
	r, err := cn.dc.ExecContext(ctx, query, args)
	return r, cn.c.mapErr(ctx, err)
}

func (cn *conn) Query(query string, args []driver.Value) (driver.Rows, error) {
	rs, err := cn.dc.Query(query, args)
	if err != nil {
		return nil, cn.c.mapErr(nil, err)
	}
	return cn.c.rows(nil, rs)
}

func (cn *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	observe(ctx, query, args)
	rs, err := cn.dc.QueryContext(ctx, query, args)
	if err != nil {
		return nil, cn.c.mapErr(ctx, err)
	}
	return cn.c.rows(ctx, rs)
}

func (cn *conn) Ping(ctx context.Context) error { return cn.c.mapErr(ctx, cn.dc.Ping(ctx)) }

// ResetSession, IsValid and CheckNamedValue speak to database/sql only,
// which compares CheckNamedValue's errors by identity: forwarded as they
// are.

func (cn *conn) ResetSession(ctx context.Context) error      { return cn.dc.ResetSession(ctx) }
func (cn *conn) IsValid() bool                               { return cn.dc.IsValid() }
func (cn *conn) CheckNamedValue(nv *driver.NamedValue) error { return cn.dc.CheckNamedValue(nv) }

// observerKey keys the function WithObserver puts in a context.
type observerKey struct{}

// Observer sees a statement before it runs: its text, with a '?' for
// each argument, and its arguments.
type Observer func(query string, args []any)

// WithObserver returns a context under which every statement a pool of
// this package runs (ExecContext, QueryContext, and the QueryRowContext
// built on it, of the pool or of a statement prepared on it) is shown to see first, in the goroutine that runs it: a
// test sees what a store sends to the server for one call. A store may
// run statements of one call in parallel, so see must be safe for
// concurrent use.
func WithObserver(ctx context.Context, see Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, see)
}

func observe(ctx context.Context, query string, args []driver.NamedValue) {
	see, ok := ctx.Value(observerKey{}).(Observer)
	if !ok {
		return
	}
	values := make([]any, len(args))
	for i, a := range args {
		values[i] = a.Value
	}
	see(query, values)
}

// connTx wraps a transaction begun under ctx (nil: Begin).
type connTx struct {
	c   *connector
	tx  driver.Tx
	ctx context.Context
}

func (t *connTx) Commit() error   { return t.c.mapErr(t.ctx, t.tx.Commit()) }
func (t *connTx) Rollback() error { return t.c.mapErr(t.ctx, t.tx.Rollback()) }

// mysqlStmt is what go-sql-driver's statements implement.
type mysqlStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
	driver.ColumnConverter
	driver.NamedValueChecker
}

// stmt wraps a prepared statement of query, which an Observer sees at
// each execution.
type stmt struct {
	c     *connector
	st    mysqlStmt
	query string
}

var _ mysqlStmt = (*stmt)(nil)

func (cn *conn) stmt(st driver.Stmt, query string) (driver.Stmt, error) {
	ms, ok := st.(mysqlStmt)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("%w: statement %T", errDriverChanged, st)
	}
	return &stmt{c: cn.c, st: ms, query: query}, nil
}

func (s *stmt) Close() error  { return s.c.mapErr(nil, s.st.Close()) }
func (s *stmt) NumInput() int { return s.st.NumInput() }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	r, err := s.st.Exec(args)
	return r, s.c.mapErr(nil, err)
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	rs, err := s.st.Query(args)
	if err != nil {
		return nil, s.c.mapErr(nil, err)
	}
	return s.c.rows(nil, rs)
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	observe(ctx, s.query, args)
	r, err := s.st.ExecContext(ctx, args)
	return r, s.c.mapErr(ctx, err)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	observe(ctx, s.query, args)
	rs, err := s.st.QueryContext(ctx, args)
	if err != nil {
		return nil, s.c.mapErr(ctx, err)
	}
	return s.c.rows(ctx, rs)
}

func (s *stmt) ColumnConverter(idx int) driver.ValueConverter { return s.st.ColumnConverter(idx) }
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error   { return s.st.CheckNamedValue(nv) }

// mysqlRows is what go-sql-driver's rows implement.
type mysqlRows interface {
	driver.Rows
	driver.RowsNextResultSet
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// rows wraps the rows of a query run under ctx (nil: without one). io.EOF
// from Next and NextResultSet is their normal end, returned as it is.
type rows struct {
	c   *connector
	rs  mysqlRows
	ctx context.Context
}

var _ mysqlRows = (*rows)(nil)

func (c *connector) rows(ctx context.Context, rs driver.Rows) (driver.Rows, error) {
	mr, ok := rs.(mysqlRows)
	if !ok {
		rs.Close()
		return nil, fmt.Errorf("%w: rows %T", errDriverChanged, rs)
	}
	return &rows{c: c, rs: mr, ctx: ctx}, nil
}

func (r *rows) Columns() []string { return r.rs.Columns() }
func (r *rows) Close() error      { return r.c.mapErr(r.ctx, r.rs.Close()) }

func (r *rows) Next(dest []driver.Value) error {
	err := r.rs.Next(dest)
	if err == io.EOF {
		return err
	}
	return r.c.mapErr(r.ctx, err)
}

func (r *rows) HasNextResultSet() bool { return r.rs.HasNextResultSet() }

func (r *rows) NextResultSet() error {
	err := r.rs.NextResultSet()
	if err == io.EOF {
		return err
	}
	return r.c.mapErr(r.ctx, err)
}

func (r *rows) ColumnTypeDatabaseTypeName(i int) string { return r.rs.ColumnTypeDatabaseTypeName(i) }
func (r *rows) ColumnTypeNullable(i int) (nullable, ok bool) {
	return r.rs.ColumnTypeNullable(i)
}
func (r *rows) ColumnTypePrecisionScale(i int) (precision, scale int64, ok bool) {
	return r.rs.ColumnTypePrecisionScale(i)
}
func (r *rows) ColumnTypeScanType(i int) reflect.Type { return r.rs.ColumnTypeScanType(i) }
