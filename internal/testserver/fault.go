package testserver

import (
	"errors"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/sandbox"
)

// StartFaultSandbox starts, for one test, a private MariaDB, n memcached
// servers (none when n is 0) and a redis-server in a sandbox of their
// own, for fault tests that kill, freeze and restart them through
// sb.MariaDB(), sb.Memcached(i) and sb.Redis() (see sandbox.Proc). The package's shared servers, and
// PUSHPULL_TEST_DSN, are not used: a fault test must not break other
// tests' servers.
//
// durable chooses sandbox.DurableTestSettings, under which every commit
// acknowledged before a kill -9 survives the restart; otherwise the
// servers run with sandbox.TestSettings, which lose the last second or so
// of commits. The sandbox lives on tmpfs when there is one (see baseDir),
// where durable commits cost little.
//
// When the test ends, its cleanup thaws frozen servers and stops the
// sandbox (every process it started, restarts included) and removes its
// directory. The test is skipped when the server programs are missing or
// with -short; it fails if the servers do not start.
func StartFaultSandbox(t testing.TB, n int, durable bool) *sandbox.Sandbox {
	t.Helper()
	if testing.Short() {
		t.Skip("fault test: starts its own servers")
	}
	settings := sandbox.TestSettings()
	if durable {
		settings = sandbox.DurableTestSettings()
	}
	start := time.Now()
	sb, err := sandbox.Start(t.Context(), sandbox.Options{
		MariaDB:        true,
		Memcached:      n > 0,
		MemcachedCount: n,
		MemcachedMB:    16,
		Redis:          true,
		Settings:       settings,
		BaseDir:        baseDir(),
	})
	if errors.Is(err, sandbox.ErrMissingBinary) {
		t.Skipf("fault test: %v", err)
	}
	if err != nil {
		t.Fatalf("fault sandbox: %v", err)
	}
	t.Logf("fault sandbox in %s started in %v", sb.Dir, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		// Stop's SIGKILL ends frozen servers too; the thaw first only
		// makes sure no server is left stopped should Stop fail.
		procs := []*sandbox.Proc{sb.MariaDB(), sb.Redis()}
		for i := range sb.MemcacheAddrs {
			procs = append(procs, sb.Memcached(i))
		}
		for _, p := range procs {
			if err := p.Thaw(); err != nil {
				t.Errorf("fault sandbox: %v", err)
			}
		}
		if err := sb.Stop(); err != nil {
			t.Errorf("fault sandbox: %v", err)
		}
	})
	return sb
}
