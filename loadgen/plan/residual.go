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
	// open is what the design's traffic at a planned rate costs over
	// the rest (results.CPUFactors.Open); 0 is 1. planned applies it.
	open float64
	// saturation is the share of a shared box's cores the design fills
	// where its throughput stops rising (results.CPUFactors.Saturation).
	saturation float64
	// measured: the calibration ran the design; a residual it did not
	// measure is 1 and the plan says so.
	measured bool
}

// planned is r at a rate a plan sets rather than at saturation: every
// operation's CPU times r's open factor.
func (r residual) planned() residual {
	o := r.open
	if o == 0 {
		return r
	}
	for k := range opKinds {
		r.factor[k] *= o
		r.add[k] *= o
	}
	r.addMix *= o
	r.open = 0
	return r
}

// residualOf is model's residual in cal at a store of messages messages:
// its factors at that size (results.CPUFactors.At), or 1 when cal did not
// run it.
func residualOf(cal *results.Calibration, model string, messages float64) residual {
	f, ok := cal.Factor(model)
	f = f.At(messages)
	return residual{factor: [opKinds]float64{f.Newest, f.Older, f.Post, 1, 1}, mix: f.Mix, open: f.Open, saturation: f.SaturationShare(), measured: ok}
}

// noResidual is the unit costs alone.
var noResidual = residual{factor: [opKinds]float64{1, 1, 1, 1, 1}, mix: 1, saturation: 1}

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
// their prediction with those factors. When the runs held stores of
// different sizes, the kinds' factors also get the design's size exponent
// (fitSized), and the mix factor is fitted on the traffic phases' CPU
// predicted at their own sizes.
func fitFactors(cal *results.Calibration, phases []countedPhase) map[string]results.CPUFactors {
	// obs are each design's log(measured/predicted) and log(messages)
	// by kind, the mix's at opKinds.
	obs := map[string]*[opKinds + 1][]sizedLog{}
	add := func(p countedPhase, k int, predicted float64) {
		m, ok := p.measured.AllCPU()
		if !ok || !(m > 0) || !(predicted > 0) {
			return
		}
		if obs[p.model] == nil {
			obs[p.model] = &[opKinds + 1][]sizedLog{}
		}
		obs[p.model][k] = append(obs[p.model][k], sizedLog{l: math.Log(m / predicted), x: math.Log(math.Max(p.messages, 1))})
	}
	kindOf := map[string]int{"retrieve": opNewest, "retrieve_older": opOlder, "submit": opPost}
	for _, p := range phases {
		if k, ok := kindOf[p.phase]; ok {
			add(p, k, cpuOf(cal, p.predicted, p.needs).all())
		}
	}
	ops := &results.Calibration{Factors: map[string]results.CPUFactors{}}
	for name, o := range obs {
		ops.Factors[name] = fitSized([3][]sizedLog{o[opNewest], o[opOlder], o[opPost]})
	}
	for _, p := range phases {
		if p.phase == "traffic" {
			add(p, opKinds, designCPU(cal, residualOf(ops, p.model, p.messages), p.ops, p.shares, p.needs).all())
		}
	}
	out := map[string]results.CPUFactors{}
	for name, o := range obs {
		f, _ := ops.Factor(name)
		f.Mix = math.Exp(meanLog(o[opKinds]))
		f.Phases += len(o[opKinds])
		out[name] = f
	}
	return out
}

// sizedLog is one counted phase's log(measured CPU / predicted) and the
// log of the messages its store held.
type sizedLog struct{ l, x float64 }

// meanLog is the mean of the logs, 0 for none.
func meanLog(o []sizedLog) float64 {
	if len(o) == 0 {
		return 0
	}
	var s float64
	for _, v := range o {
		s += v.l
	}
	return s / float64(len(o))
}

// sizeSpread is the least ratio of the largest store to the smallest
// among a design's phases for fitSized to fit a size exponent.
const sizeSpread = 1.5

// fitSized is a design's factors of a newest page, an older page and a
// post from their phases' logs (by kind): the geometric means, unless the
// phases held stores of different sizes (at least sizeSpread apart). Then
// log factor = log f_k + e·(log messages − the mean log messages), one
// exponent e for every kind, fitted by least squares within the kinds; e
// is kept only when it is at least twice its standard error (a growth
// clearer than the runs' spread about it), and within
// ±results.MaxSizeExponent. The factors then stand for the geometric
// mean size of the phases (CPUFactors.Messages).
func fitSized(kinds [3][]sizedLog) results.CPUFactors {
	var mean, xmean [3]float64
	var n, used int
	lo, hi := math.Inf(1), math.Inf(-1)
	var xall float64
	for k, o := range kinds {
		if len(o) == 0 {
			continue
		}
		used++
		for _, v := range o {
			mean[k] += v.l / float64(len(o))
			xmean[k] += v.x / float64(len(o))
			lo, hi = math.Min(lo, v.x), math.Max(hi, v.x)
			xall += v.x
			n++
		}
	}
	f := results.CPUFactors{Newest: 1, Older: 1, Post: 1, Mix: 1, Phases: n}
	var sxx, sxl float64
	for k, o := range kinds {
		for _, v := range o {
			sxx += (v.x - xmean[k]) * (v.x - xmean[k])
			sxl += (v.x - xmean[k]) * (v.l - mean[k])
		}
	}
	var e float64
	if dof := n - used - 1; dof > 0 && hi-lo >= math.Log(sizeSpread) && sxx > 0 {
		e = sxl / sxx
		var rss float64
		for k, o := range kinds {
			for _, v := range o {
				r := v.l - mean[k] - e*(v.x-xmean[k])
				rss += r * r
			}
		}
		if se := math.Sqrt(rss / float64(dof) / sxx); math.Abs(e) < 2*se {
			e = 0
		}
		e = math.Max(-results.MaxSizeExponent, math.Min(results.MaxSizeExponent, e))
	}
	var ref float64
	if n > 0 {
		ref = xall / float64(n)
	}
	for k, dst := range []*float64{&f.Newest, &f.Older, &f.Post} {
		if len(kinds[k]) > 0 {
			*dst = math.Exp(mean[k] - e*(xmean[k]-ref))
		}
	}
	if e != 0 {
		f.Messages, f.SizeExponent = math.Exp(ref), e
	}
	return f
}

// saturationShare is r.saturation, 1 when it is 0 (a residual made by
// hand).
func (r residual) saturationShare() float64 {
	if r.saturation == 0 {
		return 1
	}
	return r.saturation
}
