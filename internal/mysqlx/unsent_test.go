package mysqlx_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/timeline"
)

// TestUnsent: only a refused input or a refused connection proves a write
// changed nothing; a cancellation, a deadline, a dropped connection or an
// error the server sent do not.
func TestUnsent(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"invalid input", fmt.Errorf("post: %w", timeline.ErrInvalidInput), true},
		{"refused", fmt.Errorf("post: %w", refused), true},
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
