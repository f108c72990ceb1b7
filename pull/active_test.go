package pull_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// activeFixture is a store whose reads go through an index, in a fresh
// database where user 1 follows authors 2 to 13, who have posted three
// messages each: by default an Active store whose indexes keep 4
// followees (so users who follow more than 8 get one).
type activeFixture struct {
	s       *pull.Store
	cfg     pull.Config
	mc      pull.RawMC
	posts   []timeline.Message
	follows map[timeline.UserID]bool // user 1's followees
}

func newActiveFixture(t *testing.T, memcacheAddr string) *activeFixture {
	t.Helper()
	return newIndexFixture(t, memcacheAddr, recent.Active{ActiveLen: 4})
}

// indexStrategies are the strategies that read through an index hints
// keep current, as the tests that hold for both run them: Active's of 4
// followees, and Home's of 8 message ids (user 1's newest page of 2 always
// comes from it).
var indexStrategies = []recent.Strategy{recent.Active{ActiveLen: 4}, recent.Home{Keep: 8}}

// eachIndex runs test for each of indexStrategies.
func eachIndex(t *testing.T, test func(t *testing.T, read recent.Strategy)) {
	for _, read := range indexStrategies {
		t.Run(read.Name(), func(t *testing.T) { test(t, read) })
	}
}

func newIndexFixture(t *testing.T, memcacheAddr string, read recent.Strategy) *activeFixture {
	t.Helper()
	cfg := config(t, pull.StrategyActive, testserver.Database(t))
	cfg.Read = read
	if memcacheAddr != "" {
		cfg.Memcache = []string{memcacheAddr}
	}
	f := &activeFixture{s: openConfig(t, cfg), cfg: cfg, follows: map[timeline.UserID]bool{}}
	f.mc = f.s.RawMemcache(t, testserver.Memcache(t))
	for a := timeline.UserID(2); a <= 13; a++ {
		f.follow(t, a, true)
	}
	for i := range 36 {
		f.post(t, timeline.UserID(2+i%12))
	}
	return f
}

func (f *activeFixture) follow(t *testing.T, a timeline.UserID, on bool) {
	t.Helper()
	op := f.s.Follow
	if !on {
		op = f.s.Unfollow
	}
	if err := op(context.Background(), 1, a); err != nil {
		t.Fatal(err)
	}
	f.follows[a] = on
}

func (f *activeFixture) post(t *testing.T, author timeline.UserID) timeline.Message {
	t.Helper()
	m := timelinetest.Post(t, f.s, author, fmt.Sprintf("post %d by %d", len(f.posts), author))
	f.posts = append(f.posts, m)
	return m
}

// want is user 1's whole timeline, newest first.
func (f *activeFixture) want() []timeline.MessageID {
	var ids []timeline.MessageID
	for _, m := range slices.Backward(f.posts) {
		if f.follows[m.Author] {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// newest checks user 1's newest page of 2 (three ids fetched: as many as
// the index can always prove).
func (f *activeFixture) newest(t *testing.T, what string) {
	t.Helper()
	p, err := f.s.Timeline(context.Background(), 1, timeline.Query{Limit: 2})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var got []timeline.MessageID
	for _, m := range p.Messages {
		got = append(got, m.ID)
	}
	if want := f.want()[:2]; !slices.Equal(got, want) {
		t.Fatalf("%s: newest page %v, want %v", what, got, want)
	}
}

// walk checks user 1's whole timeline, in pages of 5.
func (f *activeFixture) walk(t *testing.T, what string) {
	t.Helper()
	if got, want := timelinetest.WalkIDs(t, f.s, 1, 5), f.want(); !slices.Equal(got, want) {
		t.Fatalf("%s: timeline %v, want %v", what, got, want)
	}
}

// TestActiveHintsKeepIndex: once built, an index serves newest pages and
// follows every post through its hints, with no rebuild, past compaction;
// deeper pages fall back and stay exact.
func TestActiveHintsKeepIndex(t *testing.T) {
	eachIndex(t, func(t *testing.T, read recent.Strategy) {
		f := newIndexFixture(t, "", read)
		f.newest(t, "first read") // loads the followees, builds the index
		f.newest(t, "second read")
		if st := f.s.Stats(); st.IndexBuilds != 1 || st.IndexReads != 2 || st.FollowMisses != 1 {
			t.Fatalf("the first read should build the index, and both use it: %+v", st)
		}
		for i := range 80 { // more hints than indexCompactAt
			// Every author in turn, most of them outside the index of 4.
			f.post(t, timeline.UserID(2+i*5%12))
			f.newest(t, fmt.Sprintf("after post %d", i))
		}
		st := f.s.Stats()
		if st.IndexBuilds != 1 || st.IndexReads != 82 || st.IndexFallbacks != 0 || st.Hints != 80 || st.HintErrors != 0 {
			t.Fatalf("posts should reach the index through their hints alone: %+v", st)
		}
		it, err := f.mc.Get(f.s.IndexKey(1))
		if err != nil {
			t.Fatal(err)
		}
		if len(it.Value) > 30*21 { // 80 hints of 21 bytes uncompacted
			t.Fatalf("the index holds %d bytes after 80 hints: never compacted", len(it.Value))
		}
		f.walk(t, "walk")
		if st := f.s.Stats(); st.IndexFallbacks == 0 {
			t.Fatalf("pages below the index should fall back: %+v", st)
		}
	})
}

// TestActiveFollowsAndLateHints: a follow or unfollow retires the index;
// and a hint from an author the user no longer follows, landing after the
// index was rebuilt (as a post racing the unfollow can), shows nothing.
func TestActiveFollowsAndLateHints(t *testing.T) {
	eachIndex(t, func(t *testing.T, read recent.Strategy) {
		f := newIndexFixture(t, "", read)
		ctx := context.Background()
		f.newest(t, "warm")
		f.newest(t, "indexed")
		f.post(t, 20) // nobody follows 20 yet
		f.newest(t, "a post by someone not followed")
		f.follow(t, 20, true)
		f.newest(t, "after following 20") // reloads the followees
		f.newest(t, "again")              // must not use the index of before
		f.post(t, 20)
		f.newest(t, "after 20 posts again")
		f.follow(t, 20, false)
		f.newest(t, "after unfollowing 20") // reloads the followees
		f.newest(t, "again")                // rebuilds the index
		builds := f.s.Stats().IndexBuilds

		late, err := f.s.Post(ctx, 20, "posted as the unfollow commits")
		if err != nil {
			t.Fatal(err)
		}
		f.posts = append(f.posts, late)
		key := f.s.IndexKey(1)
		if err := f.mc.Append(&memcache.Item{Key: key, Value: pull.EncodeHint(key, 20, uint64(late.ID))}); err != nil {
			t.Fatal(err)
		}
		f.newest(t, "after a late hint from 20")
		f.walk(t, "walk after a late hint")
		if st := f.s.Stats(); st.IndexBuilds != builds {
			t.Fatalf("one late entry should be dropped, not trigger a rebuild: %d builds, was %d", st.IndexBuilds, builds)
		}
	})
}

// TestActiveSurvivesIndexDamage: an index that is lost, garbled, a
// placeholder, another user's, or carries a forged hint is rebuilt, and
// every read stays exact.
func TestActiveSurvivesIndexDamage(t *testing.T) {
	eachIndex(t, func(t *testing.T, read recent.Strategy) {
		f := newIndexFixture(t, "", read)
		ctx := context.Background()
		// User 21 follows the same authors: an index to copy.
		for a := timeline.UserID(2); a <= 13; a++ {
			if err := f.s.Follow(ctx, 21, a); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			if _, err := f.s.Timeline(ctx, 21, timeline.Query{Limit: 2}); err != nil {
				t.Fatal(err)
			}
		}
		f.newest(t, "warm")
		f.newest(t, "indexed")
		key := f.s.IndexKey(1)
		other, err := f.mc.Get(f.s.IndexKey(21))
		if err != nil {
			t.Fatal(err)
		}
		mine, err := f.mc.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		damage := map[string]func(){
			"deleted":        func() { f.mc.Delete(key) },
			"garbage":        func() { f.mc.Set(&memcache.Item{Key: key, Value: []byte("I\x01garbage")}) },
			"placeholder":    func() { f.mc.Set(&memcache.Item{Key: key, Value: []byte("P")}) },
			"another user's": func() { f.mc.Set(&memcache.Item{Key: key, Value: other.Value}) },
			"truncated":      func() { f.mc.Set(&memcache.Item{Key: key, Value: mine.Value[:len(mine.Value)-3]}) },
			"a forged hint": func() {
				bad := pull.EncodeHint(key, 5, 1)
				bad[len(bad)-1] ^= 1
				f.mc.Append(&memcache.Item{Key: key, Value: bad})
			},
		}
		for name, do := range damage {
			before := f.s.Stats().IndexBuilds
			do()
			f.post(t, 9)
			f.newest(t, name)
			if st := f.s.Stats(); st.IndexBuilds != before+1 {
				t.Fatalf("%s: %d index builds, want %d", name, st.IndexBuilds, before+1)
			}
			mine, _ = f.mc.Get(key)
		}
		f.walk(t, "walk")
	})
}

// TestActiveHintsWhileMemcachedDown: posts made while memcached is cut off
// cannot hint; they still succeed, reads stay exact, and once memcached
// is back this process rebuilds the indexes they missed.
func TestActiveHintsWhileMemcachedDown(t *testing.T) {
	eachIndex(t, func(t *testing.T, read recent.Strategy) {
		p := testserver.StartProxy(t, "tcp", testserver.Memcache(t))
		f := newIndexFixture(t, p.Addr, read)
		f.newest(t, "warm")
		f.newest(t, "indexed")
		p.Cut()
		f.post(t, 7)
		f.post(t, 11)
		f.newest(t, "memcached down")
		if st := f.s.Stats(); st.HintErrors == 0 {
			t.Fatalf("no hint errors counted while memcached was down: %+v", st)
		}
		builds := f.s.Stats().IndexBuilds
		p.Restore(t)
		waitServersUp(t, f.s, func() { f.newest(t, "memcached back") })
		// The server's new fence retired the follow token with the index: the
		// first read after reloads the followees, the next builds an index.
		f.newest(t, "memcached back, read again")
		if st := f.s.Stats(); st.IndexBuilds < builds+1 {
			t.Fatalf("the index that missed hints was used without a rebuild: %+v", st)
		}
		f.walk(t, "walk")
	})
}

// TestActiveRacingHints posts from two stores (one namespace) while
// others read newest pages and keep destroying the index and the authors'
// hint targets, so that hints race index rebuilds and registrations race
// rebuilds of the targets. A read must show the newest post that had returned
// before it began, or a full page of newer ones.
func TestActiveRacingHints(t *testing.T) {
	eachIndex(t, func(t *testing.T, read recent.Strategy) {
		f := newIndexFixture(t, "", read)
		r := newRace(t, f, func(st, st2 pull.Stats) bool {
			return st.IndexReads+st2.IndexReads > 0 && st.IndexBuilds+st2.IndexBuilds >= 3
		})
		for w := range 4 {
			r.wg.Go(func() {
				s := r.stores[w%2]
				for i := 0; !r.end.over(); i++ {
					m, err := s.Post(r.ctx, timeline.UserID(2+(w*3+i)%12), fmt.Sprintf("race %d/%d", w, i))
					if err != nil {
						r.errs <- err
						return
					}
					r.posted(m)
					acked(&r.newestAcked, m.ID)
				}
			})
		}
		r.wg.Go(func() {
			for i := 0; !r.end.over(); i++ {
				switch i % 4 {
				case 0:
					f.mc.Delete(f.s.IndexKey(1))
				case 1:
					f.mc.Set(&memcache.Item{Key: f.s.IndexKey(1), Value: []byte("x")})
				case 2:
					f.mc.Delete(f.s.TargetsKey(timeline.UserID(2 + i%12)))
				case 3:
					f.mc.Set(&memcache.Item{Key: f.s.TargetsKey(timeline.UserID(2 + i%12)), Value: []byte("T")})
				}
				time.Sleep(time.Duration(5+i%5) * time.Millisecond)
			}
		})
		r.read()
		r.wait(t)
		st, st2 := r.stores[0].Stats(), r.stores[1].Stats()
		t.Logf("%+v\n%+v", st, st2)
		if st.IndexReads+st2.IndexReads == 0 || st.IndexBuilds+st2.IndexBuilds < 3 {
			t.Fatal("the indexes were never used, or never rebuilt: the test raced nothing")
		}
		f.newest(t, "after the race")
		f.walk(t, "walk after the race")
	})
}

// race is what the racing tests share: two stores on f's namespace (f's
// own first), the race's end (see raceEnd), the posts that returned, the
// newest that returned of the authors read throughout (newestAcked, see
// acked), and the goroutines of the race with the errors they send.
type race struct {
	f           *activeFixture
	ctx         context.Context
	stores      []*pull.Store
	end         *raceEnd
	newestAcked atomic.Int64
	wg          sync.WaitGroup
	errs        chan error
	mu          sync.Mutex
	raced       []timeline.Message
}

// newRace starts a race on f whose end comes once enough reports true of
// the two stores' stats.
func newRace(t *testing.T, f *activeFixture, enough func(st, st2 pull.Stats) bool) *race {
	r := &race{f: f, ctx: context.Background(), stores: []*pull.Store{f.s, openConfig(t, f.cfg)}, errs: make(chan error, 16)}
	r.end = newRaceEnd(func() bool { return enough(r.stores[0].Stats(), r.stores[1].Stats()) })
	return r
}

// posted records m, a post that returned.
func (r *race) posted(m timeline.Message) {
	r.mu.Lock()
	r.raced = append(r.raced, m)
	r.mu.Unlock()
}

// read starts a reader on each store (readWhileRacing).
func (r *race) read() {
	for _, s := range r.stores {
		r.wg.Go(func() { readWhileRacing(r.ctx, s, &r.newestAcked, r.end, r.errs) })
	}
}

// wait waits for the race's goroutines, fails on any error they sent, and
// adds the posts they made, in id order, to the fixture's.
func (r *race) wait(t *testing.T) {
	t.Helper()
	r.wg.Wait()
	close(r.errs)
	for err := range r.errs {
		t.Fatal(err)
	}
	slices.SortFunc(r.raced, func(a, b timeline.Message) int { return int(a.ID - b.ID) })
	r.f.posts = append(r.f.posts, r.raced...)
}

// acked raises newest to id, a post that returned, if it is newer.
func acked(newest *atomic.Int64, id timeline.MessageID) {
	for {
		old := newest.Load()
		if int64(id) <= old || newest.CompareAndSwap(old, int64(id)) {
			return
		}
	}
}

// readWhileRacing reads user 1's newest page through s until the race ends,
// and sends an error to errs if a page lacks the newest post that had
// returned before the read began (newest) and is not a full page of newer
// ones.
func readWhileRacing(ctx context.Context, s *pull.Store, newest *atomic.Int64, end *raceEnd, errs chan<- error) {
	for !end.over() {
		want := timeline.MessageID(newest.Load())
		p, err := s.Timeline(ctx, 1, timeline.Query{Limit: 2})
		if err != nil {
			errs <- err
			return
		}
		if want == 0 {
			continue
		}
		ok := false
		for _, m := range p.Messages {
			ok = ok || m.ID == want
		}
		if !ok && (len(p.Messages) < 2 || p.Messages[1].ID < want) {
			errs <- fmt.Errorf("post %d had returned before the read began; the newest page %v neither holds it nor anything newer", want, p.Messages)
			return
		}
	}
}

// TestActiveHintsOnlyActiveReaders: a post hints only the followers whose
// entry (index_readers for Active, home_readers for Home) has not
// expired, and the next index build renews it. (memcached's copy of the
// author's targets is deleted with the entry, as if it had expired too.)
func TestActiveHintsOnlyActiveReaders(t *testing.T) {
	eachIndex(t, func(t *testing.T, read recent.Strategy) {
		table := map[string]string{"active": "index_readers", "home": "home_readers"}[read.Name()]
		hintsOnlyActiveReaders(t, newIndexFixture(t, "", read), table)
	})
}

func hintsOnlyActiveReaders(t *testing.T, f *activeFixture, table string) {
	ctx := context.Background()
	f.newest(t, "indexed")
	f.post(t, 5)
	if st := f.s.Stats(); st.Hints != 1 {
		t.Fatalf("a post by a followee of an index reader: %d hints, want 1", st.Hints)
	}
	// As if the index had outlived its age: the entry expires, and the
	// index with it.
	if _, err := f.s.DB().ExecContext(ctx, `UPDATE `+table+` SET until = ? WHERE user_id = 1`, time.Now().UTC().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	f.mc.Delete(f.s.IndexKey(1))
	f.mc.Delete(f.s.TargetsKey(5)) // rebuilt from the table
	f.post(t, 5)
	if st := f.s.Stats(); st.Hints != 1 {
		t.Fatalf("a post after the reader's entry expired: %d hints in all, want still 1", st.Hints)
	}
	f.newest(t, "rebuilt")
	f.post(t, 6)
	f.newest(t, "hinted again")
	if st := f.s.Stats(); st.Hints != 2 || st.IndexBuilds != 2 {
		t.Fatalf("the rebuild should renew the entry: %+v", st)
	}
}

// TestActiveTargetsDamage: an author's hint targets that memcached lost or
// garbled are rebuilt from the database by the next post, which still
// hints the index.
func TestActiveTargetsDamage(t *testing.T) {
	eachIndex(t, func(t *testing.T, read recent.Strategy) {
		f := newIndexFixture(t, "", read)
		f.newest(t, "indexed")
		key := f.s.TargetsKey(7)
		for name, damage := range map[string]func(){
			"deleted":     func() { f.mc.Delete(key) },
			"placeholder": func() { f.mc.Set(&memcache.Item{Key: key, Value: []byte("P")}) },
			"garbage":     func() { f.mc.Set(&memcache.Item{Key: key, Value: []byte("T\x05junk")}) },
			"a forged record": func() {
				rec := pull.EncodeHint(key, 1, 1) // a hint is no target record
				f.mc.Append(&memcache.Item{Key: key, Value: rec})
			},
		} {
			hints := f.s.Stats().Hints
			damage()
			f.post(t, 7)
			f.newest(t, name)
			if st := f.s.Stats(); st.Hints != hints+1 || st.IndexBuilds != 1 {
				t.Fatalf("%s: the post should hint the index from rebuilt targets: %+v", name, st)
			}
		}
		f.walk(t, "walk")
	})
}

// TestActiveReadsPrimeTargets: a read that rebuilds authors' lists also
// builds their missing hint targets, so that their next posts find them.
func TestActiveReadsPrimeTargets(t *testing.T) {
	f := newActiveFixture(t, "")
	for a := timeline.UserID(2); a <= 13; a++ {
		f.mc.Delete(f.s.TargetsKey(a))
		f.mc.Delete(f.s.RecentKey(a))
	}
	f.newest(t, "lists rebuilt") // through the index: three lists
	rebuilt := 0
	for a := timeline.UserID(2); a <= 13; a++ {
		if _, err := f.mc.Get(f.s.RecentKey(a)); err != nil {
			continue
		}
		rebuilt++
		it, err := f.mc.Get(f.s.TargetsKey(a))
		if err != nil {
			t.Fatalf("author %d: no hint targets after their list was rebuilt: %v", a, err)
		}
		if len(it.Value) < 5 || it.Value[0] != 'T' {
			t.Fatalf("author %d: targets %q", a, it.Value)
		}
	}
	if rebuilt == 0 {
		t.Fatal("the read rebuilt no list")
	}
	f.post(t, 4)
	f.newest(t, "after a post")
	if st := f.s.Stats(); st.Hints != 1 {
		t.Fatalf("the post should hint user 1's index: %+v", st)
	}

	// Prime builds them without any list being rebuilt.
	var authors []timeline.UserID
	for a := timeline.UserID(2); a <= 13; a++ {
		f.mc.Delete(f.s.TargetsKey(a))
		authors = append(authors, a)
	}
	if err := f.s.Prime(context.Background(), authors); err != nil {
		t.Fatal(err)
	}
	for _, a := range authors {
		if it, err := f.mc.Get(f.s.TargetsKey(a)); err != nil || it.Value[0] != 'T' {
			t.Fatalf("author %d: no hint targets after Prime: %v", a, err)
		}
	}
}

// TestActiveOneOfTwoMemcachedDown: with two memcached servers and one of
// them dead, no read fails, including the first reads of users who follow
// more than twice ActiveLen authors and whose follow token and index live
// on the live server (they build an index, registering as hint targets of
// authors whose targets live on the dead one), and every page is exact.
func TestActiveOneOfTwoMemcachedDown(t *testing.T) {
	for _, read := range []recent.Strategy{recent.Active{ActiveLen: 2}, recent.Home{Keep: 4}} {
		t.Run(read.Name(), func(t *testing.T) { oneOfTwoMemcachedDown(t, read) })
	}
}

func oneOfTwoMemcachedDown(t *testing.T, read recent.Strategy) {
	ctx := timelinetest.Context(t)
	m1, m2 := testserver.StartMemcached(t, 0), testserver.StartRestartableMemcached(t)
	cfg := config(t, pull.StrategyActive, testserver.Database(t))
	cfg.Memcache = []string{m1.Addr, m2.Addr}
	cfg.Read = read
	s := openConfig(t, cfg)
	var servers memcache.ServerList
	servers.SetServers(m1.Addr, m2.Addr)
	onLive := func(key string) bool {
		a, err := servers.PickServer(key)
		return err == nil && a.String() == m1.Addr
	}
	const authors = 12
	var readers []timeline.UserID
	for u := timeline.UserID(authors + 1); len(readers) < 8; u++ {
		if onLive(s.FollowKey(u)) && onLive(s.IndexKey(u)) {
			readers = append(readers, u)
		}
	}
	ref := timeline.NewMemory()
	for _, u := range readers {
		for a := timeline.UserID(1); a <= authors; a++ {
			if (int(u)+int(a))%4 != 0 { // 9 of the 12 authors each
				timelinetest.Follow(t, s, u, a)
				timelinetest.Follow(t, ref, u, a)
			}
		}
	}
	post := func(a timeline.UserID, body string) {
		timelinetest.Post(t, s, a, body)
		timelinetest.Post(t, ref, a, body)
	}
	for i := range 3 * authors {
		post(timeline.UserID(1+i%authors), fmt.Sprintf("before %d", i))
	}
	m2.Kill()
	failed := 0
	for round := range 3 {
		for i := range authors {
			post(timeline.UserID(1+i), fmt.Sprintf("down %d/%d", round, i))
		}
		for _, u := range readers {
			got, err := s.Timeline(ctx, u, timeline.Query{})
			if err != nil {
				failed++
				t.Errorf("round %d, user %d: %v", round, u, err)
				continue
			}
			want := timelinetest.Newest(t, ref, u)
			if g, w := bodies(got.Messages), bodies(want.Messages); !slices.Equal(g, w) {
				t.Errorf("round %d, user %d:\n got %q\nwant %q", round, u, g, w)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d reads failed with one of two memcached servers down", failed)
	}
}

func bodies(msgs []timeline.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Body
	}
	return out
}
