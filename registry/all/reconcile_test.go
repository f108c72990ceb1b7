package all_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// uncheckedViews are the models that keep a view beside the record but
// declare no checker of it yet: none.
var uncheckedViews []string

// keepsNoView reports whether m keeps nothing beside the record: the
// reference, and the pull strategies that read only SQL tables.
func keepsNoView(m registry.Model) bool {
	return m.Family == registry.FamilyReference ||
		(m.Family == registry.FamilyPull && m.Variant == "" && m.Needs&(registry.Memcached|registry.Redis) == 0)
}

// TestReconcileRates: a reconcile of a model on Vitess reads at most
// reconcile.DefaultVitessRate rows a second unless told, of any other
// model reconcile.DefaultRate.
func TestReconcileRates(t *testing.T) {
	vitess := 0
	for _, m := range registry.Listed() {
		want := float64(reconcile.DefaultRate)
		if m.OnVitess() {
			want = reconcile.DefaultVitessRate
			vitess++
		}
		if got := m.ReconcileRate(); got != want {
			t.Errorf("%s (on Vitess: %v): reconcile rate %v, want %v", m.Name, m.OnVitess(), got, want)
		}
	}
	if vitess == 0 {
		t.Error("no model on Vitess")
	}
}

// TestCheckers: every model with a view declares a checker, but for the
// list of those that have none yet; each checker is made from the model's
// store and finds no drift in a database written only through the store
// (two follows and two posts); a model without one says so.
func TestCheckers(t *testing.T) {
	ctx := context.Background()
	checked := 0
	for _, m := range registry.Listed() {
		unchecked := slices.Contains(uncheckedViews, m.Name)
		switch {
		case m.Reconcile == nil && !keepsNoView(m) && !unchecked:
			t.Errorf("%s keeps a view beside the record and declares no checker of it", m.Name)
			continue
		case m.Reconcile != nil && (keepsNoView(m) || unchecked):
			t.Errorf("%s declares a checker, but is listed as keeping no view, or none checked", m.Name)
			continue
		case m.Reconcile == nil:
			if _, err := m.Checker(nil); !errors.Is(err, registry.ErrNoDerivedView) {
				t.Errorf("%s: Checker: %v, want ErrNoDerivedView", m.Name, err)
			}
			continue
		}
		checked++
		t.Run(m.Name, func(t *testing.T) {
			s, err := m.Open(ctx, config(t, m, fresh(t, m)))
			if err != nil {
				t.Fatalf("open %s: %v", m.Name, err)
			}
			defer s.Close()
			c, err := m.Checker(s)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Checker(nil); err == nil {
				t.Error("a checker of no store")
			}
			for _, u := range []timeline.UserID{1, 2} {
				for _, f := range []timeline.UserID{2, 3} {
					if u != f {
						if err := s.Follow(ctx, u, f); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			for _, a := range []timeline.UserID{2, 3} {
				if _, err := s.Post(ctx, a, "hello"); err != nil {
					t.Fatal(err)
				}
			}
			timelinetest.Settle(t, s)
			r, err := reconcile.Run(ctx, c, reconcile.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if found, _ := r.Found(); found != 0 || r.Users == 0 || !r.Complete {
				t.Errorf("%s: %+v", m.Name, r)
			}
		})
	}
	if checked < 7 {
		t.Errorf("only %d models have checkers", checked)
	}
}
