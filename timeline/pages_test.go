package timeline_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pushpull/pushpull/timeline"
)

// TestPages: the walk yields every page in order and ends after the last;
// it stops when the loop does; an error ends it; a store that repeats a
// cursor cannot make it loop.
func TestPages(t *testing.T) {
	ctx := context.Background()
	s := timeline.NewMemory()
	defer s.Close()
	if err := s.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	for range 7 {
		if _, err := s.Post(ctx, 2, "m"); err != nil {
			t.Fatal(err)
		}
	}
	var sizes []int
	var last timeline.MessageID
	for page, err := range timeline.Pages(ctx, s, 1, timeline.Query{Limit: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			if last != 0 && m.ID >= last {
				t.Fatalf("id %d after %d", m.ID, last)
			}
			last = m.ID
		}
		sizes = append(sizes, len(page.Messages))
	}
	if len(sizes) != 3 || sizes[0] != 3 || sizes[1] != 3 || sizes[2] != 1 {
		t.Fatalf("page sizes %v, want [3 3 1]", sizes)
	}

	pages := 0
	for range timeline.Pages(ctx, s, 1, timeline.Query{Limit: 3}) {
		pages++
		break
	}
	if pages != 1 {
		t.Fatalf("%d pages after a break", pages)
	}

	pages = 0
	for page, err := range timeline.Pages(ctx, s, 9, timeline.Query{}) {
		if err != nil || len(page.Messages) != 0 {
			t.Fatalf("empty timeline: %+v, %v", page, err)
		}
		pages++
	}
	if pages != 1 {
		t.Fatalf("empty timeline: %d pages, want 1", pages)
	}

	var errs []error
	for _, err := range timeline.Pages(ctx, s, 0, timeline.Query{}) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], timeline.ErrInvalidUser) {
		t.Fatalf("bad user: %v", errs)
	}

	stuck := stuckStore{s}
	n := 0
	for _, err := range timeline.Pages(ctx, stuck, 1, timeline.Query{Limit: 3}) {
		if n++; n > 10 {
			t.Fatal("the walk did not end")
		}
		if err != nil && !errors.Is(err, timeline.ErrNoProgress) {
			t.Fatal(err)
		}
	}
	if n != 2 {
		t.Fatalf("%d steps over a store that repeats its cursor, want 2 (a page, then ErrNoProgress)", n)
	}
}

// stuckStore answers every page with the first page's cursor.
type stuckStore struct{ timeline.Store }

func (s stuckStore) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	p, err := s.Store.Timeline(ctx, user, timeline.Query{Limit: q.Limit})
	return p, err
}

// wrapped is a decorator over a store, with an ability of its own.
type wrapped struct{ timeline.Store }

func (w wrapped) Unwrap() timeline.Store     { return w.Store }
func (w wrapped) Counters() map[string]int64 { return map[string]int64{"own": 1} }

// settling is a store with the Settler ability.
type settling struct{ timeline.Store }

func (settling) Settle(context.Context) error { return nil }

// TestAs: an ability is found on the store itself first, then down the
// chain of wrappers, and not at all when no store in it has it.
func TestAs(t *testing.T) {
	inner := settling{timeline.NewMemory()}
	s := wrapped{wrapped{inner}}
	if _, ok := timeline.As[timeline.Settler](s); !ok {
		t.Fatal("the Settler two wrappers down was not found")
	}
	if c, ok := timeline.As[timeline.Counting](s); !ok || c.Counters()["own"] != 1 {
		t.Fatal("the outer wrapper's own Counting was not found")
	}
	if _, ok := timeline.As[timeline.Lagging](s); ok {
		t.Fatal("an ability no store has was found")
	}
	if _, ok := timeline.As[timeline.Settler](wrapped{timeline.NewMemory()}); ok {
		t.Fatal("a wrapper of a store that does not settle passes for one")
	}
}
