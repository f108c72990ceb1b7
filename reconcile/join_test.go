package reconcile_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// renamed reports a views checker's drift under another view name.
type renamed struct {
	*views
	name string
}

func (r renamed) Check(ctx context.Context, users []timeline.UserID) (reconcile.Batch, error) {
	b, err := r.views.Check(ctx, users)
	for i := range b.Drift {
		b.Drift[i].View = r.name
	}
	return b, err
}

// TestJoin: a Join walks the users of both parts, counts both parts'
// drift, and repairs each part's drift through that part alone.
func TestJoin(t *testing.T) {
	a, b := newViews(5), newViews(5)
	for _, u := range []timeline.UserID{4, 5} { // a: users 1-3, user 2 lacking an entry
		delete(a.want, u)
		delete(a.have, u)
	}
	delete(b.want, 1) // b: users 2-5, user 2 lacking one, user 5 with one more
	delete(b.have, 1)
	j := reconcile.Join(reconcile.Part{Checker: renamed{a, "a"}, Views: []string{"a"}}, reconcile.Part{Checker: renamed{b, "b"}, Views: []string{"b"}})
	r, err := reconcile.Run(context.Background(), j, reconcile.Options{Batch: 2, Rate: math.Inf(1), Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Users != 5 || !r.Complete {
		t.Errorf("walked %d users, want 5: %+v", r.Users, r)
	}
	found, left := r.Found()
	if found != 3 || left != 0 || r.Repaired != 3 {
		t.Errorf("found %d, left %d, repaired %d; want 3, 0, 3: %+v", found, left, r.Repaired, r.Counts)
	}
	if !slices.Equal(a.have[2], []int64{1, 2, 3}) || !slices.Equal(b.have[2], []int64{1, 2, 3}) || !slices.Equal(b.have[5], []int64{1, 2, 3}) {
		t.Errorf("not repaired: a %v, b %v", a.have, b.have)
	}
}
