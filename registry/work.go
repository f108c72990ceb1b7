package registry

import (
	"fmt"
	"math"
	"sort"
)

// Work is the work one operation asks of the servers, in the items their
// counters count: what a design's work model (Model.Work) predicts and what
// a run measures (package internal/cost's keys of the same names).
type Work struct {
	// RowsRead and RowsWritten are MariaDB's rows (Rows_read; and
	// Handler_write, _update and _delete).
	RowsRead, RowsWritten float64
	// MCKeys are the keys asked of, stored in and incremented in
	// memcached (a multi-get of n keys is n).
	MCKeys float64
	// RedisCommands are the commands Redis runs, a script and each
	// command it runs counting one.
	RedisCommands float64
	// Statements are the statements sent to the database: the round
	// trips that cost a fixed share of CPU however few rows they touch.
	Statements float64
	// CacheCalls are the round trips to memcached or Redis (a multi-get
	// or a pipeline is one).
	CacheCalls float64
	// Rebuilt are the entries a rebuild writes back into a reader's
	// mailbox (push-active's first read after a reader was inactive):
	// the newest entries of the timeline, read by a pull merge of the
	// reader's followees and written with one multi-row INSERT.
	// RebuildRowsRead and RebuildRowsWritten are the rebuild's rows, which
	// RowsRead and RowsWritten include. A rebuild's CPU follows its
	// entries, not its rows: the counted runs' rebuilds of 800 entries
	// cost the same on both graphs, whose merges read and write 1.8 times
	// as many rows on the power-law one (scratch rows that cost little),
	// so a calibration prices a rebuild by its entries (and statements)
	// and its rows by neither unit of rows.
	Rebuilt, RebuildRowsRead, RebuildRowsWritten float64
	// Overlapped are the round trips of Statements and CacheCalls sent
	// while others of the operation are in flight (pull-client's
	// queries, a few at a time): they add no round trip to its response,
	// and their CPU runs beside the others' on the cores free. They cost
	// the CPU of the round trips they are.
	Overlapped float64
}

// Add returns w plus x.
func (w Work) Add(x Work) Work {
	return Work{w.RowsRead + x.RowsRead, w.RowsWritten + x.RowsWritten, w.MCKeys + x.MCKeys,
		w.RedisCommands + x.RedisCommands, w.Statements + x.Statements, w.CacheCalls + x.CacheCalls,
		w.Rebuilt + x.Rebuilt, w.RebuildRowsRead + x.RebuildRowsRead, w.RebuildRowsWritten + x.RebuildRowsWritten,
		w.Overlapped + x.Overlapped}
}

// Scale returns w times f.
func (w Work) Scale(f float64) Work {
	return Work{w.RowsRead * f, w.RowsWritten * f, w.MCKeys * f, w.RedisCommands * f, w.Statements * f, w.CacheCalls * f,
		w.Rebuilt * f, w.RebuildRowsRead * f, w.RebuildRowsWritten * f, w.Overlapped * f}
}

// Items is the rows, keys and commands together: the count the
// benchmark's verdict showed before it ranked by resources.
func (w Work) Items() float64 { return w.RowsRead + w.RowsWritten + w.MCKeys + w.RedisCommands }

// OpWork is a design's work per operation of each kind, on average over
// the workload's users as it draws them (Demand's weights).
type OpWork struct {
	// Newest reads a newest page; Older a page Demand.OlderDepth deep
	// on average, through its cursor.
	Newest, Older Work
	// Post is a post until it is acknowledged; Later is what an
	// asynchronous design (Traits Async) does for it afterwards, the
	// fan-out its workers write.
	Post, Later Work
	// Follow and Unfollow change one follow.
	Follow, Unfollow Work
	// LargestPost is the Later work of a post by the most followed user,
	// for the fan-out lag of asynchronous designs (0 otherwise).
	LargestPost Work
	// NewestMiss is the share of newest pages that miss a cache in front
	// of the design's base (a variant's, registry.Variant), and
	// NewestMissWork what such a miss does beyond a hit: the base's page
	// and the store that keeps it. Newest is their mean, the hits' work
	// plus NewestMiss times NewestMissWork; a plan queues hits and
	// misses apart, for their CPU differ a hundredfold and the p99 of a
	// mix lies among its misses. Both 0 for a design without such a
	// cache.
	NewestMiss     float64
	NewestMissWork Work
	// Workers is how many posts' Later work an asynchronous store
	// applies at once (its fan-out workers); one post's is applied by one
	// worker at a time.
	Workers float64
}

// Footprint is what a design keeps, beside the messages and follows
// every design keeps.
type Footprint struct {
	// MailboxRows are the rows of its mailbox table (push's copies of
	// message ids per reader), 0 for a design without one.
	MailboxRows float64
	// CacheIDs are the message or user ids it keeps in memcached or
	// Redis, CacheKeys the keys they are kept under.
	CacheIDs, CacheKeys float64
}

// WorkModel is a design's cost model: the work per operation and the
// footprint that follow from a workload (Demand) and the model's options
// (read with Config's accessors, as Open reads them). A design declares it
// beside its Open, in its own package, from its own rules (what a post
// writes, what a page reads); package loadgen/plan evaluates it at a
// workload's real size and checks it against counted runs.
type WorkModel func(d Demand, cfg Config) (OpWork, Footprint)

// VariantWorkModel is a variant's cost model: the work of base+variant
// from its base's (w, f) and the workload.
type VariantWorkModel func(base Model, w OpWork, f Footprint, d Demand, cfg Config) (OpWork, Footprint)

// WorkFor evaluates m's work model (Model.Work) for d with those of opts
// that m declares (OwnOptions; a value m does not take is an
// *OptionError). ok is false when m declares no work model.
func (m Model) WorkFor(d Demand, opts map[string]string) (w OpWork, f Footprint, ok bool, err error) {
	if m.Work == nil {
		return OpWork{}, Footprint{}, false, nil
	}
	parsed, err := m.parseOptions(m.OwnOptions(opts))
	if err != nil {
		return OpWork{}, Footprint{}, true, err
	}
	w, f = m.Work(d, Config{parsed: parsed})
	return w, f, true, nil
}

// Demand is a workload at its real size, as a design's work model needs
// it: the users in classes of alike degree and activity, the messages
// kept, the page, and the rates. Package loadgen/plan builds it from a
// described workload or a generated graph.
type Demand struct {
	// Users and Messages are the users and the messages the store holds
	// (what retention keeps).
	Users, Messages float64
	// Page is the entries a page shows; OlderDepth the mean depth, in
	// pages, of an older page (the benchmark reads pages 2 to 5: 3.5).
	Page       int
	OlderDepth float64
	// PostsPerSec and ReadsPerSec are the planned rates of posts and of
	// page reads (newest and older), over all users; OlderPerSec is the
	// part of ReadsPerSec that reads older pages.
	PostsPerSec, ReadsPerSec, OlderPerSec float64
	// UnfollowsPerSec is the planned rate of unfollows, over all users,
	// each of a followee drawn as a new follow's (Followed).
	UnfollowsPerSec float64
	// ActiveShare is the share of users who read within a design's
	// window of activity (1: everyone reads often enough).
	ActiveShare float64
	// Classes are the users, grouped by degree and activity.
	Classes []UserClass
	// Run, when set, is the history of a benchmark run behind the
	// operations averaged over: the work of one of its phases, not of
	// the steady state (nil).
	Run *RunHistory
	// Cold, when its Span is above 0, says that the work is averaged over
	// a stretch whose caches began empty (a counted run's phase on a cache
	// of its own, which fills in the phase's warm-up). Its zero value is
	// the steady state of a service whose caches are warm.
	Cold ColdStart
	// SerialRowsPerSec, when above 0, is the rows a second one connection
	// reads running statements one after another on the machine of a run,
	// under the run's load: a calibration's measure
	// (results.Calibration.SerialRowsPerSec). A design whose run waits on
	// one background worker that falls behind (selective's flusher) paces
	// the worker by it; 0 leaves each design its own figure.
	SerialRowsPerSec float64

	// sumPosts and sumReads are Σ Users·Posts and Σ Users·Reads, kept
	// by Prepared (0: computed at each use).
	sumPosts, sumReads float64
	// postPick and readPick, when set, restrict the posts and the reads
	// averaged over to those of the classes they keep (PostsOf, ReadsOf);
	// the rates per user stay the whole workload's.
	postPick, readPick func(class int) bool
}

// Prepared is d with the sums its rates are shared out by computed once,
// which a Demand of many classes asked many questions wants: the methods
// of a Demand not prepared compute them at each call. Prepare again after
// changing Classes.
func (d Demand) Prepared() Demand {
	d.sumPosts, d.sumReads = 0, 0
	d.sumPosts, d.sumReads = d.postTotal(), d.readTotal()
	return d
}

func (d Demand) postTotal() float64 { return d.total(d.sumPosts, posts) }

func (d Demand) readTotal() float64 { return d.total(d.sumReads, reads) }

// total is kept when Prepared kept it (above 0), else Σ Users·rate.
func (d Demand) total(kept float64, rate func(UserClass) float64) float64 {
	if kept > 0 {
		return kept
	}
	var total float64
	for _, x := range d.Classes {
		total += x.Users * rate(x)
	}
	return total
}

// PostsOf is d with the posts averaged over (MeanOverPosts and what uses
// it) restricted to those of the classes keep keeps: what one group of
// authors' posts cost. Rates per user (PostRate) stay d's.
func (d Demand) PostsOf(keep func(class int) bool) Demand { d.postPick = keep; return d }

// ReadsOf is d with the reads averaged over (MeanOverReads and what uses
// it) restricted to those of the classes keep keeps.
func (d Demand) ReadsOf(keep func(class int) bool) Demand { d.readPick = keep; return d }

// MeanOverPosts is the mean of value over the authors of posts (users
// weighed by Posts).
func (d Demand) MeanOverPosts(value func(UserClass) float64) float64 {
	return d.meanPicked(d.postPick, posts, value)
}

// MeanOverReads is the mean of value over the readers of pages (users
// weighed by Reads).
func (d Demand) MeanOverReads(value func(UserClass) float64) float64 {
	return d.meanPicked(d.readPick, reads, value)
}

// MeanOverFollowers is the mean of value over the followers of an author
// met through a follow (users weighed by how many they follow).
func (d Demand) MeanOverFollowers(value func(UserClass) float64) float64 {
	return d.mean(followees, value)
}

// MeanOverFollowees is the mean of value over the followees of a reader
// met through a follow (users weighed by their followers).
func (d Demand) MeanOverFollowees(value func(UserClass) float64) float64 {
	return d.mean(followers, value)
}

// MeanOverFollowed is the mean of value over the followees that follows
// and unfollows touch, as many follows as unfollows: half of them a new
// follow's followee (newFollowWeight), half an existing follow's (users
// weighed by their followers). That is a planned workload's follows and
// unfollows together, and also each kind of the benchmark's, whose
// unfollows undo its follows' edges about as often as they remove the
// graph's, and whose follows restore about as many edges as they add
// (package loadgen/workload's Churn).
func (d Demand) MeanOverFollowed(value func(UserClass) float64) float64 {
	return (d.mean(d.newFollowWeight, value) + d.mean(followers, value)) / 2
}

// newFollowWeight is a class's weight as the followee of a new follow:
// Followed, less the share of the other users who follow it already, whom
// a new follow cannot come from. On a skewed graph that keeps new follows
// off the most followed authors: at 1,000 users the benchmark's follows
// reach the top ones, followed by nearly everyone, a fraction as often as
// Followed alone says.
func (d Demand) newFollowWeight(c UserClass) float64 {
	if d.Users <= 1 {
		return c.Followed
	}
	return c.Followed * math.Max(0, 1-c.Followers/(d.Users-1))
}

// meanPicked is mean over the classes pick keeps (all when nil).
func (d Demand) meanPicked(pick func(int) bool, weight, value func(UserClass) float64) float64 {
	if pick == nil {
		return d.mean(weight, value)
	}
	return d.mean(func(c UserClass) float64 { return weight(c) }, value, pick)
}

// UserClass is a group of users of alike degree and activity.
type UserClass struct {
	// Users is how many users the class holds.
	Users float64
	// Followers and Followees are each user's counts.
	Followers, Followees float64
	// Posts, Reads and Followed are each user's relative rates of
	// posting, of reading their timeline, and of being chosen by a new
	// follow (weights over the users; their scale does not matter).
	Posts, Reads, Followed float64
}

// mean is Σ Users·weight·value / Σ Users·weight over the classes (those
// pick keeps, when given).
func (d Demand) mean(weight, value func(UserClass) float64, pick ...func(int) bool) float64 {
	var sum, w float64
	for i, c := range d.Classes {
		if len(pick) > 0 && !pick[0](i) {
			continue
		}
		x := c.Users * weight(c)
		sum += x * value(c)
		w += x
	}
	if w == 0 {
		return 0
	}
	return sum / w
}

func followers(c UserClass) float64 { return c.Followers }
func followees(c UserClass) float64 { return c.Followees }
func posts(c UserClass) float64     { return c.Posts }
func reads(c UserClass) float64     { return c.Reads }
func one(UserClass) float64         { return 1 }

// Edges is the number of follows.
func (d Demand) Edges() float64 { return d.Users * d.mean(one, followees) }

// PostAudience is the mean follower count of a post's author, posts
// weighted by who posts: the mailbox rows a post fans out to. In a run's
// phase that counted its posts' audience (Run.Audience above 0), and over
// all posts (no PostsOf), it is that count.
func (d Demand) PostAudience() float64 {
	if d.Run != nil && d.Run.Audience > 0 && d.postPick == nil {
		return d.Run.Audience
	}
	return d.MeanOverPosts(followers)
}

// ReadFollowees is the mean followee count of a page's reader, pages
// weighted by who reads: the authors a pull read merges.
func (d Demand) ReadFollowees() float64 { return d.MeanOverReads(followees) }

// MessagesOf is how many messages a user of class c holds as author:
// Messages shared out by post rate.
func (d Demand) MessagesOf(c UserClass) float64 {
	total := d.postTotal()
	if total == 0 {
		return 0
	}
	return d.Messages * c.Posts / total
}

// FolloweeMessages is the mean number of messages of a followee, over
// follows (a followee weighs by its followers).
func (d Demand) FolloweeMessages() float64 { return d.mean(followers, d.MessagesOf) }

// FollowedMessages is the mean number of messages of the followee of a
// follow or an unfollow (MeanOverFollowed). In a run's phase that counted
// its follows' and unfollows' followees (Run.FolloweeMessages above 0), it
// is that count.
func (d Demand) FollowedMessages() float64 {
	if d.Run != nil && d.Run.FolloweeMessages > 0 {
		return d.Run.FolloweeMessages
	}
	return d.MeanOverFollowed(d.MessagesOf)
}

// FolloweeDraw is how many times the messages of the followees a run's
// phase drew for its follows and unfollows (Run.FolloweeMessages) are
// their expectation (MeanOverFollowed): 1 without a count. A model that
// reads a function of the followee's messages other than their mean (the
// newest n of them) scales its expectation by it.
func (d Demand) FolloweeDraw() float64 {
	if d.Run == nil || !(d.Run.FolloweeMessages > 0) {
		return 1
	}
	e := d.MeanOverFollowed(d.MessagesOf)
	if !(e > 0) {
		return 1
	}
	return d.Run.FolloweeMessages / e
}

// MailboxRows is the rows push's mailbox holds: every message copied to
// each of its author's followers.
func (d Demand) MailboxRows() float64 {
	var n float64
	for _, c := range d.Classes {
		n += c.Users * d.MessagesOf(c) * c.Followers
	}
	return n
}

// MostFollowers is the largest follower count.
func (d Demand) MostFollowers() float64 {
	var most float64
	for _, c := range d.Classes {
		if c.Users > 0 {
			most = math.Max(most, c.Followers)
		}
	}
	return most
}

// ReadRate is the page reads per second of one user of class c, the
// reads shared out by Reads among the users who read at all
// (ActiveShare of each class).
func (d Demand) ReadRate(c UserClass) float64 {
	total := d.readTotal()
	if total == 0 || d.ActiveShare == 0 {
		return 0
	}
	return d.ReadsPerSec * c.Reads / (d.ActiveShare * total)
}

// NewestRate is the newest-page reads per second of one user of class c:
// ReadRate without the older pages (OlderPerSec).
func (d Demand) NewestRate(c UserClass) float64 {
	if d.ReadsPerSec <= 0 {
		return 0
	}
	return d.ReadRate(c) * math.Max(0, d.ReadsPerSec-d.OlderPerSec) / d.ReadsPerSec
}

// ColdStart is a stretch of traffic that began with the caches empty:
// Warmup seconds of it went unmeasured, then the work is averaged over the
// Span seconds that followed.
type ColdStart struct {
	Warmup, Span float64
}

// FirstReads is the share of newest-page reads, over the stretch Cold
// describes, that are their reader's first since the caches were empty
// (FirstRead averaged over the reads). 0 in the steady state (Cold.Span
// 0). TestFirstReadsAgainstDraws sets it against drawn reads.
func (d Demand) FirstReads() float64 { return d.MeanOverReads(d.FirstRead) }

// FirstRead is the share of a class c reader's newest-page reads, over
// the stretch Cold describes, that are their first since the caches were
// empty: 1 - Since(NewestRate(c), +Inf). 0 in the steady state.
func (d Demand) FirstRead(c UserClass) float64 {
	r := d.NewestRate(c)
	if !(r > 0) {
		return 0
	}
	return 1 - d.Since(r, math.Inf(1))
}

// Since is the chance that the last event of a Poisson process of rate k
// came within limit seconds before a moment drawn from the stretch Cold
// describes, the process starting when the caches were empty: for a
// moment τ seconds after that, 1 - e^(-k·min(τ, limit)), averaged over τ
// from Cold.Warmup to Cold.Warmup + Cold.Span. In the steady state (Span
// 0) it is 1 - e^(-k·limit). For a reader at rate r, Since(r, ttl) is the
// chance that their previous read came within ttl, and
// r/(r+q)·Since(r+q, ttl) that it did with no event of rate q in between.
func (d Demand) Since(k, limit float64) float64 {
	if !(k > 0) {
		return 0
	}
	a, s := d.Cold.Warmup, d.Cold.Span
	if !(s > 0) {
		return 1 - math.Exp(-k*limit)
	}
	b := a + s
	var sum float64 // ∫ 1 - e^(-k·min(τ, limit)) dτ from a to b
	if a < limit {
		m := math.Min(b, limit)
		sum += (m - a) - (math.Exp(-k*a)-math.Exp(-k*m))/k
	}
	if b > limit {
		sum += (b - math.Max(a, limit)) * (1 - math.Exp(-k*limit))
	}
	return sum / s
}

// PostRate is the posts per second of one user of class c.
func (d Demand) PostRate(c UserClass) float64 {
	total := d.postTotal()
	if total == 0 {
		return 0
	}
	return d.PostsPerSec * c.Posts / total
}

// activeWithin is the chance that a user of class c read within window:
// ActiveShare of the users read at all, each as a Poisson process at
// ReadRate. A window of 0 or less means no window: whoever reads at all.
func (d Demand) activeWithin(c UserClass, window float64) float64 {
	if window <= 0 {
		return d.ActiveShare
	}
	return d.ActiveShare * (1 - math.Exp(-d.ReadRate(c)*window))
}

// ActiveFollowers is the share of a post's audience that read within
// window seconds: followers weighed by how many they follow (a follower
// of a random author is a user met through a follow), each active as
// activeWithin says. A window of 0 means everyone who reads at all.
func (d Demand) ActiveFollowers(window float64) float64 {
	return d.mean(followees, func(c UserClass) float64 { return d.activeWithin(c, window) })
}

// ActiveUsers is the share of users who read within window seconds.
func (d Demand) ActiveUsers(window float64) float64 {
	return d.mean(one, func(c UserClass) float64 { return d.activeWithin(c, window) })
}

// ReturningReads is the share of page reads made by a user whose previous
// read is more than window seconds old (a returning reader, whose state an
// activity-window design dropped): exp(-rate·window) per reader class. A
// window of 0 means none.
func (d Demand) ReturningReads(window float64) float64 {
	if window <= 0 {
		return 0
	}
	return d.MeanOverReads(func(c UserClass) float64 { return math.Exp(-d.ReadRate(c) * window) })
}

// RunHistory is what a benchmark run did to a design's store since its
// bulk load, before a phase and during it. The state some designs keep
// starts where the load left it (which users are active, how full a capped
// mailbox is) and a short run's phases see it on its way to the steady
// state; their work models read how far along from here. Package
// loadgen/plan's check sets it from a counted run's phases.
type RunHistory struct {
	// ReadsBefore and PostsBefore are the newest-page reads and the posts
	// made since the load before the phase (warm-ups included), over all
	// users, each reader and author drawn by the classes' rates.
	ReadsBefore, PostsBefore float64
	// AllRead is set when every user read a newest page since the load
	// before the phase, besides those drawn (as the benchmark's walk for
	// older pages' cursors does when it samples every user).
	AllRead bool
	// Reads and Posts are the phase's own.
	Reads, Posts float64
	// UnfollowedBefore and Unfollowed are the unfollows made since the
	// load before the phase, and the phase's own, that leave a mark until
	// the edge is followed again (push-redis's tombstones): the others
	// the run followed again itself (UnfollowedAudience).
	UnfollowedBefore, Unfollowed float64
	// Audience, when above 0, is the mean follower count of the authors
	// of the phase's own posts, as the run counted it: on a skewed graph
	// a phase's few thousand posts can reach several per cent more or
	// fewer followers than the activity's expectation, by the luck of how
	// many fell on the most followed authors. PostAudience takes it; the
	// models that split posts by their author's class (a hybrid's
	// threshold) keep the expectation.
	Audience float64
	// FolloweeMessages, when above 0, is the mean number of messages of the
	// followees of the phase's own follows and unfollows, as the run
	// counted them: on a skewed graph a phase's few hundred of them draw
	// that mean a fifth or more above or below its expectation.
	// FollowedMessages takes it; MeanOverFollowed keeps the expectation.
	FolloweeMessages float64
}

// UnfollowedAudience is the share of a post's audience whose author was
// unfollowed within ttl seconds: posts weighed by who posts and by their
// followers, an author of class c unfollowed at UnfollowsPerSec·q, where
// q is c's share of the followees unfollows draw (Followed over Σ
// Users·Followed), so within ttl with chance 1 − exp(−UnfollowsPerSec·
// ttl·q).
//
// In a run (Run set) the planned rate does not count: the tombstones are
// the run's unfollows that left one (Run.UnfollowedBefore; a run is
// shorter than ttl) and half those of the phase, made half-way through
// it on average. The followees of the edges a benchmark unfollows for
// good are the ones its follows added, drawn by Followed as q says
// (package loadgen/plan's check sets Run from what the run did).
func (d Demand) UnfollowedAudience(ttl float64) float64 {
	n := d.UnfollowsPerSec * ttl
	if d.Run != nil {
		n = d.Run.UnfollowedBefore + d.Run.Unfollowed/2
	}
	var total float64
	for _, c := range d.Classes {
		total += c.Users * c.Followed
	}
	if !(n > 0) || total == 0 {
		return 0
	}
	audience := d.MeanOverPosts(followers)
	if audience == 0 {
		return 0
	}
	return d.MeanOverPosts(func(c UserClass) float64 { return -c.Followers * math.Expm1(-n*c.Followed/total) }) / audience
}

// readShare is the share of all newest-page reads that one user of class
// c makes: Reads over Σ Users·Reads.
func (d Demand) readShare(c UserClass) float64 {
	total := d.readTotal()
	if total == 0 {
		return 0
	}
	return c.Reads / total
}

// ColdReads is the share of newest-page reads that find their reader
// inactive in a design that keeps state (a mailbox, an index) only for
// the users who read within window, and whose bulk load made active the
// users who read within it at startReads reads per user on average
// (registry.MailboxShape.ActiveReads: a user whose share of the reads is
// p started active with chance 1 − exp(−startReads·Users·p)).
//
// In the steady state (Run nil) it is ReturningReads(window): the reads
// whose reader's previous one is more than window old. In a run (Run set)
// a reader the load left inactive stays so until their first read, which
// finds them inactive: of a user of share p, none of the ReadsBefore is
// theirs with chance exp(−ReadsBefore·p) (none if AllRead), and one of
// the phase's Reads
// with 1 − exp(−Reads·p), so that the share is Σ Users·exp(−startReads·
// Users·p)·exp(−ReadsBefore·p)·(1 − exp(−Reads·p)) / Reads (a single
// read's chance when Reads is 0). The phase's other reads find their
// reader inactive only if the window lapsed since the last one
// (ReturningReads): a run shorter than the window has none.
func (d Demand) ColdReads(window, startReads float64) float64 {
	if d.Run == nil {
		return d.ReturningReads(window)
	}
	h := *d.Run
	var first float64
	for _, c := range d.Classes {
		if h.AllRead {
			break
		}
		p := d.readShare(c)
		if p == 0 || c.Users == 0 {
			continue
		}
		inPhase := p // a single read's chance to be this user's
		if h.Reads > 0 {
			inPhase = -math.Expm1(-h.Reads*p) / h.Reads
		}
		first += c.Users * math.Exp(-startReads*d.Users*p-h.ReadsBefore*p) * inPhase
	}
	first = math.Min(1, first)
	return first + (1-first)*d.ReturningReads(window)
}

// ActiveAudience is the share of a post's audience that a design
// keeping state only for the users who read within window holds active
// (see ColdReads for startReads). In the steady state (Run nil) it is
// ActiveFollowers(window). In a run it is the followers (weighed by how
// many they follow) who are not still as the load left them inactive: a
// user of share p of the reads started inactive with chance
// exp(−startReads·Users·p) and has not read since with chance
// exp(−(ReadsBefore + Reads/2)·p), half the phase's reads counted (none
// left inactive if AllRead). The window is taken to outlast the run.
func (d Demand) ActiveAudience(window, startReads float64) float64 {
	if d.Run == nil {
		return d.ActiveFollowers(window)
	}
	if d.Run.AllRead {
		return 1
	}
	reads := d.Run.ReadsBefore + d.Run.Reads/2
	return 1 - d.mean(followees, func(c UserClass) float64 {
		p := d.readShare(c)
		return math.Exp(-startReads*d.Users*p - reads*p)
	})
}

// NewestMiss is the share of a newest page's entries that an in-process
// cache of the newest slots messages misses: a table keyed by message id,
// slot id mod its size (package directmap), holds any slots ids in a row,
// and ids are given in posting order. In id order a reader's entries are
// a stream of density g·m/Messages (g followees of m messages each, by
// FolloweeMessages); the newest slots ids hold N ~ Poisson(slots·g·m/
// Messages) of them, and a page of Fetch entries misses max(0, Fetch - N),
// averaged over the reads. TestNewestMissAgainstIDs sets it against drawn
// ids.
func (d Demand) NewestMiss(slots float64) float64 {
	if d.Messages <= slots {
		return 0
	}
	m, fetch := d.FolloweeMessages(), d.Fetch()
	return d.MeanOverReads(func(c UserClass) float64 {
		return poissonShortfall(slots*c.Followees*m/d.Messages, int(fetch)) / fetch
	})
}

// poissonShortfall is E[max(0, k - N)] for N ~ Poisson(mu).
func poissonShortfall(mu float64, k int) float64 {
	if mu > float64(k)+40*math.Sqrt(float64(k)+1) {
		return 0 // P(N < k) is below 1e-300: e^-mu underflows anyway
	}
	var sum float64
	p := math.Exp(-mu)
	for n := range k {
		sum += float64(k-n) * p
		p *= mu / float64(n+1)
	}
	return sum
}

// Miss is the share of lookups an in-process cache of slots entries
// misses over items equally likely ones: 1 - slots/items, at least 0.
func Miss(slots, items float64) float64 {
	if items <= 0 {
		return 0
	}
	return math.Max(0, 1-slots/items)
}

// Readers is how many users read at all.
func (d Demand) Readers() float64 { return d.ActiveShare * d.Users }

// FolloweesOver is the share of page reads by a reader who follows more
// than n authors.
func (d Demand) FolloweesOver(n float64) float64 {
	return d.MeanOverReads(func(c UserClass) float64 {
		if c.Followees > n {
			return 1
		}
		return 0
	})
}

// FollowerShareOver is the share of a post's audience who follow more
// than n authors (a follower met through a follow weighs by how many they
// follow).
func (d Demand) FollowerShareOver(n float64) float64 {
	return d.mean(followees, func(c UserClass) float64 {
		if c.Followees > n {
			return 1
		}
		return 0
	})
}

// HeavyFollowersOfPost is the followers of a post's author who follow
// more than n authors, posts weighed by who posts. A user of c followees
// follows c distinct authors, each drawn by its followers: an author of a
// followers is among them with chance 1 − exp(−λ·a), λ such that these
// chances over all authors add up to c (drawing without repeats, the
// draws a popular author would take again go to the others). Below
// saturation it is c·a/E (E = Edges), which makes it
// PostAudience·FollowerShareOver(n); an author followed by most users is
// followed by at most every such user, and the draws the most followed
// authors cannot take go to the others.
func (d Demand) HeavyFollowersOfPost(n float64) float64 {
	// The heavy users' λ are read off a grid of drawRateSteps rates,
	// log-spaced, each heavy class's users shared between the two rates
	// about its own: a few times the classes' work, not their square.
	var kMin, kMax, weight float64
	for _, c := range d.Classes {
		weight += c.Users * c.Followers
		if c.Followees > n && c.Users > 0 {
			if kMin == 0 || c.Followees < kMin {
				kMin = c.Followees
			}
			kMax = math.Max(kMax, c.Followees)
		}
	}
	if kMax == 0 || weight <= 0 {
		return 0
	}
	drawn := func(lambda float64) float64 {
		var sum float64
		for _, c := range d.Classes {
			sum += c.Users * -math.Expm1(-lambda*c.Followers)
		}
		return sum
	}
	lo, hi := kMin/weight, kMax/weight // drawn(λ) ≤ λ·weight: λ ≥ k/weight
	for drawn(hi) < kMax && hi < 1e12*lo {
		hi *= 2
	}
	rates := make([]float64, drawRateSteps)
	counts := make([]float64, drawRateSteps)
	for i := range rates {
		rates[i] = lo * math.Pow(hi/lo, float64(i)/float64(drawRateSteps-1))
		counts[i] = drawn(rates[i])
	}
	users := make([]float64, drawRateSteps)
	for _, c := range d.Classes {
		if !(c.Followees > n && c.Users > 0) {
			continue
		}
		i := min(max(1, sort.SearchFloat64s(counts, c.Followees)), drawRateSteps-1)
		f := 1.0
		if span := counts[i] - counts[i-1]; span > 0 {
			f = math.Min(1, math.Max(0, (c.Followees-counts[i-1])/span))
		}
		users[i-1] += c.Users * (1 - f)
		users[i] += c.Users * f
	}
	return d.MeanOverPosts(func(a UserClass) float64 {
		var sum float64
		for i, u := range users {
			if u > 0 {
				sum += u * -math.Expm1(-rates[i]*a.Followers)
			}
		}
		return sum
	})
}

// drawRateSteps is the size of HeavyFollowersOfPost's grid of rates.
const drawRateSteps = 64

// Fetch is the entries a page read asks for: Page+1, the one past the
// page telling whether there is a next.
func (d Demand) Fetch() float64 { return float64(d.Page + 1) }

// Split is the workload seen from a follower-count threshold: authors with
// at least that many followers are pulled by the designs that pull
// celebrities.
type Split struct {
	// PostShare is the share of posts by authors at or above it.
	PostShare float64
	// AudienceBelow is the followers a post reaches from authors below
	// it, over all posts (a celebrity's post counting 0).
	AudienceBelow float64
	// ReadFolloweesAbove is the followees at or above it that a page's
	// reader has, on average.
	ReadFolloweesAbove float64
	// EdgeShareAbove is the share of follows whose followee is at or
	// above it.
	EdgeShareAbove float64
	// MessagesAbove is the messages of authors at or above it.
	MessagesAbove float64
}

// SplitAt is d seen from threshold (in followers). A reader's followees
// are taken to be drawn by popularity, independently of the reader's own
// activity (as in the power-law graph, whose follower and followee counts
// come from independent permutations).
func (d Demand) SplitAt(threshold float64) Split {
	above := func(c UserClass) float64 {
		if c.Followers >= threshold {
			return 1
		}
		return 0
	}
	var s Split
	s.PostShare = d.MeanOverPosts(above)
	s.AudienceBelow = d.MeanOverPosts(func(c UserClass) float64 { return (1 - above(c)) * c.Followers })
	s.EdgeShareAbove = d.mean(followers, above)
	s.ReadFolloweesAbove = d.ReadFollowees() * s.EdgeShareAbove
	for _, c := range d.Classes {
		s.MessagesAbove += c.Users * above(c) * d.MessagesOf(c)
	}
	return s
}

// Check reports the first field of d a work model cannot use.
func (d Demand) Check() error {
	switch {
	case !(d.Users >= 2):
		return fmt.Errorf("demand: %v users, want at least 2", d.Users)
	case !(d.Messages >= 0):
		return fmt.Errorf("demand: %v messages", d.Messages)
	case d.Page < 1:
		return fmt.Errorf("demand: page of %d", d.Page)
	case !(d.ActiveShare >= 0 && d.ActiveShare <= 1):
		return fmt.Errorf("demand: active share %v, want 0 to 1", d.ActiveShare)
	case len(d.Classes) == 0:
		return fmt.Errorf("demand: no user classes")
	}
	return nil
}
