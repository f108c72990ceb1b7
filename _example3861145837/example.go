package main

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
)

// show prints user's whole home timeline, 20 messages a page.
func show(ctx context.Context, s timeline.Store, user timeline.UserID) error {
	for page, err := range timeline.Pages(ctx, s, user, timeline.Query{Limit: 20}) {
		if err != nil {
			return err
		}
		for _, m := range page.Messages {
			fmt.Printf("%d  user %d: %s\n", m.ID, m.Author, m.Body)
		}
	}
	return nil
}

func main() {
	ctx := context.Background()

	// In memory: no server needed.
	mem := timeline.NewMemory()
	defer mem.Close()
	if err := mem.Follow(ctx, 1, 2); err != nil {
		log.Fatal(err)
	}
	if _, err := mem.Post(ctx, 2, "hello, world"); err != nil {
		log.Fatal(err)
	}
	if err := show(ctx, mem, 1); err != nil {
		log.Fatal(err)
	}
	_, err := mem.Post(ctx, 2, "")
	fmt.Println(errors.Is(err, timeline.ErrInvalidBody)) // true

	// On MySQL/MariaDB. Open creates the database and schema if needed.
	dsn := "user:pass@tcp(127.0.0.1:3306)/"
	pushStore, err := push.Open(ctx, push.Config{DSN: dsn}) // database pushpull_push
	if err != nil {
		log.Fatal(err) // errors.Is(err, timeline.ErrUnavailable) if unreachable
	}
	defer pushStore.Close()
	pullStore, err := pull.Open(ctx, pull.Config{DSN: dsn, Read: sqlread.Merge{}}) // database pushpull_pull
	if err != nil {
		log.Fatal(err)
	}
	defer pullStore.Close()
	for _, s := range []timeline.Store{pushStore, pullStore} {
		if err := s.Follow(ctx, 1, 2); err != nil {
			log.Fatal(err)
		}
		if _, err := s.Post(ctx, 2, "hello from SQL"); err != nil {
			log.Fatal(err)
		}
		if err := show(ctx, s, 1); err != nil {
			log.Fatal(err)
		}
	}
}
