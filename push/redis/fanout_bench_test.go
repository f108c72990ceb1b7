package redis_test

import (
	"context"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push/redis"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// BenchmarkFanOut posts by an author whose 137 followers (the paper-scale
// celebrity graph's mean audience) all have a full feed (the default cap,
// 800 ids) and reports the redis-server's CPU per follower reached
// (redis-µs/follower, from INFO cpu; the server is shared with nothing
// else the benchmark runs) beside the time per post.
//
//	go test ./push/redis -run '^$' -bench FanOut -benchtime 2000x
func BenchmarkFanOut(b *testing.B) {
	const followers = 137
	s := open(b, redis.Config{})
	ctx := context.Background()
	author := timeline.UserID(followers + 1)
	for f := timeline.UserID(1); f <= followers; f++ {
		timelinetest.Follow(b, s, f, author)
	}
	timelinetest.PostN(b, s, author, s.Cap()+1)
	for f := timeline.UserID(1); f <= followers; f++ {
		timelinetest.Newest(b, s, f) // builds each feed with Cap ids
	}
	addr := testserver.Redis(b)
	before, err := cost.RedisStats(addr)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Post(ctx, author, "fan-out"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after, err := cost.RedisStats(addr)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(after["cpu_us"]-before["cpu_us"])/float64(b.N*followers), "redis-µs/follower")
}
