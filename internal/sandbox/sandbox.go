// Package sandbox starts private, throw-away MariaDB and memcached servers in
// a temporary directory: the tests use it so that they run against real
// servers, and the CLI uses it when no --dsn is given.
//
// MariaDB listens only on a unix socket inside the directory (networking
// off), so sandboxes never collide with each other or with a system server.
// memcached listens on a free loopback port. Stop ends exactly the processes
// the sandbox started, by pid, and removes the directory.
package sandbox

import (
	"bytes"
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
	// MariaDB and Memcached choose the servers to start.
	MariaDB   bool
	Memcached bool

	// Settings are mariadbd options (without the leading "--"), applied
	// over DefaultSettings. Keys may use '-' or '_'.
	Settings map[string]string

	// MemcachedMB is memcached's memory limit; 0 means 256.
	MemcachedMB int

	// BaseDir is where the temporary directory is made; "" means
	// $PUSHPULL_SANDBOX_DIR, else the system temp directory.
	BaseDir string

	// StartTimeout bounds the wait for readiness; 0 means 2 minutes.
	StartTimeout time.Duration
}

// DefaultSettings are the mariadbd options used for the benchmark: a buffer
// pool large enough to hold the paper-scale push database (about 3 GB), a
// large redo log so that fan-out writes are not throttled by checkpoints,
// and durability as MySQL ships it. Tests use TestSettings.
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
		"table_open_cache":               "4000",
		"tmp_table_size":                 "64M",
		"max_heap_table_size":            "64M",
	}
}

// TestSettings are small, fast, non-durable options for unit tests, which
// create and drop many small databases.
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

// Sandbox is a set of running servers. Its fields are read-only.
type Sandbox struct {
	Dir          string            // the private directory holding data, sockets and logs
	DSN          string            // go-sql-driver DSN for root over the unix socket, no database
	Socket       string            // MariaDB's unix socket
	MemcacheAddr string            // host:port of memcached
	Settings     map[string]string // the mariadbd options in effect

	mu    sync.Mutex
	procs []*server
}

type server struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, valid after done
}

// ErrMissingBinary means a server program is not installed.
var ErrMissingBinary = errors.New("server binary not found (run `make deps` to install mariadb-server and memcached)")

// Start starts the servers opts asks for and waits until they answer. On
// failure it stops whatever it started and its error carries the tail of
// the failing server's log.
func Start(ctx context.Context, opts Options) (_ *Sandbox, err error) {
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
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if opts.MariaDB {
		if err := sb.startMariaDB(ctx, opts.Settings); err != nil {
			return nil, err
		}
	}
	if opts.Memcached {
		if err := sb.startMemcached(ctx, opts.MemcachedMB); err != nil {
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
	srv, err := sb.spawn("mariadbd", logPath, mariadbd, args...)
	if err != nil {
		return err
	}
	sb.DSN = "root@unix(" + sb.Socket + ")/"
	return sb.waitReady(ctx, srv, func() error { return pingMariaDB(ctx, sb.Socket) })
}

// normalize turns "innodb-buffer-pool-size" into "innodb_buffer_pool_size".
func normalize(k string) string {
	return strings.ReplaceAll(strings.TrimPrefix(k, "--"), "-", "_")
}

func (sb *Sandbox) startMemcached(ctx context.Context, mb int) error {
	bin, err := lookPath("memcached")
	if err != nil {
		return fmt.Errorf("start memcached: %w", err)
	}
	if mb == 0 {
		mb = 256
	}
	logPath := filepath.Join(sb.Dir, "memcached.log")
	// A free port can be taken by someone else between our probe and
	// memcached's bind, so try a few.
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return fmt.Errorf("start memcached: %w", err)
		}
		args := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0", "-m", strconv.Itoa(mb), "-c", "4096", "-t", "2"}
		if isRoot() {
			args = append(args, "-u", "root")
		}
		srv, err := sb.spawn("memcached", logPath, bin, args...)
		if err != nil {
			return err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		lastErr = sb.waitReady(ctx, srv, func() error { return pingMemcached(addr) })
		if lastErr == nil {
			sb.MemcacheAddr = addr
			return nil
		}
		sb.stopServer(srv)
	}
	return lastErr
}

// spawn starts a server process whose output goes to logPath.
func (sb *Sandbox) spawn(name, logPath, bin string, args ...string) (*server, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Kill the server if this process dies without calling Stop, so a
	// crashed test run leaves no server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	// Pdeathsig fires when the spawning OS thread exits; keep this
	// goroutine on one thread while forking. Go does not retire idle
	// threads, so the thread outlives the call.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	srv := &server{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		srv.err = cmd.Wait()
		close(srv.done)
	}()
	sb.mu.Lock()
	sb.procs = append(sb.procs, srv)
	sb.mu.Unlock()
	return srv, nil
}

// waitReady polls ready until it succeeds, the server exits, or ctx ends.
func (sb *Sandbox) waitReady(ctx context.Context, srv *server, ready func() error) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = ready(); last == nil {
			return nil
		}
		select {
		case <-srv.done:
			return fmt.Errorf("start %s: exited early (%v); log %s ends:\n%s", srv.name, srv.err, srv.log, tailFile(srv.log, 30))
		case <-ctx.Done():
			return fmt.Errorf("start %s: not ready in time (%v; last check: %v); log %s ends:\n%s", srv.name, ctx.Err(), last, srv.log, tailFile(srv.log, 30))
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

func pingMemcached(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "version\r\n"); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(buf[:n], []byte("VERSION")) {
		return fmt.Errorf("unexpected answer %q", buf[:n])
	}
	return nil
}

// Stop ends the servers this sandbox started (SIGTERM, then SIGKILL after a
// grace period), waits for them, and removes the directory. It is safe to
// call more than once.
func (sb *Sandbox) Stop() error {
	sb.mu.Lock()
	procs := sb.procs
	sb.procs = nil
	sb.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := sb.stopServer(procs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if sb.Dir != "" {
		if err := os.RemoveAll(sb.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox directory: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (sb *Sandbox) stopServer(srv *server) error {
	select {
	case <-srv.done:
		return nil
	default:
	}
	// The directory, data and all, is removed next, so a clean shutdown
	// would only cost time: mariadbd would first write every dirty page
	// of its buffer pool (gigabytes after a bulk load) to files about to
	// be deleted.
	if err := srv.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s (pid %d): %w", srv.name, srv.cmd.Process.Pid, err)
	}
	select {
	case <-srv.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("stop %s (pid %d): still running 30s after SIGKILL", srv.name, srv.cmd.Process.Pid)
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
