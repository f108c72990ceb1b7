package async

import (
	"context"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestDrowningAsync: push-async's workers write no row to a drowning
// reader under pull, and exactly LossyKeeps's under lossy; under pull
// the reader's settled pages are the memory store's, read by pull.
func TestDrowningAsync(t *testing.T) {
	for _, mode := range []string{push.DrowningPull, push.DrowningLossy} {
		t.Run(mode, func(t *testing.T) {
			d := push.Drowning{Follows: 2, Mode: mode}
			s, err := Open(context.Background(), push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Drowning: d}, Options{Chunk: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			mem := timeline.NewMemory()
			t.Cleanup(func() { mem.Close() })
			for _, st := range []timeline.Store{s, mem} {
				for a := timeline.UserID(1); a <= 5; a++ {
					timelinetest.Follow(t, st, 100, a)
					timelinetest.Follow(t, st, 100+a, a)
				}
				for range 20 {
					for a := timeline.UserID(1); a <= 5; a++ {
						timelinetest.Post(t, st, a, "post")
					}
				}
			}
			timelinetest.Settle(t, s)
			var got []timeline.MessageID
			rows, err := s.DB().Query(`SELECT message_id FROM mailbox WHERE user_id = 100 ORDER BY message_id DESC`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id timeline.MessageID
				rows.Scan(&id)
				got = append(got, id)
			}
			rows.Close()
			all := timelinetest.WalkIDs(t, mem, 100, 0)
			var want []timeline.MessageID
			if mode == push.DrowningLossy {
				for _, id := range all {
					if push.LossyKeeps(id, 100, d.LossyKeep(5)) {
						want = append(want, id)
					}
				}
				if len(want) == 0 || len(want) == len(all) {
					t.Fatalf("loss factor 2/5 kept %d of %d", len(want), len(all))
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("drowning reader's mailbox: got %v, want %v", got, want)
			}
			if mode == push.DrowningPull {
				if page := timelinetest.WalkIDs(t, s, 100, 6); !slices.Equal(page, all) {
					t.Errorf("pages by pull: got %v, want %v", page, all)
				}
			}
			for a := timeline.UserID(1); a <= 5; a++ {
				if n := len(timelinetest.WalkIDs(t, s, 100+a, 0)); n != 20 {
					t.Errorf("reader of one author: %d messages, want 20", n)
				}
			}
		})
	}
}
