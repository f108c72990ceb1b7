package example

import (
	"context"
	"fmt"

	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/timeline"
)

func hello(ctx context.Context, dsn string) error {
	s, err := pull.Open(ctx, pull.Config{DSN: dsn, Read: sqlread.Merge{}}) // creates pushpull_pull
	if err != nil {
		return err // errors.Is(err, timeline.ErrUnavailable) if unreachable
	}
	defer s.Close()
	if err := s.Follow(ctx, 1, 2); err != nil {
		return err // ErrUnavailable too, from any call that finds the server down
	}
	if _, err := s.Post(ctx, 2, "hello, world"); err != nil {
		return err
	}
	for page, err := range timeline.Pages(ctx, s, 1, timeline.Query{Limit: 20}) {
		if err != nil {
			return err
		}
		for _, m := range page.Messages { // newest first, 20 a page
			fmt.Printf("%d  user %d: %s\n", m.ID, m.Author, m.Body)
		}
	}
	return nil
}
