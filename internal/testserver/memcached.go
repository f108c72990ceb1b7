package testserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/sandbox"
)

// MemcachedProc is a private memcached that a test may kill, freeze, thaw
// and restart on the same port. Its methods signal its own pid only and
// are safe for concurrent use.
type MemcachedProc struct {
	Addr string // host:port
	Port int

	args []string // memcached and its arguments, the same at every restart

	mu     sync.Mutex // serializes Kill, Freeze, Thaw and Restart; guards the fields below
	cmd    *exec.Cmd
	done   chan struct{}    // closed when cmd has exited
	stderr *strings.Builder // cmd's output, to read after done
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a
// moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartMemcached starts a private memcached on port (0: a free one), with
// extra arguments, and stops it when the test ends. It fails the test if
// memcached does not start; with a fixed port it returns nil instead, so
// that a caller can tell a port taken in the meantime.
func StartMemcached(t testing.TB, port int, extra ...string) *MemcachedProc {
	t.Helper()
	bin, err := exec.LookPath("memcached")
	if err != nil {
		t.Skipf("memcached not installed: %v", err)
	}
	tries := 5
	if port != 0 {
		tries = 1
	}
	for range tries {
		p := port
		if p == 0 {
			p = FreePort(t)
		}
		args := append([]string{bin, "-l", "127.0.0.1", "-p", strconv.Itoa(p), "-U", "0", "-m", "16"}, extra...)
		if os.Geteuid() == 0 {
			args = append(args, "-u", "root")
		}
		mp := &MemcachedProc{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), Port: p, args: args}
		err := mp.start()
		if mp.cmd != nil {
			t.Cleanup(mp.Kill)
		}
		if err == nil {
			return mp
		}
		t.Logf("memcached on port %d did not start: %v", p, err)
	}
	if port != 0 {
		return nil
	}
	t.Fatal("could not start a private memcached")
	return nil
}

// start runs memcached and waits until it answers as itself; if it does
// not, it kills it. The caller holds mp.mu or has the only reference.
func (mp *MemcachedProc) start() error {
	cmd := exec.Command(mp.args[0], mp.args[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// Kill memcached if the test binary dies; see internal/sandbox.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	runtime.LockOSThread()
	err := cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		return fmt.Errorf("start memcached: %w", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	mp.cmd, mp.done, mp.stderr = cmd, done, &stderr
	if err := mp.waitReady(); err != nil {
		mp.kill()
		return fmt.Errorf("%w; memcached said: %q", err, stderr.String())
	}
	return nil
}

// waitReady waits until memcached answers on its port with its own pid (not
// another server's that took the port), for at most 10 seconds.
func (mp *MemcachedProc) waitReady() error {
	deadline := time.Now().Add(10 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-mp.done:
			return errors.New("memcached exited")
		default:
		}
		pid, err := sandbox.MemcachedPid(mp.Addr)
		if err == nil && pid == mp.cmd.Process.Pid {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%s is answered by another memcached (pid %d)", mp.Addr, pid)
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("memcached not ready in 10s: %v", last)
}

// Kill ends this memcached (by its pid), frozen or not, and waits for it to
// exit. Killing it again does nothing.
func (mp *MemcachedProc) Kill() {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	mp.kill()
}

func (mp *MemcachedProc) kill() {
	select {
	case <-mp.done:
		return
	default:
	}
	mp.cmd.Process.Kill()
	<-mp.done
}

// Pid is the process id of the memcached started last, even if it has
// exited since.
func (mp *MemcachedProc) Pid() int {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	return mp.cmd.Process.Pid
}

// Freeze stops memcached with SIGSTOP and returns once all its threads have
// stopped (see sandbox.FreezeProcess): it keeps its port, and clients
// connect and then wait for answers until Thaw or their deadlines.
func (mp *MemcachedProc) Freeze() error {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	select {
	case <-mp.done:
		return fmt.Errorf("freeze memcached on %s: %w", mp.Addr, sandbox.ErrNotRunning)
	default:
	}
	return sandbox.FreezeProcess(mp.cmd.Process)
}

// Thaw lets a frozen memcached go on (SIGCONT). It does nothing to a
// memcached that is not frozen or not running.
func (mp *MemcachedProc) Thaw() error {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	err := mp.cmd.Process.Signal(syscall.SIGCONT)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Restart starts memcached again, empty, on the same port with the same
// arguments, killing it first if it runs (frozen or not), and waits until
// it answers. If another process took the port after the kill, the error
// wraps sandbox.ErrPortInUse. The test's cleanup kills the new process.
func (mp *MemcachedProc) Restart() error {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	mp.kill()
	l, err := net.Listen("tcp", mp.Addr)
	if err != nil {
		return fmt.Errorf("restart memcached on %s: %w (%v)", mp.Addr, sandbox.ErrPortInUse, err)
	}
	l.Close()
	if err := mp.start(); err != nil {
		if strings.Contains(err.Error(), "Address already in use") {
			return fmt.Errorf("restart memcached on %s: %w (taken while it started)", mp.Addr, sandbox.ErrPortInUse)
		}
		return fmt.Errorf("restart memcached on %s: %w", mp.Addr, err)
	}
	return nil
}

// RestartMemcached restarts mp (see MemcachedProc.Restart) on its port and
// returns it, or returns nil if another process took the port meanwhile, as
// StartMemcached does with a fixed port. It fails the test on any other
// error.
func RestartMemcached(t testing.TB, mp *MemcachedProc) *MemcachedProc {
	t.Helper()
	err := mp.Restart()
	if errors.Is(err, sandbox.ErrPortInUse) {
		t.Logf("%v", err)
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return mp
}
