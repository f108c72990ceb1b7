package plan

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/results"
)

// quietRun loads a saved counted run of evidence/plan.
func quietRun(t *testing.T, dir ...string) *results.Result {
	t.Helper()
	r, err := results.Load(filepath.Join(append([]string{"..", "..", "evidence", "plan"}, dir...)...))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fitAdditive is the additive form of fitFactors: per kind of operation
// the mean over the runs of measured minus predicted CPU, µs, then the
// mix's the same way after them.
func fitAdditive(cal *results.Calibration, phases []countedPhase) map[string]residual {
	sums := map[string]*[opKinds + 1][]float64{}
	kindOf := map[string]int{"retrieve": opNewest, "retrieve_older": opOlder, "submit": opPost}
	for _, p := range phases {
		k, ok := kindOf[p.phase]
		m, has := p.measured.AllCPU()
		if !ok || !has || m <= 0 {
			continue
		}
		if sums[p.model] == nil {
			sums[p.model] = &[opKinds + 1][]float64{}
		}
		sums[p.model][k] = append(sums[p.model][k], m-cpuOf(cal, p.predicted, p.needs).all())
	}
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / math.Max(1, float64(len(xs)))
	}
	out := map[string]residual{}
	for name, s := range sums {
		r := noResidual
		r.measured = true
		for k := range opKinds {
			r.add[k] = mean(s[k])
		}
		out[name] = r
	}
	for _, p := range phases {
		m, has := p.measured.AllCPU()
		r, ok := out[p.model]
		if p.phase != "traffic" || !has || m <= 0 || !ok {
			continue
		}
		sums[p.model][opKinds] = append(sums[p.model][opKinds], m-designCPU(cal, r, p.ops, p.shares, p.needs).all())
	}
	for name, r := range out {
		r.addMix = mean(sums[name][opKinds])
		out[name] = r
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// TestResidualForms fits the multiplicative residual (the calibration's
// factors) and the additive one (µs per operation) on the two counted
// runs at 1,000 users and sets both against the held-out run at 3,000
// users and the rate search at 3,000 users: CPU per operation and highest
// rate within 30 %. The calibration keeps the multiplicative form; it
// must do at least as well as the additive one on both.
func TestResidualForms(t *testing.T) {
	fit := []*results.Result{quietRun(t, "quiet", "runs", "uniform-1000"), quietRun(t, "quiet", "runs", "powerlaw-1000")}
	cal, err := Calibrate(fit, []string{"uniform-1000", "powerlaw-1000"})
	if err != nil {
		t.Fatal(err)
	}
	var phases []countedPhase
	for _, r := range fit {
		ps, err := counted(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if !p.unreliable {
				phases = append(phases, p)
			}
		}
	}
	add := fitAdditive(cal, phases)
	forms := map[string]func(string) residual{
		"none":           func(string) residual { return noResidual },
		"multiplicative": func(m string) residual { return residualOf(cal, m) },
		"additive": func(m string) residual {
			if r, ok := add[m]; ok {
				return r
			}
			return noResidual
		},
	}
	held := map[string]*results.Result{
		"uniform-3000": quietRun(t, "quiet", "runs", "uniform-3000"),
		"rate-quiet":   quietRun(t, "rate-quiet", "run"),
	}
	score := map[string][3]int{}
	for name, form := range forms {
		var s [3]int
		for _, run := range []string{"uniform-3000", "rate-quiet"} {
			c, err := check([]*results.Result{held[run]}, []string{run}, cal, "", form)
			if err != nil {
				t.Fatal(err)
			}
			_, _, cpuN, cpu := c.Summary()
			rn, rw := c.RateSummary()
			var errs, rateErrs []float64
			for _, r := range c.Rows {
				if r.MeasuredCPUUs > 0 {
					errs = append(errs, math.Abs(r.CPUErrorPct()))
				}
			}
			for _, r := range c.Rates {
				rateErrs = append(rateErrs, math.Abs(r.ErrorPct()))
			}
			t.Logf("%s on %s: CPU within 30%%: %d of %d (median error %.0f%%); rate within 30%%: %d of %d (median error %.0f%%)",
				name, run, cpu, cpuN, median(errs), rw, rn, median(rateErrs))
			if run == "uniform-3000" {
				s[0] = cpu
			} else {
				s[1], s[2] = cpu, rw
			}
		}
		score[name] = s
	}
	m, a := score["multiplicative"], score["additive"]
	if m[0]+m[1] < a[0]+a[1] || m[2] < a[2] {
		t.Errorf("the additive form does better (CPU within 30%% at 3,000 users, in the rate run, rates): %v against %v", a, m)
	}
}
