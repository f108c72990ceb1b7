// Package cost measures what a stretch of work cost the servers and the
// benchmark's own process, from their own counters: the database server's
// row counts and InnoDB's byte counts (SHOW GLOBAL STATUS), memcached's
// command and byte counts and CPU time (its stats command, summed over
// every server), the process's CPU time (getrusage), and, when the
// database server runs on this machine and the caller names its process,
// that process's CPU time (/proc).
//
// The three CPU times together are what an operation cost the machine
// when client and servers share it, as in the benchmark's sandbox: rows
// and keys say how much work each server did, CPU what it cost.
//
// Rows come from the server layer's counters, not InnoDB's: MariaDB 10.11
// no longer keeps Innodb_rows_read and its siblings. Rows_read counts
// requests to read a row of a table (temporary tables excluded),
// Handler_read_key the index lookups (one per probe of a followee's
// newest message), and Handler_write, Handler_update and Handler_delete
// the rows written through any engine, which includes the pull stored
// procedures' MEMORY scratch tables: work the server does for a read. A Snapshot before and one after, divided by the operations
// in between, give Cost.
//
// The counters are global. That is exact in the benchmark's sandbox, whose
// servers serve nothing else, and an overestimate on a shared server:
// callers say so where they report the figures.
//
// MariaDB keeps the row and handler counters per connection and adds them
// up when asked: those of the connections that closed, and those of each
// open one. A connection that is closing while the sum is made is counted
// in neither part, so that sum comes out short by all the connection ever
// counted (TestCountsOfConnectionsClosingDuringASnapshot closes 32 pooled
// connections as a snapshot is taken and sees it). Take therefore reads
// the counters again until no connection was closing while it read them
// (see steadyServerStatus), keeping each counter's highest reading (a
// read is only ever short); when connections keep closing through all
// its reads, the snapshot says so
// (Snapshot.ServerUnsteady) and PerOp leaves the rows out and marks the
// cost (DBCountersUnreliable) rather than give a short figure. InnoDB's
// byte counters and its row lock waits are the engine's own totals and
// are kept either way.
package cost

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pushpull/pushpull/internal/hostcpu"
)

// serverCounters are the SHOW GLOBAL STATUS counters a Snapshot takes.
var serverCounters = []string{
	"Rows_read", "Handler_read_key", "Handler_write", "Handler_update", "Handler_delete",
	"Innodb_data_written", "Innodb_os_log_written", "Innodb_row_lock_waits",
}

// summedCounters are those of serverCounters that MariaDB adds up over its
// connections when asked, and which a connection closing meanwhile leaves
// short.
var summedCounters = []string{"Rows_read", "Handler_read_key", "Handler_write", "Handler_update", "Handler_delete"}

// serverReads is how many times, at most, Take reads the server's
// counters looking for one that no closing connection left short.
const serverReads = 6

// memcachedCounters are the stats a Snapshot sums over the servers.
// memcached reports rusage_user and rusage_system in seconds with six
// decimals; MemcachedStats gives them in microseconds.
var memcachedCounters = []string{"cmd_get", "cmd_set", "incr_hits", "incr_misses", "decr_hits", "decr_misses", "bytes_read", "bytes_written", "rusage_user", "rusage_system"}

// Meter takes snapshots of one database server (through db, which may be
// any connection pool to it) and of the given memcached servers (none for
// a run without memcached).
type Meter struct {
	db       *sql.DB
	memcache []string
	redis    string
	dbPid    int
	procs    []process // WithProcess
}

// process is a process of this machine whose CPU time a Meter takes,
// reported under key.
type process struct {
	key string
	pid int
}

// NewMeter returns a Meter. db may be nil: the snapshots then carry no
// database counters.
func NewMeter(db *sql.DB, memcache []string) *Meter { return &Meter{db: db, memcache: memcache} }

// WithDatabaseProcess makes m's snapshots also take the CPU time of the
// database server's process pid, which must run on this machine (the
// benchmark's sandbox). A snapshot taken after the process exited lacks
// that time, and so does the cost between it and any other.
func (m *Meter) WithDatabaseProcess(pid int) *Meter {
	m.dbPid = pid
	return m
}

// WithProcess makes m's snapshots also take the CPU time of process pid
// of this machine, which PerOp reports per operation under key
// (VtcomboCPU, VitessDBCPU). Like WithDatabaseProcess, a snapshot taken
// after the process exited lacks it.
func (m *Meter) WithProcess(key string, pid int) *Meter {
	m.procs = append(m.procs, process{key, pid})
	return m
}

// Snapshot is the counters at one moment.
type Snapshot struct {
	Server map[string]int64 // nil when not taken
	// ServerUnsteady is set when connections kept closing through every
	// read of Server: its summed row counters may be short (see the
	// package's doc), and PerOp gives no rows from it.
	ServerUnsteady bool
	Memcached      map[string]int64 // summed over the servers; nil when none
	Redis          map[string]int64 // RedisStats; nil without Meter.WithRedis
	CPU            time.Duration    // user + system time of this process
	// ServerCPU is the user + system time of the database server's
	// process, when HasServerCPU (a process was named and could be read).
	ServerCPU    time.Duration
	HasServerCPU bool
	// ProcessCPU is the user + system time of each process named by
	// Meter.WithProcess that could be read, by its key.
	ProcessCPU map[string]time.Duration
	// Host is the machine's CPU time, all its CPUs: busy, idle and
	// stolen by a hypervisor (internal/hostcpu), when HasHost (this
	// machine's /proc/stat could be read).
	Host    hostcpu.Times
	HasHost bool
}

// Take reads every counter now.
func (m *Meter) Take(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	var err error
	if m.db != nil {
		if s.Server, s.ServerUnsteady, err = steadyServerStatus(ctx, m.db); err != nil {
			return s, err
		}
	}
	if len(m.memcache) > 0 {
		if s.Memcached, err = MemcachedStats(m.memcache, memcachedCounters...); err != nil {
			return s, err
		}
	}
	if m.redis != "" {
		if s.Redis, err = RedisStats(m.redis); err != nil {
			return s, err
		}
	}
	s.CPU = ProcessCPU()
	if h, err := hostcpu.Read(); err == nil {
		s.Host, s.HasHost = h, true
	}
	if m.dbPid > 0 {
		s.ServerCPU, s.HasServerCPU = PidCPU(m.dbPid)
	}
	for _, p := range m.procs {
		if d, ok := PidCPU(p.pid); ok {
			if s.ProcessCPU == nil {
				s.ProcessCPU = map[string]time.Duration{}
			}
			s.ProcessCPU[p.key] = d
		}
	}
	return s, nil
}

// Measure takes a snapshot, runs op, takes another, and returns what each
// of the ops operations op made cost (PerOp).
func (m *Meter) Measure(ctx context.Context, ops int64, op func()) (Cost, error) {
	before, err := m.Take(ctx)
	if err != nil {
		return nil, err
	}
	op()
	after, err := m.Take(ctx)
	if err != nil {
		return nil, err
	}
	return PerOp(before, after, ops), nil
}

// PerOp is what each of ops operations cost between before and after, by
// the keys of Cost. Figures whose counters either snapshot lacks
// are left out, and so are those with a counter lower after than before:
// the counters only grow, so such a pair measured something else (a
// memcached server restarted in between). The database's rows and index
// lookups are left out together, and the cost marked DBCountersUnreliable,
// when either snapshot is ServerUnsteady or any of those counters went
// backward: the server's sum over its connections came out short on one
// side (one run's first phase after the load measured Rows_read 18.6
// million lower at its end, about what one of the load's warm-up
// connections had read), and a short sum on the other side would look
// like a plausible, too small figure. StealShare, when both snapshots
// have the machine's times, is the window's, not an operation's. ops <= 0
// gives nil.
func PerOp(before, after Snapshot, ops int64) Cost {
	if ops <= 0 {
		return nil
	}
	n := float64(ops)
	c := Cost{Ops: n}
	// set puts the counters' summed deltas per operation under key,
	// unless one of them went backward.
	set := func(b, a map[string]int64, key string, counters ...string) {
		var sum int64
		for _, k := range counters {
			d := a[k] - b[k]
			if d < 0 {
				return
			}
			sum += d
		}
		c[key] = float64(sum) / n
	}
	if b, a := before.Server, after.Server; b != nil && a != nil && (before.ServerUnsteady || after.ServerUnsteady || wentBackward(b, a, summedCounters)) {
		c[DBCountersUnreliable] = 1
		set(b, a, BytesWritten, "Innodb_data_written")
		set(b, a, LogBytesWritten, "Innodb_os_log_written")
		set(b, a, RowLockWaits, "Innodb_row_lock_waits")
	} else if b != nil && a != nil {
		set(b, a, RowsRead, "Rows_read")
		set(b, a, IndexLookups, "Handler_read_key")
		set(b, a, RowsInserted, "Handler_write")
		set(b, a, RowsUpdated, "Handler_update")
		set(b, a, RowsDeleted, "Handler_delete")
		set(b, a, RowsWritten, "Handler_write", "Handler_update", "Handler_delete")
		set(b, a, BytesWritten, "Innodb_data_written")
		set(b, a, LogBytesWritten, "Innodb_os_log_written")
		set(b, a, RowLockWaits, "Innodb_row_lock_waits")
	}
	if b, a := before.Memcached, after.Memcached; b != nil && a != nil {
		set(b, a, MCGets, "cmd_get")
		set(b, a, MCSets, "cmd_set")
		set(b, a, MCIncrs, "incr_hits", "incr_misses", "decr_hits", "decr_misses")
		set(b, a, MCBytes, "bytes_read", "bytes_written")
		set(b, a, MCCPU, "rusage_user", "rusage_system")
	}
	if b, a := before.Redis, after.Redis; b != nil && a != nil {
		set(b, a, RDScripts, "scripts")
		set(b, a, RDCommands, "commands")
		set(b, a, RDBytes, "net_bytes")
		set(b, a, RDCPU, "cpu_us")
	}
	if before.HasServerCPU && after.HasServerCPU && after.ServerCPU >= before.ServerCPU {
		c[DBCPU] = float64((after.ServerCPU - before.ServerCPU).Microseconds()) / n
	}
	for key, a := range after.ProcessCPU {
		if b, ok := before.ProcessCPU[key]; ok && a >= b {
			c[key] = float64((a - b).Microseconds()) / n
		}
	}
	c[CPU] = float64((after.CPU - before.CPU).Microseconds()) / n
	if before.HasHost && after.HasHost {
		if share, ok := hostcpu.Share(before.Host, after.Host); ok {
			c[StealShare] = share
		}
	}
	return c
}

// wentBackward reports whether any of the named counters is lower in a
// than in b.
func wentBackward(b, a map[string]int64, names []string) bool {
	for _, k := range names {
		if a[k] < b[k] {
			return true
		}
	}
	return false
}

// steadyServerStatus reads the server's counters until a read that no
// closing connection can have left short, at most serverReads times, and
// gives each counter's highest reading (a short read only ever lacks
// counts), with unsteady set when no read was clean.
//
// A connection that closes is marked killed (the process list shows its
// command as Killed) and, in some order that differs between MariaDB's
// versions, leaves Threads_connected, adds its counts to the closed ones'
// and leaves the list of connections. A read is short when a connection
// added its counts while the read was summing. So Take looks at the
// connections just before and just after each read (connections), and the
// read was clean when no connection was closing at either look, none
// finished closing in between (Connections - Threads_connected
// unchanged), and none more was half gone after than before (counted in
// Threads_connected but no longer listed): a connection that added its
// counts during the read is, at one of the looks, at one of those stages.
// Listing every connection needs the PROCESS privilege, which the
// benchmark's own sandbox has; without it no read is clean and the rows
// are reported unreliable.
func steadyServerStatus(ctx context.Context, db *sql.DB) (counters map[string]int64, unsteady bool, err error) {
	var best map[string]int64
	for range serverReads {
		before, err := connections(ctx, db)
		if err != nil {
			return nil, false, err
		}
		read, err := serverStatus(ctx, db, serverCounters)
		if err != nil {
			return nil, false, err
		}
		after, err := connections(ctx, db)
		if err != nil {
			return nil, false, err
		}
		if best == nil {
			best = read
		}
		for _, k := range serverCounters {
			best[k] = max(best[k], read[k])
		}
		if before.closing == 0 && after.closing == 0 && before.closed() == after.closed() && after.unlisted() <= before.unlisted() {
			return best, false, nil
		}
	}
	return best, true, nil
}

// connState is what the server says of its client connections at one
// moment (see steadyServerStatus).
type connState struct {
	listed, closing     int64 // in the process list; of them, marked killed
	accepted, connected int64 // Connections, Threads_connected
}

// closed is how many connections have finished closing.
func (c connState) closed() int64 { return c.accepted - c.connected }

// unlisted is how many more connections Threads_connected counts than the
// process list shows: those half gone, and any the server counts without
// listing them for longer (a connection still logging in).
func (c connState) unlisted() int64 { return c.connected - c.listed }

// connections reads the server's connState.
func connections(ctx context.Context, db *sql.DB) (connState, error) {
	var c connState
	err := db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(COMMAND = 'Killed'), 0),
		(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'CONNECTIONS'),
		(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'THREADS_CONNECTED')
		FROM information_schema.PROCESSLIST`).Scan(&c.listed, &c.closing, &c.accepted, &c.connected)
	if err != nil {
		return c, fmt.Errorf("server connections: %w", err)
	}
	return c, nil
}

// serverStatus reads the named SHOW GLOBAL STATUS counters.
func serverStatus(ctx context.Context, db *sql.DB, names []string) (map[string]int64, error) {
	q := "SHOW GLOBAL STATUS WHERE Variable_name IN ('" + strings.Join(names, "','") + "')"
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("server counters: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("server counters: %w", err)
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("server counter %s = %q: %w", name, value, err)
		}
		out[name] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("server counters: %w", err)
	}
	for _, k := range names {
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("server counters: the server reports no %s", k)
		}
	}
	return out, nil
}

// MemcachedStats sums the named counters of the stats command over
// servers ("host:port", or a unix socket path). A server that lacks one of
// them is an error.
func MemcachedStats(servers []string, names ...string) (map[string]int64, error) {
	total := map[string]int64{}
	for _, addr := range servers {
		one, err := memcachedStats(addr)
		if err != nil {
			return nil, fmt.Errorf("memcached stats from %s: %w", addr, err)
		}
		for _, k := range names {
			v, ok := one[k]
			if !ok {
				return nil, fmt.Errorf("memcached stats from %s: no %s", addr, k)
			}
			total[k] += v
		}
	}
	return total, nil
}

func memcachedStats(addr string) (map[string]int64, error) {
	network := "tcp"
	if strings.Contains(addr, "/") {
		network = "unix"
	}
	conn, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(conn, "stats\r\n"); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := sc.Text()
		if line == "END" {
			return out, nil
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "STAT" {
			continue
		}
		if strings.HasPrefix(f[1], "rusage_") {
			// seconds.microseconds
			if sec, err := strconv.ParseFloat(f[2], 64); err == nil {
				out[f[1]] = int64(math.Round(sec * 1e6))
			}
		} else if n, err := strconv.ParseInt(f[2], 10, 64); err == nil {
			out[f[1]] = n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("the stats reply ended early")
}

// ProcessCPU is the user plus system CPU time this process has used, or 0
// where getrusage fails.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PidCPU is the user plus system CPU time of process pid, all its threads
// together, from /proc/pid/stat (to 10 ms); false when it cannot be read.
func PidCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// the fields counted are those after its closing one, from field 3.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return hostcpu.Ticks(utime + stime), true
}
