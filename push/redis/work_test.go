package redis

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestPageCommandsMatchWork counts the commands Redis runs for newest
// pages and for older pages 2 to 5 deep, each read with the cursor of the
// page before it, and sets them against the cost model's: 5 a newest page,
// and an older page's find (olderFind) besides, with the benchmark's depths
// (a mean of 3.5).
func TestPageCommandsMatchWork(t *testing.T) {
	if !strings.Contains(helpers, "'MAXLEN', "+strconv.Itoa(cursorLook)+")") {
		t.Fatalf("the script's below looks through other than cursorLook (%d) ids", cursorLook)
	}
	ctx := context.Background()
	const capN = 120
	s, err := Open(ctx, Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Redis: testserver.Redis(t), Cap: capN})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	timelinetest.Follow(t, s, 1, 2)
	timelinetest.Follow(t, s, 1, 3)
	timelinetest.PostN(t, s, 2, capN/2)
	timelinetest.PostN(t, s, 3, capN/2)
	timelinetest.Newest(t, s, 1) // builds the feed
	commands := func() float64 {
		t.Helper()
		st, err := cost.RedisStats(testserver.Redis(t))
		if err != nil {
			t.Fatal(err)
		}
		return float64(st["commands"])
	}
	// measure is the commands of n calls of read, less the INFO that
	// reads the count.
	measure := func(n int, read func()) float64 {
		before := commands()
		for range n {
			read()
		}
		return (commands() - before - 1) / float64(n)
	}
	const page, reads = 20, 20
	newest := measure(reads, func() { timelinetest.Newest(t, s, 1) })
	var cursors []timeline.Cursor // of pages 2 to 5
	p := timelinetest.Newest(t, s, 1)
	for range 4 {
		cursors = append(cursors, p.Next)
		var err error
		if p, err = s.Timeline(ctx, 1, timeline.Query{Limit: page, Before: p.Next}); err != nil {
			t.Fatal(err)
		}
	}
	older := measure(reads, func() {
		for _, c := range cursors {
			if _, err := s.Timeline(ctx, 1, timeline.Query{Limit: page, Before: c}); err != nil {
				t.Fatal(err)
			}
		}
	}) / float64(len(cursors))
	d := registry.Demand{Page: page, OlderDepth: 3.5}
	want := 5 + olderFind(d, capN)
	t.Logf("commands per newest page %.2f, per older page %.2f (model 5, %.2f)", newest, older, want)
	if math.Abs(newest-5) > 0.25 {
		t.Errorf("a newest page ran %.2f commands, the model says 5", newest)
	}
	if math.Abs(older-want) > 0.5 {
		t.Errorf("an older page ran %.2f commands, the model says %.2f", older, want)
	}
}
