package results

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/registry"
)

// costColumns are the figures WriteCostTable shows, in order.
var costColumns = []costColumn{
	{cost.RowsRead, "rows read", nil},
	{cost.IndexLookups, "index lookups", nil},
	{cost.RowsWritten, "rows written", nil},
	{cost.RowsInserted, "inserted", nil},
	{cost.RowsUpdated, "updated", nil},
	{cost.RowsDeleted, "deleted", nil},
	{cost.BytesWritten, "bytes written", nil},
	{cost.LogBytesWritten, "redo bytes", nil},
	{cost.MCGets, "mc gets", nil},
	{cost.MCSets, "mc sets", nil},
	{cost.MCIncrs, "mc incrs", nil},
	{cost.MCBytes, "mc bytes", nil},
	{cost.RDScripts, "redis scripts", nil},
	{cost.RDCommands, "redis cmds", nil},
	{cost.RDBytes, "redis bytes", nil},
	{cost.CPU, "client CPU µs", nil},
	{cost.MCCPU, "mc CPU µs", nil},
	{cost.RDCPU, "redis CPU µs", nil},
	{cost.DBCPU, "db CPU µs", nil},
	{cost.VtcomboCPU, "vtcombo CPU µs", nil},
	{cost.VitessDBCPU, "Vitess mysqld CPU µs", nil},
	{costAllCPU, "all CPU µs", cost.Cost.AllCPU},
	{cost.StealShare, "steal %", func(c cost.Cost) (float64, bool) {
		v, ok := c[cost.StealShare]
		return 100 * v, ok
	}},
}

// costColumn is a figure of the cost table: stored in Cost under key, or
// derived from the stored ones (then key only names the column).
type costColumn struct {
	key, label string
	derived    func(cost.Cost) (float64, bool)
}

// value is col's figure in c, false when c lacks it.
func (col costColumn) value(c cost.Cost) (float64, bool) {
	if col.derived != nil {
		return col.derived(c)
	}
	v, ok := c[col.key]
	return v, ok
}

// costAllCPU names the table's column for the CPU of client, memcached,
// Redis and database server together (AllCPU): what an operation cost a
// machine they share.
const costAllCPU = "all CPU"

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
	b.WriteString("(global deltas: the benchmark's sandbox serves only the run; rows read and written, index lookups, bytes InnoDB wrote and\n wrote to its redo log, memcached keys asked, stored and incremented and bytes through it, the CPU of the benchmark process, memcached and the database server;\n steal %: the share of the machine's CPU time a hypervisor gave other machines over the window, which no CPU column counts)\n")
	g := &grid{}
	head := []string{"model, phase", "ops"}
	for _, c := range costColumns {
		head = append(head, c.label)
	}
	g.add(head...)
	row := func(model, phase string, c cost.Cost) {
		cells := []string{model + ", " + phase, fmtInt(int64(c[cost.Ops]))}
		for _, col := range costColumns {
			v, ok := col.value(c)
			if !ok && c.CountersUnreliable() && slices.Contains(cost.DBRowKeys, col.key) {
				cells = append(cells, "unreliable")
				continue
			}
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
	push, plain := r.paperModel(registry.FamilyPush), (*Model)(nil)
	for i := range r.Models {
		if m := &r.Models[i]; m.Family == registry.FamilyPull && m.Base == "" && m.SharedSubmit && m.Submit.Cost != nil {
			plain = m
			break
		}
	}
	if push != nil && push.Submit.Cost != nil {
		pc := push.Submit.Cost
		line := fmt.Sprintf("H, one fan-out row: %s rows written per post by %s over %s %s",
			fmtNum(pc[cost.RowsWritten]), push.Name, fmtNum(fan), fanWhat)
		if plain != nil {
			qc := plain.Submit.Cost
			line += fmt.Sprintf("; less %s's plain post (%s rows, %s bytes, %s redo bytes): %s rows, %s bytes, %s redo bytes per follower",
				plain.Name, fmtNum(qc[cost.RowsWritten]), fmtNum(qc[cost.BytesWritten]), fmtNum(qc[cost.LogBytesWritten]),
				fmtNum((pc[cost.RowsWritten]-qc[cost.RowsWritten])/fan),
				fmtNum(math.Max(0, pc[cost.BytesWritten]-qc[cost.BytesWritten])/fan),
				fmtNum(math.Max(0, pc[cost.LogBytesWritten]-qc[cost.LogBytesWritten])/fan))
		}
		out = append(out, line)
	}
	var probes []string
	for i := range r.Models {
		m := &r.Models[i]
		if m.Family != registry.FamilyPull || m.Base != "" || m.Retrieve.Cost == nil {
			continue
		}
		rows := m.Retrieve.Cost[cost.RowsRead]
		probes = append(probes, fmt.Sprintf("%s %s (%s rows per newest page)", m.Name, fmtNum(rows/probed), fmtNum(rows)))
	}
	if len(probes) > 0 {
		out = append(out, fmt.Sprintf("L, one followee probed on a read, in rows read over %s followees: %s", fmtNum(probed), strings.Join(probes, ", ")))
	}
	return out
}
