package testserver

import (
	"errors"
	"testing"

	"github.com/pushpull/pushpull/internal/sandbox"
)

// StartFaultRedis starts, for one test, a redis-server of its own (no
// persistence, a loopback port) in a sandbox that holds nothing else, for
// tests that freeze, kill and restart it through the returned handle
// (see sandbox.Proc; Addr is where clients connect, and stays valid
// across restarts). The package's shared redis-server is not used: a
// fault test must not break other tests' servers.
//
// The test is skipped when redis-server is missing or with -short; it
// fails if the server does not start. When the test ends, its cleanup
// thaws the server and stops the sandbox.
func StartFaultRedis(t testing.TB) *sandbox.Proc {
	t.Helper()
	if testing.Short() {
		t.Skip("fault test: starts its own redis-server")
	}
	sb, err := sandbox.Start(t.Context(), sandbox.Options{Redis: true, BaseDir: baseDir()})
	if errors.Is(err, sandbox.ErrMissingBinary) {
		t.Skipf("fault test: %v", err)
	}
	if err != nil {
		t.Fatalf("redis sandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Redis().Thaw(); err != nil {
			t.Errorf("redis sandbox: %v", err)
		}
		if err := sb.Stop(); err != nil {
			t.Errorf("redis sandbox: %v", err)
		}
	})
	return sb.Redis()
}
