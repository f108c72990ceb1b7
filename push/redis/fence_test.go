package redis_test

import (
	"context"
	"testing"

	"github.com/pushpull/pushpull/internal/redisx/redistest"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push/redis"
	"github.com/pushpull/pushpull/timeline/counter"
)

// TestCanceledWrites: a write whose context ended before it started owes
// nothing, and one canceled while its statement runs in MariaDB drops
// only the feeds it could have changed, or owes the fence when Redis
// does not answer (redistest.CanceledWrites).
func TestCanceledWrites(t *testing.T) {
	redistest.CanceledWrites(t, redistest.CanceledCase{
		Open: func(t *testing.T, addr string) redistest.Store {
			s, err := redis.Open(context.Background(), redis.Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: addr})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Rebuilds: counter.Rebuilds,
	})
}
