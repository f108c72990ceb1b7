package pull_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/timeline"
)

// The pull stores of one database differ only in how they read
// (Config.Read, each strategy with its own settings). A store that keeps
// memcached lists records that in the database, and from then on every
// store that writes there must keep them too: one without memcached
// refuses to open. The servers here come from $PUSHPULL_DSN and
// $PUSHPULL_MEMCACHE, as `pushpull sandbox` prints them.
func Example() {
	ctx := context.Background()
	dsn := os.Getenv("PUSHPULL_DSN") // e.g. "user:pass@tcp(127.0.0.1:3306)/"
	servers := strings.Split(os.Getenv("PUSHPULL_MEMCACHE"), ",")
	database := fmt.Sprintf("example_pull_%d", os.Getpid())

	merge, err := pull.Open(ctx, pull.Config{DSN: dsn, Database: database, Read: sqlread.Merge{}})
	if err != nil {
		log.Fatal(err)
	}
	defer merge.Close()
	lists, err := pull.Open(ctx, pull.Config{
		DSN: dsn, Database: database, Memcache: servers, Namespace: database + "/",
		Read: recent.Recent{RecentLen: 32}, // each author's newest 32 ids in memcached
	})
	if err != nil {
		log.Fatal(err)
	}
	defer lists.Close()

	lists.Follow(ctx, 1, 2)
	lists.Post(ctx, 2, "hello")
	lists.Post(ctx, 2, "again")
	for _, s := range []*pull.Store{merge, lists} {
		page, err := s.Timeline(ctx, 1, timeline.Query{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s:", s.Strategy())
		for _, m := range page.Messages {
			fmt.Printf(" %d %q", m.ID, m.Body)
		}
		fmt.Println()
	}

	_, err = pull.Open(ctx, pull.Config{DSN: dsn, Database: database, Read: sqlread.SP{}})
	fmt.Println(errors.Is(err, pull.ErrWriteHooks))
	// Output:
	// merge: 2 "again" 1 "hello"
	// recent: 2 "again" 1 "hello"
	// true
}
