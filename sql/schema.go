// Package schema holds the SQL schema and stored procedures of every
// design as .sql files (embedded with go:embed), one Model per data model,
// and applies them to a database or writes them out for Vitess.
//
// The directory is sql/ so the files sit where people look for them; the
// package is named schema so that importing it never shadows database/sql.
//
// The files are valid input for the mariadb/mysql client as well: statements
// end with ';' and procedure bodies are wrapped in DELIMITER lines.
package schema

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/pushpull/pushpull/timeline"
)

//go:embed *.sql *.json
var files embed.FS

// Model names a data model; each model lives in its own database.
type Model string

const (
	Push Model = "push"
	Pull Model = "pull"
	// PushCapped is push's tables plus mailbox_state, the floor and
	// size of each user's capped mailbox.
	PushCapped Model = "push-capped"
	// PushActive is push's tables plus reader_state, which says whose
	// mailbox posts fan out to and where it ends.
	PushActive Model = "push-active"
	// PushCompressed is push's tables with the mailbox stored in
	// compressed pages.
	PushCompressed Model = "push-compressed"
	// Hybrid is push's tables plus the authors that are pulled instead
	// of fanned out (pull_authors, pull_follows).
	Hybrid Model = "hybrid"
	// Selective is push's tables plus each follow edge's decision, push
	// or pull (push_edges, pull_edges), and the users' decayed read and
	// post counts it is taken from (user_rates).
	Selective Model = "selective"
	// PushVitess and PullVitess are the models' tables on a Vitess
	// keyspace sharded by user (see vitess.go).
	PushVitess Model = "push@vitess"
	PullVitess Model = "pull@vitess"
	// HybridVitess is push@vitess's tables plus hybrid's pull_authors
	// (by author_id) and pull_follows (by user_id) on Vitess.
	HybridVitess Model = "hybrid@vitess"
)

// Files returns the names of the .sql files that make up model's schema, in
// the order they are applied.
func Files(m Model) ([]string, error) {
	switch m {
	case Push:
		return []string{"common.sql", "push.sql", "drowning.sql", "fanout_jobs.sql"}, nil
	case Pull:
		return []string{"common.sql", "pull.sql"}, nil
	case PushCapped:
		return []string{"common.sql", "push.sql", "drowning.sql", "fanout_jobs.sql", "push_capped.sql"}, nil
	case PushActive:
		return []string{"common.sql", "push.sql", "drowning.sql", "fanout_jobs.sql", "push_active.sql"}, nil
	case PushCompressed:
		return []string{"common.sql", "push_compressed.sql", "drowning.sql"}, nil
	case Hybrid:
		return []string{"common.sql", "push.sql", "drowning.sql", "fanout_jobs.sql", "hybrid.sql"}, nil
	case Selective:
		return []string{"common.sql", "push.sql", "drowning.sql", "fanout_jobs.sql", "selective.sql"}, nil
	case PushVitess, PullVitess:
		return []string{"common.sql", "vitess.sql", "fanout_jobs.sql"}, nil
	case HybridVitess:
		return []string{"common.sql", "vitess.sql", "fanout_jobs.sql", "hybrid.sql"}, nil
	}
	return nil, fmt.Errorf("unknown model %q (want %q, %q, %q, %q, %q, %q, %q, %q, %q or %q)", m, Push, Pull, PushCapped, PushActive, PushCompressed, Hybrid, Selective, PushVitess, PullVitess, HybridVitess)
}

// ErrForeignDatabase means the database holds tables that pushpull did not
// create, or another model's tables; Apply refuses to touch it.
var ErrForeignDatabase = errors.New("database was not created by pushpull for this model")

// Statements returns model's schema as individual SQL statements.
func Statements(m Model) ([]string, error) {
	names, err := Files(m)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		stmts, err := split(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, stmts...)
	}
	return out, nil
}

// Version is a digest of model's schema files: Apply re-creates the stored
// procedures only when it changes, so that opening a store never drops a
// procedure that other connections are calling.
func Version(m Model) (string, error) {
	stmts, err := Statements(m)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, s := range stmts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// split cuts a .sql file into statements the way the mysql client does: at
// the current delimiter (';' unless a DELIMITER line changed it), skipping
// comment lines.
func split(src string) ([]string, error) {
	delim := ";"
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		if d, ok := strings.CutPrefix(trimmed, "DELIMITER "); ok {
			delim = strings.TrimSpace(d)
			continue
		}
		if strings.HasSuffix(trimmed, delim) {
			cur.WriteString(strings.TrimSuffix(strings.TrimRight(line, " \t"), delim))
			if s := strings.TrimSpace(cur.String()); s != "" {
				out = append(out, s)
			}
			cur.Reset()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		return nil, fmt.Errorf("statement not terminated by %q: %.60s", delim, s)
	}
	return out, sc.Err()
}

// Options changes how Apply treats an existing database.
type Options struct {
	// Force applies the schema even to a database that holds tables
	// pushpull did not create.
	Force bool
}

// Apply creates model's tables and procedures in db's current database.
// It is idempotent and cheap when the schema is already current. It refuses
// (ErrForeignDatabase) a database that holds other tables or the other
// model's schema, unless opts.Force.
//
// On Vitess (PushVitess, PullVitess, HybridVitess) db's database is a keyspace that must
// already be sharded by VitessVSchema: Apply creates the tables through
// vtgate, which sends each statement to every shard, but refuses
// (ErrNoVSchema) a keyspace whose VSchema lacks them.
func Apply(ctx context.Context, db *sql.DB, m Model, opts Options) error {
	version, err := Version(m)
	if err != nil {
		return err
	}
	if IsVitess(m) {
		if err := checkVSchema(ctx, db, m); err != nil {
			return fmt.Errorf("apply %s schema: %w", m, err)
		}
	}
	meta, err := ReadMeta(ctx, db)
	if err != nil {
		return fmt.Errorf("apply %s schema: %w", m, err)
	}
	if meta == nil && !opts.Force {
		var tables int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()`).Scan(&tables); err != nil {
			return fmt.Errorf("apply %s schema: %w", m, err)
		}
		if tables > 0 {
			return fmt.Errorf("apply %s schema: %w: it holds %d tables and no pushpull_meta (use force to apply anyway)", m, ErrForeignDatabase, tables)
		}
	}
	// An empty pushpull_meta comes from applying these files by hand
	// (schema --print | mariadb): it is ours, just not yet stamped.
	if meta != nil && meta["model"] != "" && meta["model"] != string(m) && !opts.Force {
		return fmt.Errorf("apply %s schema: %w: it holds the %q model", m, ErrForeignDatabase, meta["model"])
	}
	if meta != nil && meta["model"] == string(m) && meta["schema_version"] == version && len(meta["cursor_key"]) == timeline.CursorKeyLen {
		return nil
	}
	stmts, err := Statements(m)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("apply %s schema: %w\nin statement: %.200s", m, err, s)
		}
	}
	// INSERT IGNORE keeps an existing key: cursors issued before an
	// upgrade stay valid.
	if _, err := db.ExecContext(ctx, `INSERT IGNORE INTO pushpull_meta (name, value) VALUES ('cursor_key', ?)`, timeline.NewCursorKey()); err != nil {
		return fmt.Errorf("apply %s schema: %w", m, err)
	}
	// Not REPLACE, which vtgate does not run on a sharded keyspace.
	if _, err := db.ExecContext(ctx, `INSERT INTO pushpull_meta (name, value) VALUES ('model', ?), ('schema_version', ?) ON DUPLICATE KEY UPDATE value = VALUES(value)`, string(m), version); err != nil {
		return fmt.Errorf("apply %s schema: %w", m, err)
	}
	return nil
}

// ApplyDrowning creates the drowning readers' table (drowning.sql, part
// of every model on push's tables) in db's current database if it is
// missing: for a model that keeps another model's schema and wants the
// table only when its option asks for it (push-redis, on pull's).
func ApplyDrowning(ctx context.Context, db *sql.DB) error {
	b, err := files.ReadFile("drowning.sql")
	if err != nil {
		return err
	}
	stmts, err := split(string(b))
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("create drowning_readers: %w", err)
		}
	}
	return nil
}

// ReadMeta returns the pushpull_meta table of db's current database, or nil
// if there is none.
func ReadMeta(ctx context.Context, db *sql.DB) (map[string]string, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'pushpull_meta'`).Scan(&n); err != nil {
		return nil, fmt.Errorf("read pushpull_meta: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT name, value FROM pushpull_meta`)
	if err != nil {
		return nil, fmt.Errorf("read pushpull_meta: %w", err)
	}
	defer rows.Close()
	meta := make(map[string]string)
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("read pushpull_meta: %w", err)
		}
		meta[k] = string(v)
	}
	return meta, rows.Err()
}

// CursorCodec returns the cursor codec keyed by the secret Apply stored in
// db's current database.
func CursorCodec(ctx context.Context, db *sql.DB) (*timeline.CursorCodec, error) {
	key, err := cursorKey(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("read cursor key: %w", err)
	}
	return timeline.NewCursorCodec(key)
}

// Identity is a short digest of db's cursor key, which Apply makes afresh
// for every new database: caches outside the database put it in their
// keys, so that a database dropped and made again under the same name never
// sees its predecessor's entries. purpose separates the digests of
// different users of the key, so that none reveals another.
func Identity(ctx context.Context, db *sql.DB, purpose string) (string, error) {
	key, err := cursorKey(ctx, db)
	if err != nil {
		return "", fmt.Errorf("read database identity: %w", err)
	}
	sum := sha256.Sum256(append([]byte(purpose+"\x00"), key...))
	return hex.EncodeToString(sum[:6]), nil
}

func cursorKey(ctx context.Context, db *sql.DB) ([]byte, error) {
	var key []byte
	err := db.QueryRowContext(ctx, `SELECT value FROM pushpull_meta WHERE name = 'cursor_key'`).Scan(&key)
	return key, err
}
