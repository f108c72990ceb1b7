package dataset

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/timeline"
)

// powerLawExponent is the maximum-likelihood estimate of a discrete power
// law's exponent over the degrees at least dmin (Clauset, Shalizi and
// Newman 2009, eq. 3.7), and how many degrees it used.
func powerLawExponent(degrees []int, dmin int) (float64, int) {
	n, sum := 0, 0.0
	for _, d := range degrees {
		if d >= dmin {
			n++
			sum += math.Log(float64(d) / (float64(dmin) - 0.5))
		}
	}
	return 1 + float64(n)/sum, n
}

// percentile is the p-th percentile of counts by nearest rank (the
// smallest count that at least p% of them do not exceed), as the results
// report a degree distribution's.
func percentile(counts []int, p int) int {
	sorted := slices.Sorted(slices.Values(counts))
	return sorted[(p*len(sorted)+99)/100-1]
}

func degreesOf(d *Dataset) (in, out []int) {
	in, out = make([]int, d.Spec.Users), make([]int, d.Spec.Users)
	for i := range in {
		in[i] = len(d.Followers(uint32(i + 1)))
		out[i] = len(d.Followees[i])
	}
	return in, out
}

// TestPowerLawPaperScale checks the powerlaw graph at the paper's size
// against its parameters: the follower counts' fitted exponent, the exact
// mean followee count, celebrities with thousands of followers, a heavy
// followee tail, and the graph's invariants (no self-follows, no duplicate
// follows).
func TestPowerLawPaperScale(t *testing.T) {
	s := PaperSpec()
	s.Graph = GraphPowerLaw
	s.Messages = 1000
	d := mustGenerate(t, s)
	checkGraph(t, d)
	checkMessages(t, d)
	if d.Spec.InExponent != DefaultInExponent || d.Spec.OutExponent != DefaultOutExponent {
		t.Errorf("exponents %v, %v: defaults not filled in", d.Spec.InExponent, d.Spec.OutExponent)
	}
	st := d.Stats()
	t.Logf("%s; followers p99 %d, p50 %d; followees p99 %d, p50 %d", st,
		percentile(st.Followers, 99), percentile(st.Followers, 50), percentile(st.Followees, 99), percentile(st.Followees, 50))
	if st.Edges != 429_000 || math.Abs(st.AvgFollowees-42.9) > 1e-9 {
		t.Errorf("%d follows, %v followees per user: want 429,000 and 42.9", st.Edges, st.AvgFollowees)
	}
	in, out := degreesOf(d)
	// The tail above 50 followers holds about 1,400 users: the estimate's
	// standard error is (a-1)/sqrt(n), about 0.035.
	for _, dmin := range []int{30, 50, 100} {
		a, n := powerLawExponent(in, dmin)
		t.Logf("followers >= %d: %d users, fitted exponent %.3f", dmin, n, a)
		if math.Abs(a-DefaultInExponent) > 0.12 || n < 400 {
			t.Errorf("followers >= %d: fitted exponent %.3f over %d users, want %v within 0.12", dmin, a, n, DefaultInExponent)
		}
	}
	if st.MaxFollowers < 2000 || percentile(st.Followers, 99) < 200 || percentile(st.Followers, 50) > 40 {
		t.Errorf("followers max %d, p99 %d, p50 %d: want thousands at the top, most users far below the mean",
			st.MaxFollowers, percentile(st.Followers, 99), percentile(st.Followers, 50))
	}
	var thousands int
	for _, n := range in {
		if n >= 1000 {
			thousands++
		}
	}
	if thousands < 5 {
		t.Errorf("%d users with 1,000 followers or more, want several", thousands)
	}
	// Followee counts: heavy-tailed too, below a power law's exponent
	// where the heaviest users saturate.
	a, n := powerLawExponent(out, 50)
	t.Logf("followees >= 50: %d users, fitted exponent %.3f", n, a)
	if a < 2.2 || a > 3.0 || st.MaxFollowees < 1000 || st.MaxFollowees < 50*percentile(st.Followees, 50) {
		t.Errorf("followees: fitted exponent %.3f, max %d, p50 %d: not heavy-tailed", a, st.MaxFollowees, percentile(st.Followees, 50))
	}
}

// TestPowerLawParameters: a steeper exponent gives a lighter tail, and the
// graph stays valid at small and dense sizes, where the largest follower
// counts are capped at everyone else.
func TestPowerLawParameters(t *testing.T) {
	base := Spec{Users: 5000, Messages: 100, AvgFollowees: 20, Graph: GraphPowerLaw, Seed: 4}
	var prevMax int
	for _, e := range []float64{2.1, 2.5, 3.5} {
		s := base
		s.InExponent, s.OutExponent = e, e
		d := mustGenerate(t, s)
		checkGraph(t, d)
		in, _ := degreesOf(d)
		a, _ := powerLawExponent(in, 40)
		st := d.Stats()
		if math.Abs(a-e) > 0.15*e {
			t.Errorf("in-exponent %v: fitted %.3f", e, a)
		}
		if prevMax != 0 && st.MaxFollowers >= prevMax {
			t.Errorf("in-exponent %v: max followers %d, not below the flatter graph's %d", e, st.MaxFollowers, prevMax)
		}
		prevMax = st.MaxFollowers
	}
	for _, s := range []Spec{
		{Users: 2, Messages: 10, AvgFollowees: 1, Graph: GraphPowerLaw, Seed: 1},   // complete
		{Users: 50, Messages: 10, AvgFollowees: 49, Graph: GraphPowerLaw, Seed: 1}, // complete
		{Users: 50, Messages: 10, AvgFollowees: 40, Graph: GraphPowerLaw, Seed: 1},
		{Users: 300, Messages: 10, AvgFollowees: 42.9, Graph: GraphPowerLaw, InExponent: 1.5, OutExponent: 1.5, Seed: 1},
		{Users: 300, Messages: 10, AvgFollowees: 0, Graph: GraphPowerLaw, Seed: 1},
	} {
		d := mustGenerate(t, s)
		checkGraph(t, d)
		if st := d.Stats(); st.MaxFollowers > s.Users-1 || st.MaxFollowees > s.Users-1 {
			t.Errorf("%+v: degrees beyond Users-1: %s", s, st)
		}
	}
}

// TestPowerLawDeterminism: the same seed gives the same graph, whatever the
// parallelism; another seed another graph. (goldenSpecs pins it across
// machines.)
func TestPowerLawDeterminism(t *testing.T) {
	s := Spec{Users: 3000, Messages: 20_000, AvgFollowees: 30, Graph: GraphPowerLaw, Seed: 11}
	h1 := datasetHash(t, mustGenerate(t, s))
	prev := runtime.GOMAXPROCS(1)
	h2 := datasetHash(t, mustGenerate(t, s))
	runtime.GOMAXPROCS(prev)
	if h1 != h2 {
		t.Errorf("one worker gives %#x, several %#x", h2, h1)
	}
	s.Seed++
	if datasetHash(t, mustGenerate(t, s)) == h1 {
		t.Error("another seed gives the same dataset")
	}
}

func TestApportion(t *testing.T) {
	for _, c := range []struct {
		total   uint64
		weights []uint64
		limit   uint64
		want    []uint64
	}{
		{10, []uint64{1, 1}, 9, []uint64{5, 5}},
		{10, []uint64{3, 1}, 9, []uint64{8, 2}}, // 7.5 and 2.5: the tie goes to the heavier
		{7, []uint64{1, 1, 1}, 5, []uint64{3, 2, 2}},
		{10, []uint64{100, 1, 1}, 4, []uint64{4, 3, 3}},    // capped, the rest shared again
		{12, []uint64{100, 90, 1}, 4, []uint64{4, 4, 4}},   // everything capped
		{9, []uint64{100, 100, 1}, 4, []uint64{4, 4, 1}},   // the two capped, in one round or two
		{0, []uint64{5, 4, 3}, 2, []uint64{0, 0, 0}},       // nothing to share
		{3, []uint64{1 << 32, 1, 1}, 1, []uint64{1, 1, 1}}, // large weights
	} {
		got := apportion(c.total, c.weights, c.limit)
		if !slices.Equal(got, c.want) {
			t.Errorf("apportion(%d, %v, %d) = %v, want %v", c.total, c.weights, c.limit, got, c.want)
		}
	}
	// Large: the sum is exact, no share is above the limit, and shares
	// follow the weights.
	w := rankWeights(10_000, 1/1.3)
	got := apportion(429_000, w, 9_999)
	var sum uint64
	for i, g := range got {
		sum += g
		if g > 9_999 || i > 0 && g > got[i-1] {
			t.Fatalf("share %d = %d after %d: above the limit or rising", i, g, got[i-1])
		}
	}
	if sum != 429_000 {
		t.Fatalf("shares add up to %d, want 429,000", sum)
	}
}

// spearman is the rank correlation of x and y (ties get their mean rank).
func spearman(x, y []float64) float64 {
	rank := func(v []float64) []float64 {
		idx := make([]int, len(v))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int {
			switch {
			case v[a] < v[b]:
				return -1
			case v[a] > v[b]:
				return 1
			}
			return 0
		})
		r := make([]float64, len(v))
		for i := 0; i < len(idx); {
			j := i
			for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
				j++
			}
			for k := i; k <= j; k++ {
				r[idx[k]] = float64(i+j) / 2
			}
			i = j + 1
		}
		return r
	}
	rx, ry := rank(x), rank(y)
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx /= float64(len(rx))
	my /= float64(len(ry))
	var sxy, sxx, syy float64
	for i := range rx {
		sxy += (rx[i] - mx) * (ry[i] - my)
		sxx += (rx[i] - mx) * (rx[i] - mx)
		syy += (ry[i] - my) * (ry[i] - my)
	}
	return sxy / math.Sqrt(sxx*syy)
}

// TestActivity checks skewed activity against its parameters: the
// dataset's message authors and the workload's authors and readers are
// drawn in proportion to (1+followers)^exponent, so their frequencies
// correlate with follower counts; a larger exponent skews more; uniform
// activity does not skew at all.
func TestActivity(t *testing.T) {
	base := Spec{Users: 2000, Messages: 400_000, AvgFollowees: 20, Graph: GraphPowerLaw, Seed: 6}
	skewOf := func(s Spec) (corr, topShare float64, d *Dataset) {
		d = mustGenerate(t, s)
		in, _ := degreesOf(d)
		posts := make([]float64, s.Users)
		followers := make([]float64, s.Users)
		for i := range posts {
			posts[i] = float64(len(d.ByAuthor(uint32(i + 1))))
			followers[i] = float64(in[i])
		}
		// The share of messages by the most followed 1% of users.
		idx := make([]int, s.Users)
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return in[b] - in[a] })
		var top float64
		for _, i := range idx[:s.Users/100] {
			top += posts[i]
		}
		return spearman(followers, posts), top / float64(s.Messages), d
	}

	uni := base
	uni.Activity.Mode = ActivityUniform
	corr, top, d := skewOf(uni)
	t.Logf("uniform: correlation %.3f, top 1%% post %.1f%%", corr, 100*top)
	if math.Abs(corr) > 0.1 || top > 0.02 {
		t.Errorf("uniform activity: correlation %.3f, top 1%% of users post %.1f%%", corr, 100*top)
	}
	if d.posters != nil || d.readers != nil {
		t.Error("uniform activity built rate tables")
	}

	var prevTop float64
	for _, e := range []float64{0.5, 1} {
		s := base // skewed by default on a powerlaw graph
		s.Activity.PostExponent, s.Activity.ReadExponent = e, e
		corr, top, d := skewOf(s)
		t.Logf("exponent %v: correlation %.3f, top 1%% post %.1f%%", e, corr, 100*top)
		if d.Spec.Activity.Mode != ActivitySkewed {
			t.Fatalf("activity %+v, want skewed by default on %s", d.Spec.Activity, GraphPowerLaw)
		}
		if corr < 0.7 {
			t.Errorf("exponent %v: authors' message counts correlate %.3f with follower counts", e, corr)
		}
		if top <= prevTop || top < 0.03 {
			t.Errorf("exponent %v: the top 1%% post %.1f%%, not more than %.1f%% at a smaller exponent", e, 100*top, 100*prevTop)
		}
		prevTop = top

		// The expected share of the most followed user, against what
		// the workload's pickers draw.
		in, _ := degreesOf(d)
		var total float64
		star, most := 0, -1
		for i, f := range in {
			total += math.Pow(1+float64(f), e)
			if f > most {
				star, most = i+1, f
			}
		}
		want := math.Pow(1+float64(most), e) / total
		r := rand.New(rand.NewPCG(1, 2))
		const draws = 200_000
		var authors, readers int
		for range draws {
			if d.PickAuthor(r) == timeline.UserID(star) {
				authors++
			}
			if d.PickReader(r) == timeline.UserID(star) {
				readers++
			}
		}
		for name, n := range map[string]int{"PickAuthor": authors, "PickReader": readers} {
			got := float64(n) / draws
			if math.Abs(got-want) > 0.1*want+0.001 {
				t.Errorf("exponent %v: %s drew the most followed user %.4f of the time, want %.4f", e, name, got, want)
			}
		}
	}

	// The two rates are set apart.
	s := base
	s.Activity = Activity{Mode: ActivitySkewed, PostExponent: 2, ReadExponent: 0.1}
	_, _, d = skewOf(s)
	r := rand.New(rand.NewPCG(3, 4))
	in, _ := degreesOf(d)
	var postFollowers, readFollowers float64
	for range 20_000 {
		postFollowers += float64(in[d.PickAuthor(r)-1])
		readFollowers += float64(in[d.PickReader(r)-1])
	}
	if postFollowers < 5*readFollowers {
		t.Errorf("posters average %.0f followers, readers %.0f: the post exponent 2 should skew far more than 0.1",
			postFollowers/20_000, readFollowers/20_000)
	}
}

// TestUniformPicksUnchanged: uniform activity draws the users the workload
// drew before activity existed, so the paper's benchmark is unchanged.
func TestUniformPicksUnchanged(t *testing.T) {
	d := mustGenerate(t, Spec{Users: 500, Messages: 10, AvgFollowees: 5, Seed: 1})
	a, b := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		if got, want := d.PickReader(a), timeline.UserID(1+b.IntN(500)); got != want {
			t.Fatalf("PickReader %d, the uniform draw %d", got, want)
		}
		if got, want := d.PickAuthor(a), timeline.UserID(1+b.IntN(500)); got != want {
			t.Fatalf("PickAuthor %d, the uniform draw %d", got, want)
		}
	}
}
