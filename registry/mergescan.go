package registry

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"sync"
)

// MergeScan is what a pull page's merge reads from its followees'
// messages, newest first, until fetch distinct followees have shown one:
// the ids at or above the floor that a k-way merge's range scan over the
// followees' (author_id, id) indexes reads (package pull/sqlread's
// Merge), a scan that gives up at limit ids; averaged over the reads.
//
// A reader's followees are drawn by popularity (a user met through a
// follow, weighed by followers) and each posts at its class's Posts rate;
// the ids of the reader's followees, newest first, are then a sequence of
// draws of authors by post rate, and the scan reads draws until fetch
// distinct authors have come. On a uniform graph that is a coupon
// collector's fetch-th distinct of g equal ones, about g·(H(g) −
// H(g−fetch)); on a skewed one the authors who post most come again and
// again before the quieter ones show, and the scan reads more per entry.
// Poissonized (author i's ids come at rate r_i, the followees' at Λ =
// Σ r_i, about g with the rates' mean over followees 1) the scan is
// Λ·min(T, τ), T the time the fetch-th distinct author comes and τ =
// limit/g the time limit ids take, and by the followees' symmetry
//
//	E[Λ·min(T, τ)] = ∫₀^τ g·E[r_1·1{D(t) < fetch}] dt
//
// where D(t), the distinct authors come by t, is binomial over the g
// followees; the scan hits its limit with chance P(D(τ) < fetch) (τ
// taken at the followees' mean rate: a reader whose followees post more
// than most reaches the limit sooner, one whose post less later, so that
// Limited and Beyond are rougher than IDs). A
// reader who follows fewer than fetch authors has no floor and no scan
// (Few). A reader's g is the class's mean Followees, the binomial taken
// at the integers on either side. TestMergeScanAgainstDraws sets it
// against drawn sequences.
func (d Demand) MergeScan(fetch, limit float64) MergeScanned {
	k := int(math.Round(fetch))
	if k < 1 {
		return MergeScanned{}
	}
	if d.readPick != nil {
		return d.mergeScan(k, limit)
	}
	// A plan asks it of the same classes at many rates (the rate
	// search): keep the answers by the classes, fetch and limit.
	h := fnv.New64a()
	var b [8]byte
	put := func(x float64) { binary.LittleEndian.PutUint64(b[:], math.Float64bits(x)); h.Write(b[:]) }
	put(float64(k))
	put(limit)
	for _, c := range d.Classes {
		put(c.Users)
		put(c.Followers)
		put(c.Followees)
		put(c.Posts)
		put(c.Reads)
	}
	key := h.Sum64()
	mergeScans.Lock()
	v, ok := mergeScans.m[key]
	mergeScans.Unlock()
	if ok {
		return v
	}
	v = d.mergeScan(k, limit)
	mergeScans.Lock()
	if mergeScans.m == nil || len(mergeScans.m) >= 256 {
		mergeScans.m = map[uint64]MergeScanned{}
	}
	mergeScans.m[key] = v
	mergeScans.Unlock()
	return v
}

// mergeScans keeps MergeScan's answers by a hash of its question.
var mergeScans struct {
	sync.Mutex
	m map[uint64]MergeScanned
}

// mergeScan is MergeScan without the keeping.
func (d Demand) mergeScan(k int, limit float64) MergeScanned {
	auth := d.authorRates()
	if len(auth) == 0 {
		return MergeScanned{Few: 1}
	}
	cache := map[int]MergeScanned{}
	at := func(n int) MergeScanned {
		if v, ok := cache[n]; ok {
			return v
		}
		v := mergeScanOf(auth, n, k, limit)
		cache[n] = v
		return v
	}
	// Between two whole followee counts, a class's scan is the straight
	// line between theirs.
	over := func(field func(MergeScanned) float64) float64 {
		return d.MeanOverReads(func(c UserClass) float64 {
			lo := math.Floor(c.Followees)
			a, b := field(at(int(lo))), field(at(int(lo)+1))
			return a + (c.Followees-lo)*(b-a)
		})
	}
	return MergeScanned{
		IDs:     over(func(m MergeScanned) float64 { return m.IDs }),
		Limited: over(func(m MergeScanned) float64 { return m.Limited }),
		Few:     over(func(m MergeScanned) float64 { return m.Few }),
		Beyond:  over(func(m MergeScanned) float64 { return m.Beyond }),
	}
}

// MergeScanned is what MergeScan finds of a merge's range scan, over the
// reads.
type MergeScanned struct {
	// IDs are the ids the scan reads, at most its limit (0 for a reader
	// of fewer than fetch followees).
	IDs float64
	// Limited is the share of reads whose scan reaches its limit, Few
	// the share by a reader of fewer than fetch followees (no scan).
	Limited, Few float64
	// Beyond is the ids the scans that reach the limit would have read
	// without it, over all reads (E[S·1{S ≥ limit}]): what a merge that
	// reads every followee's ids at or above the floor reads on those
	// pages. IDs − Limited·limit + Beyond is the scan without a limit.
	Beyond float64
}

// authorRate is a followee's chance q to be a class's author (weighed by
// followers) and the class's post rate r, scaled so that the mean rate
// over followees is 1.
type authorRate struct{ q, r float64 }

// authorRates are d's classes as followees: chance by Users·Followers,
// rate by Posts, classes of equal Followers and Posts merged.
func (d Demand) authorRates() []authorRate {
	type key struct{ f, p float64 }
	sum := map[key]float64{}
	var keys []key
	var total, mean float64
	for _, c := range d.Classes {
		w := c.Users * c.Followers
		if !(w > 0) || !(c.Posts > 0) {
			continue
		}
		kk := key{c.Followers, c.Posts}
		if _, ok := sum[kk]; !ok {
			keys = append(keys, kk)
		}
		sum[kk] += w
		total += w
		mean += w * c.Posts
	}
	if total == 0 {
		return nil
	}
	mean /= total
	out := make([]authorRate, len(keys))
	for i, kk := range keys {
		out[i] = authorRate{sum[kk] / total, kk.p / mean}
	}
	return out
}

// mergeScanOf is MergeScan for a reader of n followees drawn from auth.
func mergeScanOf(auth []authorRate, n, k int, limit float64) MergeScanned {
	if n < k {
		return MergeScanned{Few: 1}
	}
	// below is P(D(t) < k) and P(D(t) = k−1) for the n followees; f
	// the integrand at t: n·Σ q·r·[a·P(B(n−1) < k−1) + (1−a)·P(B(n−1) <
	// k)], a = 1 − e^(−r·t) that author 1 has come, B binomial of the
	// others at π(t) = Σ q·a.
	pi := func(t float64) (pi, qr, qra float64) {
		for _, x := range auth {
			a := -math.Expm1(-x.r * t)
			pi += x.q * a
			qr += x.q * x.r
			qra += x.q * x.r * a
		}
		return pi, qr, qra
	}
	f := func(t float64) float64 {
		p, qr, qra := pi(t)
		below, last := binomialBelow(n-1, p, k)
		// P(B < k−1) = P(B < k) − P(B = k−1)
		return float64(n) * (qra*(below-last) + (qr-qra)*below)
	}
	tau := limit / float64(n)
	// Integrate on a geometric grid, through tau, until the integrand is
	// negligible: capped is the integral up to tau, full to the end.
	var full, capped float64
	const steps = 32 // per factor e of t
	t0 := math.Min(tau, 1e-4*float64(k)/float64(n))
	full = f(0) * t0 // [0, t0]: the integrand is about f(0) there
	capped = full
	prev, ft := t0, f(t0)
	for i := 1; ; i++ {
		t := t0 * math.Exp(float64(i)/steps)
		if prev < tau && t > tau {
			t = tau
		}
		fn := f(t)
		full += (t - prev) * (ft + fn) / 2
		if t <= tau {
			capped = full
		}
		prev, ft = t, fn
		if t >= tau && t > float64(k)/float64(n) && fn*t < 1e-9*full {
			break
		}
	}
	p, _, _ := pi(tau)
	limited, _ := binomialBelow(n, p, k)
	return MergeScanned{IDs: capped, Limited: limited, Beyond: full - capped + limit*limited}
}

// binomialBelow is P(B < k) and P(B = k−1) for B binomial of n trials at
// p.
func binomialBelow(n int, p float64, k int) (below, last float64) {
	if n < 0 {
		return 0, 0
	}
	if p <= 0 {
		if k > 0 {
			below = 1
		}
		if k == 1 {
			last = 1
		}
		return below, last
	}
	if p >= 1 {
		if n < k {
			below = 1
		}
		if n == k-1 {
			last = 1
		}
		return below, last
	}
	// The terms by their ratio: pmf(j+1) = pmf(j)·(n−j)/(j+1)·p/(1−p),
	// from pmf(0) = (1−p)^n.
	pm, odds := math.Exp(float64(n)*math.Log1p(-p)), p/(1-p)
	for j := 0; j < k && j <= n; j++ {
		below += pm
		if j == k-1 {
			last = pm
		}
		pm *= float64(n-j) / float64(j+1) * odds
	}
	return math.Min(1, below), last
}
