package pull_test

import (
	"slices"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestReconcile forges author lists in memcached that pass their checksum:
// one without an id, one with another author's, one with a deleted
// message's; reconcile finds exactly that drift and the repair removes it
// (the lists go, and the next read rebuilds them) under concurrent posts
// and follows, for each model that keeps the lists.
func TestReconcile(t *testing.T) {
	for _, model := range []string{pull.ModelName(pull.StrategyRecent), pull.ModelName(pull.StrategyActive), pull.HybridMemcachedModelName} {
		t.Run(model, func(t *testing.T) {
			database := testserver.Database(t)
			st, c := reconciletest.Open(t, model, registry.Config{DSN: testserver.DSN(t), Database: database,
				Memcache: []string{testserver.Memcache(t)}, Namespace: database + "/"})
			s := st.(*pull.Store)
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
