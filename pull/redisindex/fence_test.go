package redisindex_test

import (
	"testing"

	"github.com/pushpull/pushpull/internal/redisx/redistest"
	"github.com/pushpull/pushpull/timeline/counter"
)

// TestCanceledWrites: a write whose context ended before it started owes
// nothing, and one canceled while its statement runs in MariaDB drops
// only the indexes it could have changed (redistest.CanceledWrites).
func TestCanceledWrites(t *testing.T) {
	redistest.CanceledWrites(t, redistest.CanceledCase{
		Open:     func(t *testing.T) redistest.Store { return open(t, 0) },
		Rebuilds: counter.IndexBuilds,
	})
}
