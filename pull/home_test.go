package pull_test

import (
	"context"
	"testing"
	"time"

	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestHomePullsCelebrities: a home index pulls the followees who had
// Threshold followers when it was built. A celebrity's post hints nobody
// and still shows, from the celebrity's list; an author who becomes a
// celebrity is pulled by the indexes built after a store learns it, while
// an index built before goes on taking its hints; every page stays exact.
func TestHomePullsCelebrities(t *testing.T) {
	f := newIndexFixture(t, "", recent.Home{Keep: 8, Threshold: 3})
	ctx := context.Background()
	followBy := func(users []timeline.UserID, author timeline.UserID) {
		t.Helper()
		for _, u := range users {
			if err := f.s.Follow(ctx, u, author); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Author 30 has three followers: a celebrity from the first read on.
	f.follow(t, 30, true)
	followBy([]timeline.UserID{40, 41}, 30)
	f.post(t, 30)
	lists := func() int64 { st := f.s.Stats(); return st.CacheHits + st.CacheMisses }

	f.newest(t, "first read") // builds the index
	before, hints := lists(), f.s.Stats().Hints
	f.newest(t, "indexed")
	if st := f.s.Stats(); st.IndexReads != 2 || st.IndexBuilds != 1 || lists() != before+1 {
		t.Fatalf("an indexed read should take one list, the celebrity's: %d lists, %+v", lists()-before, st)
	}
	f.post(t, 30)
	f.newest(t, "after the celebrity posted")
	if st := f.s.Stats(); st.Hints != hints {
		t.Fatalf("the celebrity's post sent %d hints, want none", st.Hints-hints)
	}
	f.post(t, 5)
	f.newest(t, "after a followee posted")
	if st := f.s.Stats(); st.Hints != hints+1 {
		t.Fatalf("a followee's post sent %d hints, want 1", st.Hints-hints)
	}
	f.walk(t, "walk")

	// Author 7 crosses the threshold. This store learns of it only at its
	// next reading of the celebrities; a store opened now knows at once.
	followBy([]timeline.UserID{40, 41}, 7)
	first, second := f.s, openConfig(t, f.cfg)
	f.mc.Delete(first.IndexKey(1)) // as if it had expired
	if _, err := second.Timeline(ctx, 1, timeline.Query{Limit: 2}); err != nil {
		t.Fatal(err)
	}
	st0 := second.Stats()
	f.s = second
	f.newest(t, "rebuilt by the second store")
	if st := second.Stats(); st.IndexBuilds != 1 || st.IndexReads != st0.IndexReads+1 || st.CacheHits+st.CacheMisses != st0.CacheHits+st0.CacheMisses+2 {
		t.Fatalf("the rebuilt index should pull authors 7 and 30: %+v, was %+v", st, st0)
	}
	// 7's post through the first store still hints user 1: the first
	// build's registration lasts until that index could have expired.
	// The new index drops the hint.
	hints = first.Stats().Hints
	f.posts = append(f.posts, timelinetest.Post(t, first, 7, "7 is a celebrity now"))
	if st := first.Stats(); st.Hints != hints+1 {
		t.Fatalf("a post by 7 sent %d hints, want 1 (the first index's registration)", st.Hints-hints)
	}
	f.newest(t, "after 7 posted")
	f.post(t, 9)
	f.newest(t, "after 9 posted")
	f.walk(t, "walk from the second store")
	f.s = first
	f.walk(t, "walk from the first store")
}

// TestHomeRebuildReusesRegistration: the first read after a follow
// reloads the followees and rebuilds the index in one go, and the rebuild
// keeps the registration of the index before it, writing only the new
// edge (until the same time as the others).
func TestHomeRebuildReusesRegistration(t *testing.T) {
	f := newIndexFixture(t, "", recent.Home{Keep: 8})
	ctx := context.Background()
	edges := func() map[timeline.UserID]time.Time {
		t.Helper()
		rows, err := f.s.DB().QueryContext(ctx, `SELECT author_id, until FROM home_readers WHERE user_id = 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[timeline.UserID]time.Time{}
		for rows.Next() {
			var a timeline.UserID
			var until time.Time
			if err := rows.Scan(&a, &until); err != nil {
				t.Fatal(err)
			}
			out[a] = until
		}
		return out
	}
	f.newest(t, "first read")
	before := edges()
	if len(before) != 12 {
		t.Fatalf("registered with %d authors, want 12: %v", len(before), before)
	}
	time.Sleep(5 * time.Millisecond) // a new registration would be later
	f.follow(t, 20, true)
	f.post(t, 20)
	f.newest(t, "after following 20")
	if st := f.s.Stats(); st.IndexBuilds != 2 || st.IndexFallbacks != 0 || st.IndexReads != 2 {
		t.Fatalf("the read after the follow should rebuild and use the index: %+v", st)
	}
	after := edges()
	if len(after) != 13 {
		t.Fatalf("registered with %d authors after following a 13th: %v", len(after), after)
	}
	for a, until := range after {
		if want := before[2]; !until.Equal(want) {
			t.Errorf("author %d registered until %v, want %v like the rest", a, until, want)
		}
	}
	f.walk(t, "walk")
}
