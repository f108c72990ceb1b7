package pull_test

import (
	"slices"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// openChecked opens a pull store reading with read (hybrid-memcached's
// when read is a recent.Home) on the test servers, closed when t ends, and
// its checker. Its memcached requests may take 2 s, not 200 ms: the tests
// run beside others on a loaded machine, and a memcached marked down
// fences its keys, taking the drift made with them.
func openChecked(t *testing.T, read pull.ReadStrategy) (*pull.Store, reconcile.Checker) {
	t.Helper()
	database := testserver.Database(t)
	cfg := pull.Config{DSN: testserver.DSN(t), Database: database, Memcache: []string{testserver.Memcache(t)},
		Namespace: database + "/", MemcacheTimeout: 2 * time.Second, Read: read}
	var s *pull.Store
	var err error
	if home, ok := read.(recent.Home); ok {
		s, err = pull.OpenHybridMemcached(t.Context(), cfg, home)
	} else {
		s, err = pull.Open(t.Context(), cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := pull.ListsChecker(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// TestReconcile forges author lists in memcached that pass their checksum:
// one without an id, one with another author's, one with a deleted
// message's; reconcile finds exactly that drift and the repair removes it
// (the lists go, and the next read rebuilds them) under concurrent posts
// and follows, for each model that keeps the lists: pull-recent,
// pull-active and hybrid-memcached (their read strategies recent, active
// and home).
func TestReconcile(t *testing.T) {
	for _, read := range []pull.ReadStrategy{recent.Recent{}, recent.Active{}, recent.Home{}} {
		t.Run(read.Name(), func(t *testing.T) {
			s, c := openChecked(t, read)
			mc := s.RawMemcache(t, testserver.Memcache(t))
			forge := func(author timeline.UserID, ids []timeline.MessageID) {
				t.Helper()
				var list []uint64
				for _, id := range slices.Backward(slices.Sorted(slices.Values(ids))) {
					list = append(list, uint64(id))
				}
				key := s.RecentKey(author)
				if err := mc.Set(&memcache.Item{Key: key, Value: pull.EncodeList(key, list, true, time.Now().Unix())}); err != nil {
					t.Fatal(err)
				}
			}
			reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
				// Authors 2, 9 and 6 do not post during the walks.
				forge(2, w.Posts[2][1:])
				forge(9, append(slices.Clone(w.Posts[9]), w.Posts[4][0]))
				dead := w.Posts[6][2]
				timelinetest.Delete(t, s, 6, dead)
				forge(6, w.Posts[6])
				return []reconcile.Drift{
					{Kind: reconcile.Missing, View: "memcached list", User: 2, Item: int64(w.Posts[2][0])},
					{Kind: reconcile.Extra, View: "memcached list", User: 9, Item: int64(w.Posts[4][0])},
					{Kind: reconcile.Deleted, View: "memcached list", User: 6, Item: int64(dead)},
				}
			}})
		})
	}
}

// TestReconcileIndexes poisons the indexes that pull-active and
// hybrid-memcached keep in memcached, and a follow token: reader 5's
// token is put back after a follow of an author who had just posted (its
// index, built for the followees before, is served again); reader 1's
// index is put back as it was before a post of a followee's; reader 4's
// is hinted a message of another author as a followee's, and reader 5's a
// message that does not exist. Reconcile finds exactly that drift (on
// pull-active's index, the token shows as the followed author's post the
// index lacks) and the repair removes it, under concurrent posts and
// follows. Readers 1, 4 and 5 and authors 1, 5, 8 and 9 neither post nor
// follow during the walks.
func TestReconcileIndexes(t *testing.T) {
	for _, tc := range []struct {
		read pull.ReadStrategy
		view string
	}{
		// Every world reader follows 5 authors: more than twice 2.
		{recent.Active{ActiveLen: 2}, recent.IndexView},
		// The celebrity, followed by the 11 others, is pulled; indexes
		// keep 4 of the 12 messages their pushed followees wrote.
		{recent.Home{Keep: 4, Threshold: 11}, recent.HomeView},
	} {
		t.Run(tc.read.Name(), func(t *testing.T) {
			s, c := openChecked(t, tc.read)
			mc := s.RawMemcache(t, testserver.Memcache(t))
			get := func(key string) []byte {
				t.Helper()
				it, err := mc.Get(key)
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				return it.Value
			}
			set := func(key string, v []byte) {
				t.Helper()
				if err := mc.Set(&memcache.Item{Key: key, Value: v}); err != nil {
					t.Fatal(err)
				}
			}
			hint := func(user, author timeline.UserID, id timeline.MessageID) {
				t.Helper()
				key := s.IndexKey(user)
				if err := mc.Append(&memcache.Item{Key: key, Value: pull.EncodeHint(key, author, uint64(id))}); err != nil {
					t.Fatal(err)
				}
			}
			reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
				if w.Followed(5, 1) || !w.Followed(1, 5) || !w.Followed(4, 8) || !w.Followed(5, 9) {
					t.Fatal("the world changed")
				}
				// 1 posts before 5 follows them, so the post hints no index
				// of 5's.
				token := get(s.FollowKey(5))
				followed := timelinetest.Post(t, s, 1, "before the follow").ID
				timelinetest.Follow(t, s, 5, 1)
				set(s.FollowKey(5), token)

				before := get(s.IndexKey(1))
				posted := timelinetest.Post(t, s, 5, "after the backup").ID
				set(s.IndexKey(1), before)

				other := w.Posts[9][2] // newer than any of 8's
				hint(4, 8, other)
				never := posted + 1<<40 // far above what the traffic posts
				hint(5, 9, never)

				tokenDrift := reconcile.Drift{Kind: reconcile.Missing, View: tc.view, User: 5, Item: int64(followed)}
				if tc.view == recent.HomeView {
					tokenDrift = reconcile.Drift{Kind: reconcile.Stale, View: recent.TokenView, User: 5, Item: 1}
				}
				return []reconcile.Drift{
					tokenDrift,
					{Kind: reconcile.Missing, View: tc.view, User: 1, Item: int64(posted)},
					{Kind: reconcile.Extra, View: tc.view, User: 4, Item: int64(other)},
					{Kind: reconcile.Deleted, View: tc.view, User: 5, Item: int64(never)},
				}
			}})
		})
	}
}
