package timelinetest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/timeline"
)

// Dataset is what RunBenchmarksOn writes through a store before it
// measures: users 1..Users, each following the Follows users after it
// (counting on from 1 past Users), then Messages posts by every user, one
// round of posts by each user after another, so that every author's
// messages spread over the whole id range as in a running service. Bodies
// are 20 to 120 characters, the same in every run.
//
// Zero fields take the defaults: 100 users, 20 follows and 15 messages
// each, which is 2,000 follows, 1,500 posts and 300 messages in every
// timeline; set-up takes seconds on MariaDB.
type Dataset struct {
	Users    int
	Follows  int
	Messages int
}

func (d Dataset) withDefaults() Dataset {
	if d.Users == 0 {
		d.Users = 100
	}
	if d.Follows == 0 {
		d.Follows = min(20, d.Users-1)
	}
	if d.Messages == 0 {
		d.Messages = 15
	}
	return d
}

// pageLen is how many messages page number n (1 for the newest) of every
// user's timeline holds at the default limit.
func (d Dataset) pageLen(n int) int {
	return max(0, min(timeline.DefaultLimit, d.Follows*d.Messages-(n-1)*timeline.DefaultLimit))
}

// RunBenchmarks is RunBenchmarksOn with the default Dataset. A model's
// tests call it once:
//
//	func BenchmarkStore(b *testing.B) {
//		timelinetest.RunBenchmarks(b, func(b *testing.B) timeline.Store { return open(b) })
//	}
func RunBenchmarks(b *testing.B, open func(b *testing.B) timeline.Store) {
	RunBenchmarksOn(b, Dataset{}, open)
}

// RunBenchmarksOn opens one store with open (which must return an empty
// store and close it with b.Cleanup), writes d through it, and measures
// these sub-benchmarks, in this order:
//
//   - newest: the newest page, at the default limit, of each user in turn;
//   - older: a page 2 to 4 deep, through a cursor found before measuring;
//   - post: a post by each user in turn (last: it changes the timelines).
//
// Before measuring it settles a timeline.Settler, reads every user's newest
// page once (caches warm, as a running service has them) and primes a
// timeline.Primer with every user, as the benchmark command does. Each
// sub-benchmark reports allocations and, for a timeline.Counting store,
// every counter that moved, per operation (such as rows_read/op). Reads
// check the length of the page they get, so a broken store fails instead
// of measuring fast.
func RunBenchmarksOn(b *testing.B, d Dataset, open func(b *testing.B) timeline.Store) {
	d = d.withDefaults()
	if d.Users < 2 || d.Follows < 1 || d.Follows >= d.Users || d.Messages < 1 {
		b.Fatalf("dataset %+v: want 2 or more users, each following 1 to Users-1 of them and posting at least once", d)
	}
	s := open(b)
	users := make([]timeline.UserID, d.Users)
	for i := range users {
		users[i] = timeline.UserID(i + 1)
	}
	for _, u := range users {
		for k := 1; k <= d.Follows; k++ {
			Follow(b, s, u, users[(int(u)-1+k)%d.Users])
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range d.Messages {
		for _, u := range users {
			Post(b, s, u, benchBody(rng, round, u))
		}
	}
	Settle(b, s)
	for _, u := range users {
		if p := Newest(b, s, u); len(p.Messages) != d.pageLen(1) {
			b.Fatalf("newest page of %d holds %d messages, want %d", u, len(p.Messages), d.pageLen(1))
		}
	}
	if p, ok := timeline.As[timeline.Primer](s); ok {
		if err := p.Prime(Context(b), users); err != nil {
			b.Fatalf("Prime: %v", err)
		}
	}
	older := olderCursors(b, s, d, users)
	ctx := context.Background()

	b.Run("newest", func(b *testing.B) {
		measure(b, s, func(i int) error {
			u := users[i%len(users)]
			p, err := s.Timeline(ctx, u, timeline.Query{})
			return checkLen(p, err, d.pageLen(1))
		})
	})
	b.Run("older", func(b *testing.B) {
		if len(older) == 0 {
			b.Skipf("dataset %+v: no timeline has a second page", d)
		}
		measure(b, s, func(i int) error {
			c := older[i%len(older)]
			p, err := s.Timeline(ctx, c.user, c.query)
			return checkLen(p, err, c.want)
		})
	})
	b.Run("post", func(b *testing.B) {
		measure(b, s, func(i int) error {
			_, err := s.Post(ctx, users[i%len(users)], "a benchmark post of a few words")
			return err
		})
		Settle(b, s)
	})
}

func benchBody(rng *rand.Rand, round int, author timeline.UserID) string {
	body := fmt.Sprintf("message %d by %d ", round, author)
	return body + strings.Repeat("x", max(0, 20+rng.IntN(101)-len(body)))
}

// olderCursor is a query for a page 2 to 4 deep and how many messages the
// page holds.
type olderCursor struct {
	user  timeline.UserID
	query timeline.Query
	want  int
}

// olderCursors walks every user's timeline 1 to 3 pages deep (by user id)
// and returns the cursors to the next page, where there is one.
func olderCursors(b *testing.B, s timeline.Store, d Dataset, users []timeline.UserID) []olderCursor {
	b.Helper()
	var out []olderCursor
	for _, u := range users {
		q := timeline.Query{}
		depth := 1 + int(u)%3
		for range depth {
			q.Before = read(b, s, u, q).Next
			if q.Before == "" {
				break
			}
		}
		if q.Before != "" {
			out = append(out, olderCursor{user: u, query: q, want: d.pageLen(depth + 1)})
		}
	}
	return out
}

// checkLen checks a Timeline result: no error, and want messages.
func checkLen(p timeline.Page, err error, want int) error {
	if err != nil {
		return err
	}
	if len(p.Messages) != want {
		return fmt.Errorf("page of %d messages, want %d", len(p.Messages), want)
	}
	return nil
}

// measure runs op(0), op(1), ... for the benchmark's iterations and reports
// allocations and the store's counters per operation.
func measure(b *testing.B, s timeline.Store, op func(i int) error) {
	b.ReportAllocs()
	before := counters(s)
	n := 0
	for ; b.Loop(); n++ {
		if err := op(n); err != nil {
			b.Fatal(err)
		}
	}
	after := counters(s)
	for _, key := range slices.Sorted(maps.Keys(after)) {
		if moved := after[key] - before[key]; moved != 0 && n > 0 {
			b.ReportMetric(float64(moved)/float64(n), key+"/op")
		}
	}
}

func counters(s timeline.Store) map[string]int64 {
	if c, ok := timeline.As[timeline.Counting](s); ok {
		return c.Counters()
	}
	return nil
}
