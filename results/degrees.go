package results

import (
	"math/bits"
	"slices"
)

// DegreeBin counts the users whose degree (followers or followees) lies in
// [Min, Max].
type DegreeBin struct {
	Min   int `json:"min"`
	Max   int `json:"max"`
	Users int `json:"users"`
}

// Degrees summarises one degree distribution.
type Degrees struct {
	Max, P99, P50 int
	Bins          []DegreeBin // non-empty bins, ascending
}

// DegreesOf summarises counts, one degree per user: the maximum, the 99th
// and 50th percentiles by nearest rank (the smallest degree that at least
// that share of users do not exceed), and the users per bin. Bins are
// single degrees up to 3, then two per power of two, [2^k, 1.5*2^k) and
// [1.5*2^k, 2^(k+1)): about 40 bins for a million users, fine enough for a
// log-log plot and exact at every bin's lower edge.
func DegreesOf(counts []int) Degrees {
	if len(counts) == 0 {
		return Degrees{}
	}
	sorted := slices.Clone(counts)
	slices.Sort(sorted)
	rank := func(p int) int { return sorted[(p*len(sorted)+99)/100-1] }
	d := Degrees{Max: sorted[len(sorted)-1], P99: rank(99), P50: rank(50)}
	for _, c := range sorted {
		lo, hi := degreeBin(c)
		if n := len(d.Bins); n > 0 && d.Bins[n-1].Min == lo {
			d.Bins[n-1].Users++
			continue
		}
		d.Bins = append(d.Bins, DegreeBin{Min: lo, Max: hi, Users: 1})
	}
	return d
}

// degreeBin is the bin of degree c.
func degreeBin(c int) (lo, hi int) {
	if c < 4 {
		return c, c
	}
	k := bits.Len(uint(c)) - 1
	lo, half := 1<<k, 1<<(k-1)
	if c < lo+half {
		return lo, lo + half - 1
	}
	return lo + half, 2*lo - 1
}
