package active

import (
	"math"
	"testing"
)

// TestFollowChancesPinned pins followChances's fit on a few class sets to
// the values it gave before its searches became registry.SolveIncreasing:
// the searches' results must not move.
func TestFollowChancesPinned(t *testing.T) {
	for _, c := range []struct {
		fs, fu, gs, gu []float64
		c, w           []uint64 // math.Float64bits of the fit
	}{
		{fs: []float64{1, 10, 300}, fu: []float64{900, 84, 16}, gs: []float64{5, 24, 60}, gu: []float64{540, 100, 24},
			c: []uint64{0x3ef05702355faaca, 0x3f2600d5ff3a417c, 0x3fe0f80ce66ef3c8},
			w: []uint64{0x3fe680af0629463a, 0x40720329be8bd17a, 0x409a50c35c4bf040}},
		// Follows and followees that do not add up: searches that end at their bound.
		{fs: []float64{1, 10, 300}, fu: []float64{900, 84, 16}, gs: []float64{5, 24, 60}, gu: []float64{500, 400, 100},
			c: []uint64{0x3cd3aa3216d3811c, 0x3d08b3a1e2ad22a8, 0x3d5bcce060de1144},
			w: []uint64{0x4263867022aaebac, 0x42712e0be826d695, 0x42712e0be826d695}},
		{fs: []float64{20}, fu: []float64{1000}, gs: []float64{20}, gu: []float64{1000},
			c: []uint64{0x3f508cd0971a2328},
			w: []uint64{0x4034000000000000}},
		{fs: []float64{0.5, 2, 50, 999}, fu: []float64{5000, 4000, 900, 100}, gs: []float64{1, 30}, gu: []float64{9000, 1000},
			c: []uint64{0x41a304e4d4257708, 0x41c30727a5af3990, 0x420e2e479f9e8a89, 0x425b62eda0ca10b1},
			w: []uint64{0x3d115f3050c4826a, 0x3d61a7f89c7e6196}},
	} {
		cs, ws := followChances(c.fs, c.fu, c.gs, c.gu)
		if !equalBits(cs, c.c) || !equalBits(ws, c.w) {
			t.Errorf("followChances(%v, %v, %v, %v) = %v, %v; want %v, %v", c.fs, c.fu, c.gs, c.gu, cs, ws, floats(c.c), floats(c.w))
		}
	}
}

func floats(b []uint64) []float64 {
	v := make([]float64, len(b))
	for i, x := range b {
		v[i] = math.Float64frombits(x)
	}
	return v
}

func equalBits(v []float64, b []uint64) bool {
	if len(v) != len(b) {
		return false
	}
	for i, x := range v {
		if math.Float64bits(x) != b[i] {
			return false
		}
	}
	return true
}
