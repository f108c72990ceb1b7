package plan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/registry"
)

// degreeBucket is a group of users of alike degree: n users of mean
// degree mean.
type degreeBucket struct{ n, mean float64 }

// powerLawBuckets are the users of a power-law graph by degree, as the
// generator shares out edges follows over popularity ranks (see package
// dataset's generatePowerLaw): rank k gets a share in proportion to
// k^-1/(exponent-1), at most n-1 (the ranks that would get more get n-1,
// and the rest is shared again). The shares are computed in floating
// point without being held: the top exactRanks ranks one by one, the rest
// as integrals of the weight, so that a plan for 10^8 users takes
// moments. The top ranks are buckets of their own, then the ranks go in
// geometric steps of ratio.
func powerLawBuckets(n int, edges, exponent float64, top int, ratio float64) []degreeBucket {
	a := 1 / (exponent - 1)
	w := func(k int) float64 { return math.Pow(float64(k), -a) }
	// sum is Σ w(k) for k in (from, to]: exact up to exactRanks, an
	// integral (midpoint rule over unit steps) beyond.
	const exactRanks = 100_000
	integral := func(x, y float64) float64 { // ∫ x^-a from x to y
		if math.Abs(a-1) < 1e-12 {
			return math.Log(y / x)
		}
		return (math.Pow(y, 1-a) - math.Pow(x, 1-a)) / (1 - a)
	}
	sum := func(from, to int) float64 {
		var s float64
		for k := from + 1; k <= min(to, exactRanks); k++ {
			s += w(k)
		}
		if to > exactRanks {
			s += integral(float64(max(from, exactRanks))+0.5, float64(to)+0.5)
		}
		return s
	}
	total := sum(0, n)
	limit := float64(n - 1)
	capped, rest, restWeight := 0, edges, total
	for capped < n && rest/restWeight*w(capped+1) > limit {
		rest -= limit
		restWeight -= w(capped + 1)
		capped++
	}
	scale := rest / restWeight
	var out []degreeBucket
	for i := 0; i < n; {
		end := i + 1
		if i >= top {
			end = max(end, int(math.Ceil(float64(i)*ratio)))
		}
		end = min(end, n)
		c := min(max(capped-i, 0), end-i) // ranks of the bucket at the limit
		s := float64(c)*limit + scale*sum(i+c, end)
		out = append(out, degreeBucket{float64(end - i), s / float64(end-i)})
		i = end
	}
	return out
}

// poissonBuckets are users of a G(n,m) graph by degree: the degree is
// about normal of mean and variance mean; parts equal shares of the users
// at its quantiles, and one more user at the expected largest degree.
func poissonBuckets(users, mean float64, parts int) []degreeBucket {
	out := []degreeBucket{{1, math.Min(users-1, mean+math.Sqrt(2*mean*math.Log(users)))}}
	rest := users - 1
	for i := range parts {
		q := (float64(i) + 0.5) / float64(parts)
		d := mean + math.Sqrt(mean)*math.Sqrt2*math.Erfinv(2*q-1)
		out = append(out, degreeBucket{rest / float64(parts), math.Max(0, d)})
	}
	return out
}

// demandClasses are the workload's users in classes, and for each class
// the follower bucket and the followee bucket it belongs to (to restrict a
// Demand to the posts of one follower bucket or the reads of one followee
// bucket).
type demandClasses struct {
	classes                []registry.UserClass
	followerOf, followeeOf []int
	followerBuckets        int
	followeeBuckets        int
}

// activityWeights sets c's rates from its follower count, as the dataset
// draws posts, reads and follows (dataset.Activity): uniform, or
// (1+followers) to the power of each exponent.
func activityWeights(c *registry.UserClass, a dataset.Activity) {
	c.Posts, c.Reads, c.Followed = 1, 1, 1
	if a.Mode == dataset.ActivitySkewed {
		c.Posts = math.Pow(1+c.Followers, a.PostExponent)
		c.Reads = math.Pow(1+c.Followers, a.ReadExponent)
		c.Followed = 1 + c.Followers
	}
}

// independentClasses crosses follower buckets with followee buckets: a
// user's follower and followee counts are independent (as in the
// power-law generator, whose two popularity tables have their own
// permutations, and in a G(n,m) graph).
func independentClasses(users float64, followers, followees []degreeBucket, a dataset.Activity) demandClasses {
	var dc demandClasses
	dc.followerBuckets, dc.followeeBuckets = len(followers), len(followees)
	for i, f := range followers {
		for j, g := range followees {
			c := registry.UserClass{Users: f.n * g.n / users, Followers: f.mean, Followees: g.mean}
			activityWeights(&c, a)
			dc.classes = append(dc.classes, c)
			dc.followerOf = append(dc.followerOf, i)
			dc.followeeOf = append(dc.followeeOf, j)
		}
	}
	return dc
}

// exactFollowers is the follower count below which a sample's users keep
// their exact count in its classes (sampleClasses): a threshold among the
// small counts, where geometric bins hold many counts each and a sample
// of hundreds of users piles many users on one count, then splits them
// where the designs do.
const exactFollowers = 64

// sampleClasses are the users of an edge list taken as a sample of a
// graph of users users: each user of the file stands for users/len of
// them, with the same follower and followee counts (a sample that keeps
// degrees). Users are binned jointly by the two counts, so that their
// correlation is kept: follower counts below exactFollowers each a bin of
// their own, larger ones and followee counts in geometric bins of ratio.
func sampleClasses(el *dataset.EdgeList, users float64, ratio float64, a dataset.Activity) demandClasses {
	n := el.Users
	followers := make([]int, n)
	for _, fs := range el.Followees {
		for _, f := range fs {
			followers[f-1]++
		}
	}
	bin := func(d int) int {
		if d <= 0 {
			return 0
		}
		return 1 + int(math.Floor(math.Log(float64(d))/math.Log(ratio)))
	}
	followerBin := func(d int) int {
		if d < exactFollowers {
			return d
		}
		return exactFollowers + bin(d)
	}
	type key struct{ f, g int }
	type acc struct{ n, f, g float64 }
	bins := map[key]*acc{}
	for u := range n {
		k := key{followerBin(followers[u]), bin(len(el.Followees[u]))}
		b := bins[k]
		if b == nil {
			b = &acc{}
			bins[k] = b
		}
		b.n++
		b.f += float64(followers[u])
		b.g += float64(len(el.Followees[u]))
	}
	keys := make([]key, 0, len(bins))
	for k := range bins {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y key) int { return cmp.Or(cmp.Compare(y.f, x.f), cmp.Compare(y.g, x.g)) })
	var dc demandClasses
	fIndex, gIndex := map[int]int{}, map[int]int{}
	for _, k := range keys {
		b := bins[k]
		c := registry.UserClass{Users: b.n * users / float64(n), Followers: b.f / b.n, Followees: b.g / b.n}
		activityWeights(&c, a)
		if _, ok := fIndex[k.f]; !ok {
			fIndex[k.f] = len(fIndex)
		}
		if _, ok := gIndex[k.g]; !ok {
			gIndex[k.g] = len(gIndex)
		}
		dc.classes = append(dc.classes, c)
		dc.followerOf = append(dc.followerOf, fIndex[k.f])
		dc.followeeOf = append(dc.followeeOf, gIndex[k.g])
	}
	dc.followerBuckets, dc.followeeBuckets = len(fIndex), len(gIndex)
	return dc
}

// postsOf is d's posts by the authors of follower bucket b; readsOf its
// reads by the readers of followee bucket b (registry.Demand.PostsOf,
// ReadsOf: the rates stay the whole workload's).
func (dc demandClasses) postsOf(d registry.Demand, b int) registry.Demand {
	return d.PostsOf(func(i int) bool { return dc.followerOf[i] == b })
}

func (dc demandClasses) readsOf(d registry.Demand, b int) registry.Demand {
	return d.ReadsOf(func(i int) bool { return dc.followeeOf[i] == b })
}

// drawnFolloweeBuckets are the users of a power-law graph by followee
// count, as the generator draws them (package dataset's
// generatePowerLaw): each author's followers are drawn without repeats
// from a Zipf law over followee ranks, rank k weighing k^-1/(exponent-1).
// A rank's followee count is then a sum over the authors of the chance
// that the author's draws took it, not the rank's share of the follows:
// an author of d followers takes each rank at most once, so the ranks at
// the top, which the draws would take again and again, fill (at most one
// follow from each author) and what they would have had goes to the
// ranks below. Poissonized, an author of d followers takes rank k with
// chance 1 − e^(−λ·p_k), λ such that these add up to d over the ranks;
// a rank's count is the sum of them over the authors (in its follower
// buckets, followers), and it varies from user to user as that sum of
// chances does (its variance Σ a(1−a)). The ranks are grouped as
// powerLawBuckets groups them (the top ones alone, then geometric steps
// of ratio), and each group that holds a tenth of the users or more (the
// lowest ranks, the most users) is parts classes of equal users at the
// quantiles of a normal law of the group's mean and variance (its ranks'
// spread and each rank's own): a page's work is not linear in the
// followees (a merge of fewer followees than a page has no floor), so the
// spread of the low counts matters, not their mean alone. The other
// groups are a class each, at their mean.
func drawnFolloweeBuckets(n int, authors []degreeBucket, exponent float64, top int, ratio float64, parts int) []degreeBucket {
	// A check builds the same run's classes at every phase and step:
	// keep the answers by the question.
	key := fmt.Sprint(n, authors, exponent, top, ratio, parts)
	drawnFollowees.Lock()
	kept, ok := drawnFollowees.m[key]
	drawnFollowees.Unlock()
	if ok {
		return slices.Clone(kept)
	}
	out := drawFolloweeBuckets(n, authors, exponent, top, ratio, parts)
	drawnFollowees.Lock()
	if drawnFollowees.m == nil || len(drawnFollowees.m) >= 64 {
		drawnFollowees.m = map[string][]degreeBucket{}
	}
	drawnFollowees.m[key] = slices.Clone(out)
	drawnFollowees.Unlock()
	return out
}

// drawnFollowees keeps drawnFolloweeBuckets' answers by their question.
var drawnFollowees struct {
	sync.Mutex
	m map[string][]degreeBucket
}

// drawFolloweeBuckets is drawnFolloweeBuckets without the keeping.
func drawFolloweeBuckets(n int, authors []degreeBucket, exponent float64, top int, ratio float64, parts int) []degreeBucket {
	a := 1 / (exponent - 1)
	// The ranks in steps: one by one up to exactRanks, then geometric
	// steps of 1.02 (p varies by under 2 % in one), each step inside one
	// group.
	type step struct{ count, p float64 }
	const exactRanks = 2000
	var groups [][]step
	for i := 0; i < n; {
		end := i + 1
		if i >= top {
			end = max(end, int(math.Ceil(float64(i)*ratio)))
		}
		end = min(end, n)
		var g []step
		for j := i; j < end; {
			e := j + 1
			if j >= exactRanks {
				e = max(e, int(math.Ceil(float64(j)*1.02)))
			}
			e = min(e, end)
			mid := math.Sqrt(float64(j+1) * float64(e)) // ranks j+1..e
			g = append(g, step{float64(e - j), math.Pow(mid, -a)})
			j = e
		}
		groups = append(groups, g)
		i = end
	}
	var total float64
	for _, g := range groups {
		for _, s := range g {
			total += s.count * s.p
		}
	}
	for _, g := range groups {
		for i := range g {
			g[i].p /= total
		}
	}
	// taken is Σ over the ranks of an author's chance to take each at
	// rate lambda.
	taken := func(lambda float64) float64 {
		var sum float64
		for _, g := range groups {
			for _, s := range g {
				sum += s.count * -math.Expm1(-lambda*s.p)
			}
		}
		return sum
	}
	lambdas := make([]float64, len(authors))
	for i, b := range authors {
		d := math.Min(b.mean, float64(n-1))
		lo, hi := d, d
		for taken(hi) < d && hi < 1e30 {
			hi *= 2
		}
		for range 60 {
			mid := (lo + hi) / 2
			if taken(mid) < d {
				lo = mid
			} else {
				hi = mid
			}
		}
		lambdas[i] = (lo + hi) / 2
	}
	var out []degreeBucket
	for _, g := range groups {
		var users, sum, sq float64
		for _, s := range g {
			var mean, variance float64
			for i, b := range authors {
				took := -math.Expm1(-lambdas[i] * s.p)
				mean += b.n * took
				variance += b.n * took * (1 - took)
			}
			users += s.count
			sum += s.count * mean
			sq += s.count * (mean*mean + variance)
		}
		mean := sum / users
		sd := math.Sqrt(math.Max(0, sq/users-mean*mean))
		k := parts
		if users < float64(n)/10 {
			k = 1 // few users: their spread weighs little, and classes cost
		}
		for i := range k {
			q := (float64(i) + 0.5) / float64(k)
			x := mean + sd*math.Sqrt2*math.Erfinv(2*q-1)
			out = append(out, degreeBucket{users / float64(k), math.Min(float64(n-1), math.Max(0, x))})
		}
	}
	return out
}
