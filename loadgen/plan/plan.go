// Package plan is the capacity plan: which design serves a feed at the
// size its owners name (10^5 to 10^8 users, on many machines), what
// servers it needs and with what margin, computed in seconds instead of
// measured.
//
// It is built from three parts, each checked:
//
//   - The work per operation. Every design declares its cost model beside
//     its code (registry.Model.Work): the rows, memcached keys, Redis
//     commands, statements and round trips an operation asks for, as
//     functions of the workload (registry.Demand: the users in classes of
//     alike degree and activity, the messages kept, the rates). The plan
//     builds that Demand for the workload at its real size: the power-law
//     graph's exact degree sequence (dataset.PowerLawFollowerCounts), the
//     uniform graph's Poisson degrees, or an edge file taken as a sample.
//   - The cost of a unit of work on this machine (results.Calibration):
//     CPU per row read and written, per statement, per key, per command,
//     per round trip, for each server and the application, fitted on
//     counted runs (Calibrate), and bytes per row on disk.
//   - The check (Check): the cost models' predictions for the workloads of
//     counted runs, set against what the servers counted.
//
// Make then sizes each design: CPU per operation of the planned mix, the
// cores of each server at the planned rate, memory and disk, nodes and
// shards, the p99 latency and the fan-out lag that follow, and the verdict
// by the same rule as a measured recommendation (recommend.Rank).
package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/recommend"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// Footprint figures the plan assumes (see the assumptions it prints).
const (
	// MemcachedIDBytes is what an id costs in a memcached value (8 bytes
	// and the framing of its record), RedisIDBytes in a Redis sorted set
	// (its skiplist and dict entries), KeyBytes a key of either (item
	// header and key).
	MemcachedIDBytes = 10
	RedisIDBytes     = 80
	KeyBytes         = 100
	// DBMemoryShare is the share of the database's data its buffer pool
	// holds: the hot part (recent messages and mailbox rows, follows).
	DBMemoryShare = 0.1
)

// models are the designs w plans: w.Models, or the candidates of package
// recommend that declare a cost model.
func (w Workload) models() ([]registry.Model, error) {
	names := w.Models
	if names == nil {
		for _, name := range recommend.Candidates() {
			if m, err := registry.Lookup(name); err == nil && m.Work != nil {
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		return nil, &InputError{Field: "models", Reason: "no models to plan"}
	}
	var out []registry.Model
	for i, name := range names {
		m, err := registry.Lookup(name)
		if err != nil {
			return nil, &InputError{Field: "models", Reason: err.Error()}
		}
		if slices.Contains(names[:i], name) {
			return nil, &InputError{"models", name, "named twice"}
		}
		if m.Work == nil {
			return nil, &InputError{"models", name, "declares no cost model (registry.Model.Work)"}
		}
		out = append(out, m)
	}
	return out, nil
}

// opShares are the shares of the planned rate: newest, older, post,
// follow, unfollow.
func (w Workload) opShares() (rate float64, shares [5]float64) {
	rate = w.NewestPerSec + w.OlderPerSec + w.PostsPerSec + w.FollowsPerSec
	shares = [5]float64{w.NewestPerSec / rate, w.OlderPerSec / rate, w.PostsPerSec / rate, w.FollowsPerSec / 2 / rate, w.FollowsPerSec / 2 / rate}
	return rate, shares
}

// distinct is how many of s shards n items spread at random reach.
func distinct(s, n float64) float64 {
	if s <= 1 || n <= 0 {
		return math.Min(1, math.Max(s, 0))
	}
	return s * (1 - math.Pow(1-1/s, n))
}

// Make plans w on the machine cal was fitted on. It checks w first (an
// *InputError, nothing computed).
func Make(w Workload, cal *results.Calibration, command string) (*results.Plan, error) {
	start := time.Now()
	if err := w.Check(); err != nil {
		return nil, err
	}
	if err := cal.Validate(); err != nil {
		return nil, &InputError{Field: "calibration", Reason: err.Error()}
	}
	w = w.WithDefaults()
	d, dc, err := w.demand()
	if err != nil {
		return nil, err
	}
	models, err := w.models()
	if err != nil {
		return nil, err
	}
	rate, shares := w.opShares()
	p := &results.Plan{
		Version: results.PlanFormatVersion, CreatedAt: time.Now(), Command: command,
		RatePerSec: rate, SLOMs: ms(w.SLO), FreshnessMs: ms(w.Freshness), Prices: w.Prices, Calibration: *cal,
	}
	p.Workload, p.Assumptions = describe(w, d)
	var cands []results.Candidate
	for _, m := range models {
		pd, err := planDesign(w, d, dc, m, cal, rate, shares)
		if err != nil {
			return nil, err
		}
		p.Designs = append(p.Designs, pd)
		run := pd.RunCost
		res := pd.Resources
		cands = append(cands, results.Candidate{
			Model: pd.Model, Held: pd.Held, Why: pd.Why, Ops: 1, P99Ms: pd.P99Ms,
			OfferedPerSec: rate, AchievedPerSec: rate,
			Costed: true, RowsReadPerOp: pd.PerOp.RowsRead, RowsWrittenPerOp: pd.PerOp.RowsWritten,
			MemcachedGetsPerOp: ptr(pd.PerOp.MCKeys), RedisCommandsPerOp: ptr(pd.PerOp.RedisCommands),
			DiskBytes: int64(res.StorageGB * 1e9), Resources: &res, RunCost: &run,
		})
	}
	p.Assumptions = append(p.Assumptions, sizeAssumptions(cal, models, w.Messages())...)
	p.Assumptions = append(p.Assumptions, openAssumptions(cal, models)...)
	p.Verdict = recommend.Rank(cands, rate, w.SLO)
	if p.Verdict.Best == "" {
		// Rank names the closest by measured errors and p99; a plan has
		// no errors, so the closest is the lowest p99 among the designs.
		best := -1
		for i, d := range p.Designs {
			if best < 0 || d.P99Ms < p.Designs[best].P99Ms {
				best = i
			}
		}
		if best >= 0 {
			p.Verdict.Closest = p.Designs[best].Model
		}
	}
	p.Margin = margin(p, w)
	p.Seconds = time.Since(start).Seconds()
	return p, nil
}

func ptr(v float64) *float64 { return &v }

// sizeAssumptions names the designs whose CPU factors cal scales with the
// data (results.CPUFactors.SizeExponent), and by how much at a store of
// messages messages.
func sizeAssumptions(cal *results.Calibration, models []registry.Model, messages float64) []string {
	var out []string
	for _, m := range models {
		f, ok := cal.Factor(m.Name)
		if !ok || f.SizeExponent == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s's CPU grows with the data: its factors are ×%.2f at %s messages (the calibration's size exponent %+.3f, fitted about %s messages; farther from its runs' sizes, an extrapolation)",
			m.Name, f.SizeFactor(messages), dataset.Commas(int64(messages)), f.SizeExponent, dataset.Commas(int64(f.Messages))))
	}
	return out
}

// openAssumptions names the open factors (results.CPUFactors.Open) cal
// gives models: a plan sets the rate, so each design's servers are sized
// at its CPU at saturation times that factor.
func openAssumptions(cal *results.Calibration, models []registry.Model) []string {
	var named []string
	for _, m := range models {
		if f, ok := cal.Factor(m.Name); ok && f.Open != 0 {
			named = append(named, fmt.Sprintf("%s ×%.2f", m.Name, f.Open))
		}
	}
	if len(named) == 0 {
		return nil
	}
	return []string{"CPU at the planned rate: a design's CPU at saturation times its open factor, fitted on its rate steps in the calibration (" +
		strings.Join(named, ", ") + "; 1 for the others)"}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// planDesign sizes one design.
func planDesign(w Workload, d registry.Demand, dc demandClasses, m registry.Model, cal *results.Calibration,
	rate float64, shares [5]float64) (results.PlanDesign, error) {
	ow, fp, _, err := m.WorkFor(d, w.Options)
	if err != nil {
		return results.PlanDesign{}, &InputError{Field: "option", Reason: err.Error()}
	}
	rs := residualOf(cal, m.Name, w.Messages()).planned()
	pd := results.PlanDesign{Model: m.Name, Async: m.Traits.Has(registry.Async), Uncalibrated: !rs.measured}
	perOp := mixWork(ow, shares)
	c := designCPU(cal, rs, ow, shares, m.Needs)
	if units := cpuOf(cal, perOp, m.Needs).all(); units > 0 {
		pd.CPUFactor = c.all() / units
	}
	pd.PerOp, pd.Post, pd.Page = planWork(perOp), planWork(ow.Post.Add(ow.Later)), planWork(ow.Newest)
	u := w.Utilization
	// Below saturation an operation also wakes the processes it passes,
	// and each server burns its idle CPU whatever the rate.
	busy := c.add(wakeCPU(cal, perOp, m.Needs, asleep(cal, c, rate, u)))
	pd.DBUs, pd.CacheUs, pd.AppUs = busy.db, busy.cache(), busy.app
	idle := idleCPU(cal, m.Needs)
	cores := func(us, idle float64) float64 { return (rate*us + idle) / 1e6 / u }
	res := results.Resources{DBCores: cores(busy.db, idle.db), CacheCores: cores(busy.cache(), idle.cache()), AppCores: cores(busy.app, idle.app)}
	storage := d.Messages*cal.MessageBytes + d.Edges()*cal.FollowBytes + fp.MailboxRows*cal.MailboxRowBytes
	res.StorageGB = storage / 1e9
	res.DBMemoryGB = DBMemoryShare * res.StorageGB
	idBytes := MemcachedIDBytes
	if m.Needs&registry.Redis != 0 && m.Needs&registry.Memcached == 0 {
		idBytes = RedisIDBytes
	}
	res.CacheMemoryGB = (fp.CacheIDs*float64(idBytes) + fp.CacheKeys*KeyBytes) / 1e9
	pd.Resources, pd.MailboxRows = res, fp.MailboxRows
	pd.RunCost = w.Prices.Of(res)
	node := w.Node
	pd.DBNodes = int(math.Max(1, math.Ceil(math.Max(res.DBCores/node.Cores, math.Max(res.StorageGB/node.DiskGB, res.DBMemoryGB/node.MemoryGB)))))
	if res.CacheCores > 0 || res.CacheMemoryGB > 0 {
		pd.CacheNodes = int(math.Max(1, math.Ceil(math.Max(res.CacheCores/node.Cores, res.CacheMemoryGB/node.MemoryGB))))
	}
	pd.AppNodes = int(math.Max(1, math.Ceil(res.AppCores/node.Cores)))
	if c.db > 0 {
		pd.ShardCeilingPerSec = node.Cores * u * 1e6 / c.db
	}
	// Shard calls on Vitess with DBNodes shards: a page reaches its
	// followees' shards (pull) or its entries' authors' (the rest), a
	// post its followers' when it fans out.
	s := float64(pd.DBNodes)
	page := distinct(s, d.Fetch())
	if m.Family == registry.FamilyPull {
		page = distinct(s, d.ReadFollowees())
	}
	pd.PerOp.ShardCalls = (shares[0]+shares[1])*(1+page) + shares[2]*(1+distinct(s, ow.Post.Add(ow.Later).RowsWritten-1)) + (shares[3] + shares[4])

	lat, err := latencyOf(w, d, dc, m, cal, rs, shares, ow)
	if err != nil {
		return results.PlanDesign{}, err
	}
	// Every server's node is busy u; redis-server runs as one instance per
	// core its commands need, each thread busy u likewise.
	q := queueing{cores: node.Cores, u: u, ur: u}
	pd.P99Ms = q.p99(lat.comps) / 1000
	var whys []string
	if pd.P99Ms > ms(w.SLO) {
		whys = append(whys, fmt.Sprintf("p99 %s ms > %s ms", fmtFloat(round2(pd.P99Ms)), fmtFloat(ms(w.SLO))))
	}
	if pd.Async {
		// One post's fan-out is applied by one worker; the workers of
		// every application node share the queue.
		pd.LagP99Ms = q.p99(lat.lags) / 1000
		pd.LagMaxMs = rs.op(opPost, cpuOf(cal, ow.LargestPost, m.Needs), isMixed(shares)).db / (1 - u) / 1000
		busy := w.PostsPerSec * lat.laterUs / 1e6
		workers := math.Max(1, ow.Workers) * float64(pd.AppNodes)
		switch {
		case busy >= workers:
			pd.LagP99Ms, pd.LagMaxMs, pd.FallsBehind = math.Inf(1), math.Inf(1), true
			whys = append(whys, fmt.Sprintf("fan-out falls behind: %s workers busy of %s", fmtFloat(round2(busy)), fmtFloat(workers)))
		case w.Freshness > 0 && pd.LagP99Ms > ms(w.Freshness):
			whys = append(whys, fmt.Sprintf("fan-out lag p99 %s ms > %s ms", fmtFloat(round2(pd.LagP99Ms)), fmtFloat(ms(w.Freshness))))
		}
	}
	pd.Held, pd.Why = len(whys) == 0, strings.Join(whys, "; ")
	return pd, nil
}

// latency is what a design's response times are drawn from at a
// workload: a component per kind of operation and degree bucket (comps),
// and for an asynchronous design one per bucket of posts' later fan-out
// (lags, its mean CPU laterUs).
type latency struct {
	comps, lags []component
	laterUs     float64
}

// latencyOf is m's latency at d, an operation drawn by shares (newest,
// older, post, follow, unfollow) whose mean work is ow: each component's
// service time is its CPU on every process it passes (scaled by the
// design's residual r for its kind and the mix) plus w.RTT per statement
// and cache call, of which redis-server's CPU is its Redis part; an
// operation's share is its kind's times its bucket's share of the reads
// or posts.
func latencyOf(w Workload, d registry.Demand, dc demandClasses, m registry.Model, cal *results.Calibration, r residual,
	shares [5]float64, ow registry.OpWork) (latency, error) {
	readShare := make([]float64, dc.followeeBuckets)
	postShare := make([]float64, dc.followerBuckets)
	var reads, posts float64
	for i, c := range d.Classes {
		readShare[dc.followeeOf[i]] += c.Users * c.Reads
		postShare[dc.followerOf[i]] += c.Users * c.Posts
		reads += c.Users * c.Reads
		posts += c.Users * c.Posts
	}
	mixed := isMixed(shares)
	// An operation's round trips follow one another but for those it
	// overlaps with others (registry.Work.Overlapped), whose CPU runs
	// beside theirs: its trips over the serial ones are the cores it can
	// use at once.
	service := func(share float64, kind int, x registry.Work) component {
		c := r.op(kind, cpuOf(cal, x, m.Needs), mixed)
		trips := x.Statements + x.CacheCalls
		serial := math.Max(0, trips-x.Overlapped)
		spread := 1.0
		if serial > 0 && trips > serial {
			spread = trips / serial
		}
		return component{share, c.all(), float64(w.RTT) / float64(time.Microsecond) * serial, c.rd, spread}
	}
	var l latency
	for b := range dc.followeeBuckets {
		if readShare[b] == 0 {
			continue
		}
		x, _, _, err := m.WorkFor(dc.readsOf(d, b), w.Options)
		if err != nil {
			return latency{}, err
		}
		newest := shares[0] * readShare[b] / reads
		if miss := x.NewestMiss; miss > 0 && miss < 1 {
			// A cache's hits and misses queue apart (OpWork.NewestMiss).
			hit := x.Newest.Add(x.NewestMissWork.Scale(-miss))
			l.comps = append(l.comps, service(newest*(1-miss), opNewest, hit),
				service(newest*miss, opNewest, hit.Add(x.NewestMissWork)))
		} else {
			l.comps = append(l.comps, service(newest, opNewest, x.Newest))
		}
		l.comps = append(l.comps, service(shares[1]*readShare[b]/reads, opOlder, x.Older))
	}
	async := m.Traits.Has(registry.Async)
	for b := range dc.followerBuckets {
		if postShare[b] == 0 {
			continue
		}
		x, _, _, err := m.WorkFor(dc.postsOf(d, b), w.Options)
		if err != nil {
			return latency{}, err
		}
		l.comps = append(l.comps, service(shares[2]*postShare[b]/posts, opPost, x.Post))
		if async {
			later := r.op(opPost, cpuOf(cal, x.Later, m.Needs), mixed).db
			l.lags = append(l.lags, component{postShare[b] / posts, later, 0, 0, 1})
			l.laterUs += postShare[b] / posts * later
		}
	}
	l.comps = append(l.comps, service(shares[3], opFollow, ow.Follow), service(shares[4], opUnfollow, ow.Unfollow))
	return l, nil
}

func round2(v float64) float64 {
	if math.Abs(v) >= 100 {
		return math.Round(v)
	}
	return math.Round(v*100) / 100
}

// margin says how far the chosen design is from the objective, the
// freshness bound and the next design.
func margin(p *results.Plan, w Workload) string {
	var best *results.PlanDesign
	for i := range p.Designs {
		if p.Designs[i].Model == p.Verdict.Best {
			best = &p.Designs[i]
		}
	}
	if best == nil {
		return ""
	}
	parts := []string{fmt.Sprintf("p99 %s ms against %s ms (%s× headroom)", fmtFloat(round2(best.P99Ms)), fmtFloat(p.SLOMs), fmtFloat(round2(p.SLOMs/best.P99Ms)))}
	if best.Async {
		parts = append(parts, fmt.Sprintf("fan-out lag p99 %s ms, the most followed author's post %s ms", fmtFloat(round2(best.LagP99Ms)), fmtFloat(round2(best.LagMaxMs))))
	}
	parts = append(parts, fmt.Sprintf("%d database node(s) of %s cores (one serves %s ops/s of this mix), %d cache node(s), %d application node(s)",
		best.DBNodes, fmtFloat(w.Node.Cores), dataset.Commas(int64(math.Round(best.ShardCeilingPerSec))), best.CacheNodes, best.AppNodes))
	if best.DBNodes > 1 {
		parts = append(parts, fmt.Sprintf("as %d Vitess shards, an operation of the mix makes %s shard calls on average", best.DBNodes, fmtFloat(round2(best.PerOp.ShardCalls))))
	}
	if len(p.Verdict.Ranking) > 1 {
		for _, d := range p.Designs {
			if d.Model == p.Verdict.Ranking[1] {
				diff := math.Round(100 * (d.RunCost/best.RunCost - 1))
				switch {
				case diff >= 0 && d.RunCost > best.RunCost*(1+recommend.TieShare):
					parts = append(parts, fmt.Sprintf("the next design, %s, costs %s%% more", d.Model, fmtFloat(diff)))
				default:
					parts = append(parts, fmt.Sprintf("the next design, %s, costs %s%% %s, within the tie band: the tie-breakers decided (smaller data, then lower p99)",
						d.Model, fmtFloat(math.Abs(diff)), map[bool]string{true: "more", false: "less"}[diff >= 0]))
				}
			}
		}
	}
	return strings.Join(parts, "; ")
}

// describe writes the workload and the assumptions a plan rests on.
func describe(w Workload, d registry.Demand) (lines, assumptions []string) {
	graph := w.Graph
	switch w.Graph {
	case dataset.GraphPowerLaw:
		in, out := cmpOr(w.InExponent, dataset.DefaultInExponent), cmpOr(w.OutExponent, dataset.DefaultOutExponent)
		graph = fmt.Sprintf("powerlaw(in=%g, out=%g)", in, out)
	case dataset.GraphEdges:
		graph = fmt.Sprintf("the edge file %s (%s users) as a sample", w.EdgeList.Source, dataset.Commas(int64(w.EdgeList.Users)))
	}
	lines = []string{
		fmt.Sprintf("workload: %s users, %s graph, %.1f followees on average, the most followed user %s followers; %s activity; %s messages kept",
			dataset.Commas(int64(w.Users)), graph, d.Edges()/d.Users, dataset.Commas(int64(d.MostFollowers())), w.activity(), dataset.Commas(int64(d.Messages))),
		fmt.Sprintf("traffic:  %s newest + %s older pages, %s posts, %s follows and unfollows per second at peak; %.0f%% of users read",
			fmtFloat(w.NewestPerSec), fmtFloat(w.OlderPerSec), fmtFloat(w.PostsPerSec), fmtFloat(w.FollowsPerSec), 100*w.ActiveShare),
		fmt.Sprintf("a post reaches %.1f followers on average, a page's reader follows %.1f authors", d.PostAudience(), d.ReadFollowees()),
		fmt.Sprintf("objective: p99 ≤ %s; fan-out within %s; nodes of %s cores, %s GB memory, %s GB disk, filled to %.0f%%",
			w.SLO, freshnessText(w.Freshness), fmtFloat(w.Node.Cores), fmtFloat(w.Node.MemoryGB), fmtFloat(w.Node.DiskGB), 100*w.Utilization),
	}
	assumptions = []string{
		"work per operation from each design's cost model (registry.Model.Work) at this workload; checked against counted runs (docs/plan.md)",
		"CPU per row, key, command, statement and round trip from the calibration on " + "the machine named below, the same per unit at any size (no cache misses on disk, no lock contention), times each design's CPU factors measured there (per kind of operation and mix; 1 for a design it did not run)",
		fmt.Sprintf("latency: each operation's CPU on every process it passes, plus %s per statement and cache round trip, plus its wait for one of a node's %s cores at %.0f%% utilisation (M/G/c processor sharing: Erlang C, each operation waiting in proportion to its own CPU); Redis as one instance per core its commands need, each thread a queue of its own filled likewise; p99 over the mix", w.RTT, fmtFloat(w.Node.Cores), 100*w.Utilization),
		"the fan-out lag of an asynchronous design: one post's fan-out applied by one worker, waiting for a core likewise; the most followed author's post at its CPU over (1 − utilisation)",
		fmt.Sprintf("storage: messages, follows (%d bytes each) and mailbox rows at the calibrated bytes; buffer pool %.0f%% of the data; memcached %d bytes per id, Redis %d per sorted-set member, %d per key",
			FollowBytes, 100*DBMemoryShare, MemcachedIDBytes, RedisIDBytes, KeyBytes),
		"follower and followee counts independent of each other (uniform and powerlaw graphs); an edge file keeps its users' pairs of counts",
		"in-process caches: message bodies hold the newest messages posted (a table keyed by id), followees the readers they can, uniformly",
	}
	return lines, assumptions
}

func freshnessText(d time.Duration) string {
	if d == 0 {
		return "no bound"
	}
	return d.String()
}

func cmpOr(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}
