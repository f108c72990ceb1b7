package memcache_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
)

// New puts memcached in front of any store's newest page. Under
// PolicyInvalidate a post bumps its author's followers' generations before
// it returns, so the next read is never served a page without it; the
// followers come from the wrapped store (a memcache.FollowerLister). The
// servers here come from $PUSHPULL_DSN and $PUSHPULL_MEMCACHE, as `pushpull
// sandbox` prints them.
func Example() {
	ctx := context.Background()
	inner, err := push.Open(ctx, push.Config{
		DSN:      os.Getenv("PUSHPULL_DSN"),
		Database: fmt.Sprintf("example_cache_%d", os.Getpid()),
	})
	if err != nil {
		log.Fatal(err)
	}
	s, err := memcache.New(ctx, inner, memcache.Options{
		Servers:      strings.Split(os.Getenv("PUSHPULL_MEMCACHE"), ","),
		Namespace:    fmt.Sprintf("example-%d", os.Getpid()),
		Policy:       memcache.PolicyInvalidate,
		MaxIdleConns: 8, // about the number of concurrent callers
	})
	if err != nil {
		inner.Close()
		log.Fatal(err) // errors.Is(err, timeline.ErrUnavailable) if memcached does not answer
	}
	defer s.Close() // closes inner too

	s.Follow(ctx, 1, 2)
	s.Post(ctx, 2, "first")
	newest := func() {
		page, err := s.Timeline(ctx, 1, timeline.Query{})
		if err != nil {
			log.Fatal(err)
		}
		var bodies []string
		for _, m := range page.Messages {
			bodies = append(bodies, m.Body)
		}
		fmt.Println(bodies)
	}
	newest() // a miss: read from push, then cached
	newest() // a hit
	s.Post(ctx, 2, "second")
	newest() // the post invalidated the page: read again
	st := s.Stats()
	fmt.Printf("hits %d, misses %d\n", st.Hits, st.Misses)
	// Output:
	// [first]
	// [first]
	// [second first]
	// hits 1, misses 2
}
