package reconcile

import (
	"context"
	"slices"

	"github.com/pushpull/pushpull/timeline"
)

// Part is one Checker of a Join, and the views whose drift it reports
// and repairs.
type Part struct {
	Checker Checker
	Views   []string
}

// Join is the Checker of a design whose views several Checkers check
// (author lists and indexes kept in memcached, say): its users are every
// part's, a check is each part's check of the batch, and a repair hands
// each part the drift of its views. A part is given users it may keep no
// view of, and finds no drift there.
func Join(parts ...Part) Checker { return joined(parts) }

type joined []Part

func (j joined) Users(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error) {
	var us []timeline.UserID
	for _, p := range j {
		more, err := p.Checker.Users(ctx, after, limit)
		if err != nil {
			return nil, err
		}
		us = append(us, more...)
	}
	slices.Sort(us)
	us = slices.Compact(us)
	return us[:min(limit, len(us))], nil
}

func (j joined) Check(ctx context.Context, users []timeline.UserID) (Batch, error) {
	var b Batch
	for _, p := range j {
		more, err := p.Checker.Check(ctx, users)
		b.Rows += more.Rows
		if err != nil {
			return b, err
		}
		b.Drift = append(b.Drift, more.Drift...)
	}
	return b, nil
}

func (j joined) Repair(ctx context.Context, user timeline.UserID, drift []Drift) (int, error) {
	total := 0
	for _, p := range j {
		var mine []Drift
		for _, d := range drift {
			if slices.Contains(p.Views, d.View) {
				mine = append(mine, d)
			}
		}
		if len(mine) == 0 {
			continue
		}
		n, err := p.Checker.Repair(ctx, user, mine)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
