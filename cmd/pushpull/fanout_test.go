package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/push/async"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestFanoutCommand: a store with no workers of its own queues a
// celebrity's post; `pushpull fanout` applies it, reports its progress,
// and stops when its context ends. The test stops it once a progress line
// has reported the job done, whenever that comes.
func TestFanoutCommand(t *testing.T) {
	database := testserver.Database(t)
	s, err := async.Open(context.Background(), push.Config{DSN: testserver.DSN(t), Database: database}, async.Options{Workers: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.DB().Exec(`INSERT INTO follows (follower_id, followee_id) SELECT seq, 1 FROM seq_2_to_51`); err != nil {
		t.Fatal(err)
	}
	m := timelinetest.Post(t, s, 1, "to everyone")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"fanout", "--dsn", testserver.DSN(t), "--database", database,
			"--workers", "3", "--chunk", "7", "--progress", "20ms"}, &stdout, &stderr, mapEnv(nil))
	}()
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	if err := s.Settle(sctx); err != nil {
		t.Fatalf("the fanout command did not apply the job: %v", err)
	}
	const applied = "1 jobs, 8 chunks, 50 rows, 0 errors, 0 queued"
	testserver.Poll(t, time.Minute, "a progress line showing the job's 8 chunks of 50 rows", func() bool {
		select {
		case code := <-done:
			t.Fatalf("fanout exited with %d before it was stopped:\n%s", code, stderr.String())
		default:
		}
		return strings.Contains(stderr.String(), applied)
	})
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("fanout: exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped; 1 jobs, 8 chunks, 50 rows, 0 errors") {
		t.Errorf("fanout's last line does not show the job's 8 chunks of 50 rows:\n%s", stderr.String())
	}
	for u := 2; u <= 51; u++ {
		if got := timelinetest.WalkIDs(t, s, timeline.UserID(u), 0); len(got) != 1 || got[0] != m.ID {
			t.Fatalf("user %d: %v, want [%d]", u, got, m.ID)
		}
	}
}

// TestFanoutBadFlags: a bad setting is a usage error, before any server
// is touched.
func TestFanoutBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--workers", "0"}, {"--chunk", "0"}, {"--chunk", fmt.Sprint(async.MaxChunk + 1)}, {"--poll", "0s"}, {"extra"},
	} {
		r := run(t, map[string]string{dsnEnv: "nobody@tcp(127.0.0.1:1)/"}, append([]string{"fanout"}, args...)...)
		if r.code != exitUsage {
			t.Errorf("fanout %v: %v, want a usage error", args, r)
		}
	}
}
