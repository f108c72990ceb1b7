package workload

import (
	"testing"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

func TestPostLogStaleness(t *testing.T) {
	l := NewPostLog()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l.add(2, 10, t0)
	l.add(3, 12, t0.Add(2*time.Second))
	l.add(2, 11, t0.Add(time.Second))
	l.add(9, 13, t0) // not followed
	page := func(ids ...timeline.MessageID) timeline.Page {
		var p timeline.Page
		for _, id := range ids {
			p.Messages = append(p.Messages, timeline.Message{ID: id})
		}
		return p
	}
	read := t0.Add(5 * time.Second)
	for _, tc := range []struct {
		page timeline.Page
		at   time.Time
		want time.Duration
	}{
		{page(12, 11, 10), read, 0},                                       // current
		{page(11, 10), read, 3 * time.Second},                             // lacks 12, acknowledged 3s before the read
		{page(9), read, 5 * time.Second},                                  // lacks 10, 11, 12: the oldest is 5s old
		{page(), read, 5 * time.Second},                                   // empty page
		{page(9), t0.Add(500 * time.Millisecond), 500 * time.Millisecond}, // 11 and 12 came after the read began
	} {
		if got := l.Staleness([]uint32{2, 3}, tc.page, tc.at); got != tc.want {
			t.Errorf("page %v at +%v: staleness %v, want %v", tc.page.Messages, tc.at.Sub(t0), got, tc.want)
		}
	}
}
