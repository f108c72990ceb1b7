package sandbox

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pushpull/pushpull/internal/vitess"
	schema "github.com/pushpull/pushpull/sql"
)

// DefaultKeyspaces are the sharded keyspaces a Vitess sandbox makes unless
// told otherwise: the default databases of the push, pull and hybrid
// models on Vitess, so that a model opened with its default database
// finds its keyspace.
var DefaultKeyspaces = []string{"pushpull_push_vitess", "pushpull_pull_vitess", "pushpull_hybrid_vitess"}

// startVitess starts vttestserver (built by vitess.Install) with keyspaces
// of shards shards each and schema.SequenceKeyspace, unsharded, and waits
// until vtgate serves every shard.
//
// vttestserver runs one mysqld (Debian's MariaDB, found like mariadbd)
// for all shards, and vtcombo: vtgate, a primary vttablet per shard and
// vtctld in one process. mysqlctl refuses to run as root, so root runs
// them as vitess.RunAs, in a directory of the sandbox that user owns.
// Everything listens on loopback only, on four consecutive ports from a
// random free base: vtcombo's status pages, its gRPC, mysqld, and vtgate's
// MySQL protocol. vttestserver and what it starts (vtcombo, mysqlctl,
// mysqld_safe, mysqld) form one process group, which Stop kills, and
// which a guard kills if this process dies first (startGuard).
func (sb *Sandbox) startVitess(ctx context.Context, shards int, keyspaces []string, settings map[string]string) error {
	if shards == 0 {
		shards = 2
	}
	if keyspaces == nil {
		keyspaces = DefaultKeyspaces
	}
	if shards < 1 || shards > 256 {
		return fmt.Errorf("start vitess: %d shards: want 1 to 256", shards)
	}
	if len(keyspaces) == 0 {
		return errors.New("start vitess: no keyspace")
	}
	root, err := vitess.Install(ctx, os.Stderr)
	if err != nil {
		return fmt.Errorf("start vitess: %w", err)
	}
	mariadbd, err := lookPath("mariadbd")
	if err != nil {
		return fmt.Errorf("start vitess: %w", err)
	}
	cred, err := vitess.RunAs()
	if err != nil {
		return fmt.Errorf("start vitess: %w", err)
	}
	dir := filepath.Join(sb.Dir, "vitess")
	if cred != nil && !othersReach(filepath.Dir(sb.Dir)) {
		// The user cannot get to the sandbox (under a private temporary
		// directory, say): give it a directory of its own elsewhere.
		if dir, err = os.MkdirTemp("", "pushpull-vitess-"); err != nil {
			return fmt.Errorf("start vitess: %w", err)
		}
		sb.mu.Lock()
		sb.extraDirs = append(sb.extraDirs, dir)
		sb.mu.Unlock()
	}
	schemaDir := filepath.Join(dir, "schema")
	dataDir := filepath.Join(dir, "cluster")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("start vitess: %w", err)
	}
	if err := schema.WriteVitessSchemaDir(schemaDir, keyspaces); err != nil {
		return fmt.Errorf("start vitess: %w", err)
	}
	// mysqld listens on loopback only. vttablet asks for utf8mb4 by a
	// MySQL 8 collation id that MariaDB does not know, which leaves a
	// connection in the server's default character set: make that
	// utf8mb4 and hold every client to it, or 4-byte characters fail.
	var my strings.Builder
	my.WriteString("[mysqld]\n")
	keys := slices.Sorted(maps.Keys(settings))
	for _, k := range keys {
		if slices.Contains(vitessManaged, normalize(k)) {
			continue
		}
		fmt.Fprintf(&my, "%s = %s\n", strings.ReplaceAll(normalize(k), "_", "-"), settings[k])
	}
	if _, ok := settings["max_connections"]; !ok {
		my.WriteString("max-connections = 1000\n") // pools of every tablet
	}
	my.WriteString("bind-address = 127.0.0.1\ncharacter-set-server = utf8mb4\ncollation-server = utf8mb4_bin\nskip-character-set-client-handshake\n")
	cnf := filepath.Join(dir, "mariadb.cnf")
	if err := os.WriteFile(cnf, []byte(my.String()), 0o644); err != nil {
		return fmt.Errorf("start vitess: %w", err)
	}
	if cred != nil {
		// The sandbox directory is root's (0700): let the user through
		// to its own directory, and give it that directory.
		if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
			return fmt.Errorf("start vitess: %w", err)
		}
		if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, int(cred.Uid), int(cred.Gid))
		}); err != nil {
			return fmt.Errorf("start vitess: %w", err)
		}
	}
	vtroot, err := vtcomboRoot(dir, root)
	if err != nil {
		return fmt.Errorf("start vitess: %w", err)
	}
	base, err := freePorts(4)
	if err != nil {
		return fmt.Errorf("start vitess: %w", err)
	}
	counts := make([]string, len(keyspaces))
	for i := range counts {
		counts[i] = strconv.Itoa(shards)
	}
	logPath := filepath.Join(sb.Dir, "vitess.log")
	cmd := exec.Command(filepath.Join(root, "bin", "vttestserver"),
		"--port="+strconv.Itoa(base),
		"--keyspaces="+strings.Join(append(append([]string{}, keyspaces...), schema.SequenceKeyspace), ","),
		"--num-shards="+strings.Join(append(counts, "1"), ","),
		"--replica-count=1", "--rdonly-count=0",
		"--mysql-bind-host=127.0.0.1", "--vtcombo-bind-host=127.0.0.1",
		"--schema-dir="+schemaDir, "--data-dir="+dataDir,
		"--extra-my-cnf="+cnf,
		"--vschema-ddl-authorized-users=%",
	)
	cmd.Dir = dir
	cmd.Env = []string{
		"VTROOT=" + vtroot, "VTDATAROOT=" + dir, "HOME=" + dir,
		"VT_MYSQL_ROOT=" + filepath.Dir(filepath.Dir(mariadbd)),
		"PATH=" + filepath.Join(root, "bin") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	}
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	srv, err := sb.spawnCmd("vttestserver", logPath, cmd, true)
	if err != nil {
		return fmt.Errorf("start %w", err)
	}
	dsn := fmt.Sprintf("root@tcp(127.0.0.1:%d)/", base+3)
	want := len(keyspaces)*shards + 1
	ready := func() error {
		if !logHas(logPath, "Local cluster started") {
			return errors.New("cluster not started yet")
		}
		return vtgateServes(ctx, dsn, want)
	}
	if err := sb.waitReady(ctx, "start", srv, ready); err != nil {
		sb.stopServer(srv)
		return err
	}
	sb.vitess = srv
	sb.VtgateDSN = dsn
	sb.VitessMysqldDSN = fmt.Sprintf("root@tcp(127.0.0.1:%d)/", base+2)
	sb.VtgateStatus = net.JoinHostPort("127.0.0.1", strconv.Itoa(base))
	if sock := vtgateSocket(dir); sock != "" {
		sb.VtgateSocketDSN = "root@unix(" + sock + ")/"
	}
	sb.Keyspaces = keyspaces
	sb.Shards = shards
	return nil
}

// vtcomboArgs follow the arguments vttestserver gives vtcombo, and so
// override its tablets' pools of four connections and four transactions,
// waited for up to 300 s. With so few, eight clients whose transactions
// each hold a slot on one shard while they wait for one on another (a post
// that fans out) take every slot and wait out the timeout. Larger pools,
// and a short wait that fails with an error when they do run out.
var vtcomboArgs = []string{
	"--queryserver-config-pool-size=16",
	"--queryserver-config-stream-pool-size=16",
	"--queryserver-config-transaction-cap=64",
	"--queryserver-config-txpool-timeout=10s",
	// Go's profiles of vtcombo on its status port, /debug/pprof: what
	// vtgate and the tablets spend their CPU on.
	"--pprof-http",
}

// vtcomboGOGC is the GOGC vtcombo runs with: a collection when the heap
// has grown to 5 times what the last one left live, where Go's default of
// 100 collects at twice. vtgate and the tablets allocate per query and
// keep little of it, so at the default the collector took 13% of
// vtcombo's CPU in a profile of push pages. The price is memory: the
// benchmark's vtcombo (vtgate and 7 tablets, about 110 MB live) went from
// about 250 MB resident to 600. A production vtgate is given memory for
// that trade.
const vtcomboGOGC = 400

// vtcomboRoot makes dir/vtroot, the VTROOT vttestserver runs with: the
// config and mysqlctl of root, the installed Vitess, and for vtcombo a
// script that runs root's with vtcomboArgs and vtgateSocket appended
// (pflag takes the last of a repeated flag) and GOGC set to vtcomboGOGC.
func vtcomboRoot(dir, root string) (string, error) {
	vtroot := filepath.Join(dir, "vtroot")
	if err := os.MkdirAll(filepath.Join(vtroot, "bin"), 0o755); err != nil {
		return "", err
	}
	if err := os.Symlink(filepath.Join(root, "config"), filepath.Join(vtroot, "config")); err != nil {
		return "", err
	}
	if err := os.Symlink(filepath.Join(root, "bin", "mysqlctl"), filepath.Join(vtroot, "bin", "mysqlctl")); err != nil {
		return "", err
	}
	args := slices.Clone(vtcomboArgs)
	if sock := vtgateSocket(dir); sock != "" {
		args = append(args, "--mysql-server-socket-path="+sock)
	}
	script := fmt.Sprintf("#!/bin/sh\nexport GOGC=%d\nexec %s \"$@\" %s\n", vtcomboGOGC, filepath.Join(root, "bin", "vtcombo"), strings.Join(args, " "))
	if err := os.WriteFile(filepath.Join(vtroot, "bin", "vtcombo"), []byte(script), 0o755); err != nil {
		return "", err
	}
	return vtroot, nil
}

// vtgateSocket is the unix socket where the vtgate of a cluster in dir
// also listens, so that a client on this machine reaches it as it reaches
// the sandbox's MariaDB, over a socket rather than TCP; "" when dir is too
// deep for a socket's path (107 bytes on Linux), and vtgate listens on TCP
// alone.
func vtgateSocket(dir string) string {
	sock := filepath.Join(dir, "vtgate.sock")
	if len(sock) > 107 {
		return ""
	}
	return sock
}

// othersReach reports whether every directory from / down to dir lets
// other users through.
func othersReach(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// vitessManaged are mysqld options that Vitess's mysqlctl or this file set
// and VitessSettings may not change.
var vitessManaged = []string{"bind_address", "port", "socket", "datadir", "tmpdir", "pid_file", "log_error", "user",
	"character_set_server", "collation_server", "skip_networking", "local_infile"}

// freePorts returns the first of n consecutive loopback ports that are
// free now, from a random base between 20000 and 32000: below Linux's
// default range of ephemeral ports (32768 and up), so that no client
// connection of this or another process is given one of them between
// this check and the servers' binds (vtcombo then exits at start: its
// status port was taken).
func freePorts(n int) (int, error) {
	for range 50 {
		base := 20000 + rand.IntN(12000-n)
		free := true
		for p := base; p < base+n && free; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				free = false
				continue
			}
			l.Close()
		}
		if free {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports found", n)
}

// logHas reports whether the file at path has a line containing s.
func logHas(path, s string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return true
		}
	}
	return false
}

// vtgateServes checks that the vtgate at dsn lists want tablets, all
// serving.
func vtgateServes(ctx context.Context, dsn string, want int) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	return probe(ctx, cfg, func(ctx context.Context, db *sql.DB) error { return tabletsServing(ctx, db, want) })
}

func tabletsServing(ctx context.Context, db *sql.DB, want int) error {
	rows, err := db.QueryContext(ctx, "SHOW VITESS_TABLETS")
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	state := -1
	for i, c := range cols {
		if strings.EqualFold(c, "State") {
			state = i
		}
	}
	if state < 0 {
		return fmt.Errorf("SHOW VITESS_TABLETS has no State column: %v", cols)
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	serving := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if string(vals[state]) == "SERVING" {
			serving++
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if serving < want {
		return fmt.Errorf("%d of %d tablets serving", serving, want)
	}
	return nil
}

// stopGroup kills srv's process group with SIGKILL and waits until srv
// has exited and no process is left in the group. The group's id is
// srv's pid, which stays reserved while any member lives.
func (sb *Sandbox) stopGroup(srv *server) error {
	defer stopGuard(srv)
	pgid := srv.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s's process group %d: %w", srv.name, pgid, err)
	}
	deadline := time.After(30 * time.Second)
	select {
	case <-srv.done:
	case <-deadline:
		return fmt.Errorf("kill %s (pid %d): still running 30s after SIGKILL", srv.name, pgid)
	}
	for syscall.Kill(-pgid, 0) == nil {
		select {
		case <-deadline:
			return fmt.Errorf("kill %s's process group %d: members still running 30s after SIGKILL", srv.name, pgid)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// Vtcombo returns the process of the Vitess cluster's vtcombo: vtgate,
// a tablet per shard and vtctld, in one process. Fault tests freeze it
// with FreezeProcess and thaw it with SIGCONT: to vtgate's clients, and
// to vtgate itself, every tablet and vtgate then hang at once, while
// mysqld, a process of its own, keeps running. It is found by its pid
// among the members of vttestserver's process group (by its name in
// /proc), and held by a pidfd, so that a signal never reaches another
// process that took the pid. It fails with ErrNotRunning without a
// cluster, or when vtcombo is not running.
func (sb *Sandbox) Vtcombo() (*os.Process, error) {
	if sb.vitess == nil {
		return nil, fmt.Errorf("vtcombo: no Vitess cluster: %w", ErrNotRunning)
	}
	select {
	case <-sb.vitess.done:
		return nil, fmt.Errorf("vtcombo: vttestserver exited: %w", ErrNotRunning)
	default:
	}
	pid, err := groupMember(sb.vitess.cmd.Process.Pid, "vtcombo")
	if err != nil {
		return nil, fmt.Errorf("vtcombo: %w", err)
	}
	return os.FindProcess(pid)
}

// VitessPids returns the pids of the Vitess cluster's two processes that
// do its work: vtcombo (vtgate and every tablet) and the mysqld that holds
// every shard's database (mariadbd, or mysqld by that name), both members
// of vttestserver's process group. The benchmark reads their CPU time to
// give each its share of an operation on Vitess. It fails with
// ErrNotRunning without a cluster, or when either is not running.
func (sb *Sandbox) VitessPids() (vtcombo, mysqld int, err error) {
	if sb.vitess == nil {
		return 0, 0, fmt.Errorf("vitess pids: no Vitess cluster: %w", ErrNotRunning)
	}
	pgid := sb.vitess.cmd.Process.Pid
	if vtcombo, err = groupMember(pgid, "vtcombo"); err != nil {
		return 0, 0, fmt.Errorf("vitess pids: %w", err)
	}
	if mysqld, err = groupMember(pgid, "mariadbd"); err != nil {
		if mysqld, err = groupMember(pgid, "mysqld"); err != nil {
			return 0, 0, fmt.Errorf("vitess pids: %w", err)
		}
	}
	return vtcombo, mysqld, nil
}

// groupMember returns the pid of the process named comm in the process
// group pgid, from /proc (Linux).
func groupMember(pgid int, comm string) (int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // a process that exited meanwhile
		}
		// "pid (comm) state ppid pgrp ...": comm may hold spaces.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if s[open+1:end] != comm || len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		return strconv.Atoi(strings.TrimSpace(s[:open]))
	}
	return 0, fmt.Errorf("no process %s in process group %d: %w", comm, pgid, ErrNotRunning)
}
