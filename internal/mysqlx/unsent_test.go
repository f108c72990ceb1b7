package mysqlx_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/timeline"
)

// TestUnsent: only a refused input proves a write changed nothing to a
// store; a refused connection, a cancellation, a deadline, a dropped
// connection or an error the server sent do not.
func TestUnsent(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"invalid input", fmt.Errorf("post: %w", timeline.ErrInvalidInput), true},
		{"refused", fmt.Errorf("post: %w", refused), false},
		{"canceled", fmt.Errorf("post: %w", context.Canceled), false},
		{"deadline", context.DeadlineExceeded, false},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, false},
		{"invalid connection", mysql.ErrInvalidConn, false},
		{"lock wait timeout", &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded"}, false},
		{"unavailable", fmt.Errorf("%w: gone", timeline.ErrUnavailable), false},
	} {
		if got := mysqlx.Unsent(c.err); got != c.want {
			t.Errorf("%s: Unsent(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestDetached: the context outlives its parent's cancellation, keeps a
// later deadline of the parent's, and otherwise ends d from now.
func TestDetached(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Hour)
	start := time.Now()
	ctx, stop := mysqlx.Detached(parent, time.Minute)
	defer stop()
	cancel()
	if err := ctx.Err(); err != nil {
		t.Fatalf("detached context ended with its parent: %v", err)
	}
	if dl, ok := ctx.Deadline(); !ok || dl.Before(start.Add(59*time.Minute)) {
		t.Fatalf("deadline %v (%v), want the parent's, an hour from %v", dl, ok, start)
	}
	short, stop2 := mysqlx.Detached(context.Background(), time.Minute)
	defer stop2()
	if dl, ok := short.Deadline(); !ok || dl.After(time.Now().Add(time.Minute)) || dl.Before(start.Add(time.Minute)) {
		t.Fatalf("deadline %v (%v), want a minute from %v", dl, ok, start)
	}
}
