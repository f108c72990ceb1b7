package registry

import "math"

// SolveIncreasing is where an increasing f reaches target: the least x
// above 0 with f(x) ≥ target, to within the search's last step. The
// cost models use it to invert a count they can only compute forward
// (the span of a merged stream that holds a page's ids, the chance that
// gives an author their followers).
//
// The search doubles x from start (above 0) while f(x) < target and x <
// bound, then halves the bracket it found, from 0 to that x, halvings
// times, and returns the bracket's upper end, so f at the result is at
// least target unless the bound cut the doubling short. Its edge cases:
//   - f(start) ≥ target: the bracket is (0, start]; an f at or above
//     target from 0 on gives start/2^halvings, the bracket's least end.
//   - f below target up to bound: the doubling stops at the first
//     start·2^k at or past bound, and that is the result (f there is
//     still below target).
//   - target, start or bound not finite, start not above 0, or f NaN at
//     any point the search looks at: NaN.
func SolveIncreasing(f func(x float64) float64, target, start, bound float64, halvings int) float64 {
	if !finite(target) || !finite(start) || !finite(bound) || start <= 0 {
		return math.NaN()
	}
	below := func(x float64) (bool, bool) {
		v := f(x)
		return v < target, math.IsNaN(v)
	}
	lo, hi := 0.0, start
	for {
		b, nan := below(hi)
		if nan {
			return math.NaN()
		}
		if !b || hi >= bound {
			break
		}
		lo, hi = hi, 2*hi
	}
	for range halvings {
		mid := (lo + hi) / 2
		b, nan := below(mid)
		if nan {
			return math.NaN()
		}
		if b {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// finite says whether v is a number other than ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
