package registry

import (
	"math"
	"testing"
)

// TestSolveIncreasing: the search finds where an increasing function
// reaches its target, whether the answer lies below start or far above
// it, within the last halving's step and never below the answer.
func TestSolveIncreasing(t *testing.T) {
	for _, c := range []struct {
		name          string
		f             func(float64) float64
		target, start float64
		want          float64
	}{
		{"a line above start", func(x float64) float64 { return 3 * x }, 300, 1, 100},
		{"a line below start", func(x float64) float64 { return 3 * x }, 3, 64, 1},
		{"a saturating count", func(x float64) float64 { return 10 * -math.Expm1(-x) }, 5, 1e-9, math.Ln2},
		{"a step", func(x float64) float64 {
			if x >= 7.5 {
				return 1
			}
			return 0
		}, 1, 1, 7.5},
	} {
		const halvings = 50
		got := SolveIncreasing(c.f, c.target, c.start, 1e12, halvings)
		if got < c.want || got-c.want > 1e-9*math.Max(1, c.want) {
			t.Errorf("%s: %v, want %v (at or just above)", c.name, got, c.want)
		}
		if c.f(got) < c.target {
			t.Errorf("%s: f(%v) = %v, below the target %v", c.name, got, c.f(got), c.target)
		}
	}
}

// TestSolveIncreasingSolvedAtTheLowEnd: a function at its target from 0
// on gives the bracket's least end, start/2^halvings, and is looked at
// only in (0, start].
func TestSolveIncreasingSolvedAtTheLowEnd(t *testing.T) {
	var most float64
	f := func(x float64) float64 {
		most = math.Max(most, x)
		return 5 + x
	}
	got := SolveIncreasing(f, 5, 8, 1e6, 10)
	if want := 8.0 / 1024; got != want {
		t.Errorf("got %v, want start/2^10 = %v", got, want)
	}
	if most > 8 {
		t.Errorf("looked at %v, above start", most)
	}
	if got := SolveIncreasing(f, 5, 8, 1e6, 0); got != 8 {
		t.Errorf("no halvings: got %v, want start, 8", got)
	}
}

// TestSolveIncreasingNeverSolved: a function below its target up to the
// bound stops at the first doubling of start at or past the bound, and
// f there is below the target.
func TestSolveIncreasingNeverSolved(t *testing.T) {
	f := func(x float64) float64 { return -math.Expm1(-x) } // below 1 everywhere
	got := SolveIncreasing(f, 2, 1, 1000, 40)
	if got != 1024 {
		t.Errorf("got %v, want 1024, the first doubling of 1 at or past 1000", got)
	}
	// The bound reached exactly: it is the end.
	if got := SolveIncreasing(f, 2, 1, 1024, 40); got != 1024 {
		t.Errorf("bound 1024: got %v, want 1024", got)
	}
}

// TestSolveIncreasingNotFinite: a target, start or bound that is not a
// finite number, a start not above 0, or a function that gives NaN: NaN,
// found without looping on.
func TestSolveIncreasingNotFinite(t *testing.T) {
	line := func(x float64) float64 { return x }
	inf := math.Inf(1)
	for _, c := range []struct {
		name                 string
		f                    func(float64) float64
		target, start, bound float64
	}{
		{"NaN target", line, math.NaN(), 1, 100},
		{"infinite target", line, inf, 1, 100},
		{"-infinite target", line, -inf, 1, 100},
		{"NaN start", line, 5, math.NaN(), 100},
		{"infinite start", line, 5, inf, 100},
		{"zero start", line, 5, 0, 100},
		{"negative start", line, 5, -1, 100},
		{"infinite bound", line, 5, 1, inf},
		{"NaN bound", line, 5, 1, math.NaN()},
		{"NaN function", func(float64) float64 { return math.NaN() }, 5, 1, 100},
		{"NaN past start", func(x float64) float64 {
			if x > 2 {
				return math.NaN()
			}
			return 0
		}, 5, 1, 100},
		{"NaN within the bracket", func(x float64) float64 {
			if x < 4 && x > 1 {
				return math.NaN()
			}
			return x
		}, 3, 1, 100},
	} {
		if got := SolveIncreasing(c.f, c.target, c.start, c.bound, 40); !math.IsNaN(got) {
			t.Errorf("%s: got %v, want NaN", c.name, got)
		}
	}
}
