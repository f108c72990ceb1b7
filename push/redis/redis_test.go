package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push/redis"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Redis: true}) }

// open opens a store in a fresh database (and so under fresh Redis keys)
// and closes it when t ends.
func open(t testing.TB, cfg redis.Config) *redis.Store {
	t.Helper()
	cfg.DSN, cfg.Database, cfg.Redis = testserver.DSN(t), testserver.Database(t), testserver.Redis(t)
	s, err := redis.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the suite at the defaults, where every reader's
// feed is rebuilt once and then read; with a cap of 3, where almost every
// page crosses the floor and posts trim; and without the message cache,
// where every page's bodies come from MariaDB.
func TestConformance(t *testing.T) {
	timelinetest.RunConfigs(t, []timelinetest.Config{
		{Name: "defaults", Open: func(t *testing.T) timeline.Store { return open(t, redis.Config{}) }},
		{Name: "cap 3", Open: func(t *testing.T) timeline.Store { return open(t, redis.Config{Cap: 3}) }},
		{Name: "no message cache", Open: func(t *testing.T) timeline.Store {
			return open(t, redis.Config{Cap: 5, MessageCache: -1, Window: time.Hour})
		}},
	})
}

// TestFeedServesPages checks that the pages come from the feed once it is
// built, that posts reach it, that a cap trims it and pages below the cap
// come from MariaDB, and that nothing falls back.
func TestFeedServesPages(t *testing.T) {
	s := open(t, redis.Config{Cap: 4})
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.PostN(t, s, 2, 3)
	c0 := s.Counters()
	timelinetest.Newest(t, s, 1) // builds the feed
	c1 := s.Counters()
	if c1[counter.Rebuilds]-c0[counter.Rebuilds] != 1 || c1[counter.RebuildRows]-c0[counter.RebuildRows] != 3 {
		t.Fatalf("first read: counters %v -> %v, want one rebuild of 3 ids", c0, c1)
	}
	posted := timelinetest.PostN(t, s, 2, 6)
	c2 := s.Counters()
	if c2[counter.PushedRows]-c1[counter.PushedRows] != 6 {
		t.Fatalf("6 posts pushed %d feed entries", c2[counter.PushedRows]-c1[counter.PushedRows])
	}
	page := timelinetest.Newest(t, s, 1)
	if len(page.Messages) != 9 || page.Messages[0].ID != posted[5].ID {
		t.Fatalf("newest page %v", timelinetest.IDs(page.Messages))
	}
	walked := timelinetest.WalkIDs(t, s, 1, 2)
	if len(walked) != 9 {
		t.Fatalf("walk %v, want 9 ids", walked)
	}
	c3 := s.Counters()
	if c3[counter.FeedPages] <= c2[counter.FeedPages] || c3[counter.PagesBelowCap] == c2[counter.PagesBelowCap] || c3[counter.CacheErrors] != 0 || c3[counter.Rebuilds] != 1 {
		t.Fatalf("counters %v, want pages from the feed, some below its cap, no fallback and no second rebuild", c3)
	}
}
