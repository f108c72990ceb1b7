// Package sandbox starts private, throw-away MariaDB, memcached and Redis
// servers in a temporary directory: the tests use it so that they run against real
// servers, and the CLI uses it when no --dsn is given.
//
// MariaDB listens only on a unix socket inside the directory (networking
// off), so sandboxes never collide with each other or with a system server.
// memcached and Redis listen on free loopback ports; Redis keeps nothing
// on disk (no snapshots, no append-only file). Stop ends exactly the processes
// the sandbox started, by pid, and removes the directory.
//
// Fault tests address each server by a Proc (Sandbox.MariaDB,
// Sandbox.Memcached, Sandbox.Redis) to kill it with SIGKILL, freeze and thaw it with
// SIGSTOP and SIGCONT, and restart it where it was: on the same socket or
// port, with the same data directory and settings.
// Sandbox.Vtcombo gives them the Vitess cluster's vtcombo, to freeze and
// thaw by its pid.
package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options says what to start.
type Options struct {
	// MariaDB, Memcached and Redis choose the servers to start.
	MariaDB   bool
	Memcached bool
	Redis     bool

	// Settings are mariadbd options (without the leading "--"), applied
	// over DefaultSettings. Keys may use '-' or '_'.
	Settings map[string]string

	// MemcachedCount is how many memcached servers to start when
	// Memcached is set, each on its own free loopback port; 0 means 1.
	MemcachedCount int

	// MemcachedMB is each memcached's memory limit; 0 means 256.
	MemcachedMB int

	// BaseDir is where the temporary directory is made; "" means
	// $PUSHPULL_SANDBOX_DIR, else the system temp directory.
	BaseDir string

	// StartTimeout bounds the wait for readiness; 0 means 2 minutes (5
	// with Vitess, whose cluster takes about half a minute to start on
	// an idle machine).
	StartTimeout time.Duration

	// Vitess starts a Vitess cluster (see startVitess) with Keyspaces,
	// each sharded by user into Shards shards.
	Vitess bool
	// Shards is the number of shards of each keyspace; 0 means 2.
	Shards int
	// Keyspaces are the sharded keyspaces to make; nil means
	// DefaultKeyspaces.
	Keyspaces []string
	// VitessSettings are options of the Vitess cluster's mysqld, over
	// Vitess's own for tests (a 32 MB buffer pool, commits not flushed,
	// no doublewrite): the benchmark gives it the MariaDB sandbox's, so
	// that the two servers differ only in what Vitess needs (its binary
	// log).
	VitessSettings map[string]string
}

// DefaultSettings are the mariadbd options used for the benchmark: a buffer
// pool large enough to hold the paper-scale push database (about 3 GB), a
// large redo log so that fan-out writes are not throttled by checkpoints,
// durability as MySQL ships it, and MariaDB's thread pool. Tests use
// TestSettings.
//
// The thread pool (thread_handling=pool-of-threads) runs about one
// statement per core and queues the others. With MariaDB's own default, a
// thread per connection, an open loop's 64 operations in flight are 64
// runnable threads on the machine's cores; one that holds a latch the
// others need loses its core, and every operation behind the latch waits:
// a power-law unfollow mix at 5,000 operations a second had 1 to 10 of 164
// windows with p99 above 50 ms in each of five runs without the pool and
// none with it, and push's highest rate within 50 ms at 3,000 users rose
// from 5,579 to 9,051 a second (evidence/plan/thread-pool). Override it
// with thread_handling=one-thread-per-connection.
func DefaultSettings() map[string]string {
	return map[string]string{
		"innodb_buffer_pool_size":        "6G",
		"innodb_log_file_size":           "2G",
		"innodb_log_buffer_size":         "64M",
		"innodb_flush_log_at_trx_commit": "1",
		"innodb_flush_method":            "O_DIRECT",
		"max_connections":                "1000",
		"max_allowed_packet":             "256M",
		"character_set_server":           "utf8mb4",
		"collation_server":               "utf8mb4_bin",
		"performance_schema":             "OFF",
		"skip_name_resolve":              "ON",
		"local_infile":                   "ON",
		"thread_cache_size":              "128",
		"thread_handling":                "pool-of-threads",
		"table_open_cache":               "4000",
		"tmp_table_size":                 "64M",
		"max_heap_table_size":            "64M",
	}
}

// TestSettings are small, fast, non-durable options for unit tests, which
// create and drop many small databases.
//
// They are not durable against a kill -9 (Proc.Kill) either: with
// innodb_flush_log_at_trx_commit=0 a commit does not write the redo log;
// a background thread writes it about once a second. A transaction
// acknowledged as committed in the last second or so before the kill is
// lost when the server restarts. Fault tests that check which commits
// survive use DurableTestSettings.
func TestSettings() map[string]string {
	s := DefaultSettings()
	s["innodb_buffer_pool_size"] = "256M"
	s["innodb_log_file_size"] = "128M"
	s["innodb_log_buffer_size"] = "16M"
	s["innodb_flush_log_at_trx_commit"] = "0"
	s["innodb_doublewrite"] = "0"
	s["sync_binlog"] = "0"
	delete(s, "innodb_flush_method") // O_DIRECT fails on tmpfs
	return s
}

// DurableTestSettings are TestSettings made durable, for fault tests that
// kill mariadbd and check that every acknowledged commit survives the
// restart: each commit writes and syncs the redo log
// (innodb_flush_log_at_trx_commit=1), and the doublewrite buffer is back
// on, since a process killed in the middle of writing a page can leave it
// torn (sync_binlog=1 too, should a caller turn the binary log on). On
// tmpfs the syncs cost nearly nothing.
//
// Pass them as Options.Settings, or apply the same keys over any other
// settings.
func DurableTestSettings() map[string]string {
	s := TestSettings()
	s["innodb_flush_log_at_trx_commit"] = "1"
	s["innodb_doublewrite"] = "1"
	s["sync_binlog"] = "1"
	return s
}

// Sandbox is a set of running servers. Its fields are read-only; they stay
// valid across restarts (see Proc.Restart).
type Sandbox struct {
	Dir           string            // the private directory holding data, sockets and logs
	DSN           string            // go-sql-driver DSN for root over the unix socket, no database
	Socket        string            // MariaDB's unix socket
	MemcacheAddr  string            // host:port of the first memcached (MemcacheAddrs[0])
	MemcacheAddrs []string          // host:port of every memcached, in the order of Memcached(i)
	Settings      map[string]string // the mariadbd options in effect
	RedisAddr     string            // host:port of the redis-server; "" without Options.Redis

	// VtgateDSN is the go-sql-driver DSN of the Vitess cluster's vtgate
	// (no keyspace) over TCP, VtgateSocketDSN the same vtgate over a unix
	// socket in the sandbox (empty if the sandbox's path is too long for
	// one), VtgateStatus the host:port of its status pages (/debug/vars,
	// and Go's profiles at /debug/pprof), Keyspaces its sharded keyspaces
	// and Shards the shards of each; all empty without Options.Vitess.
	VtgateDSN       string
	VtgateSocketDSN string
	VtgateStatus    string
	Keyspaces       []string
	Shards          int
	// VitessMysqldDSN is the go-sql-driver DSN (no database) of the one
	// mysqld under every tablet of the cluster, as root: a shard of
	// keyspace K is its database vt_K_SHARD. For tests that act on a
	// shard behind vtgate's back; empty without Options.Vitess.
	VitessMysqldDSN string

	mariadb   *Proc
	memcached []*Proc
	redis     *Proc
	vitess    *server // vttestserver, leader of the Vitess cluster's process group

	mu        sync.Mutex
	extraDirs []string  // directories outside Dir that Stop removes
	procs     []*server // every process ever spawned, restarts included
	stopped   bool
}

type server struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, valid after done
	// group: the server leads a process group of its own (pgid = its
	// pid) holding the processes it started, and is stopped with them.
	group bool
	// guard kills the group if this process dies without Stop (see
	// startGuard); nil for a server that is not a group.
	guard *exec.Cmd
}

// ErrMissingBinary means a server program is not installed.
var ErrMissingBinary = errors.New("server binary not found (run `make deps` to install mariadb-server, memcached and redis-server)")

// Start starts the servers opts asks for and waits until they answer. On
// failure it stops whatever it started and its error carries the tail of
// the failing server's log.
func Start(ctx context.Context, opts Options) (_ *Sandbox, err error) {
	if opts.MemcachedCount < 0 {
		return nil, fmt.Errorf("sandbox: MemcachedCount %d is negative", opts.MemcachedCount)
	}
	base := opts.BaseDir
	if base == "" {
		base = os.Getenv("PUSHPULL_SANDBOX_DIR")
	}
	dir, err := os.MkdirTemp(base, "pushpull-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	sb := &Sandbox{Dir: dir}
	defer func() {
		if err != nil {
			sb.Stop()
		}
	}()
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
		if opts.Vitess {
			timeout = 5 * time.Minute
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if opts.MariaDB {
		if err := sb.startMariaDB(ctx, opts.Settings); err != nil {
			return nil, err
		}
	}
	if opts.Memcached {
		n := max(opts.MemcachedCount, 1)
		for i := range n {
			if err := sb.startMemcached(ctx, opts.MemcachedMB, i, n); err != nil {
				return nil, err
			}
		}
		sb.MemcacheAddr = sb.MemcacheAddrs[0]
	}
	if opts.Redis {
		if err := sb.startRedis(ctx); err != nil {
			return nil, err
		}
	}
	if opts.Vitess {
		if err := sb.startVitess(ctx, opts.Shards, opts.Keyspaces, opts.VitessSettings); err != nil {
			return nil, err
		}
	}
	return sb, nil
}

func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	// Debian puts mariadbd in /usr/sbin, which a non-root PATH may lack.
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, ErrMissingBinary)
}

func isRoot() bool { return os.Geteuid() == 0 }

func (sb *Sandbox) startMariaDB(ctx context.Context, overrides map[string]string) error {
	mariadbd, err := lookPath("mariadbd")
	if err != nil {
		return fmt.Errorf("start mariadb: %w", err)
	}
	installDB, err := lookPath("mariadb-install-db")
	if err != nil {
		return fmt.Errorf("start mariadb: %w", err)
	}
	datadir := filepath.Join(sb.Dir, "mariadb")
	sb.Socket = filepath.Join(sb.Dir, "mariadb.sock")
	logPath := filepath.Join(sb.Dir, "mariadb.log")

	install := []string{
		"--no-defaults",
		"--datadir=" + datadir,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		"--skip-name-resolve",
		// A starting mariadbd deletes the #sql* files in its tmpdir, so
		// sandboxes starting side by side must not share /tmp.
		"--tmpdir=" + sb.Dir,
	}
	if isRoot() {
		install = append(install, "--user=root")
	}
	cmd := exec.CommandContext(ctx, installDB, install...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("start mariadb: mariadb-install-db: %w\n%s", err, tail(out, 30))
	}

	settings := DefaultSettings()
	for k, v := range overrides {
		settings[normalize(k)] = v
	}
	sb.Settings = settings
	args := []string{
		"--no-defaults",
		"--datadir=" + datadir,
		"--socket=" + sb.Socket,
		"--skip-networking",
		"--pid-file=" + filepath.Join(sb.Dir, "mariadb.pid"),
		"--log-error=" + logPath,
		"--tmpdir=" + sb.Dir,
	}
	if isRoot() {
		args = append(args, "--user=root")
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--"+strings.ReplaceAll(k, "_", "-")+"="+settings[k])
	}
	sb.DSN = "root@unix(" + sb.Socket + ")/"
	p := &Proc{sb: sb, name: "mariadbd", bin: mariadbd, args: args, log: logPath, addr: sb.Socket}
	p.ready = func(ctx context.Context, _ *server) error { return pingMariaDB(ctx, sb.Socket) }
	if err := p.start(ctx, "start"); err != nil {
		return err
	}
	sb.mariadb = p
	return nil
}

// normalize turns "innodb-buffer-pool-size" into "innodb_buffer_pool_size".
func normalize(k string) string {
	return strings.ReplaceAll(strings.TrimPrefix(k, "--"), "-", "_")
}

// startMemcached starts the i-th of n memcached servers.
func (sb *Sandbox) startMemcached(ctx context.Context, mb, i, n int) error {
	bin, err := lookPath("memcached")
	if err != nil {
		return fmt.Errorf("start memcached: %w", err)
	}
	if mb == 0 {
		mb = 256
	}
	name, logPath := "memcached", filepath.Join(sb.Dir, "memcached.log")
	if n > 1 {
		name = fmt.Sprintf("memcached %d", i)
		if i > 0 {
			logPath = filepath.Join(sb.Dir, fmt.Sprintf("memcached-%d.log", i))
		}
	}
	args := func(port int) []string {
		a := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0", "-m", strconv.Itoa(mb), "-c", "4096", "-t", "2"}
		if isRoot() {
			a = append(a, "-u", "root")
		}
		return a
	}
	p, err := sb.startOnFreePort(ctx, name, bin, logPath, args, MemcachedPid)
	if err != nil {
		return err
	}
	sb.memcached = append(sb.memcached, p)
	sb.MemcacheAddrs = append(sb.MemcacheAddrs, p.addr)
	return nil
}

// startOnFreePort starts the server bin, named name, logging to logPath,
// with args(port) on a free loopback port. A free port can be taken by
// someone else between the probe and the server's bind, so it tries a
// few; the readiness check asks the port for its server's pid (pidOf), so
// that another server on the port is not mistaken for this one.
func (sb *Sandbox) startOnFreePort(ctx context.Context, name, bin, logPath string, args func(port int) []string, pidOf func(addr string) (int, error)) (*Proc, error) {
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		p := &Proc{sb: sb, name: name, bin: bin, args: args(port), log: logPath, addr: addr, port: port}
		p.ready = func(_ context.Context, srv *server) error {
			pid, err := pidOf(addr)
			if err != nil {
				return err
			}
			if pid != srv.cmd.Process.Pid {
				return fmt.Errorf("%s is answered by another %s (pid %d)", addr, name, pid)
			}
			return nil
		}
		if lastErr = p.start(ctx, "start"); lastErr == nil {
			return p, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// spawn starts a server process whose output goes to logPath.
func (sb *Sandbox) spawn(name, logPath, bin string, args ...string) (*server, error) {
	return sb.spawnCmd(name, logPath, exec.Command(bin, args...), false)
}

// spawnCmd starts cmd as a server whose output goes to logPath, in a
// process group of its own; group: stop the whole group with it.
func (sb *Sandbox) spawnCmd(name, logPath string, cmd *exec.Cmd, group bool) (*server, error) {
	sb.mu.Lock()
	stopped := sb.stopped
	sb.mu.Unlock()
	if stopped {
		return nil, fmt.Errorf("%s: %w", name, ErrStopped)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer logf.Close()
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Kill the server if this process dies without calling Stop, so a
	// crashed test run leaves no server behind.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	// Pdeathsig fires when the spawning OS thread exits; keep this
	// goroutine on one thread while forking. Go does not retire idle
	// threads, so the thread outlives the call.
	runtime.LockOSThread()
	err = cmd.Start()
	var guard *exec.Cmd
	if err == nil && group {
		guard, err = startGuard(cmd.Process.Pid)
		if err != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
	}
	runtime.UnlockOSThread()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	srv := &server{name: name, cmd: cmd, log: logPath, done: make(chan struct{}), group: group, guard: guard}
	go func() {
		srv.err = cmd.Wait()
		close(srv.done)
	}()
	sb.mu.Lock()
	stopped = sb.stopped
	if !stopped {
		sb.procs = append(sb.procs, srv)
	}
	sb.mu.Unlock()
	if stopped { // Stop ran while we forked; it did not see this one
		sb.stopServer(srv)
		return nil, fmt.Errorf("%s: %w", name, ErrStopped)
	}
	return srv, nil
}

// guardScript waits, as long as the process that started it lives, and
// when that process dies (the kernel then sends it SIGTERM, its parent
// death signal) kills the process group $0 and exits.
const guardScript = `trap 'kill -KILL -"$0" 2>/dev/null; kill -KILL $! 2>/dev/null; exit 0' TERM
while :; do sleep 3600 & wait $!; done`

// startGuard starts a shell that kills the process group pgid when this
// process dies without calling Stop (killed, or crashed). A server's own
// parent death signal ends the group's leader only: vttestserver's
// children (vtcombo, and mysqld_safe and mysqld, which mysqlctl leaves
// with parent 1) would outlive a killed benchmark. The guard leads a group
// of its own, which Stop kills. The caller holds the OS thread locked, for
// the parent death signal is tied to the thread that forks.
func startGuard(pgid int) (*exec.Cmd, error) {
	g := exec.Command("/bin/sh", "-c", guardScript, strconv.Itoa(pgid))
	g.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if err := g.Start(); err != nil {
		return nil, fmt.Errorf("start the guard of process group %d: %w", pgid, err)
	}
	return g, nil
}

// stopGuard kills srv's guard and its sleep, without the guard's kill of
// the server's group (which Stop has ended already, and whose id a new
// process may since have taken).
func stopGuard(srv *server) {
	if srv.guard == nil {
		return
	}
	pgid := srv.guard.Process.Pid
	syscall.Kill(-pgid, syscall.SIGKILL)
	srv.guard.Wait()
	// Its sleep, reparented when the guard died, is reaped by init.
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReady polls ready until it succeeds, the server exits, or ctx ends.
// verb ("start", "restart") begins its errors.
func (sb *Sandbox) waitReady(ctx context.Context, verb string, srv *server, ready func() error) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = ready(); last == nil {
			return nil
		}
		select {
		case <-srv.done:
			return fmt.Errorf("%s %s: exited early (%v); log %s ends:\n%s", verb, srv.name, srv.err, srv.log, tailFile(srv.log, 30))
		case <-ctx.Done():
			return fmt.Errorf("%s %s: not ready in time (%v; last check: %v); log %s ends:\n%s", verb, srv.name, ctx.Err(), last, srv.log, tailFile(srv.log, 30))
		case <-tick.C:
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// MemcachedPid asks the memcached at addr for its process id ("stats"),
// waiting at most a second to connect and a second for the answer. Fault
// tests use it to tell which process answers on a port.
func MemcachedPid(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "stats\r\n"); err != nil {
		return 0, err
	}
	pid := 0
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "END" {
			break
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "STAT" {
			return 0, fmt.Errorf("unexpected answer to stats: %q", line)
		}
		if f[1] == "pid" {
			if pid, err = strconv.Atoi(f[2]); err != nil {
				return 0, fmt.Errorf("stats pid %q: %w", f[2], err)
			}
		}
	}
	if pid == 0 {
		return 0, errors.New("no pid in memcached stats")
	}
	return pid, nil
}

// Stop kills the servers this sandbox started with SIGKILL, by pid,
// including restarted and frozen ones (SIGKILL ends a stopped process
// too), waits for them to exit, and removes the directory. Later Restarts
// fail with ErrStopped. It is safe to call more than once.
func (sb *Sandbox) Stop() error {
	sb.mu.Lock()
	procs, extra := sb.procs, sb.extraDirs
	sb.procs, sb.extraDirs = nil, nil
	sb.stopped = true
	sb.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := sb.stopServer(procs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range append(extra, sb.Dir) {
		if d == "" {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox directory: %w", err))
		}
	}
	return errors.Join(errs...)
}

// stopServer sends SIGKILL to srv and waits for it to exit. Stop uses it
// rather than a clean shutdown because the directory, data and all, is
// removed next, so a clean shutdown would only cost time: mariadbd would
// first write every dirty page of its buffer pool (gigabytes after a bulk
// load) to files about to be deleted.
func (sb *Sandbox) stopServer(srv *server) error {
	if srv.group {
		return sb.stopGroup(srv)
	}
	select {
	case <-srv.done:
		return nil
	default:
	}
	// os.Process signals through a pidfd, so a pid reused after the
	// process was reaped is never hit.
	if err := srv.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s (pid %d): %w", srv.name, srv.cmd.Process.Pid, err)
	}
	select {
	case <-srv.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("kill %s (pid %d): still running 30s after SIGKILL", srv.name, srv.cmd.Process.Pid)
	}
}

func tail(b []byte, lines int) string {
	s := strings.TrimRight(string(b), "\n")
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

func tailFile(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	return tail(b, lines)
}
