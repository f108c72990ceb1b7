package pull_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestProceduresOnPooledConnections calls the stored procedures directly on
// several pinned connections of one pool, alternating connections,
// procedures, users and cursors, and checks each answer against the memory
// store. The procedures keep scratch rows in per-connection temporary
// tables, so a leftover from an earlier call on the same connection, or a
// table a connection has not created yet, must never change an answer.
func TestProceduresOnPooledConnections(t *testing.T) {
	ctx := context.Background()
	s := open(t, pull.StrategySP, testserver.Database(t))
	mem := timeline.NewMemory()
	rng := rand.New(rand.NewPCG(7, 7))
	const users = 12
	for f := timeline.UserID(1); f <= users; f++ {
		for g := timeline.UserID(1); g <= users; g++ {
			if f != g && rng.IntN(3) == 0 {
				for _, st := range []timeline.Store{s, mem} {
					if err := st.Follow(ctx, f, g); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	for i := range 300 {
		author := timeline.UserID(1 + rng.IntN(users))
		for _, st := range []timeline.Store{s, mem} {
			if _, err := st.Post(ctx, author, fmt.Sprintf("m%d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}

	conns := make([]*sql.Conn, 3)
	for i := range conns {
		c, err := s.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	// Distinct connection ids prove the calls really alternate connections.
	seen := map[int64]bool{}
	for _, c := range conns {
		var id int64
		if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		seen[id] = true
	}
	if len(seen) != len(conns) {
		t.Fatalf("pinned connections share ids: %v", seen)
	}

	for call := range 120 {
		c := conns[call%len(conns)]
		user := timeline.UserID(1 + rng.IntN(users))
		limit := 1 + rng.IntN(25)
		all := timelinetest.Walk(t, mem, user, timeline.MaxLimit)
		var before timeline.MessageID
		if len(all) > 0 && rng.IntN(2) == 0 {
			before = all[rng.IntN(len(all))].ID
		}
		var want []timeline.MessageID
		for _, m := range all {
			if (before == 0 || m.ID < before) && len(want) < limit {
				want = append(want, m.ID)
			}
		}
		var rows *sql.Rows
		var err error
		if before == 0 {
			rows, err = c.QueryContext(ctx, "CALL pull_timeline_newest(?, ?)", user, limit)
		} else {
			rows, err = c.QueryContext(ctx, "CALL pull_timeline_before(?, ?, ?)", user, before, limit)
		}
		if err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
		var got []timeline.MessageID
		for rows.Next() {
			var m timeline.Message
			if err := rows.Scan(&m.ID, &m.Author, &m.Body, &m.CreatedAt); err != nil {
				t.Fatal(err)
			}
			got = append(got, m.ID)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if !slices.Equal(got, want) {
			t.Fatalf("call %d on connection %d (user %d, before %d, limit %d): got %v, want %v",
				call, call%len(conns), user, before, limit, got, want)
		}
	}
}
