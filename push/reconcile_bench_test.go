package push_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
)

// BenchmarkReconcile measures what reconcile costs on push
// (reconciletest.Cost): the rows a check reads a second with no rate
// limit and no other load, and the latency of live traffic (newest pages
// and posts, closed loop) in windows without a check and with one
// running, alternated, for the default rate and batch and for others
// beside them, in one run. Run it once:
// go test ./push -run '^$' -bench Reconcile -benchtime 1x -timeout 30m
func BenchmarkReconcile(b *testing.B) {
	const (
		users    = 3000
		follows  = 20 // followees per user
		posts    = 10 // messages per user
		clients  = 4
		windows  = 6 // alternated: without, with, without, ...
		window   = 10 * time.Second
		postEach = 10 // one operation in postEach is a post
	)
	ctx := context.Background()
	s, err := push.Open(ctx, push.Config{DSN: testserver.DSN(b), Database: testserver.Database(b), MaxConns: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	load(b, s.DB(), users, follows, posts)
	c, err := push.Checker(s)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		reconciletest.Cost(b, s, c, reconciletest.Traffic{Users: users, Clients: clients, Windows: windows, Window: window, PostEach: postEach},
			reconcile.Options{Rate: reconcile.DefaultRate, Batch: reconcile.DefaultBatch},
			reconcile.Options{Rate: reconcile.DefaultRate, Batch: 10},
			reconcile.Options{Rate: 5000, Batch: 10},
		)
	}
}

// load fills db straight with users who each follow follows others at
// random and post posts messages, and push's mailbox for them.
func load(b *testing.B, db *sql.DB, users, follows, posts int) {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	insert := func(prefix string, rows []string) {
		for len(rows) > 0 {
			n := min(len(rows), 2000)
			if _, err := db.ExecContext(ctx, prefix+strings.Join(rows[:n], ",")); err != nil {
				b.Fatal(err)
			}
			rows = rows[n:]
		}
	}
	var edges []string
	for u := 1; u <= users; u++ {
		seen := map[int]bool{u: true}
		for len(seen) <= follows {
			a := rng.IntN(users) + 1
			if !seen[a] {
				seen[a] = true
				edges = append(edges, fmt.Sprintf("(%d,%d)", u, a))
			}
		}
	}
	insert("INSERT INTO follows (follower_id, followee_id) VALUES ", edges)
	var msgs []string
	for range posts {
		for u := 1; u <= users; u++ {
			msgs = append(msgs, fmt.Sprintf("(%d,'loaded',UTC_TIMESTAMP(6))", u))
		}
	}
	insert("INSERT INTO messages (author_id, body, created_at) VALUES ", msgs)
	if _, err := db.ExecContext(ctx, `INSERT INTO mailbox (user_id, message_id)
		SELECT f.follower_id, m.id FROM follows f JOIN messages m ON m.author_id = f.followee_id`); err != nil {
		b.Fatal(err)
	}
}
