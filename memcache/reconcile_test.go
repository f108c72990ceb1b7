package memcache_test

import (
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestReconcile: a current cached page poisoned (a message taken out,
// its generation kept) is found stale, and the repair deletes it, under
// concurrent posts and follows (of the newcomers: a post of one of the
// reader's followees would replace the page itself); for the base models
// the variant is offered with.
func TestReconcile(t *testing.T) {
	for _, base := range registry.Offered(memcache.Variant) {
		t.Run(base.Name, func(t *testing.T) {
			st, c := reconciletest.Open(t, base.Name, registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t),
				Memcache: []string{testserver.Memcache(t)}, Namespace: namespace("reconcile")})
			s := st.(*memcache.Store)
			reconciletest.Run(t, reconciletest.Case{Store: s, Checker: c, QuietWorld: true,
				Corrupt: func(t *testing.T, w reconciletest.World) []reconcile.Drift {
					if err := memcache.PoisonPage(timelinetest.Context(t), s, 1, 2); err != nil {
						t.Fatal(err)
					}
					return []reconcile.Drift{{Kind: reconcile.Stale, View: memcache.PageView, User: 1}}
				}})
		})
	}
}
