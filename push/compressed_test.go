package push_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// openCompressed opens a push store on the compressed mailbox, as
// push-compressed does.
func openCompressed(t *testing.T) *push.Store {
	t.Helper()
	s, err := push.Open(context.Background(), push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t), Schema: schema.PushCompressed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestCompressedConformance(t *testing.T) {
	timelinetest.Run(t, func(t *testing.T) timeline.Store { return openCompressed(t) })
}

// TestMailboxCompressed: the server really created the mailbox with page
// compression, and nothing else.
func TestMailboxCompressed(t *testing.T) {
	s := openCompressed(t)
	rows, err := s.DB().Query(`SELECT table_name, create_options FROM information_schema.tables WHERE table_schema = DATABASE()`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var table, options string
		if err := rows.Scan(&table, &options); err != nil {
			t.Fatal(err)
		}
		compressed := strings.Contains(strings.ToLower(options), "page_compressed")
		if compressed != (table == "mailbox") {
			t.Fatalf("table %s: create options %q", table, options)
		}
		seen++
	}
	if seen < 4 {
		t.Fatalf("%d tables", seen)
	}
}
