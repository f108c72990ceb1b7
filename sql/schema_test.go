package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	schema "github.com/pushpull/pushpull/sql"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{}) }

func TestStatements(t *testing.T) {
	for _, m := range []schema.Model{schema.Push, schema.Pull} {
		stmts, err := schema.Statements(m)
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(stmts, "\n")
		for _, want := range []string{"CREATE TABLE IF NOT EXISTS follows", "CREATE TABLE IF NOT EXISTS messages", "pushpull_meta"} {
			if !strings.Contains(joined, want) {
				t.Fatalf("%s schema lacks %q", m, want)
			}
		}
		hasMailbox := strings.Contains(joined, "CREATE TABLE IF NOT EXISTS mailbox")
		if hasMailbox != (m == schema.Push) {
			t.Fatalf("%s schema: mailbox present = %v", m, hasMailbox)
		}
		for _, s := range stmts {
			if strings.Contains(s, "DELIMITER") || strings.HasSuffix(s, ";") || strings.HasSuffix(s, "//") {
				t.Fatalf("%s: statement not split cleanly: %q", m, s)
			}
		}
	}
	stmts, _ := schema.Statements(schema.Pull)
	procs := 0
	for _, s := range stmts {
		if strings.HasPrefix(s, "CREATE PROCEDURE") {
			procs++
			if !strings.HasSuffix(s, "END") {
				t.Fatalf("procedure cut short: ...%q", s[len(s)-40:])
			}
		}
	}
	if procs != 3 {
		t.Fatalf("%d procedures, want 3", procs)
	}
	if _, err := schema.Statements("gossip"); err == nil {
		t.Fatal("unknown model accepted")
	}
}

func open(t *testing.T, database string) *sql.DB {
	t.Helper()
	db, err := mysqlx.Open(context.Background(), mysqlx.Options{DSN: testserver.DSN(t), Database: database})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestApplyIdempotent(t *testing.T) {
	ctx := context.Background()
	for _, m := range []schema.Model{schema.Push, schema.Pull} {
		db := open(t, testserver.Database(t))
		if err := schema.Apply(ctx, db, m, schema.Options{}); err != nil {
			t.Fatal(err)
		}
		codec1, err := schema.CursorCodec(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("INSERT INTO follows VALUES (1, 2)"); err != nil {
			t.Fatal(err)
		}
		if err := schema.Apply(ctx, db, m, schema.Options{}); err != nil {
			t.Fatalf("second Apply: %v", err)
		}
		// Simulate an older schema version: Apply must re-run the files,
		// keep the data and keep the cursor key.
		if _, err := db.Exec("UPDATE pushpull_meta SET value = 'old' WHERE name = 'schema_version'"); err != nil {
			t.Fatal(err)
		}
		if err := schema.Apply(ctx, db, m, schema.Options{}); err != nil {
			t.Fatalf("upgrade Apply: %v", err)
		}
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM follows").Scan(&n); err != nil || n != 1 {
			t.Fatalf("data after re-apply: %d rows, %v", n, err)
		}
		codec2, err := schema.CursorCodec(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if c := codec1.Encode(1, 5); func() error { _, err := codec2.Decode(1, c); return err }() != nil {
			t.Fatalf("%s: cursor key changed on re-apply", m)
		}
		meta, err := schema.ReadMeta(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := schema.Version(m)
		if meta["model"] != string(m) || meta["schema_version"] != v {
			t.Fatalf("meta %v", meta)
		}
	}
}

func TestApplyRefusesForeignDatabase(t *testing.T) {
	ctx := context.Background()
	db := open(t, testserver.Database(t))
	if _, err := db.Exec("CREATE TABLE customers (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	err := schema.Apply(ctx, db, schema.Push, schema.Options{})
	if !errors.Is(err, schema.ErrForeignDatabase) {
		t.Fatalf("got %v, want ErrForeignDatabase", err)
	}
	var tables int
	db.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()").Scan(&tables)
	if tables != 1 {
		t.Fatalf("refused Apply still created tables: %d tables", tables)
	}
	if err := schema.Apply(ctx, db, schema.Push, schema.Options{Force: true}); err != nil {
		t.Fatalf("forced Apply: %v", err)
	}

	// A pull database is not a push database.
	pullDB := open(t, testserver.Database(t))
	if err := schema.Apply(ctx, pullDB, schema.Pull, schema.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := schema.Apply(ctx, pullDB, schema.Push, schema.Options{}); !errors.Is(err, schema.ErrForeignDatabase) {
		t.Fatalf("push schema over pull database: got %v", err)
	}
}

// TestApplyAfterHandApplied: a database made by running the printed
// statements by hand (pushpull_meta empty) is adopted, not refused.
func TestApplyAfterHandApplied(t *testing.T) {
	ctx := context.Background()
	db := open(t, testserver.Database(t))
	stmts, err := schema.Statements(schema.Pull)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := schema.Apply(ctx, db, schema.Pull, schema.Options{}); err != nil {
		t.Fatalf("Apply over hand-applied schema: %v", err)
	}
	if _, err := schema.CursorCodec(ctx, db); err != nil {
		t.Fatal(err)
	}
}

// TestDataTables: the tables and columns DataTables declares (which the bulk
// loader writes) are those of the applied schema, every NOT NULL column
// without a default included.
func TestDataTables(t *testing.T) {
	ctx := context.Background()
	for _, m := range []schema.Model{schema.Push, schema.Pull} {
		tables := schema.DataTables(m)
		if len(tables) < 2 {
			t.Fatalf("%s: DataTables = %v", m, tables)
		}
		name := testserver.Database(t)
		db := open(t, name)
		if err := schema.Apply(ctx, db, m, schema.Options{}); err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			rows, err := db.QueryContext(ctx, `SELECT column_name, is_nullable = 'NO' AND column_default IS NULL AND extra NOT LIKE '%auto_increment%'
				FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position`, name, tb.Name)
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for rows.Next() {
				var col string
				var required bool
				if err := rows.Scan(&col, &required); err != nil {
					t.Fatal(err)
				}
				all = append(all, col)
				if required && !slices.Contains(tb.Columns, col) {
					t.Errorf("%s.%s: required column %s is not loaded (DataTables says %v)", m, tb.Name, col, tb.Columns)
				}
			}
			rows.Close()
			if len(all) == 0 {
				t.Errorf("%s: table %s is not in the schema", m, tb.Name)
			}
			for _, col := range tb.Columns {
				if !slices.Contains(all, col) {
					t.Errorf("%s.%s: DataTables names column %s, the schema has %v", m, tb.Name, col, all)
				}
			}
		}
	}
	if schema.DataTables("gossip") != nil {
		t.Error("DataTables of an unknown model is not nil")
	}
}
