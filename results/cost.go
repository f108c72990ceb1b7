package results

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Cost is what one measured operation of a phase cost on average, from the
// servers' own counters taken before and after the measured window, by the
// keys below (Cost*). A key is absent when its source was not measured (no
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
// over the reader's followees. WriteCostTable derives both.
type Cost map[string]float64

// Cost keys, stable for scripts that read result.json.
const (
	// CostOps is the number of operations the figures are divided by.
	CostOps = "ops"
	// CostRowsRead: rows read (the server's Rows_read: requests to read a
	// row of a table, temporary tables excluded).
	CostRowsRead = "rows_read_per_op"
	// CostIndexLookups: index lookups (Handler_read_key), each the start
	// of a range or point read: a pull read's probes of its followees.
	CostIndexLookups = "index_lookups_per_op"
	// CostRowsWritten: rows inserted, updated and deleted (Handler_write,
	// Handler_update, Handler_delete: through any engine, so the pull
	// stored procedures' MEMORY scratch tables count too).
	CostRowsWritten  = "rows_written_per_op"
	CostRowsInserted = "rows_inserted_per_op"
	CostRowsUpdated  = "rows_updated_per_op"
	CostRowsDeleted  = "rows_deleted_per_op"
	// CostBytesWritten: bytes InnoDB wrote (Innodb_data_written: data
	// files, doublewrite buffer and redo log). Page flushes lag behind
	// commits, so this is noisier per phase than CostLogBytesWritten.
	CostBytesWritten = "bytes_written_per_op"
	// CostLogBytesWritten: bytes written to the redo log
	// (Innodb_os_log_written), which every commit waits for.
	CostLogBytesWritten = "log_bytes_written_per_op"
	// CostMCGets: keys asked of memcached (cmd_get, over all servers;
	// a multi-get of n keys counts n).
	CostMCGets = "mc_gets_per_op"
	// CostMCSets: stores (cmd_set: set, add, replace, append, prepend,
	// cas).
	CostMCSets = "mc_sets_per_op"
	// CostMCIncrs: increments and decrements (the cache's generations).
	CostMCIncrs = "mc_incrs_per_op"
	// CostMCBytes: bytes memcached received and sent.
	CostMCBytes = "mc_bytes_per_op"
	// CostMCCPU: memcached's CPU time, user plus system (its stats
	// rusage_user and rusage_system, over all servers), in microseconds.
	CostMCCPU = "mc_cpu_us_per_op"
	// CostDBCPU: the database server process's CPU time, user plus
	// system (/proc), in microseconds; measured only when the benchmark
	// started the server itself, on this machine.
	CostDBCPU = "db_cpu_us_per_op"
	// CostCPU: the benchmark process's own CPU time, user plus system
	// (getrusage), in microseconds: the client's share of the work,
	// harness included.
	CostCPU = "cpu_us_per_op"
)

// costColumns are the figures WriteCostTable shows, in order.
var costColumns = []costColumn{
	{CostRowsRead, "rows read", nil},
	{CostIndexLookups, "index lookups", nil},
	{CostRowsWritten, "rows written", nil},
	{CostRowsInserted, "inserted", nil},
	{CostRowsUpdated, "updated", nil},
	{CostRowsDeleted, "deleted", nil},
	{CostBytesWritten, "bytes written", nil},
	{CostLogBytesWritten, "redo bytes", nil},
	{CostMCGets, "mc gets", nil},
	{CostMCSets, "mc sets", nil},
	{CostMCIncrs, "mc incrs", nil},
	{CostMCBytes, "mc bytes", nil},
	{CostCPU, "client CPU µs", nil},
	{CostMCCPU, "mc CPU µs", nil},
	{CostDBCPU, "db CPU µs", nil},
	{costAllCPU, "all CPU µs", Cost.AllCPU},
}

// costColumn is a figure of the cost table: stored in Cost under key, or
// derived from the stored ones (then key only names the column).
type costColumn struct {
	key, label string
	derived    func(Cost) (float64, bool)
}

// value is col's figure in c, false when c lacks it.
func (col costColumn) value(c Cost) (float64, bool) {
	if col.derived != nil {
		return col.derived(c)
	}
	v, ok := c[col.key]
	return v, ok
}

// costAllCPU names the table's column for the CPU of client, memcached
// and database server together (AllCPU): what an operation cost a
// machine they share.
const costAllCPU = "all CPU"

// AllCPU is the CPU time one operation cost the benchmark process,
// memcached (when used) and the database server together, in
// microseconds; false when the database server's was not measured.
func (c Cost) AllCPU() (float64, bool) {
	db, ok := c[CostDBCPU]
	if !ok {
		return 0, false
	}
	return db + c[CostMCCPU] + c[CostCPU], true
}

// costPhases are a model's phases that carry costs, in the table's order.
func costPhases(m *Model) []struct {
	name string
	p    *Phase
} {
	type named = struct {
		name string
		p    *Phase
	}
	var out []named
	for _, ref := range phaseRefs {
		if p := ref.get(m); p != nil && p.Cost != nil {
			out = append(out, named{ref.key, p})
		}
	}
	return out
}

// HasCosts reports whether any phase of r carries costs.
func (r *Result) HasCosts() bool {
	for i := range r.Models {
		if len(costPhases(&r.Models[i])) > 0 {
			return true
		}
	}
	return r.MemcacheGet != nil && r.MemcacheGet.Cost != nil
}

// WriteCostTable writes the cost per operation of every phase that has
// one, then the cost model's inputs H and L derived from them.
func WriteCostTable(w io.Writer, r *Result) error {
	var b strings.Builder
	b.WriteString("cost per operation, from the servers' counters over each measured window\n")
	b.WriteString("(global deltas: the benchmark's sandbox serves only the run; rows read and written, index lookups, bytes InnoDB wrote and\n wrote to its redo log, memcached keys asked, stored and incremented and bytes through it, the CPU of the benchmark process, memcached and the database server)\n")
	g := &grid{}
	head := []string{"model, phase", "ops"}
	for _, c := range costColumns {
		head = append(head, c.label)
	}
	g.add(head...)
	row := func(model, phase string, c Cost) {
		cells := []string{model + ", " + phase, fmtInt(int64(c[CostOps]))}
		for _, col := range costColumns {
			v, ok := col.value(c)
			if !ok {
				cells = append(cells, Dash)
				continue
			}
			cells = append(cells, fmtNum(v))
		}
		g.add(cells...)
	}
	for i := range r.Models {
		m := &r.Models[i]
		for _, p := range costPhases(m) {
			row(m.Name, p.name, p.p.Cost)
		}
	}
	if r.MemcacheGet != nil && r.MemcacheGet.Cost != nil {
		row("memcached", "get", r.MemcacheGet.Cost)
	}
	g.write(&b)
	if lines := costModelInputs(r); len(lines) > 0 {
		b.WriteString("\ncost-model inputs (Feeding Frenzy: push an edge when reads/posts ≥ H/L)\n")
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// costModelInputs derives H and L: a post's rows beyond a plain post's
// over the followers it reached, a page's rows over the followees it
// probed. The workload's posts reach Dataset.PostAudience followers on
// average and its readers follow Dataset.ReadFollowees authors; both are
// AvgFollowees when users are drawn uniformly (and in results that
// predate them).
func costModelInputs(r *Result) []string {
	fan, fanWhat := r.Dataset.AvgFollowees, "followers on average"
	if a := r.Dataset.PostAudience; a > 0 && math.Abs(a-fan) > 1e-6*fan {
		fan, fanWhat = a, "followers of the posting authors on average"
	}
	probed := r.Dataset.AvgFollowees
	if f := r.Dataset.ReadFollowees; f > 0 {
		probed = f
	}
	if !(fan > 0) || !(probed > 0) {
		return nil
	}
	var out []string
	push, plain := r.paperModel(FamilyPush), (*Model)(nil)
	for i := range r.Models {
		if m := &r.Models[i]; m.Family == FamilyPull && m.Base == "" && m.SharedSubmit && m.Submit.Cost != nil {
			plain = m
			break
		}
	}
	if push != nil && push.Submit.Cost != nil {
		pc := push.Submit.Cost
		line := fmt.Sprintf("H, one fan-out row: %s rows written per post by %s over %s %s",
			fmtNum(pc[CostRowsWritten]), push.Name, fmtNum(fan), fanWhat)
		if plain != nil {
			qc := plain.Submit.Cost
			line += fmt.Sprintf("; less %s's plain post (%s rows, %s bytes, %s redo bytes): %s rows, %s bytes, %s redo bytes per follower",
				plain.Name, fmtNum(qc[CostRowsWritten]), fmtNum(qc[CostBytesWritten]), fmtNum(qc[CostLogBytesWritten]),
				fmtNum((pc[CostRowsWritten]-qc[CostRowsWritten])/fan),
				fmtNum(math.Max(0, pc[CostBytesWritten]-qc[CostBytesWritten])/fan),
				fmtNum(math.Max(0, pc[CostLogBytesWritten]-qc[CostLogBytesWritten])/fan))
		}
		out = append(out, line)
	}
	var probes []string
	for i := range r.Models {
		m := &r.Models[i]
		if m.Family != FamilyPull || m.Base != "" || m.Retrieve.Cost == nil {
			continue
		}
		rows := m.Retrieve.Cost[CostRowsRead]
		probes = append(probes, fmt.Sprintf("%s %s (%s rows per newest page)", m.Name, fmtNum(rows/probed), fmtNum(rows)))
	}
	if len(probes) > 0 {
		out = append(out, fmt.Sprintf("L, one followee probed on a read, in rows read over %s followees: %s", fmtNum(probed), strings.Join(probes, ", ")))
	}
	return out
}
