package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// TestLooksReportsWhatBothLooksFind: drift seen once (a write under way),
// or with a value that moved, is not reported; drift seen alike twice is,
// and a repair drops the view only while a look still finds it.
func TestLooksReportsWhatBothLooksFind(t *testing.T) {
	looks := 0
	var dropped []timeline.UserID
	steady := reconcile.Drift{Kind: reconcile.Missing, View: "set", User: 1, Item: 7}
	l := reconcile.Looks{
		List: func(context.Context, timeline.UserID, int) ([]timeline.UserID, error) { return nil, nil },
		Look: func(_ context.Context, users []timeline.UserID) ([]reconcile.Drift, int64, error) {
			looks++
			out := []reconcile.Drift{steady, {Kind: reconcile.WrongState, View: "score", User: 1, Item: 3, Have: int64(looks), Want: 9}}
			if looks == 1 {
				out = append(out, reconcile.Drift{Kind: reconcile.Extra, View: "set", User: 2, Item: 5})
			}
			return out, 10, nil
		},
		Drop: func(_ context.Context, u timeline.UserID) (int, error) {
			dropped = append(dropped, u)
			return 1, nil
		},
		Settle: time.Millisecond,
	}
	b, err := l.Check(context.Background(), []timeline.UserID{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Drift) != 1 || b.Drift[0] != steady || b.Rows != 20 {
		t.Errorf("check: %+v, want only %v, 20 rows", b, steady)
	}
	if n, err := l.Repair(context.Background(), 2, []reconcile.Drift{{Kind: reconcile.Extra, View: "set", User: 2, Item: 5}}); err != nil || n != 0 {
		t.Errorf("repair of drift gone: %d, %v", n, err)
	}
	if n, err := l.Repair(context.Background(), 1, []reconcile.Drift{steady}); err != nil || n != 1 || len(dropped) != 1 || dropped[0] != 1 {
		t.Errorf("repair: %d, %v, dropped %v", n, err, dropped)
	}
}

// TestLooksFixes: with Fix, a repair hands it the drift of the user's
// that its look still finds, with the values found now, and drops
// nothing.
func TestLooksFixes(t *testing.T) {
	steady := reconcile.Drift{Kind: reconcile.Missing, View: "set", User: 1, Item: 7}
	var fixed []reconcile.Drift
	l := reconcile.Looks{
		Look: func(context.Context, []timeline.UserID) ([]reconcile.Drift, int64, error) {
			return []reconcile.Drift{steady, {Kind: reconcile.Extra, View: "set", User: 1, Item: 8}}, 1, nil
		},
		Drop: func(context.Context, timeline.UserID) (int, error) { t.Fatal("dropped"); return 0, nil },
		Fix: func(_ context.Context, u timeline.UserID, still []reconcile.Drift) (int, error) {
			fixed = append(fixed, still...)
			return len(still), nil
		},
	}
	gone := reconcile.Drift{Kind: reconcile.Extra, View: "set", User: 1, Item: 9}
	n, err := l.Repair(context.Background(), 1, []reconcile.Drift{steady, gone})
	if err != nil || n != 1 || len(fixed) != 1 || fixed[0] != steady {
		t.Errorf("repair: %d, %v, fixed %v; want only %v", n, err, fixed, steady)
	}
}
