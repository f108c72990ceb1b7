package pull_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushpull/pushpull/pull"
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

// TestHomeFollowPatchesIndex: the first read after a few follows or
// unfollows brings the index up to date instead of rebuilding it: an
// unfollowed author's entries go, a followed author's newest messages above
// the floor come from the database (one range scan), a followed celebrity
// is pulled, and only the new edge is registered, until the same time as
// the others. Many changes at once rebuild. Every page stays exact.
func TestHomeFollowPatchesIndex(t *testing.T) {
	f := newIndexFixture(t, "", recent.Home{Keep: 8, Threshold: 3})
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
	// Author 30 has three followers, user 1 not among them: a celebrity
	// from the first read on.
	for _, u := range []timeline.UserID{40, 41, 42} {
		if err := f.s.Follow(ctx, u, 30); err != nil {
			t.Fatal(err)
		}
	}
	f.newest(t, "first read")
	before := edges()
	if len(before) != 12 {
		t.Fatalf("registered with %d authors, want 12: %v", len(before), before)
	}
	expect := func(what string, builds, patches int64) {
		t.Helper()
		f.newest(t, what)
		if st := f.s.Stats(); st.IndexBuilds != builds || st.IndexPatches != patches {
			t.Fatalf("%s: %d builds and %d patches, want %d and %d: %+v", what, st.IndexBuilds, st.IndexPatches, builds, patches, st)
		}
		f.walk(t, what)
	}

	// 20 posts more than an index holds before user 1 follows it: the
	// patch takes its newest and raises the floor.
	for range 10 {
		f.post(t, 20)
	}
	time.Sleep(5 * time.Millisecond) // a new registration would be later
	f.follow(t, 20, true)
	expect("after following 20", 1, 1)
	after := edges()
	if len(after) != 13 {
		t.Fatalf("registered with %d authors after following a 13th: %v", len(after), after)
	}
	for a, until := range after {
		if want := before[2]; !until.Equal(want) {
			t.Errorf("author %d registered until %v, want %v like the rest", a, until, want)
		}
	}
	f.post(t, 20)
	f.post(t, 3)
	expect("after 20 and 3 posted", 1, 1)

	f.follow(t, 20, false)
	f.follow(t, 5, false)
	expect("after unfollowing 20 and 5", 1, 2)
	f.post(t, 20) // registered still: hints an index that must not show it
	f.post(t, 6)
	expect("after 20 and 6 posted", 1, 2)

	hints := f.s.Stats().Hints
	f.follow(t, 30, true)
	expect("after following the celebrity 30", 1, 3)
	f.post(t, 30)
	if st := f.s.Stats(); st.Hints != hints {
		t.Fatalf("the celebrity's post sent %d hints, want none", st.Hints-hints)
	}
	expect("after 30 posted", 1, 3)
	if got := edges(); len(got) != 13 {
		t.Fatalf("registered with %d authors, want 13 (30 is pulled): %v", len(got), got)
	}

	f.follow(t, 5, true)
	f.follow(t, 30, false)
	expect("after following 5 again and unfollowing 30", 1, 4)

	for a := timeline.UserID(50); a < 70; a++ {
		f.follow(t, a, true)
	}
	f.post(t, 60)
	expect("after 20 follows at once", 2, 4)
}

// TestHomePatchRaisesFloor: a followed author with more messages above
// the index's floor than the index holds raises the floor to its first
// message left out, so that a page merged with a pulled celebrity's
// messages from below it is not taken for proven.
func TestHomePatchRaisesFloor(t *testing.T) {
	f := newIndexFixture(t, "", recent.Home{Keep: 8, Threshold: 3})
	ctx := context.Background()
	for _, u := range []timeline.UserID{40, 41} {
		if err := f.s.Follow(ctx, u, 30); err != nil {
			t.Fatal(err)
		}
	}
	f.follow(t, 30, true) // a celebrity, pulled by the first build
	f.newest(t, "first read")
	for range 3 {
		f.post(t, 30)
	}
	for range 10 {
		f.post(t, 20)
	}
	f.follow(t, 20, true)
	f.newest(t, "after following 20")
	if st := f.s.Stats(); st.IndexBuilds != 1 || st.IndexPatches != 1 {
		t.Fatalf("the read after the follow should patch: %+v", st)
	}
	f.walk(t, "walk")
}

// TestHomePatchRacingHints: posts race follows and unfollows of two more
// authors, so that hints land while reads patch the index. A read must
// show the newest post of an author followed throughout that had returned
// before it began, or a full page of newer ones; afterwards every page is
// exact.
func TestHomePatchRacingHints(t *testing.T) {
	f := newIndexFixture(t, "", recent.Home{Keep: 8})
	r := newRace(t, f, func(st, st2 pull.Stats) bool { return st.IndexPatches+st2.IndexPatches >= 10 })
	var following [2]atomic.Bool
	for w := range 3 {
		r.wg.Go(func() {
			s := r.stores[w%2]
			for i := 0; !r.end.over(); i++ {
				author := timeline.UserID(2 + (w*3+i)%12)
				if i%3 == 2 {
					author = timeline.UserID(20 + i%2) // followed on and off
				}
				m, err := s.Post(r.ctx, author, fmt.Sprintf("race %d/%d", w, i))
				if err != nil {
					r.errs <- err
					return
				}
				r.posted(m)
				if author >= 20 {
					continue
				}
				acked(&r.newestAcked, m.ID)
			}
		})
	}
	r.wg.Go(func() {
		for i := 0; !r.end.over(); i++ {
			a := i % 2
			on := !following[a].Load()
			op := r.stores[i%2].Follow
			if !on {
				op = r.stores[i%2].Unfollow
			}
			if err := op(r.ctx, 1, timeline.UserID(20+a)); err != nil {
				r.errs <- err
				return
			}
			following[a].Store(on)
			time.Sleep(time.Duration(2+i%5) * time.Millisecond)
		}
	})
	r.read()
	r.wait(t)
	f.follows[20], f.follows[21] = following[0].Load(), following[1].Load()
	st, st2 := r.stores[0].Stats(), r.stores[1].Stats()
	t.Logf("%+v\n%+v", st, st2)
	if st.IndexPatches+st2.IndexPatches < 10 {
		t.Fatal("the indexes were hardly ever patched: the test raced nothing")
	}
	for _, s := range r.stores {
		f.s = s
		f.newest(t, "after the race")
		f.walk(t, "walk after the race")
	}
}

// TestHomeDeepPagesReadTheDatabase: a page below the home index's floor
// is read from the database, by the keyset merge, not from every
// followee's list: this design's pages read no list of an author below
// its threshold, so the lists are cold, and such a page rebuilt every one
// of them (about 1,800 rows for one page at 3,000 users).
func TestHomeDeepPagesReadTheDatabase(t *testing.T) {
	f := newIndexFixture(t, "", recent.Home{Keep: 8})
	f.newest(t, "first read") // builds the index
	f.newest(t, "indexed")
	before := f.s.Stats()
	f.walk(t, "walk")
	st := f.s.Stats()
	if st.IndexFallbacks == before.IndexFallbacks {
		t.Fatalf("no page fell below the index of 8: %+v", st)
	}
	if st.Rebuilds != before.Rebuilds || st.CacheMisses != before.CacheMisses || st.CacheErrors != before.CacheErrors {
		t.Fatalf("pages below the index rebuilt %d lists (%d missing, %d cache errors): %+v",
			st.Rebuilds-before.Rebuilds, st.CacheMisses-before.CacheMisses, st.CacheErrors-before.CacheErrors, st)
	}
}

// TestHomeBuildUnderWayReadsTheDatabase: a read that finds its reader's
// index being built or patched by another read of this process takes its
// page from the database too, not from the cold lists of every followee
// (which it rebuilt, some 1,800 rows at 3,000 users). Reads of one reader
// race a patch after each follow or unfollow until one of them finds the
// build under way.
func TestHomeBuildUnderWayReadsTheDatabase(t *testing.T) {
	f := newIndexFixture(t, "", recent.Home{Keep: 64})
	ctx := context.Background()
	f.newest(t, "first read") // builds the index
	before := f.s.Stats()
	want := f.want()[:2]
	for round := 0; round < 200 && f.s.Stats().IndexFallbacks == before.IndexFallbacks; round++ {
		f.follow(t, timeline.UserID(20+round%2), round/2%2 == 0) // authors who never post
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				p, err := f.s.Timeline(ctx, 1, timeline.Query{Limit: 2})
				if err == nil && (len(p.Messages) != 2 || p.Messages[0].ID != want[0] || p.Messages[1].ID != want[1]) {
					err = fmt.Errorf("newest page %v, want %v", p.Messages, want)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	st := f.s.Stats()
	if st.IndexFallbacks == before.IndexFallbacks {
		t.Fatalf("no read found a build under way in 200 rounds: %+v", st)
	}
	if st.Rebuilds != before.Rebuilds || st.CacheErrors != before.CacheErrors {
		t.Fatalf("reads during a build rebuilt %d lists (%d cache errors): %+v",
			st.Rebuilds-before.Rebuilds, st.CacheErrors-before.CacheErrors, st)
	}
}
