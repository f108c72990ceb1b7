package plan

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	schema "github.com/pushpull/pushpull/sql"
)

// FollowBytes is what a follow takes on disk: its two B-tree entries
// (by follower and by followee) of two 4-byte ids, about 37 bytes each
// with InnoDB's record overhead and page fill. It is assumed, not fitted:
// every counted run has the same follows per message.
const FollowBytes = 75

// phaseNames are the phases of a counted run the plan predicts, as
// results.Model names them.
var phaseNames = []string{"retrieve", "retrieve_older", "submit", "traffic"}

// countedPhase is one model's phase of a counted run: what the servers
// counted, and the work the model's cost model predicts for the run's
// own workload at the phase's rates.
type countedPhase struct {
	run, model, phase string
	needs             registry.Servers
	measured          cost.Cost
	predicted         registry.Work
	// ops and shares are the design's work per operation of each kind
	// and the phase's shares of them (predicted = mixWork(ops, shares)).
	ops    registry.OpWork
	shares [5]float64
	// unreliable: the run could not trust the database's counters of
	// this phase (cost.DBCountersUnreliable); measured has no rows.
	unreliable bool
	// open: an open-loop traffic phase, at a planned rate rather than
	// at saturation; its operations ran at rate a second over seconds.
	// saturated, it did not keep up with that rate
	// (results.OpenLoop.Saturated).
	open, saturated bool
	rate, seconds   float64
	// messages is the store's size in the run (its dataset's messages),
	// at which the design's CPU factors are taken.
	messages float64
	// workAt is predicted with the pace of one connection
	// (registry.Demand.SerialRowsPerSec) set to serial instead.
	workAt func(serial float64) (registry.Work, error)
	// stepWork, of a traffic phase, is the design's work per operation
	// of each kind for the phase's mix in step i of its rate search, at
	// rate operations a second, after what the run did before the step
	// (runHistories), its caches cold as cold says.
	stepWork func(i int, rate float64, cold registry.ColdStart) (registry.OpWork, error)
}

// runLabel names a run in tables: its graph and users.
func runLabel(r *results.Result) string {
	g := r.Dataset.Graph
	if i := strings.IndexByte(g, '('); i > 0 {
		g = g[:i]
	}
	return fmt.Sprintf("%s, %s users", g, dataset.Commas(int64(r.Dataset.Users)))
}

// runWorkload is the workload of a counted run, without rates: its
// users, graph, activity and messages.
func runWorkload(r *results.Result) (Workload, error) {
	ds := r.Dataset
	w := Workload{Users: ds.Users, AvgFollowees: ds.AvgFollowees, MessagesPerUser: float64(ds.Messages) / float64(ds.Users)}
	switch {
	case strings.HasPrefix(ds.Graph, dataset.GraphUniform):
		w.Graph = dataset.GraphUniform
	case strings.HasPrefix(ds.Graph, dataset.GraphPowerLaw):
		w.Graph = dataset.GraphPowerLaw
		w.InExponent, w.OutExponent = ds.GraphParams["in_exponent"], ds.GraphParams["out_exponent"]
	case ds.GraphFile != "":
		el, err := dataset.ReadEdgeList(ds.GraphFile, dataset.SelfFollowsSkip)
		if err != nil {
			return Workload{}, err
		}
		w.Graph, w.EdgeList = dataset.GraphEdges, el
	default:
		return Workload{}, fmt.Errorf("plan: run %s: graph %q has no cost model (uniform, powerlaw or an edge file)", r.Command, ds.Graph)
	}
	switch {
	case strings.HasPrefix(ds.Activity, dataset.ActivitySkewed):
		w.Activity = dataset.Activity{Mode: dataset.ActivitySkewed,
			PostExponent: ds.ActivityParams["post_exponent"], ReadExponent: ds.ActivityParams["read_exponent"]}
	case ds.Activity == "" || ds.Activity == dataset.ActivityUniform:
		w.Activity = dataset.Activity{Mode: dataset.ActivityUniform}
	default:
		return Workload{}, fmt.Errorf("plan: run %s: activity %q has no cost model", r.Command, ds.Activity)
	}
	return w, nil
}

// cliWarmup is pushpull bench's --warmup unless told, which the runs that
// predate the recorded warm-up (results.Environment.WarmupSeconds) had.
const cliWarmup = 500 * time.Millisecond

// runWarmup is the unmeasured time before each phase of r, in seconds: as
// recorded, or, for a run that predates the record, its command's
// --warmup or else bench's default.
func runWarmup(r *results.Result) float64 {
	if w := r.Environment.WarmupSeconds; w != nil {
		return *w
	}
	for _, arg := range strings.Fields(r.Command) {
		if v, ok := strings.CutPrefix(arg, "--warmup="); ok {
			if d, err := time.ParseDuration(v); err == nil {
				return d.Seconds()
			}
		}
	}
	return cliWarmup.Seconds()
}

// mixOf is the shares of a traffic phase's mix by operation.
func mixOf(spec string) (newest, older, post, follow, unfollow float64, err error) {
	m, err := workload.ParseMix(spec)
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	return m.Share(workload.OpNewest), m.Share(workload.OpOlder), m.Share(workload.OpPost),
		m.Share(workload.OpFollow), m.Share(workload.OpUnfollow), nil
}

// trafficShares is the shares of a traffic phase's operations by kind
// (newest, older, post, follow, unfollow), as it made them: a phase of a
// few thousand operations draws its few hundred posts, follows and
// unfollows a tenth above or below the mix's shares (push's mix on the
// power-law graph in validation-xeon-5 made 1.8 % follows and unfollows
// of the 2 % asked), and each of those writes tens to hundreds of rows.
// A phase that counted no operation by kind takes its mix's shares.
func trafficShares(t *results.Traffic) (mixShares, error) {
	var all float64
	for _, p := range t.Ops {
		all += float64(p.Ops)
	}
	if all > 0 {
		var s mixShares
		for i, kind := range []string{workload.OpNewest, workload.OpOlder, workload.OpPost, workload.OpFollow, workload.OpUnfollow} {
			s[i] = float64(t.Ops[kind].Ops) / all
		}
		return s, nil
	}
	n, o, p, f, u, err := mixOf(t.Mix)
	return mixShares{n, o, p, f, u}, err
}

// counted returns every phase of r that carries costs, for the models
// that declare a cost model, with the prediction for it at the pace of
// one connection serial (registry.Demand.SerialRowsPerSec; 0: each
// design's own); those whose database counters the run could not trust
// come marked unreliable.
func counted(r *results.Result, serial float64) ([]countedPhase, error) {
	base, err := runWorkload(r)
	if err != nil {
		return nil, err
	}
	var out []countedPhase
	for i := range r.Models {
		m := &r.Models[i]
		reg, err := registry.Lookup(m.Name)
		if err != nil || reg.Work == nil {
			continue
		}
		// demand is the run's workload at a phase's rates: rate
		// operations a second drawn by shares.
		demand := func(shares mixShares, rate float64) (registry.Demand, error) {
			w := base
			w.NewestPerSec, w.OlderPerSec, w.PostsPerSec = rate*shares[0], rate*shares[1], rate*shares[2]
			w.FollowsPerSec = rate * (shares[3] + shares[4])
			if shares[0]+shares[1] == 0 {
				// The read phases ran just before the write phases: every
				// user had read lately, at the newest-page phase's rate.
				w.NewestPerSec = m.Retrieve.OpsPerSec
			}
			d, _, err := w.demand()
			d.SerialRowsPerSec = serial
			return d, err
		}
		// work is the model's work per operation of a phase of rate
		// operations a second drawn by shares, after h.
		work := func(shares mixShares, rate float64, h registry.RunHistory) (registry.Work, error) {
			d, err := demand(shares, rate)
			if err != nil {
				return registry.Work{}, err
			}
			d.Run = &h
			ow, _, _, err := reg.WorkFor(d, m.Options)
			return mixWork(ow, shares), err
		}
		hist, err := runHistories(r, m, reg, work)
		if err != nil {
			return nil, err
		}
		for _, name := range phaseNames {
			var ph *results.Phase
			var shares mixShares
			switch name {
			case "retrieve":
				ph, shares = &m.Retrieve, [5]float64{1, 0, 0, 0, 0}
			case "retrieve_older":
				ph, shares = &m.RetrieveOlder, [5]float64{0, 1, 0, 0, 0}
			case "submit":
				ph, shares = &m.Submit, [5]float64{0, 0, 1, 0, 0}
			case "traffic":
				if m.Traffic == nil {
					continue
				}
				ph = &m.Traffic.Total
				if shares, err = trafficShares(m.Traffic); err != nil {
					return nil, err
				}
			}
			_, read := ph.Cost[cost.RowsRead]
			_, written := ph.Cost[cost.RowsWritten]
			unreliable := ph.Cost.CountersUnreliable()
			if ph.Cost == nil || ph.Cost[cost.Ops] <= 0 || ph.OpsPerSec <= 0 || (!read || !written) && !unreliable || ph.Errors > 0 {
				continue // not counted (a shared submission shows another model's), or failing over
			}
			d, err := demand(shares, ph.OpsPerSec)
			if err != nil {
				return nil, err
			}
			if h, ok := hist[name]; ok {
				h.Audience = ph.PostAudience             // the phase's own posts' followers, where counted
				h.FolloweeMessages = ph.FolloweeMessages // and its follows' followees' messages
				d.Run = &h
			}
			if name == "traffic" && reg.Bench.Has(registry.PhaseCacheMixed) {
				// Its traffic runs on a cache of its own, empty until
				// the phase's warm-up: as many operations as the run
				// counted there, at the phase's rate.
				warmup := runWarmup(r)
				if ph.WarmupOps > 0 {
					warmup = float64(ph.WarmupOps) / ph.OpsPerSec
				}
				d.Cold = registry.ColdStart{Warmup: warmup, Span: ph.Seconds}
			}
			ow, _, _, err := reg.WorkFor(d, m.Options)
			if err != nil {
				return nil, fmt.Errorf("plan: run %s: %s with the options it recorded: %w", r.Command, m.Name, err)
			}
			workAt := func(serial float64) (registry.Work, error) {
				d := d
				d.SerialRowsPerSec = serial
				ow, _, _, err := reg.WorkFor(d, m.Options)
				return mixWork(ow, shares), err
			}
			stepWork := func(i int, rate float64, cold registry.ColdStart) (registry.OpWork, error) {
				sd, err := demand(shares, rate)
				if err != nil {
					return registry.OpWork{}, err
				}
				sd.Run, sd.Cold = d.Run, cold
				if h, ok := hist[stepPhase(i)]; ok {
					sd.Run = &h
				}
				ow, _, _, err := reg.WorkFor(sd, m.Options)
				return ow, err
			}
			out = append(out, countedPhase{
				run: runLabel(r), model: m.Name, phase: name, needs: reg.Needs, measured: ph.Cost,
				predicted: mixWork(ow, shares), ops: ow, shares: shares, unreliable: unreliable, messages: base.Messages(),
				open: name == "traffic" && m.Traffic.Loop == results.LoopOpen, rate: ph.OpsPerSec, seconds: ph.Seconds,
				saturated: name == "traffic" && m.Traffic.Open != nil && m.Traffic.Open.Saturated, workAt: workAt,
				stepWork: stepWork,
			})
		}
	}
	return out, nil
}

// mixWork is the work of an operation drawn by shares (newest, older,
// post, follow, unfollow): a post counts its later fan-out too.
func mixWork(w registry.OpWork, shares [5]float64) registry.Work {
	return w.Newest.Scale(shares[0]).Add(w.Older.Scale(shares[1])).Add(w.Post.Add(w.Later).Scale(shares[2])).
		Add(w.Follow.Scale(shares[3])).Add(w.Unfollow.Scale(shares[4]))
}

// measuredWork is the work a phase's counters counted.
func measuredWork(c cost.Cost) registry.Work {
	return registry.Work{
		RowsRead: c[cost.RowsRead], RowsWritten: c[cost.RowsWritten],
		MCKeys: c[cost.MCGets] + c[cost.MCSets] + c[cost.MCIncrs], RedisCommands: c[cost.RDCommands],
	}
}

// fitWork is the work of a counted phase that a calibration's unit costs
// are fitted on: the items its counters counted, with the statements,
// round trips and rebuilt entries its model predicts (no counter counts
// them). A rebuild is priced by its entries and statements, not by its
// rows (registry.Work.Rebuilt), and the counters do not tell its rows
// from the others, which on the power-law graph are 1.8 times those on
// the uniform one for the same CPU: in a phase with rebuilds, the rows
// are the model's outside them.
func fitWork(p countedPhase) registry.Work {
	w := measuredWork(p.measured)
	w.Statements, w.CacheCalls, w.Rebuilt = p.predicted.Statements, p.predicted.CacheCalls, p.predicted.Rebuilt
	if p.predicted.Rebuilt > 0 {
		w.RowsRead = math.Max(0, p.predicted.RowsRead-p.predicted.RebuildRowsRead)
		w.RowsWritten = math.Max(0, p.predicted.RowsWritten-p.predicted.RebuildRowsWritten)
	}
	return w
}

// cacheCalls splits a phase's predicted cache round trips between
// memcached and Redis by the servers its model needs.
func cacheCalls(p countedPhase) (mc, rd float64) {
	switch {
	case p.needs&registry.Memcached != 0 && p.needs&registry.Redis != 0:
		return p.predicted.CacheCalls / 2, p.predicted.CacheCalls / 2
	case p.needs&registry.Memcached != 0:
		return p.predicted.CacheCalls, 0
	case p.needs&registry.Redis != 0:
		return 0, p.predicted.CacheCalls
	}
	return 0, 0
}

// Calibrate fits a calibration on counted runs (pushpull bench --cost,
// with the database's CPU measured: the run started its own servers):
// each server's CPU per operation of every phase as a weighted least
// squares, coefficients at least 0, on the items its counters counted
// and the statements, round trips and rebuilt entries
// (registry.Work.Rebuilt) the designs' cost models predict (fitUnits).
// Each phase weighs by the inverse square of its CPU, so the fit is in
// relative error. Then each design's CPU factors (results.CPUFactors):
// what its measured CPU per operation is over the CPU of its predicted
// work at those unit costs, per kind of operation and for the mix
// (fitFactors), and, when the runs held stores of different sizes, how
// they grow with the size (fitSized). Phases at a planned rate (open loop, and the steps of rate
// searches that kept up) fit no unit cost: with the runs' idle CPU they
// fit each server's idle CPU (fitIdle) and the CPU of the wake-ups below
// saturation (fitWake); the rate steps then give each design's open
// factor, what its traffic at a planned rate costs beyond those
// (fitOpen), and its saturation share, the busy share of the cores at
// which its throughput stopped rising (fitSaturation). First of all,
// the pace of one connection (results.Calibration.SerialRowsPerSec) that
// the phases at saturation whose rows it decides show (fitSerial): every
// phase is predicted at it.
// sources name the runs.
func Calibrate(runs []*results.Result, sources []string) (*results.Calibration, error) {
	var atSaturation []countedPhase
	for _, r := range runs {
		ps, err := counted(r, 0)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if !p.unreliable && !p.open {
				atSaturation = append(atSaturation, p)
			}
		}
	}
	serial := fitSerial(atSaturation)
	var phases []countedPhase
	var below []belowSaturation
	for _, r := range runs {
		ps, err := counted(r, serial)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			switch {
			case p.unreliable:
			case p.open:
				// At a planned rate, not at saturation: the wake-ups'
				// fit, not the unit costs'; one that did not keep up is
				// neither.
				if c, ok := results.ProcessCPUOf(p.measured, p.seconds); ok && !p.saturated && r.Environment.CPUs > 0 {
					below = append(below, belowSaturation{p, p.ops, p.predicted, p.rate, float64(r.Environment.CPUs), c, -1})
				}
			default:
				phases = append(phases, p)
			}
		}
		steps, err := searchSteps(r, ps)
		if err != nil {
			return nil, err
		}
		below = append(below, steps...)
	}
	cal, err := fitUnits(phases)
	if err != nil {
		return nil, err
	}
	cal.Version, cal.CreatedAt, cal.Sources, cal.Machine = results.CalibrationFormatVersion, time.Now(), sources, machine(runs)
	cal.CPUModel = runsCPUModel(runs)
	cal.SerialRowsPerSec = serial
	cal.FollowBytes = FollowBytes
	cal.MessageBytes, cal.MailboxRowBytes = fitBytes(runs)
	cal.Factors = fitFactors(cal, phases)
	cal.Idle = fitIdle(runs)
	cal.Wake = fitWake(cal, below)
	fitOpen(cal, below)
	fitSaturation(cal, runs)
	// How well the fit reproduces its own phases, on measured items.
	var errs []float64
	for _, p := range phases {
		all, ok := p.measured.AllCPU()
		if !ok || all <= 0 {
			continue
		}
		errs = append(errs, math.Abs(cpuOf(cal, fitWork(p), p.needs).all()-all)/all*100)
	}
	slices.Sort(errs)
	cal.Fit.Phases = len(errs)
	if len(errs) > 0 {
		cal.Fit.MedianErrorPct = math.Round(errs[len(errs)/2])
		cal.Fit.MaxErrorPct = math.Round(errs[len(errs)-1])
	}
	return cal, nil
}

// fitSerial is the pace of one connection running statements one after
// another (registry.Demand.SerialRowsPerSec) that the phases show whose
// rows read it decides: those whose predicted rows read move by a tenth
// of their measured ones or more between a pace of serialLow and one of
// serialHigh rows a second (a background worker that falls behind: its
// share of the rows is its pace over the phase's rate), and whose
// measured rows lie between the two. Each gives the pace at which its
// predicted rows are its measured ones (the rows grow with the pace);
// the fit is their median, 0 when no phase decides it.
func fitSerial(phases []countedPhase) float64 {
	var paces []float64
	for _, p := range phases {
		measured := measuredWork(p.measured).RowsRead
		if p.workAt == nil || !(measured > 0) {
			continue
		}
		rows := func(pace float64) float64 {
			w, err := p.workAt(pace)
			if err != nil {
				return math.NaN()
			}
			return w.RowsRead
		}
		low, high := rows(serialLow), rows(serialHigh)
		if !(high-low >= measured/10) || !(measured > low && measured < high) {
			continue
		}
		lo, hi := math.Log(serialLow), math.Log(serialHigh)
		for range 50 {
			mid := (lo + hi) / 2
			if rows(math.Exp(mid)) < measured {
				lo = mid
			} else {
				hi = mid
			}
		}
		paces = append(paces, math.Exp((lo+hi)/2))
	}
	if len(paces) == 0 {
		return 0
	}
	slices.Sort(paces)
	n := len(paces)
	return math.Round((paces[(n-1)/2] + paces[n/2]) / 2)
}

// serialLow and serialHigh bound the pace of one connection fitSerial
// looks for, in rows a second: a worker far behind, and one that keeps up
// with any counted run.
const serialLow, serialHigh = 1e3, 1e7

// fitUnits fits the unit costs on counted phases (see Calibrate): each
// server's CPU per operation as a weighted least squares, coefficients at
// least 0, in relative error, on the work fitWork gives each phase.
func fitUnits(phases []countedPhase) (*results.Calibration, error) {
	type obs struct {
		x []float64
		y float64
	}
	var db, mc, rd, app []obs
	for _, p := range phases {
		c := p.measured
		m := fitWork(p)
		mcCalls, rdCalls := cacheCalls(p)
		if v, ok := c[cost.DBCPU]; ok {
			db = append(db, obs{[]float64{m.RowsRead, m.RowsWritten, m.Statements, m.Rebuilt}, v})
		}
		if v, ok := c[cost.MCCPU]; ok && p.needs&registry.Memcached != 0 {
			mc = append(mc, obs{[]float64{m.MCKeys, mcCalls}, v})
		}
		if v, ok := c[cost.RDCPU]; ok && p.needs&registry.Redis != 0 {
			rd = append(rd, obs{[]float64{m.RedisCommands, rdCalls}, v})
		}
		if v, ok := c[cost.CPU]; ok {
			app = append(app, obs{[]float64{1, m.Statements, m.CacheCalls, m.MCKeys + m.RedisCommands, m.Rebuilt}, v})
		}
	}
	fit := func(what string, os []obs, n int) ([]float64, error) {
		if len(os) < n {
			return nil, fmt.Errorf("plan: calibrate: %d phases with %s CPU, want at least %d (a bench --cost run that started its own servers)", len(os), what, n)
		}
		xs := make([][]float64, len(os))
		ys := make([]float64, len(os))
		ws := make([]float64, len(os))
		for i, o := range os {
			xs[i], ys[i] = o.x, o.y
			ws[i] = 1 / math.Pow(o.y+5, 2)
		}
		return nnls(xs, ys, ws), nil
	}
	cdb, err := fit("database", db, 3)
	if err != nil {
		return nil, err
	}
	capp, err := fit("application", app, 4)
	if err != nil {
		return nil, err
	}
	cmc, crd := []float64{0, 0}, []float64{0, 0}
	if len(mc) >= 2 {
		cmc, _ = fit("memcached", mc, 2)
	}
	if len(rd) >= 2 {
		crd, _ = fit("Redis", rd, 2)
	}
	return &results.Calibration{
		DBRowReadUs: cdb[0], DBRowWrittenUs: cdb[1], DBStatementUs: cdb[2], DBRebuiltUs: cdb[3],
		MCKeyUs: cmc[0], MCCallUs: cmc[1], RedisCommandUs: crd[0], RedisCallUs: crd[1],
		AppOpUs: capp[0], AppStatementUs: capp[1], AppCallUs: capp[2], AppItemUs: capp[3], AppRebuiltUs: capp[4],
	}, nil
}

// machine describes the machine runs ran on.
func machine(runs []*results.Result) string {
	host, _ := os.Hostname()
	cpus := runtime.NumCPU()
	if len(runs) > 0 && runs[0].Environment.CPUs > 0 {
		cpus = runs[0].Environment.CPUs
	}
	model := results.LocalCPUModel()
	if len(runs) > 0 && runs[0].Environment.CPUModel != "" {
		model = runs[0].Environment.CPUModel
	}
	return strings.TrimSpace(fmt.Sprintf("%s, %d CPUs %s", host, cpus, model))
}

// runsCPUModel is the processor every one of runs recorded, or "" when
// one did not record it or they differ.
func runsCPUModel(runs []*results.Result) string {
	if len(runs) == 0 {
		return ""
	}
	model := runs[0].Environment.CPUModel
	for _, r := range runs[1:] {
		if r.Environment.CPUModel != model {
			return ""
		}
	}
	return model
}

// fitBytes derives the bytes per message and per mailbox row from the
// data sizes of a run's pull and push databases: the pull database holds
// the messages and the follows, the push database those and the mailbox.
func fitBytes(runs []*results.Result) (message, mailbox float64) {
	var ms, bs []float64
	for _, r := range runs {
		var pullBytes, pushBytes int64
		for i := range r.Models {
			m := &r.Models[i]
			reg, err := registry.Lookup(m.Name)
			if err != nil || reg.Variant != "" {
				continue
			}
			size := m.DiskBytes
			if size == 0 {
				size = m.DataBytes
			}
			switch {
			case reg.Schema == schema.Pull && reg.Needs == registry.MariaDB && pullBytes == 0:
				pullBytes = size
			case reg.Schema == schema.Push && reg.Traits == 0 && pushBytes == 0:
				pushBytes = size
			}
		}
		ds := r.Dataset
		if pullBytes > 0 && ds.Messages > 0 {
			ms = append(ms, (float64(pullBytes)-FollowBytes*float64(ds.Edges))/float64(ds.Messages))
		}
		if pullBytes > 0 && pushBytes > pullBytes && ds.MailboxRows > 0 {
			bs = append(bs, float64(pushBytes-pullBytes)/float64(ds.MailboxRows))
		}
	}
	mean := func(xs []float64, def float64) float64 {
		if len(xs) == 0 {
			return def
		}
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	return math.Max(mean(ms, 300), 50), math.Max(mean(bs, 40), 8)
}

// nnls solves min Σ w·(y - x·c)² with every c ≥ 0, by least squares on a
// shrinking set: the most negative coefficient is fixed at 0 until none
// is negative.
func nnls(xs [][]float64, ys, ws []float64) []float64 {
	n := len(xs[0])
	free := make([]bool, n)
	for i := range free {
		free[i] = true
	}
	c := make([]float64, n)
	for {
		var idx []int
		for j := range n {
			if free[j] {
				idx = append(idx, j)
			}
		}
		k := len(idx)
		a := make([][]float64, k)
		for i := range a {
			a[i] = make([]float64, k+1)
		}
		for r, x := range xs {
			for i, p := range idx {
				for j, q := range idx {
					a[i][j] += ws[r] * x[p] * x[q]
				}
				a[i][k] += ws[r] * x[p] * ys[r]
			}
		}
		sol := solve(a)
		clear(c)
		worst, at := 0.0, -1
		for i, p := range idx {
			c[p] = sol[i]
			if sol[i] < worst {
				worst, at = sol[i], p
			}
		}
		if at < 0 {
			return c
		}
		free[at] = false
	}
}

// solve solves the augmented system a by Gaussian elimination with
// partial pivoting; a singular column gets 0.
func solve(a [][]float64) []float64 {
	k := len(a)
	for col := range k {
		piv := col
		for r := col + 1; r < k; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		a[col], a[piv] = a[piv], a[col]
		if math.Abs(a[col][col]) < 1e-12 {
			continue
		}
		for r := range k {
			if r == col {
				continue
			}
			f := a[r][col] / a[col][col]
			for j := col; j <= k; j++ {
				a[r][j] -= f * a[col][j]
			}
		}
	}
	out := make([]float64, k)
	for i := range k {
		if math.Abs(a[i][i]) >= 1e-12 {
			out[i] = a[i][k] / a[i][i]
		}
	}
	return out
}

// cpu is an operation's CPU by process, µs.
type cpu struct{ db, mc, rd, app float64 }

func (c cpu) all() float64   { return c.db + c.mc + c.rd + c.app }
func (c cpu) cache() float64 { return c.mc + c.rd }

// cpuOf is what work w costs on cal's machine, for a model needing needs.
// A rebuild costs its entries (registry.Work.Rebuilt) at cal's units for
// them and its rows nothing more; a calibration that predates those units
// (both 0) prices its rows as any others, as it was fitted.
func cpuOf(cal *results.Calibration, w registry.Work, needs registry.Servers) cpu {
	mcCalls, rdCalls := cacheCalls(countedPhase{needs: needs, predicted: w})
	read, written := w.RowsRead, w.RowsWritten
	if cal.DBRebuiltUs > 0 || cal.AppRebuiltUs > 0 {
		read, written = math.Max(0, read-w.RebuildRowsRead), math.Max(0, written-w.RebuildRowsWritten)
	}
	return cpu{
		db:  cal.DBRowReadUs*read + cal.DBRowWrittenUs*written + cal.DBStatementUs*w.Statements + cal.DBRebuiltUs*w.Rebuilt,
		mc:  cal.MCKeyUs*w.MCKeys + cal.MCCallUs*mcCalls,
		rd:  cal.RedisCommandUs*w.RedisCommands + cal.RedisCallUs*rdCalls,
		app: cal.AppOpUs + cal.AppStatementUs*w.Statements + cal.AppCallUs*w.CacheCalls + cal.AppItemUs*(w.MCKeys+w.RedisCommands) + cal.AppRebuiltUs*w.Rebuilt,
	}
}
