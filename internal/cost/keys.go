package cost

// Cost is what one measured operation of a phase cost on average, from the
// servers' own counters taken before and after the measured window, by the
// keys below. A key is absent when its source was not measured (no
// memcached in the run, say): absent is "not measured", 0 is a
// measurement.
//
// The database figures are global deltas of SHOW GLOBAL STATUS: in the
// benchmark's own sandbox the server serves nothing but the run, so they
// are the run's; against a shared server (--dsn) they include whatever
// else it did meanwhile, and the run says so in its notes. Rows counted
// by operations still in flight at either edge of the window are charged
// to it, which is small beside the thousands of operations a phase runs.
//
// These are the inputs a cost model of push against pull needs (Feeding
// Frenzy's rule pushes an edge when its consumer reads more often than
// H/L times its producer posts): H, the cost of one fan-out row, from a
// push post's rows and bytes written over its followers, and L, the cost
// of probing one followee on a pull read, from the rows a read examines
// over the reader's followees. The report (package results) derives both.
type Cost map[string]float64

// Cost keys, stable for scripts that read result.json.
const (
	// Ops is the number of operations the figures are divided by.
	Ops = "ops"
	// RowsRead: rows read (the server's Rows_read: requests to read a
	// row of a table, temporary tables excluded).
	RowsRead = "rows_read_per_op"
	// IndexLookups: index lookups (Handler_read_key), each the start
	// of a range or point read: a pull read's probes of its followees.
	IndexLookups = "index_lookups_per_op"
	// RowsWritten: rows inserted, updated and deleted (Handler_write,
	// Handler_update, Handler_delete: through any engine, so the pull
	// stored procedures' MEMORY scratch tables count too).
	RowsWritten  = "rows_written_per_op"
	RowsInserted = "rows_inserted_per_op"
	RowsUpdated  = "rows_updated_per_op"
	RowsDeleted  = "rows_deleted_per_op"
	// BytesWritten: bytes InnoDB wrote (Innodb_data_written: data
	// files, doublewrite buffer and redo log). Page flushes lag behind
	// commits, so this is noisier per phase than LogBytesWritten.
	BytesWritten = "bytes_written_per_op"
	// LogBytesWritten: bytes written to the redo log
	// (Innodb_os_log_written), which every commit waits for.
	LogBytesWritten = "log_bytes_written_per_op"
	// RowLockWaits: statements that waited for a row lock another
	// transaction held (Innodb_row_lock_waits): concurrent operations
	// writing the same rows, which costs CPU beyond the rows (the
	// waiter's thread sleeps and is woken, the holder's commit wakes it).
	RowLockWaits = "row_lock_waits_per_op"
	// MCGets: keys asked of memcached (cmd_get, over all servers;
	// a multi-get of n keys counts n).
	MCGets = "mc_gets_per_op"
	// MCSets: stores (cmd_set: set, add, replace, append, prepend,
	// cas).
	MCSets = "mc_sets_per_op"
	// MCIncrs: increments and decrements (the cache's generations).
	MCIncrs = "mc_incrs_per_op"
	// MCBytes: bytes memcached received and sent.
	MCBytes = "mc_bytes_per_op"
	// MCCPU: memcached's CPU time, user plus system (its stats
	// rusage_user and rusage_system, over all servers), in microseconds.
	MCCPU = "mc_cpu_us_per_op"
	// RDScripts: Lua scripts Redis ran (EVAL and EVALSHA calls).
	RDScripts = "rd_scripts_per_op"
	// RDCommands: commands Redis ran, a script run and each command it
	// ran counting one (total_commands_processed): the Redis
	// counterpart of rows read and written, each on one key.
	RDCommands = "rd_commands_per_op"
	// RDBytes: bytes Redis received and sent.
	RDBytes = "rd_bytes_per_op"
	// RDCPU: Redis's CPU time, user plus system (INFO cpu), in
	// microseconds.
	RDCPU = "rd_cpu_us_per_op"
	// DBCPU: the database server process's CPU time, user plus
	// system (/proc), in microseconds; measured only when the benchmark
	// started the server itself, on this machine.
	DBCPU = "db_cpu_us_per_op"
	// VtcomboCPU: the CPU time, user plus system (/proc), of the Vitess
	// cluster's vtcombo, which runs vtgate and every tablet in one
	// process, in microseconds; measured when the benchmark started the
	// cluster itself (Meter.WithProcess).
	VtcomboCPU = "vtcombo_cpu_us_per_op"
	// VitessDBCPU: the CPU time of the Vitess cluster's own mysqld, which
	// holds every shard's database, in microseconds; measured likewise.
	VitessDBCPU = "vitess_db_cpu_us_per_op"
	// DBCountersUnreliable is 1 when the database's row counters of the
	// window could not be trusted (connections closed while they were
	// read, or a sum came out lower after than before): RowsRead,
	// IndexLookups and the rows written are then left out, not given
	// short. Absent otherwise.
	DBCountersUnreliable = "db_counters_unreliable"
	// CPU: the benchmark process's own CPU time, user plus system
	// (getrusage), in microseconds: the client's share of the work,
	// harness included.
	CPU = "cpu_us_per_op"
	// StealShare is not a figure per operation: the share of the
	// machine's CPU time, all its CPUs, that its hypervisor gave other
	// machines over the window (0 to 1; internal/hostcpu), time in which
	// none of the processes above ran and which no CPU figure counts.
	// Absent where /proc/stat could not be read.
	StealShare = "steal_share"
)

// AllCPU is the CPU time one operation cost the benchmark process,
// memcached and Redis (when used), the database server and the Vitess
// cluster's processes (when measured) together, in microseconds; false
// when the database server's was not measured.
func (c Cost) AllCPU() (float64, bool) {
	db, ok := c[DBCPU]
	if !ok {
		return 0, false
	}
	return db + c[MCCPU] + c[RDCPU] + c[CPU] + c[VtcomboCPU] + c[VitessDBCPU], true
}

// DBRowKeys are the database's figures that its summed counters give:
// those a cost marked DBCountersUnreliable leaves out.
var DBRowKeys = []string{RowsRead, IndexLookups, RowsWritten, RowsInserted, RowsUpdated, RowsDeleted}

// CountersUnreliable reports whether the database's row counters of c's
// window could not be trusted (DBCountersUnreliable).
func (c Cost) CountersUnreliable() bool { return c[DBCountersUnreliable] == 1 }
