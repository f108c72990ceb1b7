package redisindex_test

import (
	"context"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/redisx/redistest"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull/redisindex"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Redis: true}) }

func open(t testing.TB, window time.Duration) *redisindex.Store {
	t.Helper()
	s, err := redisindex.Open(context.Background(), redisindex.Config{
		DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: testserver.Redis(t), Window: window,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the suite at the defaults, where each reader's
// index is built once and then read, and with a window of a second,
// where indexes expire under it.
func TestConformance(t *testing.T) {
	timelinetest.RunConfigs(t, []timelinetest.Config{
		{Name: "defaults", Open: func(t *testing.T) timeline.Store { return open(t, 0) }},
		{Name: "window 1s", Open: func(t *testing.T) timeline.Store { return open(t, time.Second) }},
	})
}

// TestIndexServesPages: once built, the index serves newest pages, posts
// raise their author in it, and a follow and an unfollow change it at once.
func TestIndexServesPages(t *testing.T) {
	s := open(t, 0)
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.Follow(t, s, 1, 3)
	timelinetest.PostN(t, s, 2, 3)
	timelinetest.Newest(t, s, 1) // builds the index
	c1 := s.Counters()
	m := timelinetest.Post(t, s, 3, "from 3")
	if got := timelinetest.Newest(t, s, 1); len(got.Messages) != 4 || got.Messages[0].ID != m.ID {
		t.Fatalf("newest page %v, want 4 with %d first", timelinetest.IDs(got.Messages), m.ID)
	}
	timelinetest.Unfollow(t, s, 1, 3)
	if got := timelinetest.Newest(t, s, 1); len(got.Messages) != 3 {
		t.Fatalf("after unfollow: %v", timelinetest.IDs(got.Messages))
	}
	timelinetest.Follow(t, s, 1, 3)
	if got := timelinetest.Newest(t, s, 1); len(got.Messages) != 4 || got.Messages[0].ID != m.ID {
		t.Fatalf("after follow: %v", timelinetest.IDs(got.Messages))
	}
	c2 := s.Counters()
	if c2[counter.IndexBuilds] != 1 || c2[counter.IndexReads]-c1[counter.IndexReads] != 3 || c2[counter.Hints]-c1[counter.Hints] != 1 || c2[counter.IndexFallbacks] != 0 {
		t.Fatalf("counters %v -> %v: want one build, three index reads, one post raising one index, no fallback", c1, c2)
	}
}

// TestRedisRestartUnderTraffic: readers and writers run while the
// redis-server is killed and restarted (redistest.RestartUnderTraffic):
// no read fails, nothing acknowledged is lost, and the indexes are
// rebuilt on read and serve the newest pages again.
func TestRedisRestartUnderTraffic(t *testing.T) {
	redistest.RestartUnderTraffic(t, redistest.RestartCase{
		Open: func(t *testing.T, addr string) redistest.Store {
			s, err := redisindex.Open(context.Background(), redisindex.Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: addr})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Rebuilds: counter.IndexBuilds, Served: counter.IndexReads, FellBack: counter.IndexFallbacks,
	})
}
