package plan

import (
	"math"

	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// Operation kinds, in the order of a mix's shares (newest, older, post,
// follow, unfollow).
const (
	opNewest = iota
	opOlder
	opPost
	opFollow
	opUnfollow
	opKinds
)

// residual is how a design's CPU departs from what its work costs at the
// calibration's unit costs: a factor per kind of operation (follows and
// unfollows, which no counted phase measures alone, 1) and one for a mix
// of kinds, and µs per operation added after them. A calibration's
// factors (results.CPUFactors) are the multiplicative form, add 0; the
// additive form (factors 1, add set) is kept to set the two against each
// other (TestResidualForms).
type residual struct {
	factor [opKinds]float64
	mix    float64
	add    [opKinds]float64
	addMix float64
	// measured: the calibration ran the design; a residual it did not
	// measure is 1 and the plan says so.
	measured bool
}

// residualOf is model's residual in cal: its factors, or 1 when cal did
// not run it.
func residualOf(cal *results.Calibration, model string) residual {
	f, ok := cal.Factor(model)
	return residual{factor: [opKinds]float64{f.Newest, f.Older, f.Post, 1, 1}, mix: f.Mix, measured: ok}
}

// noResidual is the unit costs alone.
var noResidual = residual{factor: [opKinds]float64{1, 1, 1, 1, 1}, mix: 1}

// scale returns c with every process's CPU times f.
func (c cpu) scale(f float64) cpu { return cpu{c.db * f, c.mc * f, c.rd * f, c.app * f} }

func (c cpu) add(x cpu) cpu { return cpu{c.db + x.db, c.mc + x.mc, c.rd + x.rd, c.app + x.app} }

// op is the CPU of one operation of kind k whose work costs c at the
// unit costs, within a mix of kinds when mixed. The factor scales every
// process the operation passes alike: the work the units miss (rows a
// scratch table or a script touches beyond those counted, a merge in the
// client) costs on the server that does it and on the client that sends
// and reads it, and the runs show the residual on each of them (pull-
// redis's newest page: database 3.1×, Redis 2.3×, application 1.5×).
// What the additive form adds is shared out in proportion too.
func (r residual) op(k int, c cpu, mixed bool) cpu {
	t := c.all()
	if t <= 0 {
		return c
	}
	v := r.factor[k]*t + r.add[k]
	if mixed {
		v = r.mix*v + r.addMix
	}
	return c.scale(math.Max(v, 0) / t)
}

// opWorks are ow's operations by kind: a post with its later fan-out.
func opWorks(ow registry.OpWork) [opKinds]registry.Work {
	return [opKinds]registry.Work{ow.Newest, ow.Older, ow.Post.Add(ow.Later), ow.Follow, ow.Unfollow}
}

// isMixed is whether shares draw more than one kind of operation.
func isMixed(shares [5]float64) bool {
	kinds := 0
	for _, s := range shares {
		if s > 0 {
			kinds++
		}
	}
	return kinds > 1
}

// designCPU is the CPU of an operation drawn by shares (newest, older,
// post, follow, unfollow; they add up to 1) of a design whose work per
// operation is ow, on cal's machine with the design's residual r: each
// kind's CPU at the unit costs times its factor, and a mix of kinds times
// the mix factor.
func designCPU(cal *results.Calibration, r residual, ow registry.OpWork, shares [5]float64, needs registry.Servers) cpu {
	mixed := isMixed(shares)
	var sum cpu
	for k, w := range opWorks(ow) {
		if shares[k] == 0 {
			continue
		}
		sum = sum.add(r.op(k, cpuOf(cal, w, needs), mixed).scale(shares[k]))
	}
	return sum
}

// fitFactors measures each design's CPU factors on the counted phases of
// the calibration runs, after cal's unit costs are fitted: per kind of
// operation the geometric mean over the runs of measured CPU over the CPU
// of the work the design's cost model predicts (as a plan computes it),
// then the mix factor the same way, the traffic phases' measured CPU over
// their prediction with those factors.
func fitFactors(cal *results.Calibration, phases []countedPhase) map[string]results.CPUFactors {
	// logs are each design's log(measured/predicted) by kind, the mix's
	// at opKinds.
	logs := map[string]*[opKinds + 1][]float64{}
	add := func(p countedPhase, k int, predicted float64) {
		m, ok := p.measured.AllCPU()
		if !ok || !(m > 0) || !(predicted > 0) {
			return
		}
		if logs[p.model] == nil {
			logs[p.model] = &[opKinds + 1][]float64{}
		}
		logs[p.model][k] = append(logs[p.model][k], math.Log(m/predicted))
	}
	geo := func(ls []float64) float64 {
		if len(ls) == 0 {
			return 1
		}
		var s float64
		for _, l := range ls {
			s += l
		}
		return math.Exp(s / float64(len(ls)))
	}
	kindOf := map[string]int{"retrieve": opNewest, "retrieve_older": opOlder, "submit": opPost}
	for _, p := range phases {
		if k, ok := kindOf[p.phase]; ok {
			add(p, k, cpuOf(cal, p.predicted, p.needs).all())
		}
	}
	ops := &results.Calibration{Factors: map[string]results.CPUFactors{}}
	for name, l := range logs {
		ops.Factors[name] = results.CPUFactors{Newest: geo(l[opNewest]), Older: geo(l[opOlder]), Post: geo(l[opPost]), Mix: 1,
			Phases: len(l[opNewest]) + len(l[opOlder]) + len(l[opPost])}
	}
	for _, p := range phases {
		if p.phase == "traffic" {
			add(p, opKinds, designCPU(cal, residualOf(ops, p.model), p.ops, p.shares, p.needs).all())
		}
	}
	out := map[string]results.CPUFactors{}
	for name, l := range logs {
		f, _ := ops.Factor(name)
		f.Mix = geo(l[opKinds])
		f.Phases += len(l[opKinds])
		out[name] = f
	}
	return out
}
