package workload

import (
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/timeline"
)

// Audience counts the posts a workload made and their authors' followers
// in the dataset's graph: how many readers the posts went to on average.
// On a skewed graph a phase's posts fall on few of the most followed
// authors, and the mean it drew can stray far from the activity's
// expectation (one post by an author of thousands of followers moves the
// mean of a thousand posts by several); a check of a cost model against a
// phase's counters takes the phase's own (package loadgen/plan). Safe for
// concurrent use; the zero value is ready.
type Audience struct{ t tally }

// AudienceMark is an Audience's counts at one moment (Audience.Mark).
type AudienceMark struct{ m tallyMark }

func (a *Audience) add(d *dataset.Dataset, author timeline.UserID) {
	if a == nil {
		return
	}
	a.t.add(int64(len(d.Followers(uint32(author)))))
}

// Mark returns the counts so far, for Since.
func (a *Audience) Mark() AudienceMark { return AudienceMark{a.t.mark()} }

// Since returns the mean follower count of the authors of the posts made
// since m, and how many posts that is (0 and 0 when none).
func (a *Audience) Since(m AudienceMark) (mean float64, posts int64) { return a.t.since(m.m) }
