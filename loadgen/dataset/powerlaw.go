package dataset

import (
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// generatePowerLaw builds the GraphPowerLaw follow graph column by column:
//
//  1. Follower counts. The m = round(Users*AvgFollowees) follows are shared
//     out over popularity ranks in proportion to k^-1/(InExponent-1), the
//     expected order statistics of a power law with that exponent, by the
//     largest-remainder method, at most Users-1 each (ranks that would get
//     more get Users-1 and the rest is shared again). A permutation maps
//     ranks to users. So the in-degrees are exactly a power law's quantiles
//     and add up to m: the mean followee count is AvgFollowees exactly.
//  2. Followers, one followee at a time: v's followers are drawn without
//     replacement (and without v) from a second popularity table, whose
//     rank k has weight k^-1/(OutExponent-1) under its own permutation. A
//     user's followee count is thus about proportional to that weight, a
//     heavy tail with exponent about OutExponent, which is lost only where
//     a user would follow nearly everyone.
//  3. The columns are transposed into the ascending rows of Followees.
//
// Drawing columns rather than rows is what keeps the follower counts exact:
// a row drawn from a popularity table would saturate on the most popular
// users (nobody follows anyone twice) and thin the distribution's tail.
func generatePowerLaw(s Spec) [][]uint32 {
	n := s.Users
	indeg := powerLawInDegrees(s)
	out := newRankTable(n, 1/(s.OutExponent-1), s.Seed, streamOutPerm)

	// Columns: cols[v-1] lists v's followers.
	colFlat := make([]uint32, s.Edges())
	cols := make([][]uint32, n)
	off := 0
	for i, k := range indeg {
		cols[i] = colFlat[off : off+int(k) : off+int(k)]
		off += int(k)
	}
	chunks := (n + rowChunk - 1) / rowChunk
	workers := min(runtime.GOMAXPROCS(0), chunks)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			w := rowWorker{n: n, stamp: make([]uint32, n+1), zipf: out}
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				for i := c * rowChunk; i < min(n, (c+1)*rowChunk); i++ {
					v := uint32(i + 1)
					if len(cols[i]) > 0 {
						r := newRNG(s.Seed, streamColumns, uint64(v))
						w.fillZipf(v, cols[i], &r)
					}
				}
			}
		})
	}
	wg.Wait()

	// Transpose: walking the followees in ascending order appends each
	// follower's followees in ascending order.
	outdeg := make([]int, n)
	for _, c := range cols {
		for _, f := range c {
			outdeg[f-1]++
		}
	}
	flat := make([]uint32, len(colFlat))
	rows := make([][]uint32, n)
	off = 0
	for i, k := range outdeg {
		rows[i] = flat[off : off : off+k]
		off += k
	}
	for i, c := range cols {
		for _, f := range c {
			rows[f-1] = append(rows[f-1], uint32(i+1))
		}
	}
	return rows
}

// powerLawInDegrees returns each user's follower count (step 1 of
// generatePowerLaw), indexed by user-1.
func powerLawInDegrees(s Spec) []uint32 {
	n := s.Users
	byRank := apportion(uint64(s.Edges()), rankWeights(n, 1/(s.InExponent-1)), uint64(n-1))
	perm := make([]uint32, n)
	for i := range perm {
		perm[i] = uint32(i)
	}
	r := newRNG(s.Seed, streamPerm, 0)
	for i := n - 1; i > 0; i-- {
		j := r.below(uint64(i + 1))
		perm[i], perm[j] = perm[j], perm[i]
	}
	deg := make([]uint32, n)
	for rank, u := range perm {
		deg[u] = uint32(byRank[rank])
	}
	return deg
}

// apportion shares total out over weights (non-increasing, each at least 1
// and at most 2^32) in proportion by the largest-remainder method, giving
// none more than limit: the heaviest entries that would exceed it get
// limit and the rest is shared out again among the others. total must be
// at most len(weights)*limit. Integer arithmetic throughout.
func apportion(total uint64, weights []uint64, limit uint64) []uint64 {
	n := len(weights)
	out := make([]uint64, n)
	capped := 0 // weights[:capped] get limit
	for {
		rest := total - uint64(capped)*limit
		ws := weights[capped:]
		var sum uint64
		for _, w := range ws {
			sum += w
		}
		if sum == 0 { // every entry capped: total was len(weights)*limit
			for i := range out {
				out[i] = limit
			}
			return out
		}
		type remainder struct {
			r uint64
			i int
		}
		rems := make([]remainder, len(ws))
		var given uint64
		for i, w := range ws {
			hi, lo := bits.Mul64(rest, w)
			q, r := bits.Div64(hi, lo, sum) // hi < sum since rest*w/sum <= rest
			out[capped+i] = q
			given += q
			rems[i] = remainder{r, i}
		}
		// The largest remainders get one more each; ties go to the
		// heavier (earlier) entry.
		slices.SortFunc(rems, func(a, b remainder) int {
			if a.r != b.r {
				if a.r > b.r {
					return -1
				}
				return 1
			}
			return a.i - b.i
		})
		for _, x := range rems[:rest-given] {
			out[capped+x.i]++
		}
		// Floors do not increase along the weights, so everything
		// before the last entry above limit got at least limit.
		last := -1
		for i := capped; i < n; i++ {
			if out[i] > limit {
				last = i
			}
		}
		if last < 0 {
			for i := range capped {
				out[i] = limit
			}
			return out
		}
		capped = last + 1
	}
}
