package redis

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// list returns the feed of user as Redis holds it, its sentinel last.
func list(t *testing.T, s *Store, user timeline.UserID) []string {
	t.Helper()
	items, err := s.rc.Do(context.Background(), func(b redisx.Builder) redisx.Completed {
		return b.Lrange().Key(s.FeedKey(user)).Start(0).Stop(-1).Build()
	}).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// TestFanOutKeepsOrder runs the fan-out script itself with ids that reach
// a feed out of order: a new newest id goes to the head, an older one
// not in the feed to its place, one the feed holds and one at or below a
// complete feed's floor nowhere; the feed stays newest first, each id once,
// its sentinel last, and a missing feed takes nothing.
func TestFanOutKeepsOrder(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: testserver.Redis(t), Cap: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	timelinetest.Follow(t, s, 1, 2)
	posted := timelinetest.PostN(t, s, 2, 6)
	timelinetest.Newest(t, s, 1) // builds the feed: the newest 5, floor the oldest
	ids := func(items []string) []int64 {
		var out []int64
		for _, v := range items {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				out = append(out, n)
			}
		}
		return out
	}
	before := list(t, s, 1)
	floor := int64(posted[0].ID)
	if got := ids(before); len(got) != 5 || got[4] != int64(posted[1].ID) {
		t.Fatalf("built feed %v, want the newest 5 of %v", before, timelinetest.IDs(posted))
	}
	fan := func(id int64) int64 {
		t.Helper()
		idArg := strconv.FormatInt(id, 10)
		res, err := s.mutate(ctx, fanOut, []redisx.Call{{
			Keys: []string{s.fence.Key(), s.FeedKey(1), s.FeedKey(3)}, // user 3 has no feed
			Args: []string{"", idArg, "5", "100", s.unfollowedKey(2), s.deletedKey(timeline.MessageID(id)), "1", "3"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		n, err := res[0].AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	newest := int64(posted[5].ID)
	// Ids no post has: the script takes what it is given.
	steps := []struct {
		id    int64
		added int64
	}{
		{newest + 10, 1},         // newer than the head: pushed
		{newest + 5, 1},          // older than the head, not held: put in place
		{newest + 5, 0},          // held: nothing
		{int64(posted[3].ID), 0}, // held, deep in the feed
		{floor, 0},               // at the floor
		{floor - 1, 0},           // below it
		{int64(posted[2].ID), 0}, // held, the oldest id
		{newest + 7, 1},          // in between again
	}
	for _, st := range steps {
		if n := fan(st.id); n != st.added {
			t.Errorf("fan-out of %d added to %d feeds, want %d", st.id, n, st.added)
		}
	}
	after := list(t, s, 1)
	got := ids(after)
	want := append([]int64{newest + 10, newest + 7, newest + 5}, ids(before)...)
	if !slices.Equal(got, want) || after[len(after)-1] != before[len(before)-1] {
		t.Fatalf("feed %v, want ids %v and the sentinel %q last", after, want, before[len(before)-1])
	}
	if items := list(t, s, 3); len(items) != 0 {
		t.Fatalf("user 3 had no feed and has %v", items)
	}
}

// TestDeepPagesFromTheFeed: pages walked far past the first 64 ids of a
// feed (where the read finds the cursor by a binary search) and pages
// whose cursor the feed no longer holds (a deleted message) come from the
// feed, and equal the timeline.
func TestDeepPagesFromTheFeed(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: testserver.Redis(t), Cap: 300})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.Follow(t, s, 1, 3)
	a := timelinetest.PostN(t, s, 2, 120)
	b := timelinetest.PostN(t, s, 3, 120)
	timelinetest.Newest(t, s, 1) // builds the feed with all 240
	c0 := s.Counters()
	want := timelinetest.NewestFirst(a, b)
	if got := timelinetest.WalkIDs(t, s, 1, 7); !slices.Equal(got, want) {
		t.Fatalf("walk %v, want %v", got, want)
	}
	// A cursor the feed does not hold: the 100th id, deleted.
	cursor := want[99]
	author := timeline.UserID(2)
	if !slices.ContainsFunc(a, func(m timeline.Message) bool { return m.ID == cursor }) {
		author = 3
	}
	timelinetest.Delete(t, s, author, cursor)
	page, err := s.Timeline(ctx, 1, timeline.Query{Limit: 10, Before: timeline.IDCursor(cursor)})
	if err != nil {
		t.Fatal(err)
	}
	if got := timelinetest.IDs(page.Messages); !slices.Equal(got, want[100:110]) {
		t.Fatalf("page below deleted %d: %v, want %v", cursor, got, want[100:110])
	}
	c1 := s.Counters()
	if c1[counter.Rebuilds] != c0[counter.Rebuilds] || c1[counter.CacheErrors] != 0 || c1[counter.PagesBelowCap] != c0[counter.PagesBelowCap] {
		t.Fatalf("counters %v -> %v: want every page from the feed", c0, c1)
	}
}

// TestRebuildKeepsWhatCameMeanwhile: ids a post's fan-out added to a feed
// being built stay when the rebuild completes (merged in order with the
// ids it read, each once), those at or below its floor go; a rebuild that
// nothing came in during writes its ids as they are.
func TestRebuildKeepsWhatCameMeanwhile(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: testserver.Redis(t), Cap: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	run := func(script *redisx.Script, user timeline.UserID, args ...string) int64 {
		t.Helper()
		res, err := s.fence.Run(ctx, false, script, []redisx.Call{{Keys: []string{"", s.FeedKey(user)}, Args: append([]string{""}, args...)}})
		if err != nil {
			t.Fatal(err)
		}
		n, err := res[0].AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	fan := func(user timeline.UserID, id string) {
		t.Helper()
		if _, err := s.mutate(ctx, fanOut, []redisx.Call{{
			Keys: []string{s.fence.Key(), s.FeedKey(user)},
			Args: []string{"", id, "4", "4", s.unfollowedKey(99), s.prefix + "d" + id, strconv.Itoa(int(user))},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	sentinel := func(user timeline.UserID) string {
		items := list(t, s, user)
		return items[len(items)-1]
	}
	// User 1: posts 50 and 35 come in while the build reads 40, 30, 20, 10
	// (floor 5); 3 comes in too, below the floor. The cap, 4, trims it.
	if run(beginRebuild, 1, "7", "60") != 1 {
		t.Fatal("the rebuild did not start")
	}
	fan(1, "50")
	fan(1, "35")
	fan(1, "3")
	fan(1, "40")
	if run(completeRebuild, 1, "7", "5", "4", "40", "30", "20", "10") != 1 {
		t.Fatal("the rebuild did not complete")
	}
	if got := list(t, s, 1); !slices.Equal(got[:len(got)-1], []string{"50", "40", "35", "30"}) || !strings.HasSuffix(got[len(got)-1], ":20") {
		t.Fatalf("feed %v, want 50 40 35 30 and the floor raised to 20 (the newest id the trim removed)", got)
	}
	// User 2: nothing came in.
	if run(beginRebuild, 2, "8", "60") != 1 {
		t.Fatal("the rebuild did not start")
	}
	if run(completeRebuild, 2, "8", "5", "4", "40", "30", "20") != 1 {
		t.Fatal("the rebuild did not complete")
	}
	if got := list(t, s, 2); !slices.Equal(got[:len(got)-1], []string{"40", "30", "20"}) || !strings.HasSuffix(sentinel(2), ":5") {
		t.Fatalf("feed %v, want 40 30 20 and the floor 5", got)
	}
	// User 3: an empty timeline; another rebuild's token does not complete.
	if run(beginRebuild, 3, "9", "60") != 1 || run(completeRebuild, 3, "10", "0", "4") != 0 || run(completeRebuild, 3, "9", "0", "4") != 1 {
		t.Fatal("user 3's rebuild")
	}
	if got := list(t, s, 3); len(got) != 1 || !strings.HasSuffix(got[0], ":0") {
		t.Fatalf("feed %v, want the sentinel of floor 0 alone", got)
	}
	ttl, err := s.rc.Do(ctx, func(b redisx.Builder) redisx.Completed { return b.Ttl().Key(s.FeedKey(2)).Build() }).AsInt64()
	if err != nil || ttl <= 0 || ttl > 60 {
		t.Fatalf("user 2's feed lives %d s (%v), want the rebuild's 60", ttl, err)
	}
}
