package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/loadgen/workload"
)

// The raw memcached baseline of the cached models' reads, and what their
// items take in memcached.

// MemcacheGet reads one key of valueSize bytes from memcached per
// operation: the raw rate that cached timeline reads are compared with.
func MemcacheGet(ctx context.Context, servers []string, workers, valueSize int) (func(worker int) workload.Op, error) {
	mc := memcache.New(servers...)
	mc.MaxIdleConns = workers
	mc.Timeout = time.Second
	key := fmt.Sprintf("pushpull:rawget:%d", rand.Int64())
	if err := mc.Set(&memcache.Item{Key: key, Value: make([]byte, valueSize), Expiration: 3600}); err != nil {
		return nil, fmt.Errorf("memcached at %v: %w", servers, err)
	}
	return func(int) workload.Op {
		return func(ctx context.Context, _ *workload.Clock) error {
			_, err := mc.Get(key)
			return err
		}
	}, nil
}

// memcachedBytes is the memory memcached's items take, summed over servers
// (the "bytes" line of the stats command).
func memcachedBytes(servers []string) (int64, error) {
	st, err := cost.MemcachedStats(servers, "bytes")
	if err != nil {
		return 0, err
	}
	return st["bytes"], nil
}

// redisBytes is the memory the redis-server at addr uses (used_memory),
// and what its data takes of it (used_memory_dataset).
func redisBytes(addr string) (used, dataset int64, err error) {
	st, err := cost.RedisStats(addr)
	if err != nil {
		return 0, 0, err
	}
	return st["used_memory"], st["used_memory_dataset"], nil
}
