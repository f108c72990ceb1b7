package timeline_test

import (
	"testing"

	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMemoryConformance(t *testing.T) {
	timelinetest.Run(t, func(t *testing.T) timeline.Store {
		s := timeline.NewMemory()
		t.Cleanup(func() { s.Close() })
		return s
	})
}
