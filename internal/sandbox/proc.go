package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	// ErrStopped means the sandbox was stopped: its servers cannot be
	// restarted.
	ErrStopped = errors.New("sandbox stopped")
	// ErrNotRunning means a server is not running (it was killed, or
	// died), so it cannot be frozen.
	ErrNotRunning = errors.New("server not running")
	// ErrPortInUse means another process listens on the port a killed
	// memcached is to be restarted on.
	ErrPortInUse = errors.New("port in use")
)

// Proc is one server of a sandbox, as a handle for fault tests: kill it,
// freeze it, thaw it, restart it. Every signal goes to the server's own
// pid, never to a process group or a name.
//
// A Proc is one server across restarts: Pid and Running describe its
// current process, and it keeps its socket or port, data directory,
// settings and log file. Its methods are safe for concurrent use; Kill,
// Freeze, Thaw and Restart run one at a time.
type Proc struct {
	sb    *Sandbox
	name  string   // "mariadbd", "memcached", "memcached 1", "redis-server"
	bin   string   // the program
	args  []string // its arguments, the same at every restart
	log   string   // where its output goes, appended at every restart
	addr  string   // MariaDB's socket path, or memcached's or Redis's host:port
	port  int      // memcached's or Redis's port; 0 for MariaDB
	ready func(ctx context.Context, srv *server) error

	ops sync.Mutex // serializes Kill, Freeze, Thaw and Restart
	cur atomic.Pointer[server]
}

// MariaDB returns the handle of the sandbox's MariaDB, or nil if it
// started none.
func (sb *Sandbox) MariaDB() *Proc { return sb.mariadb }

// Memcached returns the handle of the i-th memcached, the one at
// MemcacheAddrs[i]. It panics if there is no such server.
func (sb *Sandbox) Memcached(i int) *Proc {
	if i < 0 || i >= len(sb.memcached) {
		panic(fmt.Sprintf("sandbox: Memcached(%d) of %d memcached servers", i, len(sb.memcached)))
	}
	return sb.memcached[i]
}

// Name names the server in errors: "mariadbd", "redis-server",
// "memcached" or, when the sandbox has several, "memcached 1".
func (p *Proc) Name() string { return p.name }

// Addr is where the server listens: MariaDB's unix socket path, or
// memcached's or Redis's host:port. It does not change on Restart.
func (p *Proc) Addr() string { return p.addr }

// Log is the server's log file. Restart appends to it.
func (p *Proc) Log() string { return p.log }

// Pid is the process id of the server's current process: the one started
// last, even if it has exited since (a test can check that a pid is gone).
func (p *Proc) Pid() int {
	if srv := p.cur.Load(); srv != nil {
		return srv.cmd.Process.Pid
	}
	return 0
}

// Running reports whether the current process has not exited. A frozen
// server is running.
func (p *Proc) Running() bool { return p.running() != nil }

func (p *Proc) running() *server {
	srv := p.cur.Load()
	if srv == nil {
		return nil
	}
	select {
	case <-srv.done:
		return nil
	default:
		return srv
	}
}

// Kill sends SIGKILL to the server, frozen or not, and waits for it to
// exit: a crash, with no shutdown of any kind. The data directory is kept
// for Restart. Killing a server that is not running does nothing.
//
// What a killed MariaDB keeps depends on its settings: see TestSettings
// and DurableTestSettings. A killed memcached keeps nothing.
func (p *Proc) Kill() error {
	p.ops.Lock()
	defer p.ops.Unlock()
	return p.kill()
}

func (p *Proc) kill() error {
	srv := p.cur.Load()
	if srv == nil {
		return nil
	}
	return p.sb.stopServer(srv)
}

// Freeze sends SIGSTOP to the server and returns once all its threads
// have stopped. The process keeps its sockets: clients still connect (the
// kernel completes the handshake into the listen backlog) and then block
// until the server is thawed or their own deadlines pass, as with a
// server that hangs or a machine that stops answering. It fails with
// ErrNotRunning if the server is not running.
func (p *Proc) Freeze() error {
	p.ops.Lock()
	defer p.ops.Unlock()
	srv := p.running()
	if srv == nil {
		return fmt.Errorf("freeze %s: %w", p.name, ErrNotRunning)
	}
	if err := FreezeProcess(srv.cmd.Process); err != nil {
		return fmt.Errorf("freeze %s: %w", p.name, err)
	}
	return nil
}

// Thaw sends SIGCONT to the server, which goes on from where Freeze
// stopped it. Thawing a server that is not frozen, or not running, does
// nothing.
func (p *Proc) Thaw() error {
	p.ops.Lock()
	defer p.ops.Unlock()
	srv := p.running()
	if srv == nil {
		return nil
	}
	if err := srv.cmd.Process.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("thaw %s (pid %d): %w", p.name, srv.cmd.Process.Pid, err)
	}
	return nil
}

// Restart starts the server again where it was: the same program and
// arguments, on the same unix socket or port, with the same data
// directory and settings. It kills the server first if it is running
// (frozen or not), then waits until the new process answers, for as long
// as ctx allows; if it does not, Restart kills it and returns an error
// that carries the tail of its log.
//
// MariaDB restarts with its data: InnoDB's crash recovery replays the
// redo log, so the commits that reached the log survive (all
// acknowledged ones with DurableTestSettings; see TestSettings for what a
// non-durable server loses). It answers only once recovery is done: a
// fraction of a second for a small test database, longer the more redo
// log there is to replay since the last checkpoint. The Sandbox's DSN and
// Socket stay valid.
//
// memcached and Redis restart empty on the same port. If another process took the
// port after the kill, Restart fails with an error wrapping ErrPortInUse.
// It fails with ErrStopped after Sandbox.Stop.
func (p *Proc) Restart(ctx context.Context) error {
	p.ops.Lock()
	defer p.ops.Unlock()
	if err := p.kill(); err != nil {
		return fmt.Errorf("restart %s: %w", p.name, err)
	}
	if p.port != 0 {
		// memcached and Redis set SO_REUSEADDR, as net.Listen does, so sockets
		// of the killed process left in TIME_WAIT do not count.
		l, err := net.Listen("tcp", p.addr)
		if err != nil {
			return fmt.Errorf("restart %s on %s: %w (%v)", p.name, p.addr, ErrPortInUse, err)
		}
		l.Close()
	}
	err := p.start(ctx, "restart")
	if err != nil && p.port != 0 && strings.Contains(tailFile(p.log, 5), "Address already in use") {
		return fmt.Errorf("restart %s on %s: %w (taken while it started)", p.name, p.addr, ErrPortInUse)
	}
	return err
}

// start spawns the server and waits until it answers; if it does not, it
// kills the new process. verb ("start", "restart") begins its errors.
func (p *Proc) start(ctx context.Context, verb string) error {
	srv, err := p.sb.spawn(p.name, p.log, p.bin, p.args...)
	if err != nil {
		return fmt.Errorf("%s %w", verb, err)
	}
	p.cur.Store(srv)
	if err := p.sb.waitReady(ctx, verb, srv, func() error { return p.ready(ctx, srv) }); err != nil {
		p.sb.stopServer(srv)
		p.sb.mu.Lock()
		stopped := p.sb.stopped
		p.sb.mu.Unlock()
		if stopped { // Stop killed it while it started
			return fmt.Errorf("%s %s: %w", verb, p.name, ErrStopped)
		}
		return err
	}
	return nil
}

// FreezeProcess sends SIGSTOP to proc and waits, for at most 10 seconds,
// until every one of its threads has stopped, so that on return the
// process answers nothing. It reads the threads' states from /proc
// (Linux). Proc.Freeze uses it; tests that run a server of their own can
// too. Resume the process with proc.Signal(syscall.SIGCONT).
func FreezeProcess(proc *os.Process) error {
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP pid %d: %w", proc.Pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		stopped, err := allThreadsStopped(proc.Pid)
		if err != nil {
			return err
		}
		if stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d: not stopped 10s after SIGSTOP", proc.Pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// allThreadsStopped reports whether every thread of pid is in the stopped
// state ('T'). A process that has exited is an error.
func allThreadsStopped(pid int) (bool, error) {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "stat"))
	if err != nil || len(tasks) == 0 {
		return false, fmt.Errorf("pid %d: no threads in /proc (exited?)", pid)
	}
	live := 0
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // a thread that exited meanwhile
		}
		// "tid (comm) S ...": comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) {
			return false, fmt.Errorf("pid %d: cannot parse %s: %q", pid, path, s)
		}
		switch s[i+2] {
		case 'T', 't':
			live++
		case 'Z', 'X': // an exited thread (or process)
		default:
			return false, nil
		}
	}
	if live == 0 {
		return false, fmt.Errorf("pid %d: exited", pid)
	}
	return true, nil
}
