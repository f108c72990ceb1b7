package push_test

import (
	"testing"

	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// BenchmarkStore measures the push store's newest page, older page and post
// on the kit's small dataset, in a fresh database per run:
//
//	go test ./push -run '^$' -bench Store
func BenchmarkStore(b *testing.B) {
	timelinetest.RunBenchmarks(b, func(b *testing.B) timeline.Store {
		s, _ := open(b)
		return s
	})
}
