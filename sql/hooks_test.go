package schema_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	schema "github.com/pushpull/pushpull/sql"
)

// TestHookGuard: a guarded statement runs while the store runs every hook
// recorded; a hook recorded after that is learned at the next write,
// which fails with ErrWriteHooks and changes nothing, unless the store
// runs it (Run) or ignores it; a statement with nothing to change is not
// mistaken for a refusal; a name pushpull does not know is refused.
func TestHookGuard(t *testing.T) {
	ctx := context.Background()
	db := open(t, testserver.Database(t))
	if _, err := db.ExecContext(ctx, `CREATE TABLE pushpull_meta (name VARCHAR(64) PRIMARY KEY, value VARBINARY(255) NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (k INT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	g, err := schema.NewHookGuard(ctx, db, "test", schema.HookLists)
	if err != nil {
		t.Fatal(err)
	}
	insert := func(k int) error {
		_, err := g.Exec(ctx, db, `INSERT IGNORE INTO t (k) SELECT ? `+schema.GuardFrom, k)
		return err
	}
	rows := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := insert(1); err != nil {
		t.Fatal(err)
	}
	if err := insert(1); err != nil { // nothing to insert: not a refusal
		t.Fatalf("a statement that changed nothing: %v", err)
	}
	if err := schema.RecordHooks(ctx, db, schema.HookLists); err != nil {
		t.Fatal(err)
	}
	if err := insert(2); err != nil {
		t.Fatalf("lists recorded, and the store runs them: %v", err)
	}
	if err := schema.RecordHooks(ctx, db, schema.HookPages|schema.HookFeeds); err != nil {
		t.Fatal(err)
	}
	err = insert(3)
	if !errors.Is(err, schema.ErrWriteHooks) || !strings.Contains(err.Error(), "pages,feeds") {
		t.Fatalf("pages and feeds recorded: got %v, want an ErrWriteHooks naming them", err)
	}
	if n := rows(); n != 2 {
		t.Fatalf("the refused write changed the table: %d rows, want 2", n)
	}
	g.Run(schema.HookPages)
	if err := insert(3); !errors.Is(err, schema.ErrWriteHooks) || !strings.Contains(err.Error(), "feeds") || strings.Contains(err.Error(), "pages,") {
		t.Fatalf("feeds still missing: got %v", err)
	}
	g.Ignore()
	if err := insert(3); err != nil || rows() != 3 {
		t.Fatalf("a guard that ignores the hooks: %v, %d rows", err, rows())
	}
	if h, err := schema.RecordedHooks(ctx, db); err != nil || h != schema.HookLists|schema.HookPages|schema.HookFeeds {
		t.Fatalf("recorded %v, %v", h, err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE pushpull_meta SET value = 'lists,later' WHERE name = 'write_hooks'`); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.NewHookGuard(ctx, db, "test", 0); !errors.Is(err, schema.ErrWriteHooks) || !strings.Contains(err.Error(), `"later"`) {
		t.Fatalf("an unknown hook: got %v", err)
	}
}
