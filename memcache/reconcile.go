package memcache

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// PageView is the name reconcile reports cached pages under.
const PageView = "memcache page"

// errNotCache: the store given to Checker is not a cache.
var errNotCache = errors.New("not a store of the memcache variant")

// Checker is the variant's registry.Variant.Reconcile: a reconcile.Looks
// over the cached newest pages (the base's own views are its model's
// checker's). Under the invalidate policy, a page is current while it
// carries its user's generation, and a current page must be the wrapped
// store's newest page: one that differs is Stale, and a repair deletes
// it, so the next read fills it from the wrapped store (a post or follow
// meanwhile bumps a generation and needs no page). Under the ttl policy a
// page may lag the store for the TTL by design, and nothing is checked.
// The comparison reads the wrapped store's newest page after memcached,
// twice a second apart (reconcile.Looks), so a post between its commit and
// its invalidation is not taken for drift.
func Checker(_ registry.Model, s timeline.Store) (reconcile.Checker, error) {
	cs, ok := s.(*Store)
	if !ok {
		return nil, fmt.Errorf("%T: %w", s, errNotCache)
	}
	holder, ok := timeline.As[timeline.DBHolder](cs.inner)
	if !ok {
		return nil, fmt.Errorf("%T: %w", cs.inner, errNotCache)
	}
	return reconcile.Looks{
		List: func(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error) {
			return reconcile.UsersIn(ctx, holder.DB(), after, limit, "follows.follower_id")
		},
		Look: cs.lookPages,
		Drop: func(ctx context.Context, user timeline.UserID) (int, error) {
			switch err := cs.mc.Delete(ctx, cs.pageKey(user)); {
			case errors.Is(err, memcached.ErrCacheMiss):
				return 0, nil
			case err != nil:
				return 0, err
			}
			return 1, nil
		},
	}, nil
}

// lookPages compares the current cached pages of users with the wrapped
// store's newest pages.
func (s *Store) lookPages(ctx context.Context, users []timeline.UserID) ([]reconcile.Drift, int64, error) {
	if s.policy != PolicyInvalidate {
		return nil, 0, nil
	}
	var drift []reconcile.Drift
	var rows int64
	for _, u := range users {
		items, err := s.mc.Get(ctx, []string{s.genKey(u), s.pageKey(u)})
		if err != nil {
			return nil, rows, err
		}
		if items[0] == nil || items[1] == nil {
			continue // no generation or no page: nothing is served
		}
		gen, err := strconv.ParseUint(string(items[0].Value), 10, 64)
		if err != nil {
			continue // a read replaces it
		}
		e, err := decodeEntry(items[1].Value)
		if err != nil || e.gen != gen {
			continue // not current: never served
		}
		fresh, err := s.inner.Timeline(ctx, u, timeline.Query{})
		if err != nil {
			return nil, rows, err
		}
		rows += int64(len(e.page.Messages) + len(fresh.Messages))
		if !sameIDs(e.page.Messages, fresh.Messages) {
			d := reconcile.Drift{Kind: reconcile.Stale, View: PageView, User: u}
			if len(e.page.Messages) > 0 {
				d.Have = int64(e.page.Messages[0].ID)
			}
			if len(fresh.Messages) > 0 {
				d.Want = int64(fresh.Messages[0].ID)
			}
			drift = append(drift, d)
		}
	}
	return drift, rows, nil
}

func sameIDs(a, b []timeline.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}
