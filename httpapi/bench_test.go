package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/httpapi"
	"github.com/pushpull/pushpull/timeline"
)

// BenchmarkNewestPage reads a newest page of 20 through the server and
// its Client, and in process, from a memory store; and through HTTP from
// a store that answers one page at no cost (http-fixed), where what is
// measured is the server and the client alone: the HTTP API's own cost
// per page; and that again with a status cache (http-fixed-cached),
// which always hits.
func BenchmarkNewestPage(b *testing.B) {
	s := timeline.NewMemory()
	defer s.Close()
	ctx := context.Background()
	for u := timeline.UserID(2); u <= 41; u++ {
		if err := s.Follow(ctx, 1, u); err != nil {
			b.Fatal(err)
		}
		for i := range 3 {
			if _, err := s.Post(ctx, u, fmt.Sprintf("message %d of user %d, about as long as the benchmark's", i, u)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("in-process", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Timeline(ctx, 1, timeline.Query{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("http", func(b *testing.B) {
		base := serveB(b, httpapi.Config{Store: s})
		c := httpapi.NewClient(strings.TrimPrefix(base, "http://"))
		defer c.Close()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Timeline(ctx, 1, timeline.Query{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	page, err := s.Timeline(ctx, 1, timeline.Query{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		cache int64
	}{{"http-fixed", 0}, {"http-fixed-cached", 1 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			base := serveB(b, httpapi.Config{Store: fixedPage{s, page}, StatusCacheBytes: c.cache})
			cl := httpapi.NewClient(strings.TrimPrefix(base, "http://"))
			defer cl.Close()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, err := cl.Timeline(ctx, 1, timeline.Query{})
					if err != nil || len(p.Messages) != len(page.Messages) {
						b.Fatalf("%d messages, %v", len(p.Messages), err)
					}
				}
			})
		})
	}
}

// fixedPage is a store whose every home timeline is one page, given.
type fixedPage struct {
	timeline.Store
	page timeline.Page
}

func (f fixedPage) Timeline(context.Context, timeline.UserID, timeline.Query) (timeline.Page, error) {
	return f.page, nil
}
