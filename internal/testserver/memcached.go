package testserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/sandbox"
)

// MemcachedProc is a private memcached that a test may kill, freeze, thaw
// and restart at the same address. Its methods signal its own pid only and
// are safe for concurrent use.
//
// One from StartMemcached listens on Addr itself and restarts on the same
// port, which another process may have taken meanwhile. One from
// StartRestartableMemcached is reached through a proxy of the test's that
// keeps Addr for as long as the test runs, whatever memcached's own port.
type MemcachedProc struct {
	Addr string // host:port, where clients connect
	Port int    // Addr's port

	args  []string // memcached and its arguments but the port, the same at every restart
	front *Proxy   // when not nil, the proxy at Addr, which forwards to own

	mu     sync.Mutex // serializes Kill, Freeze, Thaw and Restart; guards the fields below
	own    string     // host:port where the process listens: Addr, or front's target
	cmd    *exec.Cmd
	done   chan struct{}    // closed when cmd has exited
	stderr *strings.Builder // cmd's output, to read after done
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a
// moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartMemcached starts a private memcached on port (0: a free one), with
// extra arguments, and stops it when the test ends. It fails the test if
// memcached does not start; with a fixed port it returns nil instead, so
// that a caller can tell a port taken in the meantime.
func StartMemcached(t testing.TB, port int, extra ...string) *MemcachedProc {
	t.Helper()
	mp := &MemcachedProc{args: memcachedArgs(memcachedBin(t), extra)}
	t.Cleanup(mp.Kill)
	var err error
	if port == 0 {
		err = mp.startAnywhere(func(err error) { t.Log(err) })
	} else {
		err = mp.start(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	if err != nil && port != 0 {
		t.Logf("memcached on port %d did not start: %v", port, err)
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	mp.Addr, mp.Port = mp.own, portOf(mp.own)
	return mp
}

// StartRestartableMemcached starts a private memcached, with extra
// arguments, behind a proxy (StartProxy) whose address, Addr, clients use
// for as long as the test runs: Restart starts memcached afresh on a port
// the system gives and points the proxy at it, so no other process can
// have taken Addr meanwhile. While memcached is killed the proxy accepts
// connections and closes them at once, and the proxy's connections to a
// memcached that dies are closed with it: clients see their requests fail,
// as they would against memcached itself. Kill, Freeze and Thaw act on
// memcached, as for StartMemcached's. The test ends it.
func StartRestartableMemcached(t testing.TB, extra ...string) *MemcachedProc {
	t.Helper()
	mp := &MemcachedProc{args: memcachedArgs(memcachedBin(t), extra)}
	t.Cleanup(mp.Kill)
	if err := mp.startAnywhere(func(err error) { t.Log(err) }); err != nil {
		t.Fatal(err)
	}
	mp.front = StartProxy(t, "tcp", mp.own)
	mp.Addr, mp.Port = mp.front.Addr, portOf(mp.front.Addr)
	return mp
}

// portOf is the port of a host:port address.
func portOf(addr string) int {
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	return n
}

// memcachedBin is the memcached program; the test is skipped without it.
func memcachedBin(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("memcached")
	if err != nil {
		t.Skipf("memcached not installed: %v", err)
	}
	return bin
}

// memcachedArgs is memcached's command line on loopback, without the port.
func memcachedArgs(bin string, extra []string) []string {
	args := append([]string{bin, "-l", "127.0.0.1", "-U", "0", "-m", "16"}, extra...)
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root")
	}
	return args
}

// startAnywhere starts memcached on a free port, trying up to five (one
// may be taken between FreePort and memcached's bind); logf hears of each
// that failed. The caller holds mp.mu or has the only reference.
func (mp *MemcachedProc) startAnywhere(logf func(error)) error {
	var err error
	for range 5 {
		port, perr := freePort()
		if perr != nil {
			return perr
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = mp.start(addr); err == nil {
			return nil
		}
		logf(fmt.Errorf("memcached on %s did not start: %w", addr, err))
	}
	return fmt.Errorf("could not start a private memcached: %w", err)
}

// start runs memcached on addr (host:port) and waits until it answers as
// itself; if it does not, it kills it. The caller holds mp.mu or has the
// only reference.
func (mp *MemcachedProc) start(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	mp.own = addr
	args := append(slices.Clone(mp.args), "-p", port)
	cmd := exec.Command(args[0], args[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// Kill memcached if the test binary dies; see internal/sandbox.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	runtime.LockOSThread()
	err = cmd.Start()
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
		pid, err := sandbox.MemcachedPid(mp.own)
		if err == nil && pid == mp.cmd.Process.Pid {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%s is answered by another memcached (pid %d)", mp.own, pid)
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
	if mp.front != nil {
		// Nothing may answer at Addr until a restart: not another
		// process that takes the port memcached leaves.
		mp.front.retarget("")
	}
	if mp.cmd == nil {
		return // never started
	}
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

// Restart starts memcached again, empty, with the same arguments, killing
// it first if it runs (frozen or not), and waits until it answers at Addr.
// One from StartRestartableMemcached starts on a new port of its own and
// the proxy at Addr forwards there from then on: Restart does not meet a
// taken port. One from StartMemcached starts on the same port; if another
// process took it after the kill, the error wraps sandbox.ErrPortInUse.
// The test's cleanup kills the new process.
func (mp *MemcachedProc) Restart() error {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	mp.kill()
	if mp.front != nil {
		if err := mp.startAnywhere(func(error) {}); err != nil {
			return fmt.Errorf("restart memcached behind %s: %w", mp.Addr, err)
		}
		mp.front.retarget(mp.own)
		return nil
	}
	l, err := net.Listen("tcp", mp.Addr)
	if err != nil {
		return fmt.Errorf("restart memcached on %s: %w (%v)", mp.Addr, sandbox.ErrPortInUse, err)
	}
	l.Close()
	if err := mp.start(mp.Addr); err != nil {
		if strings.Contains(err.Error(), "Address already in use") {
			return fmt.Errorf("restart memcached on %s: %w (taken while it started)", mp.Addr, sandbox.ErrPortInUse)
		}
		return fmt.Errorf("restart memcached on %s: %w", mp.Addr, err)
	}
	return nil
}

// RestartMemcached restarts mp (see MemcachedProc.Restart), failing the
// test on any error. A test that restarts memcached at the address its
// clients know uses one from StartRestartableMemcached, whose restart no
// other process can prevent.
func RestartMemcached(t testing.TB, mp *MemcachedProc) {
	t.Helper()
	if err := mp.Restart(); err != nil {
		t.Fatal(err)
	}
}
