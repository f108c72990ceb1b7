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
