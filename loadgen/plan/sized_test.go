package plan

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/results"
)

// sizedKinds are the logs of three kinds of operation whose factors are
// f at a store of 173,205 messages (the geometric mean of 100,000 and
// 300,000) and grow as messages^e, each kind measured twice a size with
// a spread of ±spread about that.
func sizedKinds(f [3]float64, e, spread float64) [3][]sizedLog {
	var out [3][]sizedLog
	ref := math.Log(173_205.08)
	for k := range out {
		for _, m := range []float64{100_000, 300_000} {
			x := math.Log(m)
			for _, d := range []float64{-spread, spread} {
				out[k] = append(out[k], sizedLog{l: math.Log(f[k]) + e*(x-ref) + d, x: x})
			}
		}
	}
	return out
}

// TestFitSized: phases at two sizes whose CPU grows with the store give
// the exponent and the factors at the mean size; a growth within the
// phases' spread, or phases at one size, give none and the geometric
// means; an exponent beyond the bound is held at it.
func TestFitSized(t *testing.T) {
	f := fitSized(sizedKinds([3]float64{1.2, 0.9, 2.0}, 0.1, 0.01))
	if math.Abs(f.SizeExponent-0.1) > 1e-6 || math.Abs(f.Messages-173_205.08) > 1 {
		t.Errorf("exponent %v at %v messages, want 0.1 at 173,205", f.SizeExponent, f.Messages)
	}
	for _, x := range []struct {
		name      string
		got, want float64
	}{{"newest", f.Newest, 1.2}, {"older", f.Older, 0.9}, {"post", f.Post, 2.0}} {
		if math.Abs(x.got-x.want) > 1e-6 {
			t.Errorf("%s: %v, want %v", x.name, x.got, x.want)
		}
	}
	if f.Phases != 12 {
		t.Errorf("phases %d, want 12", f.Phases)
	}
	// At three times the data the factors are 3^0.1 over those at the
	// smaller size.
	if lo, hi := f.At(100_000), f.At(300_000); math.Abs(hi.Newest/lo.Newest-math.Pow(3, 0.1)) > 1e-6 {
		t.Errorf("newest at 300,000 over 100,000 messages: %v, want %v", hi.Newest/lo.Newest, math.Pow(3, 0.1))
	}

	// The same growth in a spread of ±20 %: not clear of it.
	noisy := fitSized(sizedKinds([3]float64{1.2, 0.9, 2.0}, 0.1, 0.2))
	if noisy.SizeExponent != 0 || noisy.Messages != 0 {
		t.Errorf("a growth within the spread: exponent %v at %v, want none", noisy.SizeExponent, noisy.Messages)
	}
	if math.Abs(noisy.Newest-1.2) > 1e-6 {
		t.Errorf("newest without an exponent: %v, want the geometric mean 1.2", noisy.Newest)
	}

	// One size: the geometric means, as a calibration at one scale.
	var one [3][]sizedLog
	for k, l := range []float64{1.1, 1.3, 0.8} {
		one[k] = []sizedLog{{math.Log(l) - 0.1, math.Log(1e5)}, {math.Log(l) + 0.1, math.Log(1e5)}}
	}
	g := fitSized(one)
	if g.SizeExponent != 0 || math.Abs(g.Newest-1.1) > 1e-6 || math.Abs(g.Older-1.3) > 1e-6 || math.Abs(g.Post-0.8) > 1e-6 {
		t.Errorf("one size: %+v", g)
	}

	// A kind the runs did not measure keeps 1.
	partial := sizedKinds([3]float64{1.2, 0.9, 2.0}, 0.1, 0.01)
	partial[1] = nil
	if p := fitSized(partial); p.Older != 1 || math.Abs(p.SizeExponent-0.1) > 1e-6 {
		t.Errorf("without older pages: older %v, exponent %v", p.Older, p.SizeExponent)
	}

	// A growth steeper than the bound is held at it.
	if s := fitSized(sizedKinds([3]float64{1, 1, 1}, 3, 0.01)); s.SizeExponent != results.MaxSizeExponent {
		t.Errorf("exponent %v for a growth of 3, want the bound %v", s.SizeExponent, results.MaxSizeExponent)
	}
}

// TestSizeExponentFromRunsAtTwoSizes: fitted on the runs of
// evidence/plan/size-repeat at 1,000 and 3,000 users, made minutes apart,
// pull-client, whose newest pages cost about 11 % more CPU a row at
// 3,000 users, gets a size exponent, and the check predicts that growth
// from one size to the other; pull-client+memcache, whose closed-loop
// phases cost the same a row at both sizes, gets none.
func TestSizeExponentFromRunsAtTwoSizes(t *testing.T) {
	var runs []*results.Result
	var names []string
	for _, dir := range []string{"uniform-1000-d", "uniform-3000-d"} {
		for _, m := range []string{"pull-client", "pull-client+memcache"} {
			runs = append(runs, quietRun(t, "size-repeat", "runs", dir, m))
			names = append(names, dir+"/"+m)
		}
	}
	cal, err := Calibrate(runs, names)
	if err != nil {
		t.Fatal(err)
	}
	pc := cal.Factors["pull-client"]
	if !(pc.SizeExponent > 0.03) {
		t.Fatalf("pull-client's size exponent %v, want a growth (factors %+v)", pc.SizeExponent, pc)
	}
	if e := cal.Factors["pull-client+memcache"].SizeExponent; e != 0 {
		t.Errorf("pull-client+memcache's size exponent %v, want none", e)
	}
	c, err := Check(runs, names, cal, "")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]results.PlanCheckRow{}
	for _, r := range c.Rows {
		rows[r.Run+"/"+r.Model+"/"+r.Phase] = r
	}
	small, large := rows["uniform, 1,000 users/pull-client/retrieve"], rows["uniform, 3,000 users/pull-client/retrieve"]
	if small.MeasuredCPUUs == 0 || large.MeasuredCPUUs == 0 {
		t.Fatalf("no pull-client newest pages in the check: %v", rows)
	}
	measured := large.MeasuredCPUUs / small.MeasuredCPUUs
	predicted := large.PredictedCPUUs / small.PredictedCPUUs
	if math.Abs(predicted/measured-1) > 0.05 {
		t.Errorf("pull-client's newest page at 3,000 users over 1,000: predicted %.3f, measured %.3f", predicted, measured)
	}
}

// plainCalibration is this machine's built-in calibration without any
// design's size exponent or open factor, whatever the built-in one
// fitted: the baseline the tests below add one to.
func plainCalibration() *results.Calibration {
	c := DefaultCalibration()
	for m, f := range c.Factors {
		f.Messages, f.SizeExponent, f.Open = 0, 0, 0
		c.Factors[m] = f
	}
	return c
}

// TestPlanTakesSizeExponent: a plan scales a design's CPU factors with
// its store's size by the calibration's exponent, and says so among its
// assumptions; a design without one is planned as before.
func TestPlanTakesSizeExponent(t *testing.T) {
	w := Workload{Users: 100_000, NewestPerSec: 1000, PostsPerSec: 50, Models: []string{"pull-client", "push"}}
	flat := plainCalibration()
	sized := plainCalibration()
	f := sized.Factors["pull-client"]
	f.Messages, f.SizeExponent = 1e5, 0.1
	sized.Factors["pull-client"] = f
	a, b := planBoth(t, w, flat, sized)
	// 100,000 users of 100 messages: 10^7 messages, 100 times the size
	// the factors stand for.
	want := math.Pow(100, 0.1)
	for i, d := range b.Designs {
		got := d.CPUFactor / a.Designs[i].CPUFactor
		switch d.Model {
		case "pull-client":
			if math.Abs(got-want) > 1e-6*want {
				t.Errorf("pull-client's CPU factor at 10^7 messages: ×%.4f, want ×%.4f", got, want)
			}
		default:
			if got != 1 {
				t.Errorf("%s's CPU factor moved ×%.4f without an exponent", d.Model, got)
			}
		}
	}
	var said bool
	for _, l := range b.Assumptions {
		said = said || strings.Contains(l, "pull-client's CPU grows with the data") && strings.Contains(l, fmt.Sprintf("×%.2f", want))
	}
	if !said {
		t.Errorf("the plan's assumptions do not name pull-client's growth: %q", b.Assumptions)
	}
	for _, l := range a.Assumptions {
		if strings.Contains(l, "grows with the data") {
			t.Errorf("a plan without exponents says %q", l)
		}
	}
}

// TestPlanNamesOpenFactors: a plan whose calibration carries open
// factors names each design's among its assumptions, since they scale
// the servers it sizes; one without them says nothing of them.
func TestPlanNamesOpenFactors(t *testing.T) {
	w := Workload{Users: 100_000, NewestPerSec: 1000, PostsPerSec: 50, Models: []string{"pull-client", "push"}}
	flat := plainCalibration()
	open := plainCalibration()
	f := open.Factors["pull-client"]
	f.Open = 1.23
	open.Factors["pull-client"] = f
	a, b := planBoth(t, w, flat, open)
	var said []string
	for _, l := range b.Assumptions {
		if strings.Contains(l, "open factor") {
			said = append(said, l)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "pull-client ×1.23") || strings.Contains(said[0], "push ×") {
		t.Errorf("the plan's assumptions on open factors: %q, want one naming pull-client ×1.23 and not push", said)
	}
	for _, l := range a.Assumptions {
		if strings.Contains(l, "open factor") {
			t.Errorf("a plan without open factors says %q", l)
		}
	}
}

// planBoth is w planned with the calibration a and with b.
func planBoth(t *testing.T, w Workload, a, b *results.Calibration) (*results.Plan, *results.Plan) {
	t.Helper()
	pa, err := Make(w, a, "")
	if err != nil {
		t.Fatal(err)
	}
	pb, err := Make(w, b, "")
	if err != nil {
		t.Fatal(err)
	}
	return pa, pb
}
