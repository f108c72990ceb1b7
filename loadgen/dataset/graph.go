package dataset

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// The follow graph is generated in two steps:
//
//  1. Out-degrees. With Spec.Followees every user gets exactly that many.
//     Otherwise m = round(Users*AvgFollowees) follows are spread over the
//     users by drawing pairs (follower, slot) uniformly and accepting the
//     draw only if the slot is still free (slot >= the follower's count so
//     far). Each accepted draw thus picks a follower with probability
//     proportional to its remaining free pairs, which is exactly sampling m
//     pairs without replacement: the degrees are those of a uniform G(n,m)
//     graph. Above half density the complement is drawn instead, so the
//     acceptance rate never drops below one half.
//  2. Followees, row by row. Given the degrees, the rows of a G(n,m) graph
//     are independent uniform subsets, so each row is drawn on its own from
//     its own random stream (which is what lets rows be generated in
//     parallel and still deterministically). Zipf rows draw the followees
//     from the popularity distribution instead.
//
// Storage is one flat []uint32 sliced per user, so 10M follows take 40MB.

// rowChunk is how many rows a worker claims at a time: big enough to make
// the atomic counter negligible, small enough to balance skewed zipf rows.
const rowChunk = 256

func generateFollows(s Spec) [][]uint32 {
	n := s.Users
	deg := outDegrees(s)
	flat := make([]uint32, s.Edges())
	rows := make([][]uint32, n)
	off := 0
	for i, k := range deg {
		// Capacity is capped so an append by a caller cannot overwrite
		// the next user's row.
		rows[i] = flat[off : off+int(k) : off+int(k)]
		off += int(k)
	}
	var z *aliasTable
	if s.Graph == GraphZipf {
		z = newZipfTable(s)
	}

	chunks := (n + rowChunk - 1) / rowChunk
	workers := min(runtime.GOMAXPROCS(0), chunks)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			w := rowWorker{n: n, seed: s.Seed, stamp: make([]uint32, n+1), zipf: z}
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				for i := c * rowChunk; i < min(n, (c+1)*rowChunk); i++ {
					w.fill(uint32(i+1), rows[i])
				}
			}
		})
	}
	wg.Wait()
	return rows
}

// generateAuthors draws each message's author, in id order: from posters
// (by activity) if it is not nil, else uniformly.
func generateAuthors(s Spec, posters *aliasTable) []uint32 {
	authors := make([]uint32, s.Messages)
	r := newRNG(s.Seed, streamAuthors, 0)
	for i := range authors {
		if posters != nil {
			authors[i] = posters.draw(&r)
		} else {
			authors[i] = uint32(r.below(uint64(s.Users))) + 1
		}
	}
	return authors
}

// outDegrees returns each user's number of followees (step 1 above).
func outDegrees(s Spec) []uint32 {
	n := s.Users
	deg := make([]uint32, n)
	if s.Followees > 0 {
		for i := range deg {
			deg[i] = uint32(s.Followees)
		}
		return deg
	}
	m := s.Edges()
	pairs := int64(n) * int64(n-1)
	draws, complement := m, false
	if m > pairs/2 {
		draws, complement = pairs-m, true
	}
	r := newRNG(s.Seed, streamDegrees, 0)
	slots := uint64(n - 1)
	for k := int64(0); k < draws; {
		i := r.below(uint64(n))
		if r.below(slots) < uint64(deg[i]) {
			continue // that pair is taken; redraw
		}
		deg[i]++
		k++
	}
	if complement {
		for i := range deg {
			deg[i] = uint32(n-1) - deg[i]
		}
	}
	return deg
}

// rowWorker draws follow rows. stamp[v] == u marks v as already chosen (or,
// in the dense case, excluded) for row u; rows have distinct u, so the array
// never needs clearing.
type rowWorker struct {
	n     int
	seed  int64
	stamp []uint32
	zipf  *aliasTable
	fen   []uint64 // Fenwick tree scratch for zipfFallback
	cand  []uint32
}

// fill writes user u's followees, ascending, into out (len(out) is u's
// degree).
func (w *rowWorker) fill(u uint32, out []uint32) {
	d := len(out)
	if d == 0 {
		return
	}
	r := newRNG(w.seed, streamRows, uint64(u))
	if w.zipf != nil {
		w.fillZipf(u, out, &r)
		return
	}
	others := uint64(w.n - 1)
	draw := func() uint32 { // uniform among users other than u
		v := uint32(r.below(others)) + 1
		if v >= u {
			v++
		}
		return v
	}
	if 2*d > int(others) {
		// Dense row: choose the others-d users u does not follow and
		// take everyone else, which keeps the rejection rate below 1/2.
		for k := 0; k < int(others)-d; {
			if v := draw(); w.stamp[v] != u {
				w.stamp[v] = u
				k++
			}
		}
		w.stamp[u] = u
		k := 0
		for v := 1; v <= w.n; v++ {
			if w.stamp[v] != u {
				out[k] = uint32(v)
				k++
			}
		}
		return
	}
	for k := 0; k < d; {
		if v := draw(); w.stamp[v] != u {
			w.stamp[v] = u
			out[k] = v
			k++
		}
	}
	w.sortRow(u, out)
}

// sortRow sorts a row whose members are stamped with u: by scanning the
// stamps when the row is a large part of all users (O(n), no comparisons),
// by sorting it otherwise.
func (w *rowWorker) sortRow(u uint32, out []uint32) {
	d := len(out)
	if w.n > 4*d*bits.Len(uint(d)) {
		slices.Sort(out)
		return
	}
	k := 0
	for v := 1; v <= w.n; v++ {
		if w.stamp[v] == u {
			out[k] = uint32(v)
			k++
		}
	}
}

// fillZipf draws u's followees from the Zipf popularity distribution,
// without replacement and without u. Rejection is fast while most of the
// remaining weight is unchosen; when a row needs so much of the weight that
// draws keep hitting chosen users (huge rows, steep exponents), it switches
// to exact weighted sampling over the unchosen users with a Fenwick tree.
// Both sample the same distribution, so the switch does not bias the row.
func (w *rowWorker) fillZipf(u uint32, out []uint32, r *rng) {
	z := w.zipf
	d := len(out)
	k := 0
	budget := 4*d + 64
	for tries := 0; k < d && tries < budget; tries++ {
		if v := z.draw(r); v != u && w.stamp[v] != u {
			w.stamp[v] = u
			out[k] = v
			k++
		}
	}
	if k < d {
		w.zipfFallback(u, out, k, r)
	}
	w.sortRow(u, out)
}

// zipfFallback completes out[k:] by successive weighted sampling among the
// users neither chosen yet nor u, in O(n + d log n).
func (w *rowWorker) zipfFallback(u uint32, out []uint32, k int, r *rng) {
	z, n := w.zipf, w.n
	if w.fen == nil {
		w.fen = make([]uint64, n+1)
	}
	fen := w.fen
	clear(fen)
	var total uint64
	for i := 1; i <= n; i++ { // linear-time Fenwick build over ranks
		e := &z.entries[i-1]
		if e.user != u && w.stamp[e.user] != u {
			fen[i] += z.weight[i-1]
			total += z.weight[i-1]
		}
		if j := i + i&-i; j <= n {
			fen[j] += fen[i]
		}
	}
	top := 1 << (bits.Len(uint(n)) - 1)
	for ; k < len(out); k++ {
		x := r.below(total) // total > 0: every weight is >= 1 and users remain
		pos := 0
		for step := top; step > 0; step >>= 1 {
			if p := pos + step; p <= n && fen[p] <= x {
				pos = p
				x -= fen[p]
			}
		}
		rank := pos + 1
		wt := z.weight[rank-1]
		for i := rank; i <= n; i += i & -i {
			fen[i] -= wt
		}
		total -= wt
		v := z.entries[rank-1].user
		w.stamp[v] = u
		out[k] = v
	}
}

// aliasTable samples users with given integer weights by Walker's alias
// method in exact integer arithmetic: O(1) per draw, and the same table on
// every machine. Entry i stands for the user of rank i+1 and weight[i]; a
// zipf table maps ranks to users through a seeded permutation, so that
// popularity is unrelated to the id.
type aliasTable struct {
	total   uint64       // sum of weights: each alias bucket holds this much
	entries []aliasEntry // by rank-1
	weight  []uint64     // by rank-1
}

type aliasEntry struct {
	prob  uint64 // draw 0..total-1 below prob: this user, else alias
	user  uint32
	alias uint32
}

// uniformSource draws a uniform integer in [0, n): the dataset's rng, or
// the workload's *rand.Rand.
type uniformSource interface{ Uint64N(n uint64) uint64 }

func (z *aliasTable) draw(r uniformSource) uint32 {
	e := &z.entries[r.Uint64N(uint64(len(z.entries)))]
	if r.Uint64N(z.total) < e.prob {
		return e.user
	}
	return e.alias
}

// newZipfTable is the popularity table of GraphZipf: rank k has weight
// k^-ZipfS.
func newZipfTable(s Spec) *aliasTable {
	return newRankTable(s.Users, s.ZipfS, s.Seed, streamPerm)
}

// newRankTable gives the user of popularity rank k (1 is the most popular)
// weight proportional to k^-exponent, ranks mapped to users by a
// permutation drawn from the seed's stream.
func newRankTable(n int, exponent float64, seed int64, stream uint64) *aliasTable {
	weights := rankWeights(n, exponent)
	// Fisher-Yates with our own reduction (see rng).
	perm := make([]uint32, n)
	for i := range perm {
		perm[i] = uint32(i + 1)
	}
	r := newRNG(seed, stream, 0)
	for i := n - 1; i > 0; i-- {
		j := r.below(uint64(i + 1))
		perm[i], perm[j] = perm[j], perm[i]
	}
	return newAliasTable(weights, perm)
}

// rankWeights are round-down(2^32 * k^-exponent), at least 1, for ranks
// k = 1..n, exponent at most MaxZipfS.
func rankWeights(n int, exponent float64) []uint64 {
	// exponent*2^32 is exact and fits; one scaling by a power of two and
	// a Round are the same on every CPU.
	sFix := uint64(math.Round(exponent * (1 << 32)))
	w := make([]uint64, n)
	for k := 1; k <= n; k++ {
		w[k-1] = zipfWeight(uint64(k), sFix)
	}
	return w
}

// newAliasTable builds the table drawing users[i] with weight weights[i].
// Every weight must be at least 1 and at most 2^32, and there are at most
// MaxUsers of them, so that every sum below is an exact uint64.
func newAliasTable(weights []uint64, users []uint32) *aliasTable {
	n := len(weights)
	z := &aliasTable{entries: make([]aliasEntry, n), weight: weights}
	for _, wt := range weights {
		z.total += wt
	}
	// Vose's alias construction. Weights are scaled by n so that each of
	// the n buckets holds exactly total; all sums are exact integers (at
	// most 2^32 * MaxUsers < 2^63), so the table is exact and
	// platform-independent.
	scaled := make([]uint64, n)
	var small, large []int
	for i, wt := range weights {
		scaled[i] = wt * uint64(n)
		z.entries[i] = aliasEntry{prob: z.total, user: users[i], alias: users[i]}
		if scaled[i] < z.total {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		sm := small[len(small)-1]
		small = small[:len(small)-1]
		lg := large[len(large)-1]
		z.entries[sm].prob = scaled[sm]
		z.entries[sm].alias = users[lg]
		scaled[lg] -= z.total - scaled[sm]
		if scaled[lg] < z.total {
			large = large[:len(large)-1]
			small = append(small, lg)
		}
	}
	// Leftovers (none, with exact sums) keep prob = total: always themselves.
	return z
}

// zipfWeight is max(1, round-down(2^32 * k^-s)) for s = sFix/2^32, computed
// as 2^(32 - s*log2 k) in fixed point. Integer arithmetic rather than
// math.Pow because Pow, Exp and Log are not guaranteed to round the same way
// on every architecture, and one flipped bit would change the whole graph.
// The floor of 1 keeps every user reachable.
func zipfWeight(k, sFix uint64) uint64 {
	hi, lo := bits.Mul64(sFix, log2Q32(k))
	return pow2NegQ32(hi<<32 | lo>>32) // s*log2(k) in Q32
}

// pow2NegQ32 is max(1, round-down(2^32 * 2^-e)) for e >= 0 in Q32 fixed
// point.
func pow2NegQ32(e uint64) uint64 {
	ip, fp := e>>32, e&(1<<32-1)
	p := uint64(1) << 62 // 2^-fp in Q62
	for i := 1; i <= 32; i++ {
		if fp&(1<<(32-i)) != 0 {
			p = mulQ62(p, negPow2[i])
		}
	}
	shift := 30 + ip // Q62 -> Q32 is >> 30, then 2^-ip
	if shift >= 64 {
		return 1
	}
	return max(p>>shift, 1)
}

// log2Q32 is log2(k) in Q32 fixed point, k >= 1, by the bit-by-bit squaring
// method: the integer part is the bit length, each squaring of the
// normalized mantissa yields one fraction bit.
func log2Q32(k uint64) uint64 {
	ip := uint64(bits.Len64(k) - 1)
	x := k << (62 - ip) // mantissa in [1,2), Q62
	var frac uint64
	for range 32 {
		x = mulQ62(x, x) // in [1,4)
		frac <<= 1
		if x >= 1<<63 {
			x >>= 1
			frac |= 1
		}
	}
	return ip<<32 | frac
}

func mulQ62(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi<<2 | lo>>62
}

// negPow2[i] = 2^(-2^-i) in Q62 for i = 1..32, each the integer square root
// of the previous (starting from 2^-1), so the table is exact integer
// arithmetic too.
var negPow2 = func() (t [33]uint64) {
	c := new(big.Int).Lsh(big.NewInt(1), 61) // 2^-1 in Q62
	for i := 1; i <= 32; i++ {
		c.Sqrt(c.Lsh(c, 62))
		t[i] = c.Uint64()
	}
	return t
}()

// setCelebrity makes user 1 followed by exactly s.Celebrity users, chosen at
// random among those who follow anyone, keeping every row's length: a
// chosen user who did not follow user 1 gives up a random followee for it,
// and a user not chosen who did follows a random other author instead.
// Users who follow everyone must stay; a count the graph cannot give is a
// *SpecError.
func setCelebrity(s Spec, rows [][]uint32) error {
	n := len(rows)
	var must, free []uint32 // users 2..n: following everyone, following anyone else
	for u := 2; u <= n; u++ {
		switch len(rows[u-1]) {
		case 0:
		case n - 1:
			must = append(must, uint32(u))
		default:
			free = append(free, uint32(u))
		}
	}
	if s.Celebrity < len(must) || s.Celebrity > len(must)+len(free) {
		return &SpecError{Field: "Celebrity", Value: fmt.Sprint(s.Celebrity),
			Reason: fmt.Sprintf("this graph can give user 1 between %d and %d followers", len(must), len(must)+len(free))}
	}
	r := newRNG(s.Seed, streamCelebrity, 0)
	chosen := make([]bool, n+1)
	for _, u := range must {
		chosen[u] = true
	}
	// A partial Fisher-Yates shuffle picks the rest.
	for i := range s.Celebrity - len(must) {
		j := i + int(r.below(uint64(len(free)-i)))
		free[i], free[j] = free[j], free[i]
		chosen[free[i]] = true
	}
	for u := 2; u <= n; u++ {
		row := rows[u-1]
		i, has := slices.BinarySearch(row, 1)
		switch {
		case chosen[u] && !has:
			row[r.below(uint64(len(row)))] = 1
		case !chosen[u] && has:
			for {
				v := uint32(2 + r.below(uint64(n-1))) // 2..n
				if _, taken := slices.BinarySearch(row, v); v != uint32(u) && !taken {
					row[i] = v
					break
				}
			}
		default:
			continue
		}
		slices.Sort(row)
	}
	return nil
}
