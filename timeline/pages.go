package timeline

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// ErrNoProgress means a store answered a page's cursor with the same
// cursor again: following it would never end.
var ErrNoProgress = errors.New("timeline: a page's Next repeats its cursor")

// Pages walks user's home timeline from q (its Before and Limit), a page
// at a time, following each page's Next until the timeline ends, ctx ends
// or the loop stops:
//
//	for page, err := range timeline.Pages(ctx, s, user, timeline.Query{Limit: 20}) {
//		if err != nil {
//			return err
//		}
//		show(page.Messages)
//	}
//
// Each step yields a page and a nil error, or, last, the error that ended
// the walk with a zero page. An empty timeline yields one empty page. A
// store that answers a cursor with the same cursor ends the walk with
// ErrNoProgress instead of looping.
func Pages(ctx context.Context, s Store, user UserID, q Query) iter.Seq2[Page, error] {
	return func(yield func(Page, error) bool) {
		for {
			p, err := s.Timeline(ctx, user, q)
			if err != nil {
				yield(Page{}, err)
				return
			}
			if p.Next != "" && p.Next == q.Before {
				yield(Page{}, fmt.Errorf("user %d: %w", user, ErrNoProgress))
				return
			}
			if !yield(p, nil) || p.Next == "" {
				return
			}
			q.Before = p.Next
		}
	}
}
