package dataset

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"

	"github.com/pushpull/pushpull/timeline"
)

// Activity modes for Activity.Mode.
const (
	// ActivityUniform: every user posts and reads equally often, as in
	// the paper's benchmark.
	ActivityUniform = "uniform"
	// ActivitySkewed: a user posts and reads at rates that grow with
	// their follower count, as a power of it (Activity.PostExponent and
	// ReadExponent).
	ActivitySkewed = "skewed"
	// ActivityCelebrity: every post of the workload is by one author, the
	// celebrity (user 1 when Spec.Celebrity is set, else the most
	// followed user), and users read uniformly. The dataset's own
	// messages stay uniform. It isolates what one post costs as a
	// function of its author's followers.
	ActivityCelebrity = "celebrity"
)

// Defaults and limit of the Activity exponents.
const (
	DefaultPostExponent = 0.5
	DefaultReadExponent = 0.5
	MaxActivityExponent = 4
)

// Activity says how often each user posts and reads. Production feeds are
// not uniform: accounts with many followers post more, and are read by
// people who come back more often, while most accounts are quiet. Under
// ActivitySkewed user u posts at a rate proportional to
// (1+followers(u))^PostExponent and reads their home timeline at a rate
// proportional to (1+followers(u))^ReadExponent. Follower counts of a
// skewed graph (GraphPowerLaw, a real one) are heavy-tailed, and so then
// are both rates: a power law with exponent 1+(InExponent-1)/exponent,
// correlated with the follower count by construction. On a uniform graph
// follower counts hardly vary, and neither do the rates.
//
// The workload draws authors of its posts (Dataset.PickAuthor) and readers
// of its timelines (Dataset.PickReader) from these rates, and the dataset's
// messages get their authors the same way. The cost for push grows fast:
// every post by a user with f followers writes f mailbox rows, so the
// mailbox holds about Messages * E[f^(1+e)]/E[f^e] rows for PostExponent e,
// about 3.4 times the uniform 42.9 million on the paper's powerlaw graph at
// the default 0.5, and 19 times at 1.
//
// ActivityCelebrity is the third mode, for sweeps over one author's
// audience: every post is the celebrity's (see the constant).
//
// The zero Activity is the graph's default: skewed with the default
// exponents for GraphPowerLaw and GraphEdges, uniform for the others (the
// paper's table). Exponents of 0 mean the defaults.
type Activity struct {
	Mode                       string // ActivityUniform, ActivitySkewed or ActivityCelebrity; "" for the graph's default
	PostExponent, ReadExponent float64
}

func (a Activity) validate() error {
	switch a.Mode {
	case "", ActivityUniform, ActivitySkewed, ActivityCelebrity:
	default:
		return &SpecError{Field: "Activity.Mode", Value: strconv.Quote(a.Mode),
			Reason: fmt.Sprintf("want %q, %q or %q", ActivityUniform, ActivitySkewed, ActivityCelebrity)}
	}
	for _, e := range []struct {
		field string
		v     float64
	}{{"Activity.PostExponent", a.PostExponent}, {"Activity.ReadExponent", a.ReadExponent}} {
		if !(e.v >= 0 && e.v <= MaxActivityExponent) {
			return &SpecError{Field: e.field, Value: fmt.Sprint(e.v),
				Reason: fmt.Sprintf("must be in [0, %d]; 0 means the default", MaxActivityExponent)}
		}
	}
	return nil
}

// withDefaults resolves the graph's default mode and the default
// exponents; a uniform Activity keeps no exponents.
func (a Activity) withDefaults(graph string) Activity {
	if a.Mode == "" {
		a.Mode = ActivityUniform
		if graph == GraphPowerLaw || graph == GraphEdges {
			a.Mode = ActivitySkewed
		}
	}
	if a.Mode != ActivitySkewed {
		return Activity{Mode: a.Mode}
	}
	if a.PostExponent == 0 {
		a.PostExponent = DefaultPostExponent
	}
	if a.ReadExponent == 0 {
		a.ReadExponent = DefaultReadExponent
	}
	return a
}

// String is e.g. "uniform" or "skewed(post=0.5, read=0.5)".
func (a Activity) String() string {
	if a.Mode != ActivitySkewed {
		return a.Mode
	}
	return fmt.Sprintf("%s(post=%g, read=%g)", a.Mode, a.PostExponent, a.ReadExponent)
}

// activityTable draws users with weight (1+followers)^exponent, scaled so
// that the most followed user weighs 2^32, in fixed point as zipfWeight.
func (d *Dataset) activityTable(exponent float64) *aliasTable {
	n := d.Spec.Users
	most := 0
	for u := 1; u <= n; u++ {
		most = max(most, d.followers.count(u))
	}
	eFix := uint64(math.Round(exponent * (1 << 32)))
	top := log2Q32(uint64(most) + 1)
	weights := make([]uint64, n)
	users := make([]uint32, n)
	for i := range weights {
		users[i] = uint32(i + 1)
		hi, lo := bits.Mul64(eFix, top-log2Q32(uint64(d.followers.count(i+1))+1))
		weights[i] = pow2NegQ32(hi<<32 | lo>>32)
	}
	return newAliasTable(weights, users)
}

// ReadShare is user u's share of the workload's reads (PickReader),
// scaled so that the users' mean is 1: 1 for everyone unless activity is
// skewed, else in proportion to the weight PickReader draws u with, the
// fixed-point weights of its table, so the same on every machine. It is
// what a store that decides by read rates starts from when the dataset is
// loaded (package loadgen/load).
func (d *Dataset) ReadShare(u uint32) float64 {
	d.readSharesOnce.Do(func() {
		d.readShares = make([]float64, d.Spec.Users)
		if d.readers == nil {
			for i := range d.readShares {
				d.readShares[i] = 1
			}
			return
		}
		var sum float64
		for i, w := range d.readers.weight { // by user: the table's ranks are the ids
			d.readShares[i] = float64(w)
			sum += d.readShares[i]
		}
		mean := sum / float64(d.Spec.Users)
		for i := range d.readShares {
			d.readShares[i] /= mean
		}
	})
	return d.readShares[u-1]
}

// PickAuthor draws the author of a workload's post: uniformly, by post
// rate under ActivitySkewed, the celebrity under ActivityCelebrity.
func (d *Dataset) PickAuthor(r *rand.Rand) timeline.UserID {
	if d.celebrity != 0 {
		return timeline.UserID(d.celebrity)
	}
	return d.pick(d.posters, r)
}

// mostFollowed is ActivityCelebrity's author: user 1 when Spec.Celebrity
// is set, else the user with the most followers (the lowest id of ties).
func (d *Dataset) mostFollowed() uint32 {
	if d.Spec.Celebrity > 0 {
		return 1
	}
	top := 1
	for u := 2; u <= d.Spec.Users; u++ {
		if d.followers.count(u) > d.followers.count(top) {
			top = u
		}
	}
	return uint32(top)
}

// PickReader draws whose home timeline a workload reads next: uniformly,
// or by read rate under ActivitySkewed.
func (d *Dataset) PickReader(r *rand.Rand) timeline.UserID { return d.pick(d.readers, r) }

// PickFollowee draws the followee of a workload's follow: uniformly, or
// under ActivitySkewed in proportion to 1+followers, as people follow on
// a real service (preferential attachment). Its follower is drawn
// uniformly (Churn): the users who read most are the most followed, who
// need not be those who follow most.
func (d *Dataset) PickFollowee(r *rand.Rand) timeline.UserID { return d.pick(d.followed, r) }

func (d *Dataset) pick(t *aliasTable, r *rand.Rand) timeline.UserID {
	if t == nil {
		return timeline.UserID(1 + r.IntN(d.Spec.Users))
	}
	return timeline.UserID(t.draw(r))
}

// WorkloadMeans returns how many followers the author of a workload post
// has on average, and how many authors the reader of a workload page
// follows, under the dataset's activity (PickAuthor, PickReader): what a
// post fans out to and what a pull read merges. Both are the average
// followee count when users are drawn uniformly.
func (d *Dataset) WorkloadMeans() (postAudience, readFollowees float64) {
	n := d.Spec.Users
	uniform := float64(len(d.followers.ids)) / float64(n)
	postAudience, readFollowees = uniform, uniform
	switch {
	case d.celebrity != 0:
		postAudience = float64(d.followers.count(int(d.celebrity)))
	case d.Spec.Activity.Mode == ActivitySkewed:
		mean := func(exponent float64, of func(u int) int) float64 {
			var sum, weights float64
			for u := 1; u <= n; u++ {
				w := math.Pow(1+float64(d.followers.count(u)), exponent)
				sum += w * float64(of(u))
				weights += w
			}
			return sum / weights
		}
		postAudience = mean(d.Spec.Activity.PostExponent, d.followers.count)
		readFollowees = mean(d.Spec.Activity.ReadExponent, func(u int) int { return len(d.Followees[u-1]) })
	}
	return postAudience, readFollowees
}
