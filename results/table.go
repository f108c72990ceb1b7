package results

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pushpull/pushpull/registry"
)

// WriteTable writes r as a plain-text table shaped like the paper's: one
// column per model, one row per figure, then the paper's own figures and the
// push:pull ratios, ours against the paper's. The ratios are the point of
// the comparison: fifteen years of hardware change the absolute rates but
// should not change which design wins by how much.
func WriteTable(w io.Writer, r *Result) error {
	var b strings.Builder
	writeHeader(&b, r)
	b.WriteString("\n")
	modelGrid(r).write(&b)
	b.WriteString("\n")
	b.WriteString("paper (2008): " + PaperSource + "\n")
	paperGrid().write(&b)
	b.WriteString("\n")
	ratioGrid(r).write(&b)
	if len(r.Goals) > 0 {
		b.WriteString("\n")
		goalGrid(r).write(&b)
	}
	if g := httpGrid(r); g != nil {
		b.WriteString("\n")
		g.write(&b)
	}
	if g := vitessGrid(r); g != nil {
		b.WriteString("\n")
		g.write(&b)
	}
	if g := qualityGrid(r); g != nil {
		b.WriteString("\n")
		if h := burstHeading(r); h != "" {
			b.WriteString(h + "\n")
		}
		g.write(&b)
	}
	if g := probeGrid(r); g != nil {
		b.WriteString("\n")
		g.write(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHeader summarises what was measured and where, so that a table
// pasted on its own still says what its numbers mean.
func writeHeader(b *strings.Builder, r *Result) {
	title := "pushpull benchmark"
	if !r.StartedAt.IsZero() {
		title += ", " + r.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	if d := r.Duration(); d > 0 {
		title += ", took " + d.Round(time.Second).String()
	}
	b.WriteString(title + "\n")
	var g grid
	for i, f := range r.Failures {
		label := ""
		if i == 0 {
			label = "RUN FAILED"
		}
		g.add(label, f)
	}
	if r.Command != "" {
		g.add("command", r.Command)
	}
	g.add("dataset", datasetSummary(r.Dataset))
	if r.Dataset.HasDegrees() {
		g.add("degrees", degreeSummary(r.Dataset))
	}
	g.add("server", serverSummary(r.Environment))
	g.add("client", clientSummary(r.Environment))
	if h := r.Harness; h != nil {
		s := Dash
		if h.Ran() {
			s = fmt.Sprintf("%s, p99 %s (a no-op store: the harness's own ceiling)",
				fmtRate(h.OpsPerSec, "ops/s"), fmtMs(h.P99Ms))
		}
		g.add("harness", s)
	}
	if h := r.MemcacheGet; h != nil && h.Ran() {
		g.add("memcached", fmt.Sprintf("%s, p99 %s (plain gets of one page-sized value: a cached read's ceiling)",
			fmtRate(h.OpsPerSec, "gets/s"), fmtMs(h.P99Ms)))
	}
	if l := r.Load; l != nil {
		g.add("load", fmtSeconds(l.Seconds)+" in all")
		for _, t := range l.Tables {
			g.add("", fmt.Sprintf("%s.%s: %s rows in %s, %s", t.Database, t.Table,
				fmtInt(t.Rows), fmtSeconds(t.Seconds), fmtRate(t.RowsPerSec, "rows/s")))
		}
	}
	for i, n := range r.Notes {
		label := ""
		if i == 0 {
			label = "notes"
		}
		g.add(label, n)
	}
	// Left-align the second column too: these are sentences, not figures.
	for _, row := range g.rows {
		if len(row) == 2 && row[0] != "" {
			row[0] += ":"
		}
	}
	width := 0
	for _, row := range g.rows {
		width = max(width, len(row[0]))
	}
	for _, row := range g.rows {
		fmt.Fprintf(b, "%-*s  %s\n", width, row[0], row[1])
	}
}

func datasetSummary(d Dataset) string {
	s := fmt.Sprintf("%s users, %s messages, %s followees/user on average",
		fmtInt(int64(d.Users)), fmtInt(int64(d.Messages)), strings.TrimSuffix(fmtNum(d.AvgFollowees), ".00"))
	var more []string
	if d.MaxFollowees > 0 {
		more = append(more, "max "+fmtInt(int64(d.MaxFollowees))+" followees")
	}
	if d.MaxFollowers > 0 {
		more = append(more, "max "+fmtInt(int64(d.MaxFollowers))+" followers")
	}
	if d.Edges > 0 {
		more = append(more, fmtInt(d.Edges)+" follows")
	}
	if d.MailboxRows > 0 {
		more = append(more, fmtInt(d.MailboxRows)+" mailbox rows")
	}
	if d.Graph != "" {
		more = append(more, d.Graph+" graph")
	}
	if d.GraphFile != "" {
		more = append(more, "from "+d.GraphFile)
	}
	if d.Activity != "" {
		more = append(more, d.Activity+" activity")
	}
	more = append(more, fmt.Sprintf("seed %d", d.Seed))
	if d.Scale > 0 {
		more = append(more, "scale "+fmtExtra(d.Scale)+"x the paper's")
	}
	return s + " (" + strings.Join(more, ", ") + ")"
}

// degreeSummary writes the degree figures, e.g. "followers per user: max
// 9,999, p99 385, p50 19; followees per user: max 3,500, p99 287, p50 27".
func degreeSummary(d Dataset) string {
	f := func(name string, most, p99, p50 int) string {
		return fmt.Sprintf("%s per user: max %s, p99 %s, p50 %s", name, fmtInt(int64(most)), fmtInt(int64(p99)), fmtInt(int64(p50)))
	}
	return f("followers", d.MaxFollowers, d.P99Followers, d.P50Followers) + "; " +
		f("followees", d.MaxFollowees, d.P99Followees, d.P50Followees)
}

func serverSummary(e Environment) string {
	s := e.ServerVersion
	if s == "" {
		s = "unknown server"
	}
	if e.Durability != "" {
		s += ", durability " + e.Durability
	}
	var kv []string
	for _, k := range sortedKeys(e.InnoDB) {
		kv = append(kv, k+"="+e.InnoDB[k])
	}
	if len(kv) > 0 {
		s += " (" + strings.Join(kv, ", ") + ")"
	}
	if e.Sandbox {
		s += ", in a sandbox"
	}
	return s
}

func clientSummary(e Environment) string {
	var parts []string
	if e.GoVersion != "" {
		parts = append(parts, strings.TrimSpace(e.GoVersion+" "+e.OS+"/"+e.Arch))
	}
	if e.CPUs > 0 {
		parts = append(parts, fmt.Sprintf("%d CPUs", e.CPUs))
	}
	if e.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("%d workers", e.Concurrency))
	}
	if e.PhaseSeconds > 0 {
		parts = append(parts, fmtSeconds(e.PhaseSeconds)+" per phase")
	}
	if e.GitCommit != "" {
		parts = append(parts, "commit "+e.GitCommit)
	}
	if len(parts) == 0 {
		return Dash
	}
	return strings.Join(parts, ", ")
}

// phaseRate renders a phase's rate, or Dash if it did not run.
func phaseRate(p *Phase, unit string) string {
	if p == nil || !p.Ran() {
		return Dash
	}
	return fmtRate(p.OpsPerSec, unit)
}

// phaseLatency renders a phase's median and 99th percentile.
func phaseLatency(p *Phase) string {
	if p == nil || !p.HasLatency() {
		return Dash
	}
	return fmtMs(p.P50Ms) + " / " + fmtMs(p.P99Ms)
}

func phaseErrors(p *Phase) string {
	if p == nil || !p.Ran() {
		return Dash
	}
	return fmtInt(p.Errors)
}

// usedPhases leaves out the mixed phase when no model ran one, so that a
// run without it does not grow a row of dashes.
func usedPhases(models []Model) []phaseRef {
	var refs []phaseRef
	for _, ref := range phaseRefs {
		for i := range models {
			if ref.get(&models[i]) != nil {
				refs = append(refs, ref)
				break
			}
		}
	}
	return refs
}

func modelGrid(r *Result) *grid {
	g := &grid{}
	ms := r.Models
	row := func(label string, cell func(m *Model) string) {
		cells := []string{label}
		for i := range ms {
			cells = append(cells, cell(&ms[i]))
		}
		g.add(cells...)
	}
	row("", func(m *Model) string { return m.Name })
	row("data size (data+index)", func(m *Model) string {
		if m.DataBytes <= 0 {
			return Dash
		}
		return fmtBytes(m.DataBytes)
	})
	for i := range ms {
		if ms[i].DiskBytes > 0 {
			row("disk size (files)", func(m *Model) string {
				if m.DiskBytes <= 0 {
					return Dash
				}
				return fmtBytes(m.DiskBytes)
			})
			break
		}
	}
	for _, ref := range usedPhases(ms) {
		if ref.key == "traffic" {
			trafficHeading(g, ms)
		}
		row(ref.label, func(m *Model) string { return phaseRate(ref.get(m), ref.unit) })
		row("  latency p50 / p99", func(m *Model) string { return phaseLatency(ref.get(m)) })
		row("  errors", func(m *Model) string { return phaseErrors(ref.get(m)) })
		switch ref.key {
		case "traffic":
			trafficRows(ms, row)
			visibilityRows(ms, row)
		case "delete":
			deleteRows(ms, row)
		case "burst":
			burstRows(ms, row)
		}
	}
	returningRows(ms, row)
	extra := map[string]bool{}
	for i := range ms {
		for k := range ms[i].Extra {
			// The probe's figures have a table of their own
			// (probeGrid).
			extra[k] = !strings.HasPrefix(k, "probe_")
		}
	}
	for _, k := range sortedKeys(extra) {
		if !extra[k] {
			continue
		}
		row(k, func(m *Model) string {
			v, ok := m.Extra[k]
			if !ok {
				return Dash
			}
			return fmtExtra(v)
		})
	}
	return g
}

func paperGrid() *grid {
	g := &grid{}
	push, pull := Paper[registry.FamilyPush], Paper[registry.FamilyPull]
	g.add("", string(registry.FamilyPush), string(registry.FamilyPull))
	g.add("data size", fmtBytes(push.DataBytes), fmtBytes(pull.DataBytes))
	g.add("submission", fmtRate(push.SubmitPerSec, "msg/s"), fmtRate(pull.SubmitPerSec, "msg/s"))
	g.add("retrieval", fmtRate(push.RetrievePerSec, "timelines/s"), fmtRate(pull.RetrievePerSec, "timelines/s"))
	return g
}

// figure is one of the three figures the paper reports for each design.
type figure struct {
	label string
	value func(m *Model) float64 // <= 0 when not measured
	paper func(f PaperFigures) float64
	lower bool // smaller is better (size), so "best" means smallest
}

var figures = []figure{
	{"data size", func(m *Model) float64 { return float64(m.DataBytes) },
		func(f PaperFigures) float64 { return float64(f.DataBytes) }, true},
	{"submission", func(m *Model) float64 { return rateOf(&m.Submit) },
		func(f PaperFigures) float64 { return f.SubmitPerSec }, false},
	{"retrieval", func(m *Model) float64 { return rateOf(&m.Retrieve) },
		func(f PaperFigures) float64 { return f.RetrievePerSec }, false},
}

// rateOf is p's rate, or NaN if it did not run (a real 0 stays 0).
func rateOf(p *Phase) float64 {
	if p == nil || !p.Ran() {
		return math.NaN()
	}
	return p.OpsPerSec
}

// paperModel is the model of family that the push : pull ratios take: the
// first of the paper's models in that family, or failing that the first
// uncached model of the family.
func (r *Result) paperModel(family registry.Family) *Model {
	var first *Model
	for i := range r.Models {
		m := &r.Models[i]
		if m.Family != family || m.Base != "" {
			continue
		}
		if m.PaperModel {
			return m
		}
		if first == nil {
			first = m
		}
	}
	return first
}

// bestPull is the uncached pull-family model that does best on f, or nil.
func (r *Result) bestPull(f figure) *Model {
	var best *Model
	for i := range r.Models {
		m := &r.Models[i]
		v := f.value(m)
		if m.Family != registry.FamilyPull || m.Base != "" || !(v > 0) {
			continue
		}
		if best == nil || (f.lower && v < f.value(best)) || (!f.lower && v > f.value(best)) {
			best = m
		}
	}
	return best
}

// pushPullRatio is push's figure divided by pull's for one of "data size",
// "submission" or "retrieval", or NaN if either was not measured.
func pushPullRatio(f figure, push, pull *Model) float64 {
	if push == nil || pull == nil {
		return math.NaN()
	}
	return ratio(f.value(push), f.value(pull))
}

func ratioGrid(r *Result) *grid {
	g := &grid{}
	push, pull := r.paperModel(registry.FamilyPush), r.paperModel(registry.FamilyPull)
	pushName, pullName := string(registry.FamilyPush), string(registry.FamilyPull)
	if push != nil {
		pushName = push.Name
	}
	if pull != nil {
		pullName = pull.Name
	}
	head := []string{"push : pull ratio"}
	paper := []string{"paper (2008)"}
	vsPaper := []string{"ours, " + pushName + " : " + pullName}
	vsBest := []string{"ours, " + pushName + " : best pull"}
	for _, f := range figures {
		head = append(head, f.label)
		paper = append(paper, fmtRatio(ratio(f.paper(Paper[registry.FamilyPush]), f.paper(Paper[registry.FamilyPull]))))
		vsPaper = append(vsPaper, fmtRatio(pushPullRatio(f, push, pull)))
		best := r.bestPull(f)
		s := fmtRatio(pushPullRatio(f, push, best))
		if s != Dash {
			s += " (" + best.Name + ")"
		}
		vsBest = append(vsBest, s)
	}
	g.add(head...)
	g.add(paper...)
	g.add(vsPaper...)
	g.add(vsBest...)
	return g
}

// goalGrid lists the run's goals: what was reached against the target.
func goalGrid(r *Result) *grid {
	g := &grid{}
	g.add("goals (benchmark figures)", "reached", "target", "", "")
	for _, gl := range r.Goals {
		verdict := "met"
		if !gl.Met {
			verdict = "NOT met"
		}
		g.add(gl.Name, fmtRatio(gl.Value), "≥ "+fmtRatio(gl.Target), verdict, gl.Detail)
	}
	return g
}

// trafficHeading names the mix of the mixed traffic (the same for every
// model of a run) and how it was driven.
func trafficHeading(g *grid, ms []Model) {
	for i := range ms {
		if t := ms[i].Traffic; t != nil {
			s := "production traffic, mix " + t.Mix + ": "
			if t.Loop == LoopOpen {
				s += fmt.Sprintf("open loop (latency from each intended start), at most %d in flight", t.Workers)
			} else {
				s += fmt.Sprintf("closed loop of %d workers", t.Workers)
			}
			g.add(s)
			return
		}
	}
}

// trafficRows are the rows of the mixed traffic beyond its totals: each
// operation type, how an open loop kept up with its plan, and the rate
// search.
func trafficRows(ms []Model, row func(label string, cell func(m *Model) string)) {
	var ops []string
	open, search := false, false
	for i := range ms {
		t := ms[i].Traffic
		if t == nil {
			continue
		}
		for _, op := range t.OpNames() {
			if !slices.Contains(ops, op) {
				ops = append(ops, op)
			}
		}
		open = open || t.Open != nil
		search = search || t.Search != nil
	}
	traffic := func(cell func(t *Traffic) string) func(m *Model) string {
		return func(m *Model) string {
			if m.Traffic == nil {
				return Dash
			}
			return cell(m.Traffic)
		}
	}
	for _, op := range ops {
		get := func(t *Traffic) *Phase {
			if p, ok := t.Ops[op]; ok {
				return &p
			}
			return nil
		}
		row("  "+op, traffic(func(t *Traffic) string { return phaseRate(get(t), "ops/s") }))
		row("    p50 / p99 / p99.9 / max", traffic(func(t *Traffic) string {
			p := get(t)
			if p == nil || !p.HasLatency() {
				return Dash
			}
			return fmtNum(p.P50Ms) + " / " + fmtNum(p.P99Ms) + " / " + fmtNum(p.P999Ms) + " / " + fmtMs(p.MaxMs)
		}))
		row("    errors", traffic(func(t *Traffic) string { return phaseErrors(get(t)) }))
	}
	if open {
		openRow := func(label string, cell func(o *OpenLoop) string) {
			row(label, traffic(func(t *Traffic) string {
				if t.Open == nil {
					return Dash
				}
				return cell(t.Open)
			}))
		}
		openRow("  offered / achieved", func(o *OpenLoop) string {
			return fmtNum(o.OfferedPerSec) + " / " + fmtRate(o.AchievedPerSec, "ops/s")
		})
		openRow("  service time p50 / p99", func(o *OpenLoop) string { return phaseLatency(&o.Service) })
		openRow("  late starts (p99 lateness)", func(o *OpenLoop) string {
			return fmtInt(o.Late) + " of " + fmtInt(o.Started) + " (" + fmtMs(o.LateP99Ms) + ")"
		})
		openRow("  missed (never started)", func(o *OpenLoop) string { return fmtInt(o.Missed) })
		openRow("  saturated", func(o *OpenLoop) string {
			if o.Saturated {
				return "SATURATED"
			}
			return "no"
		})
	}
	if search {
		var slo float64
		for i := range ms {
			if t := ms[i].Traffic; t != nil && t.Search != nil {
				slo = t.Search.SLOMs
				break
			}
		}
		row("highest rate at p99 ≤ "+fmtMs(slo), traffic(func(t *Traffic) string {
			if t.Search == nil {
				return Dash
			}
			return fmtBestRate(t.Search.BestPerSec)
		}))
		row("  search steps", traffic(func(t *Traffic) string {
			if t.Search == nil {
				return Dash
			}
			return fmt.Sprintf("%d of %s", len(t.Search.Steps), fmtSeconds(t.Search.StepSeconds))
		}))
	}
}
