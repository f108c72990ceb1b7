package push_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
)

// Open creates the database and schema if they are missing. A post copies
// its id into the mailbox of every follower of its author; a read scans the
// reader's mailbox. The DSN here comes from $PUSHPULL_DSN, as `pushpull
// sandbox` prints it.
func Example() {
	ctx := context.Background()
	s, err := push.Open(ctx, push.Config{
		DSN:      os.Getenv("PUSHPULL_DSN"), // e.g. "user:pass@tcp(127.0.0.1:3306)/"
		Database: fmt.Sprintf("example_push_%d", os.Getpid()),
	})
	if err != nil {
		log.Fatal(err) // errors.Is(err, timeline.ErrUnavailable) if the server is unreachable
	}
	defer s.Close()

	if err := s.Follow(ctx, 1, 2); err != nil {
		log.Fatal(err)
	}
	if _, err := s.Post(ctx, 2, "hello from the mailbox"); err != nil {
		log.Fatal(err)
	}
	page, err := s.Timeline(ctx, 1, timeline.Query{})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range page.Messages {
		fmt.Printf("%d by user %d: %s\n", m.ID, m.Author, m.Body)
	}
	// Output:
	// 1 by user 2: hello from the mailbox
}
