package hybrid_test

import (
	"math"
	"strconv"
	"testing"

	"github.com/pushpull/pushpull/hybrid"
	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/cost/costtest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestCelebrityPostRowsMatchWork counts the rows of posts by an author
// with more followers than the threshold, listed as pulled already, and
// sets them against the cost model's post for such an author: the count
// of the followers stops at the threshold (the power-law graph at 3,000
// users has authors of up to 2,999 followers, whose posts count 1,000 at
// the default threshold), and the post writes its message alone.
func TestCelebrityPostRowsMatchWork(t *testing.T) {
	const threshold, followers, posts = 5, 12, 10
	s := open(t, threshold)
	const author = timeline.UserID(1)
	for f := range followers {
		timelinetest.Follow(t, s, timeline.UserID(100+f), author)
	}
	timelinetest.PostN(t, s, author, 1) // lists the author as pulled
	c := costtest.Counted(t, s.DB(), posts, func() { timelinetest.PostN(t, s, author, posts) })
	d := registry.Demand{Users: followers + 1, Messages: 1000, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Classes: []registry.UserClass{
			{Users: 1, Followers: followers, Posts: 1},
			{Users: followers, Followees: 1, Reads: 1},
		}}
	matchRows(t, "a celebrity's post", c, modelWork(t, d, threshold).Post)
}

// TestCelebrityPageRowsMatchWork counts the rows of pages whose readers
// follow 5 authors above the threshold, who post twice as often as the
// readers' 5 others (their posts interleaved), and sets them against the
// cost model's page for such a graph: the mailbox's page, a probe of each
// pulled author, their ids between their newest and the merge's floor,
// and the rows of the merge's scratch table (the known ids and those); and
// an older page's, whose probes read the pulled authors' messages above
// the cursor.
// Four readers each follow the 5 pulled authors and 5 of 10 others, so
// that a reader's followees are drawn by popularity, as the model takes
// them.
func TestCelebrityPageRowsMatchWork(t *testing.T) {
	const celebs, others, readers, rounds, pages = 5, 10, 4, 40, 3
	s := open(t, readers)
	reader := func(r int) timeline.UserID { return timeline.UserID(100 + r) }
	for r := range readers {
		for a := range celebs {
			timelinetest.Follow(t, s, reader(r), timeline.UserID(1+a))
		}
	}
	for a := range others {
		timelinetest.Follow(t, s, reader(a%readers), timeline.UserID(1+celebs+a))
		timelinetest.Follow(t, s, reader((a+1)%readers), timeline.UserID(1+celebs+a))
	}
	for range rounds {
		for a := range celebs {
			for k := range 2 {
				timelinetest.PostN(t, s, timeline.UserID(1+a), 1)
				timelinetest.PostN(t, s, timeline.UserID(1+celebs+2*a+k), 1)
			}
		}
	}
	c := costtest.Counted(t, s.DB(), readers*pages, func() {
		for r := range readers {
			for range pages {
				timelinetest.Newest(t, s, reader(r))
			}
		}
	})
	d := registry.Demand{Users: celebs + others + readers, Messages: (2*celebs + others) * rounds, Page: 20, OlderDepth: 3.5,
		PostsPerSec: 1, ReadsPerSec: 1, ActiveShare: 1, Classes: []registry.UserClass{
			{Users: celebs, Followers: readers, Posts: 2},
			{Users: others, Followers: 2, Posts: 1},
			{Users: readers, Followees: celebs + others*2/readers, Reads: 1},
		}}
	w := modelWork(t, d, readers)
	matchRows(t, "a newest page", c, w.Newest)
	// Page 3 of each reader: two pages above the cursor.
	var third []timeline.Query
	for r := range readers {
		p := timelinetest.Newest(t, s, reader(r))
		p = timelinetest.Page(t, s, reader(r), timeline.Query{Before: p.Next})
		third = append(third, timeline.Query{Before: p.Next})
	}
	c = costtest.Counted(t, s.DB(), readers*pages, func() {
		for r := range readers {
			for range pages {
				timelinetest.Page(t, s, reader(r), third[r])
			}
		}
	})
	d.OlderDepth = 3
	matchRows(t, "a third page", c, modelWork(t, d, readers).Older)
}

// modelWork is hybrid's cost model for d at the threshold.
func modelWork(t *testing.T, d registry.Demand, threshold int) registry.OpWork {
	t.Helper()
	m, err := registry.Lookup(hybrid.ModelName)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _, err := m.WorkFor(d, map[string]string{hybrid.OptionThreshold: strconv.Itoa(threshold)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// matchRows fails t when the rows read or written that c counted are off
// the model's by more than 10 %.
func matchRows(t *testing.T, what string, c cost.Cost, model registry.Work) {
	t.Helper()
	for _, x := range []struct {
		what           string
		counted, model float64
	}{{"read", c[cost.RowsRead], model.RowsRead}, {"written", c[cost.RowsWritten], model.RowsWritten}} {
		t.Logf("%s: %.2f rows %s counted, the model %.2f", what, x.counted, x.what, x.model)
		if math.Abs(x.counted-x.model) > 0.1*math.Max(x.counted, x.model) {
			t.Errorf("%s: %.2f rows %s counted, the model says %.2f", what, x.counted, x.what, x.model)
		}
	}
}
