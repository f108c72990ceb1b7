package testserver

import (
	"bufio"
	"database/sql"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/sandbox"
)

func gone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// mcDo sends one command to the memcached at addr and returns its answer up
// to END or STORED, waiting at most timeout in all.
func mcDo(addr, cmd string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	var out strings.Builder
	for {
		line, err := r.ReadString('\n')
		out.WriteString(line)
		if err != nil {
			return out.String(), err
		}
		if s := strings.TrimSpace(line); s == "END" || s == "STORED" || s == "ERROR" {
			return out.String(), nil
		}
	}
}

func mustDo(t *testing.T, addr, cmd, want string) {
	t.Helper()
	if got, err := mcDo(addr, cmd, 5*time.Second); err != nil || got != want {
		t.Fatalf("%q on %s: %q, %v; want %q", cmd, addr, got, err, want)
	}
}

// TestStartFaultSandbox leaves its servers frozen at the end of a subtest:
// the cleanup still stops them all and removes the directory.
func TestStartFaultSandbox(t *testing.T) {
	var sb *sandbox.Sandbox
	var pids []int
	t.Run("frozen", func(t *testing.T) {
		sb = StartFaultSandbox(t, 2, true)
		if len(sb.MemcacheAddrs) != 2 {
			t.Fatalf("MemcacheAddrs %v, want 2", sb.MemcacheAddrs)
		}
		db, err := sql.Open("mysql", sb.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var flush string
		if err := db.QueryRow("SELECT @@innodb_flush_log_at_trx_commit").Scan(&flush); err != nil || flush != "1" {
			t.Fatalf("durable sandbox: innodb_flush_log_at_trx_commit %q, %v", flush, err)
		}
		for _, p := range []*sandbox.Proc{sb.MariaDB(), sb.Memcached(0), sb.Memcached(1)} {
			if err := p.Freeze(); err != nil {
				t.Fatal(err)
			}
			pids = append(pids, p.Pid())
		}
	})
	if sb == nil {
		return // skipped
	}
	for _, pid := range pids {
		if !gone(pid) {
			t.Errorf("pid %d left after the test's cleanup", pid)
		}
	}
	if _, err := os.Stat(sb.Dir); !os.IsNotExist(err) {
		t.Errorf("fault sandbox directory left: %v", err)
	}
}

// TestMemcachedProcFaults freezes, thaws, kills and restarts a
// restartable memcached, which answers at the same address throughout and
// never meets a taken port; and checks that one listening on its own port
// reports a port taken after the kill.
func TestMemcachedProcFaults(t *testing.T) {
	mp := StartRestartableMemcached(t)
	mustDo(t, mp.Addr, "set k 0 0 1\r\nv\r\n", "STORED\r\n")

	defer mp.Thaw()
	if err := mp.Freeze(); err != nil {
		t.Fatal(err)
	}
	got, err := mcDo(mp.Addr, "get k\r\n", 300*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("get from a frozen memcached: %q, %v; want a timeout", got, err)
	}
	if err := mp.Thaw(); err != nil {
		t.Fatal(err)
	}
	mustDo(t, mp.Addr, "get k\r\n", "VALUE k 0 1\r\nv\r\nEND\r\n")

	old, oldOwn := mp.Pid(), mp.own
	mp.Kill()
	if !gone(old) {
		t.Fatalf("pid %d left after Kill", old)
	}
	if got, err := mcDo(mp.Addr, "get k\r\n", 5*time.Second); err == nil {
		t.Fatalf("a killed memcached answered at %s: %q", mp.Addr, got)
	}
	// Whatever takes the port it left is not reached at Addr.
	if l, err := net.Listen("tcp", oldOwn); err == nil {
		defer l.Close()
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Write([]byte("END\r\n"))
				c.Close()
			}
		}()
		if got, err := mcDo(mp.Addr, "get k\r\n", 5*time.Second); err == nil {
			t.Fatalf("with memcached killed, %s forwarded to whatever took its port: %q", mp.Addr, got)
		}
	}
	if err := mp.Freeze(); !errors.Is(err, sandbox.ErrNotRunning) {
		t.Fatalf("Freeze after Kill: %v", err)
	}
	if err := mp.Thaw(); err != nil {
		t.Fatalf("Thaw after Kill: %v", err)
	}
	RestartMemcached(t, mp)
	if pid, err := sandbox.MemcachedPid(mp.Addr); err != nil || pid != mp.Pid() || pid == old {
		t.Fatalf("after Restart: %s answers as pid %d (%v); Pid %d, old %d", mp.Addr, pid, err, mp.Pid(), old)
	}
	mustDo(t, mp.Addr, "get k\r\n", "END\r\n")

	// Restart of a running (here frozen) memcached kills it first.
	old = mp.Pid()
	if err := mp.Freeze(); err != nil {
		t.Fatal(err)
	}
	RestartMemcached(t, mp)
	if !gone(old) || mp.Pid() == old {
		t.Fatalf("Restart of a frozen memcached: old pid %d gone %v, new pid %d", old, gone(old), mp.Pid())
	}
	mustDo(t, mp.Addr, "get k\r\n", "END\r\n")

	// One on its own port: another process may take the port after the
	// kill, and Restart says so. Here the test takes it (or finds it
	// taken already).
	direct := StartMemcached(t, 0)
	direct.Kill()
	if l, err := net.Listen("tcp", direct.Addr); err == nil {
		defer l.Close()
	}
	if err := direct.Restart(); !errors.Is(err, sandbox.ErrPortInUse) {
		t.Fatalf("Restart on a taken port: %v", err)
	}
}
