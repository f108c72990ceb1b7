package registry

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// twoClasses is a small workload: 90 users with 10 followers who post
// once and read once, and 10 with 1,000 followers who post 4 times as
// often and read twice as often; everyone follows 20.
func twoClasses() Demand {
	return Demand{
		Users: 100, Messages: 1000, Page: 20, OlderDepth: 3.5, PostsPerSec: 13, ReadsPerSec: 110, ActiveShare: 1,
		Classes: []UserClass{
			{Users: 90, Followers: 10, Followees: 20, Posts: 1, Reads: 1, Followed: 1},
			{Users: 10, Followers: 1000, Followees: 20, Posts: 4, Reads: 2, Followed: 1},
		},
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestDemandMeans: the workload's means weigh users by the rate that
// draws them, and a prepared Demand answers as an unprepared one.
func TestDemandMeans(t *testing.T) {
	for _, d := range []Demand{twoClasses(), twoClasses().Prepared()} {
		// Posts: 90×1 by users of 10 followers, 10×4 by users of 1,000.
		near(t, "post audience", d.PostAudience(), (90*10+40*1000)/130.0)
		near(t, "read followees", d.ReadFollowees(), 20)
		near(t, "messages of a celebrity", d.MessagesOf(d.Classes[1]), 1000*4/130.0)
		near(t, "post rate of a celebrity", d.PostRate(d.Classes[1]), 13*4/130.0)
		near(t, "read rate of a celebrity", d.ReadRate(d.Classes[1]), 110*2/110.0)
		s := d.SplitAt(500)
		near(t, "posts above", s.PostShare, 40/130.0)
		near(t, "audience below", s.AudienceBelow, 900/130.0)
		near(t, "edges above", s.EdgeShareAbove, 10*1000/(90*10+10*1000.0))
		near(t, "most followers", d.MostFollowers(), 1000)
		// The posts of the first class alone: its audience, the rates
		// still the whole workload's.
		only := d.PostsOf(func(i int) bool { return i == 0 })
		near(t, "audience of the first class's posts", only.PostAudience(), 10)
		near(t, "its post rate", only.PostRate(only.Classes[1]), 13*4/130.0)
		// A run's phase that counted its posts' followers: all its
		// posts reach that many; one class's posts still their own.
		d.Run = &RunHistory{Audience: 500}
		near(t, "counted audience", d.PostAudience(), 500)
		near(t, "audience of the first class's posts in the run", d.PostsOf(func(i int) bool { return i == 0 }).PostAudience(), 10)
		d.Run.Audience = 0
		near(t, "audience of a run that did not count", d.PostAudience(), (90*10+40*1000)/130.0)
		// One that counted its follows' and unfollows' followees'
		// messages: every follow's backfill is that many.
		d.Run = nil
		expected := d.FollowedMessages()
		d.Run = &RunHistory{FolloweeMessages: 3 * expected}
		near(t, "counted followee messages", d.FollowedMessages(), 3*expected)
		d.Run.FolloweeMessages = 0
		near(t, "followee messages of a run that did not count", d.FollowedMessages(), expected)
	}
}

// TestDemandWindows: a user reading at rate r is active within a window
// W with chance 1-exp(-rW), and a read comes back after W with chance
// exp(-rW); no window means whoever reads.
func TestDemandWindows(t *testing.T) {
	d := twoClasses()
	d.ActiveShare = 0.5
	// Rates among the half who read: 2 and 4 per second.
	w := 0.25
	a0, a1 := 0.5*(1-math.Exp(-2*w)), 0.5*(1-math.Exp(-4*w))
	near(t, "active users", d.ActiveUsers(w), (90*a0+10*a1)/100)
	near(t, "active followers", d.ActiveFollowers(w), (90*20*a0+10*20*a1)/(100*20))
	near(t, "returning reads", d.ReturningReads(w), (90*math.Exp(-2*w)+20*math.Exp(-4*w))/110)
	near(t, "no window", d.ActiveFollowers(0), 0.5)
	near(t, "no return without a window", d.ReturningReads(0), 0)
	near(t, "a cache of half", Miss(50, 100), 0.5)
	near(t, "a cache of all", Miss(200, 100), 0)
}

// TestColdReads: in the steady state the cold reads are the returning
// ones; in a run they are the first reads of the users the load left
// inactive, as drawn here: each user active by the load's coin, then
// reads before the phase and in it drawn by the classes' rates.
func TestColdReads(t *testing.T) {
	d := twoClasses()
	near(t, "steady state", d.ColdReads(0.25, 1), d.ReturningReads(0.25))
	const before, reads, trials = 50, 200, 4000
	d.Run = &RunHistory{ReadsBefore: before, Reads: reads}
	// Users 0..89 read once as often as users 90..99.
	weight := func(u int) float64 { return 1 + float64(u/90) }
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func() int {
		x := rng.Float64() * 110
		if x < 90 {
			return int(x)
		}
		return 90 + int((x-90)/2)
	}
	var cold int
	for range trials {
		inactive := make([]bool, 100)
		for u := range inactive {
			inactive[u] = rng.Float64() >= 1-math.Exp(-1*100*weight(u)/110)
		}
		for range before {
			inactive[draw()] = false
		}
		for range reads {
			u := draw()
			if inactive[u] {
				cold++
				inactive[u] = false
			}
		}
	}
	got, want := d.ColdReads(0, 1), float64(cold)/(trials*reads)
	t.Logf("cold reads: %.4f, drawn %.4f", got, want)
	if math.Abs(got-want) > 0.02*want {
		t.Errorf("cold reads %.4f, drawn %.4f", got, want)
	}
	d.Run = &RunHistory{ReadsBefore: 1e6}
	near(t, "after a million reads", d.ColdReads(0, 1), 0)
	d.Run = &RunHistory{AllRead: true, Reads: reads}
	near(t, "after every user read", d.ColdReads(0, 1), 0)
	near(t, "audience after every user read", d.ActiveAudience(0, 1), 1)
	// The audience: followers weighed by the 20 they follow, each left
	// inactive by the load and unread since, 50 reads before and half of
	// the phase's 200.
	d.Run = &RunHistory{ReadsBefore: before, Reads: reads}
	left := func(p float64) float64 { return math.Exp(-100*p - (before+reads/2)*p) }
	near(t, "audience in a run", d.ActiveAudience(0, 1), 1-(90*left(1/110.0)+10*left(2/110.0))/100)
	d.Run = nil
	near(t, "audience in the steady state", d.ActiveAudience(0.25, 1), d.ActiveFollowers(0.25))
}

// TestWorkFor: a model's cost model gets its options parsed, a bad value
// is an *OptionError, and a base+variant model combines both models.
func TestWorkFor(t *testing.T) {
	base := Model{Name: "worktest", Family: FamilyReference, Options: []Option{Int("n", 2, 1, 10, "")},
		Work: func(d Demand, cfg Config) (OpWork, Footprint) {
			return OpWork{Newest: Work{RowsRead: float64(cfg.Int("n"))}}, Footprint{}
		}}
	d := twoClasses()
	w, _, ok, err := base.WorkFor(d, nil)
	if !ok || err != nil || w.Newest.RowsRead != 2 {
		t.Fatalf("default: %v %v %+v", ok, err, w)
	}
	if w, _, _, _ := base.WorkFor(d, map[string]string{"n": "7", "other": "x"}); w.Newest.RowsRead != 7 {
		t.Errorf("n=7: %+v", w)
	}
	if _, _, _, err := base.WorkFor(d, map[string]string{"n": "70"}); !errors.Is(err, ErrBadOption) {
		t.Errorf("n=70: %v", err)
	}
	if _, _, ok, _ := (Model{Name: "none"}).WorkFor(d, nil); ok {
		t.Error("a model without a cost model reported one")
	}
	if got := (Work{RowsRead: 1, RowsWritten: 2, MCKeys: 3, RedisCommands: 4, Statements: 5}).Scale(2).Items(); got != 20 {
		t.Errorf("items of twice the work: %v", got)
	}
}

// TestNewestMissAgainstIDs sets NewestMiss against ids drawn as posts
// are: every message goes to one of the authors at random and takes the
// next id; each reader follows g of them, and a newest page shows the
// Fetch newest of their messages. A cache of the newest slots ids misses
// the entries of a page that are older, which the test counts over every
// reader, for caches that hold all, some and few of the pages' entries.
func TestNewestMissAgainstIDs(t *testing.T) {
	const users, messages, g = 2000, 200_000, 40
	rng := rand.New(rand.NewPCG(3, 4))
	byAuthor := make([][]int, users) // each author's ids, ascending
	for id := range messages {
		a := rng.IntN(users)
		byAuthor[a] = append(byAuthor[a], id)
	}
	d := Demand{Users: users, Messages: messages, Page: 20, OlderDepth: 3.5, PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1,
		Classes: []UserClass{{Users: users, Followers: g, Followees: g, Posts: 1, Reads: 1, Followed: 1}}}
	fetch := int(d.Fetch())
	for _, slots := range []float64{messages, 20_000, 1_000, 500, 250} {
		var missed, shown int
		for range 300 {
			// The newest fetch ids among g authors: merge their tails.
			var ids []int
			for _, a := range rng.Perm(users)[:g] {
				own := byAuthor[a]
				ids = append(ids, own[max(0, len(own)-fetch):]...)
			}
			slices.Sort(ids)
			for _, id := range ids[max(0, len(ids)-fetch):] {
				shown++
				if float64(id) < messages-slots {
					missed++
				}
			}
		}
		got, want := d.NewestMiss(slots), float64(missed)/float64(shown)
		t.Logf("cache of %.0f of %d ids: the model misses %.3f of a page's entries, the ids %.3f", slots, messages, got, want)
		if math.Abs(got-want) > 0.03 {
			t.Errorf("cache of %.0f: NewestMiss %.3f, the drawn ids miss %.3f", slots, got, want)
		}
	}
}

// TestFirstReadsAgainstDraws draws the newest-page reads of a stretch
// that began with an empty cache, as the benchmark's traffic draws them
// (each read's reader picked by the classes' read weights, at the rate of
// the newest pages only), and counts the reads of the measured span that
// were their reader's first: FirstReads must say as much, for a cache
// that had a short, a long and no warm-up.
func TestFirstReadsAgainstDraws(t *testing.T) {
	classes := []UserClass{
		{Users: 600, Followers: 10, Followees: 10, Posts: 1, Reads: 1, Followed: 1},
		{Users: 400, Followers: 10, Followees: 10, Posts: 1, Reads: 4, Followed: 1},
	}
	const readsPerSec, olderPerSec, span = 3000.0, 600.0, 2.0
	d := Demand{Users: 1000, Messages: 1e5, Page: 20, OlderDepth: 3.5, PostsPerSec: 10,
		ReadsPerSec: readsPerSec, OlderPerSec: olderPerSec, ActiveShare: 1, Classes: classes}
	rng := rand.New(rand.NewPCG(5, 6))
	newest := readsPerSec - olderPerSec
	pick := func() int { // a reader, by read weight: 600 of weight 1, 400 of 4
		if rng.Float64() < 600.0/(600+1600) {
			return rng.IntN(600)
		}
		return 600 + rng.IntN(400)
	}
	for _, warmup := range []float64{0, 0.1, 0.5} {
		d.Cold = ColdStart{Warmup: warmup, Span: span}
		var got, want float64
		for range 20 {
			seen := make([]bool, 1000)
			for range int(newest * warmup) {
				seen[pick()] = true
			}
			first, reads := 0, int(newest*span)
			for range reads {
				if u := pick(); !seen[u] {
					seen[u] = true
					first++
				}
			}
			want += float64(first) / float64(reads) / 20
		}
		got = d.FirstReads()
		t.Logf("warm-up %.1fs: FirstReads %.4f, the draws %.4f", warmup, got, want)
		if math.Abs(got-want) > 0.01 {
			t.Errorf("warm-up %.1fs: FirstReads %.4f, the draws %.4f", warmup, got, want)
		}
	}
	if d.Cold = (ColdStart{}); d.FirstReads() != 0 {
		t.Errorf("the steady state has first reads: %v", d.FirstReads())
	}
}

// TestUnfollowedAudience: an author is unfollowed by its share of the
// followees unfollows draw (Followed), within the tombstones' life at
// the planned rate; the share is the audience's, posts weighed by their
// followers, and no unfollows none. In a run, the unfollows that left a
// tombstone before the phase count, and half those of the phase itself,
// made half-way through it on average: the same 300 from 300 before, or
// from 200 before and 200 during; and its planned rate does not count.
func TestUnfollowedAudience(t *testing.T) {
	d := twoClasses()
	d.Classes[1].Followed = 9 // the 10 celebrities draw half the unfollows
	near(t, "no unfollows", d.UnfollowedAudience(600), 0)
	d.UnfollowsPerSec = 0.5
	// 300 unfollows in 600 s: 150 over 90 users and 150 over 10.
	low, high := -math.Expm1(-150.0/90), -math.Expm1(-150.0/10)
	want := (90*10*low + 40*1000*high) / (90*10 + 40*1000)
	near(t, "unfollowed audience", d.UnfollowedAudience(600), want)
	d.Run = &RunHistory{PostsBefore: 100}
	near(t, "in a run without unfollows", d.UnfollowedAudience(600), 0)
	d.Run = &RunHistory{PostsBefore: 100, UnfollowedBefore: 300}
	near(t, "in a run, after 300 tombstones", d.UnfollowedAudience(600), want)
	d.Run = &RunHistory{UnfollowedBefore: 200, Unfollowed: 200}
	near(t, "in a run, 200 tombstones before and 200 during", d.UnfollowedAudience(600), want)
}

// TestHeavyFollowersOfPostSaturates sets HeavyFollowersOfPost against the
// draws it stands for: a heavy user's chances over all authors add up to
// the authors they follow; on a sparse graph it is PostAudience times
// FollowerShareOver; and an author followed by everyone has every heavy
// user among its followers, not more.
func TestHeavyFollowersOfPostSaturates(t *testing.T) {
	sparse := Demand{Users: 10000, Classes: []UserClass{
		{Users: 9900, Followers: 4, Followees: 4, Posts: 1, Reads: 1},
		{Users: 100, Followers: 20, Followees: 20, Posts: 1, Reads: 1},
	}}
	got, want := sparse.HeavyFollowersOfPost(10), sparse.PostAudience()*sparse.FollowerShareOver(10)
	if math.Abs(got-want) > 0.02*want {
		t.Errorf("sparse graph: %.3f heavy followers a post, want about %.3f", got, want)
	}
	dense := Demand{Users: 100, Classes: []UserClass{
		{Users: 90, Followers: 10, Followees: 10, Posts: 0, Reads: 1},
		{Users: 10, Followers: 99, Followees: 99, Posts: 1, Reads: 1},
	}}
	if got, product := dense.HeavyFollowersOfPost(50), dense.PostAudience()*dense.FollowerShareOver(50); !(got <= 10) || !(got > 9) || !(product > 10) {
		t.Errorf("an author followed by everyone: %.2f heavy followers (product %.2f), want at most the 10 heavy users", got, product)
	}
}

// TestFollowsAndUnfollowsTouch: the followee of a follow or an unfollow
// is half a new follow's, drawn by Followed among the authors its
// follower does not follow yet (a user followed by 45 of the 99 others
// is open to the 54 who do not), and half an edge's, by followers.
func TestFollowsAndUnfollowsTouch(t *testing.T) {
	d := Demand{Users: 100, Messages: 1000, Page: 20, ActiveShare: 1,
		Classes: []UserClass{
			{Users: 90, Followers: 10, Followees: 14.5, Posts: 1, Reads: 1, Followed: 1},
			{Users: 10, Followers: 45, Followees: 14.5, Posts: 3, Reads: 1, Followed: 2},
		},
	}
	fresh0, fresh1 := 90*1*(1-10/99.0), 10*2*(1-45/99.0)
	newFollow := (fresh0*10 + fresh1*45) / (fresh0 + fresh1)
	edge := (90*10*10 + 10*45*45) / (90*10 + 10*45.0)
	near(t, "followers of a followed or unfollowed author", d.MeanOverFollowed(followers), (newFollow+edge)/2)
	// Messages: 1000 shared out 90:30 by posts, 1000/120 and 3000/120.
	m0, m1 := 1000/120.0, 3000/120.0
	near(t, "messages backfilled or removed", d.FollowedMessages(),
		((fresh0*m0+fresh1*m1)/(fresh0+fresh1)+(90*10*m0+10*45*m1)/(90*10+10*45.0))/2)
	// A run that drew followees of twice the expected messages.
	near(t, "the draw without a count", d.FolloweeDraw(), 1)
	d.Run = &RunHistory{FolloweeMessages: 2 * d.FollowedMessages()}
	near(t, "the draw of followees of twice the messages", d.FolloweeDraw(), 2)
	d.Run = nil
	// An author followed by everyone else takes no new follow.
	d.Classes[1].Followers = 99
	near(t, "followers of a new follow's followee, the second class followed by all",
		d.mean(d.newFollowWeight, followers), 10)
}
