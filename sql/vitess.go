package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// SequenceKeyspace is the unsharded Vitess keyspace that holds the
// sequence numbering messages (vitess_sequence.sql); VitessVSchema names
// it.
const SequenceKeyspace = "pushpull_seq"

// IsVitess reports whether m is a model's schema on Vitess.
func IsVitess(m Model) bool { return m == PushVitess || m == PullVitess || m == HybridVitess }

// ErrNoVSchema means a Vitess keyspace's VSchema lacks the tables of the
// schema: the keyspace was not set up with VitessVSchema.
var ErrNoVSchema = errors.New("keyspace is not sharded by pushpull's VSchema")

// VitessVSchema is the VSchema of a keyspace that holds any model on
// Vitess: every table sharded by the user who owns its rows with the hash
// vindex, and messages numbered by the sequence in SequenceKeyspace.
func VitessVSchema() []byte { return mustRead("vitess_vschema.json") }

// WriteVitessSchemaDir writes a vttestserver --schema-dir for keyspaces,
// each a sharded keyspace with VitessVSchema (its tables are made by Apply
// through vtgate), and for SequenceKeyspace with the sequence table, its
// first row and its VSchema.
func WriteVitessSchemaDir(dir string, keyspaces []string) error {
	files := map[string][]byte{
		filepath.Join(SequenceKeyspace, "01_sequence.sql"): mustRead("vitess_sequence.sql"),
		filepath.Join(SequenceKeyspace, "vschema.json"):    mustRead("vitess_sequence_vschema.json"),
	}
	for _, ks := range keyspaces {
		if ks == SequenceKeyspace {
			return fmt.Errorf("keyspace %s is the sequence's", ks)
		}
		files[filepath.Join(ks, "vschema.json")] = VitessVSchema()
	}
	for name, b := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func mustRead(name string) []byte {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("schema: " + err.Error())
	}
	return b
}

// checkVSchema asks vtgate for the VSchema tables of db's keyspace.
func checkVSchema(ctx context.Context, db *sql.DB, m Model) error {
	rows, err := db.QueryContext(ctx, `SHOW VSCHEMA TABLES`)
	if err != nil {
		return fmt.Errorf("read VSchema (is this a vtgate?): %w", err)
	}
	defer rows.Close()
	var have []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return err
		}
		have = append(have, t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range append(append(DataTables(PushVitess), DataTables(m)...), Table{Name: "pushpull_meta"}) {
		if !slices.Contains(have, t.Name) {
			return fmt.Errorf("%w: its VSchema has no table %s (apply `pushpull schema --vitess --print` to it: see docs/scale-out.md)", ErrNoVSchema, t.Name)
		}
	}
	return nil
}
