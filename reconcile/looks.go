package reconcile

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// DefaultSettle is Looks' wait between its two looks.
const DefaultSettle = time.Second

// Looks is the Checker of a view kept apart from the record, in Redis or
// memcached, where no snapshot spans both and a write changes the view
// after the record: a view may lag the record for as long as a write's
// second part takes. A check looks at a batch (Look: the record first,
// then the view), looks again Settle later at the users where it saw
// drift, and reports only what both looks found alike (a value that moved
// between them, such as a score a stream of posts keeps raising, is a
// write under way). A repair looks again and,
// if drift of the user's is still there, drops the user's view (Drop):
// the view's next read rebuilds it from the record, and a write meanwhile
// finds nothing to change, so nothing it adds is lost (the record has
// it).
type Looks struct {
	// List is Checker.Users.
	List func(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error)
	// Look returns the drift of users' views and the rows and entries it
	// read.
	Look func(ctx context.Context, users []timeline.UserID) ([]Drift, int64, error)
	// Drop drops user's view and returns how many keys it removed.
	Drop func(ctx context.Context, user timeline.UserID) (int, error)
	// Fix, if set, is called instead of Drop with the drift of user's
	// that the repair's look still found, and returns how many entries or
	// values it changed. It must re-read each item under the locks the
	// design's writes take, as Checker.Repair does.
	Fix func(ctx context.Context, user timeline.UserID, still []Drift) (int, error)
	// Settle is the wait between the looks; 0 means DefaultSettle.
	Settle time.Duration
}

var _ Checker = Looks{}

// Users implements Checker.
func (l Looks) Users(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error) {
	return l.List(ctx, after, limit)
}

// Check implements Checker.
func (l Looks) Check(ctx context.Context, users []timeline.UserID) (Batch, error) {
	first, rows, err := l.Look(ctx, users)
	if err != nil || len(first) == 0 {
		return Batch{Rows: rows}, err
	}
	if err := sleep(ctx, cmp.Or(l.Settle, DefaultSettle)); err != nil {
		return Batch{Rows: rows}, err
	}
	second, more, err := l.Look(ctx, usersOf(first))
	b := Batch{Rows: rows + more}
	seen := map[Drift]bool{}
	for _, d := range first {
		seen[d] = true
	}
	for _, d := range second {
		if seen[d] { // the same values too: a score that moved is a write under way
			b.Drift = append(b.Drift, d)
		}
	}
	slices.SortFunc(b.Drift, func(x, y Drift) int {
		return cmp.Or(cmp.Compare(x.User, y.User), cmp.Compare(x.Item, y.Item), strings.Compare(string(x.Kind), string(y.Kind)))
	})
	return b, err
}

// Repair implements Checker.
func (l Looks) Repair(ctx context.Context, user timeline.UserID, drift []Drift) (int, error) {
	now, _, err := l.Look(ctx, []timeline.UserID{user})
	if err != nil {
		return 0, err
	}
	still := keys(now)
	if !slices.ContainsFunc(drift, func(d Drift) bool { return still[d.Key()] }) {
		return 0, nil
	}
	if l.Fix != nil {
		var left []Drift
		for _, d := range now {
			if d.User == user && slices.ContainsFunc(drift, func(e Drift) bool { return e.Key() == d.Key() }) {
				left = append(left, d)
			}
		}
		return l.Fix(ctx, user, left)
	}
	return l.Drop(ctx, user)
}

func keys(ds []Drift) map[Key]bool {
	m := make(map[Key]bool, len(ds))
	for _, d := range ds {
		m[d.Key()] = true
	}
	return m
}
