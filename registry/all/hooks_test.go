package all_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// TestWriteHooksAcrossStores: a store that keeps state beside a database
// (cached pages, memcached lists, Redis feeds and indexes) and a plain
// store of the same database opened before it, and another opened after
// it, as processes would be. After the keeper has served a warm page, each
// write through a plain store either reaches the keeper's next page or
// fails with schema.ErrWriteHooks and writes nothing (the later store may
// refuse to open with it instead); a stale page is the failure.
func TestWriteHooksAcrossStores(t *testing.T) {
	for _, pair := range []struct{ plain, keeper string }{
		{"push", "push+memcache"},
		{"pull-merge", "pull-merge+memcache"},
		{"pull-sp", "pull-recent"},
		{"pull-merge", "push-redis"},
		{"pull-merge", "pull-redis"},
	} {
		t.Run(pair.keeper, func(t *testing.T) {
			ctx := context.Background()
			db := fresh(t, lookup(t, pair.plain))
			open := func(name string) timeline.Store {
				t.Helper()
				m := lookup(t, name)
				s, err := m.Open(ctx, config(t, m, db))
				if err != nil {
					t.Fatalf("open %s: %v", name, err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			plain := open(pair.plain)
			if err := plain.Follow(ctx, 1, 2); err != nil {
				t.Fatal(err)
			}
			old, err := plain.Post(ctx, 2, "before")
			if err != nil {
				t.Fatal(err)
			}
			keeper := open(pair.keeper)
			newest := func() []timeline.MessageID {
				t.Helper()
				if s, ok := keeper.(timeline.Settler); ok {
					if err := s.Settle(ctx); err != nil {
						t.Fatal(err)
					}
				}
				p, err := keeper.Timeline(ctx, 1, timeline.Query{}) // the page a cache keeps
				if err != nil {
					t.Fatal(err)
				}
				var ids []timeline.MessageID
				for _, m := range p.Messages {
					ids = append(ids, m.ID)
				}
				return ids
			}
			if got := newest(); !slices.Equal(got, []timeline.MessageID{old.ID}) {
				t.Fatalf("the keeper's warm page: %v, want [%d]", got, old.ID)
			}
			judge := func(op string, err error, want []timeline.MessageID) {
				t.Helper()
				got := newest()
				switch {
				case err == nil && !slices.Equal(got, want):
					t.Errorf("%s through %s succeeded, and %s's next page is %v, want %v", op, pair.plain, pair.keeper, got, want)
				case err != nil && !errors.Is(err, schema.ErrWriteHooks):
					t.Errorf("%s through %s: %v, want success or an ErrWriteHooks", op, pair.plain, err)
				case err != nil && !slices.Equal(got, []timeline.MessageID{old.ID}):
					t.Errorf("%s through %s was refused, and %s's next page is %v: it wrote", op, pair.plain, pair.keeper, got)
				}
			}
			// A plain store opened after the keeper, as a process started
			// later would be, may refuse to open; if it opens, it is
			// judged as the first.
			m := lookup(t, pair.plain)
			late, err := m.Open(ctx, config(t, m, db))
			switch {
			case errors.Is(err, schema.ErrWriteHooks):
			case err != nil:
				t.Fatalf("open %s after %s: %v", pair.plain, pair.keeper, err)
			default:
				defer late.Close()
				msg, err := late.Post(ctx, 2, "later")
				judge("a post through a store opened later", err, []timeline.MessageID{msg.ID, old.ID})
				if err == nil {
					return
				}
			}
			msg, err := plain.Post(ctx, 2, "after")
			judge("a post", err, []timeline.MessageID{msg.ID, old.ID})
			if err == nil {
				return // it ran the hooks; the rest would test them again
			}
			err = plain.Unfollow(ctx, 1, 2)
			judge("an unfollow", err, nil)
			err = plain.Delete(ctx, 2, old.ID)
			judge("a delete", err, nil)
		})
	}
}

func lookup(t *testing.T, name string) registry.Model {
	t.Helper()
	m, err := registry.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
