package registry

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMergeScanAgainstDraws draws readers of a skewed workload as
// MergeScan takes them (a reader of class c by Reads, each followee by
// Users·Followers, its ids by Posts) and replays a merge's range scan on
// each: the ids, newest first, until fetch distinct followees have shown
// one, the scan stopping at its limit. The mean ids read, the share of
// scans that reach the limit, of readers with fewer than fetch followees
// must be MergeScan's within 4 % (3 points for the shares); the ids the
// limited scans read, which MergeScan reaches by taking the limit at the
// time the followees' mean rate takes to read it (their rates drawn, the
// sum varies from reader to reader), within 30 % (drawn 8.3, MergeScan
// 10.3, on this workload of one author class posting 30 times as often as
// the quietest). A uniform workload's
// scan is the coupon collector's g·(H(g) − H(g−fetch)).
func TestMergeScanAgainstDraws(t *testing.T) {
	skewed := Demand{Users: 1000, Messages: 100_000, Page: 20, ActiveShare: 1, Classes: []UserClass{
		{Users: 500, Followers: 10, Followees: 18, Posts: 1, Reads: 1},
		{Users: 300, Followers: 40, Followees: 30, Posts: 3, Reads: 2},
		{Users: 150, Followers: 100, Followees: 60, Posts: 8, Reads: 3},
		{Users: 50, Followers: 400, Followees: 150, Posts: 30, Reads: 5},
	}}
	const fetch, limit = 21, 84
	rng := rand.New(rand.NewPCG(5, 6))
	pick := func(weight func(UserClass) float64) int {
		var total float64
		for _, c := range skewed.Classes {
			total += c.Users * weight(c)
		}
		x := rng.Float64() * total
		for i, c := range skewed.Classes {
			x -= c.Users * weight(c)
			if x < 0 {
				return i
			}
		}
		return len(skewed.Classes) - 1
	}
	const readers = 20_000
	var ids, limited, few, beyond float64
	for range readers {
		g := int(skewed.Classes[pick(func(c UserClass) float64 { return c.Reads })].Followees)
		if g < fetch {
			few++
			continue
		}
		rates := make([]float64, g)
		var total float64
		for i := range rates {
			rates[i] = skewed.Classes[pick(func(c UserClass) float64 { return c.Followers })].Posts
			total += rates[i]
		}
		seen := make([]bool, g)
		distinct, n := 0, 0
		for distinct < fetch {
			x := rng.Float64() * total
			a := 0
			for a < g-1 && x >= rates[a] {
				x -= rates[a]
				a++
			}
			n++
			if !seen[a] {
				seen[a] = true
				distinct++
			}
		}
		ids += math.Min(float64(n), limit)
		if n >= limit {
			limited++
			beyond += float64(n)
		}
	}
	got := skewed.MergeScan(fetch, limit)
	want := MergeScanned{IDs: ids / readers, Limited: limited / readers, Few: few / readers, Beyond: beyond / readers}
	t.Logf("MergeScan %+v, drawn %+v", got, want)
	if math.Abs(got.IDs-want.IDs) > 0.04*want.IDs || math.Abs(got.Beyond-want.Beyond) > 0.3*want.Beyond ||
		math.Abs(got.Limited-want.Limited) > 0.03 || math.Abs(got.Few-want.Few) > 0.03 {
		t.Errorf("MergeScan %+v, the drawn scans %+v", got, want)
	}

	uniform := Demand{Users: 1000, Messages: 100_000, Page: 20, ActiveShare: 1,
		Classes: []UserClass{{Users: 1000, Followers: 40, Followees: 40, Posts: 1, Reads: 1}}}
	var coupons float64
	for i := 40 - fetch + 1; i <= 40; i++ {
		coupons += 40 / float64(i)
	}
	if got := uniform.MergeScan(fetch, limit); math.Abs(got.IDs-coupons) > 0.01*coupons || got.Limited > 1e-3 {
		t.Errorf("uniform: MergeScan %+v, want %.2f ids and none limited", got, coupons)
	}
}
