package testserver

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// CancelInFlight runs op under a context it cancels while op's statement
// (the one whose text starts with statement) waits in MariaDB for table,
// which another connection of db holds locked meanwhile; it then unlocks
// the table and waits until the statement is over, committed or not. It
// fails the test if op succeeds. A write canceled so may commit after
// all: the case of a write whose outcome its caller cannot know.
func CancelInFlight(t testing.TB, db *sql.DB, table, statement string, op func(ctx context.Context) error) {
	t.Helper()
	bg := context.Background()
	lock, err := db.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(bg, `LOCK TABLES `+table+` WRITE`); err != nil {
		t.Fatal(err)
	}
	// running counts the sessions of db's database that run, or wait
	// to run, the statement.
	running := func() int {
		var n int
		if err := db.QueryRowContext(bg, `SELECT COUNT(*) FROM information_schema.processlist
			WHERE db = DATABASE() AND info LIKE CONCAT(?, '%')`, statement).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- op(ctx) }()
	Poll(t, 20*time.Second, "the statement waits on the lock", func() bool { return running() == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the write canceled in flight succeeded")
	}
	if _, err := lock.ExecContext(bg, `UNLOCK TABLES`); err != nil {
		t.Fatal(err)
	}
	Poll(t, 20*time.Second, "the statement is over", func() bool { return running() == 0 })
}

// HomeIDs returns user's home timeline as the database of db records it,
// newest first: the ids of the messages of the authors user follows, read
// past any store (the schema of package sql).
func HomeIDs(t testing.TB, db *sql.DB, user timeline.UserID) []timeline.MessageID {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT m.id FROM messages m
		JOIN follows f ON f.followee_id = m.author_id WHERE f.follower_id = ? ORDER BY m.id DESC`, user)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []timeline.MessageID
	for rows.Next() {
		var id timeline.MessageID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}
