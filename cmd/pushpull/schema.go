package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

func newSchemaCmd(getenv func(string) string) *cobra.Command {
	sf := serverFlags{getenv: getenv}
	var (
		model           string
		force, printSQL bool
	)
	cmd := &cobra.Command{
		Use:   "schema --model push|pull [--dsn DSN] [--database NAME] [--force] [--print]",
		Short: "Create or update a model's tables and stored procedures",
		Long: `schema applies the schema of the push or the pull model to its database
(pushpull_push or pushpull_pull unless --database says otherwise), creating
the database if needed, and says what it did. It is idempotent: when the
schema is already current nothing changes. Otherwise missing tables are
created (existing ones are never altered or dropped) and the pull model's
stored procedures are re-created.

The other commands apply the schema themselves when they open a store, so
this command is for doing it explicitly, for example to check permissions on
your own server before loading data.

pushpull refuses a database that holds tables it did not create, or the other
model's schema; --force applies the schema there anyway.

--print prints the SQL statements instead, without connecting to anything, in
a form the mariadb/mysql command-line client accepts. Applied by hand, they
leave pushpull_meta empty; pushpull records the model, the schema version and
the secret that signs cursors there the first time it opens the database.

The name of any model that keeps its data on a server is accepted too, for
its schema (see 'pushpull --help' for the models and their databases).`,
		Example: `  pushpull schema --model push
  pushpull schema --model pull --dsn 'app:secret@tcp(db.example:3306)/'
  pushpull schema --model pull --database pushpull_pull_test
  pushpull schema --model pull --print | less`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := schemaModel(model)
			if err != nil {
				return err
			}
			if printSQL {
				return printSchema(cmd.OutOrStdout(), m.Schema)
			}
			if err := checkDatabase(sf.database); err != nil {
				return err
			}
			dsn, err := sf.resolveDSN()
			if err != nil {
				return err
			}
			database := sf.database
			if database == "" {
				database = m.Database
			}
			msg, err := applySchema(cmd.Context(), dsn, database, m.Schema, force)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "push or pull")
	cmd.Flags().BoolVar(&force, "force", false, "apply the schema even to a database holding tables pushpull did not create")
	cmd.Flags().BoolVar(&printSQL, "print", false, "print the SQL statements instead of applying them (needs no server)")
	sf.register(cmd)
	return cmd
}

// schemaModel maps --model to the model whose schema and default database
// apply: a model that keeps its data on a server, or, for a schema's own
// name, the first such model with that schema.
func schemaModel(model string) (registry.Model, error) {
	want := fmt.Sprintf("%s or %s (or a model: %s)", schema.Push, schema.Pull, strings.Join(persistentNames(), ", "))
	if model == "" {
		return registry.Model{}, usagef("--model is required: %s", want)
	}
	for _, m := range registry.Models() {
		if m.Persistent() && string(m.Schema) == model {
			return m, nil
		}
	}
	m, err := registry.Lookup(model)
	if err != nil {
		return registry.Model{}, usagef("unknown model %q: want %s", model, want)
	}
	if !m.Persistent() {
		return registry.Model{}, usagef("the %s model has no schema: want %s", model, want)
	}
	return m, nil
}

// persistentNames are the listed models that keep their data on a server.
func persistentNames() []string {
	var out []string
	for _, m := range registry.Listed() {
		if m.Persistent() {
			out = append(out, m.Name)
		}
	}
	return out
}

// printSchema writes m's statements as a script for the mysql client:
// statements that contain ';' (procedure bodies) are wrapped in DELIMITER
// lines.
func printSchema(w io.Writer, m schema.Model) error {
	stmts, err := schema.Statements(m)
	if err != nil {
		return err
	}
	version, err := schema.Version(m)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "-- pushpull %s schema, version %s: %d statements.\n", m, version, len(stmts))
	fmt.Fprintf(w, "-- `pushpull schema` also records the model, the version and a cursor-signing\n")
	fmt.Fprintf(w, "-- key in pushpull_meta; pushpull adds those rows the first time it opens a\n")
	fmt.Fprintf(w, "-- database made from this output.\n")
	for _, s := range stmts {
		fmt.Fprintln(w)
		if strings.Contains(s, ";") {
			fmt.Fprintf(w, "DELIMITER //\n%s //\nDELIMITER ;\n", s)
		} else {
			fmt.Fprintf(w, "%s;\n", s)
		}
	}
	return nil
}

// applySchema applies m to database and describes what changed.
func applySchema(ctx context.Context, dsn, database string, m schema.Model, force bool) (string, error) {
	version, err := schema.Version(m)
	if err != nil {
		return "", err
	}
	db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: dsn, Database: database, MaxConns: 1})
	if err != nil {
		return "", withHint(err)
	}
	defer db.Close()
	meta, err := schema.ReadMeta(ctx, db)
	if err != nil {
		return "", err
	}
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()`).Scan(&tables); err != nil {
		return "", fmt.Errorf("count tables in %s: %w", database, err)
	}
	if err := schema.Apply(ctx, db, m, schema.Options{Force: force}); err != nil {
		if errors.Is(err, schema.ErrForeignDatabase) {
			return "", fmt.Errorf("database %s: %w\n(pass --force to apply the %s schema anyway, or choose another --database)", database, err, m)
		}
		return "", err
	}
	where := fmt.Sprintf("database %s on %s", database, serverAddr(dsn))
	switch {
	case meta == nil && tables == 0:
		return fmt.Sprintf("created the %s schema (version %s) in %s", m, version, where), nil
	case meta == nil:
		return fmt.Sprintf("applied the %s schema (version %s) to %s, which already held %d tables not made by pushpull (--force)", m, version, where, tables), nil
	case meta["model"] != string(m):
		return fmt.Sprintf("applied the %s schema (version %s) to %s, which held the %q model (--force)", m, version, where, meta["model"]), nil
	case meta["schema_version"] == version && len(meta["cursor_key"]) == timeline.CursorKeyLen:
		return fmt.Sprintf("the %s schema in %s is already current (version %s): nothing changed", m, where, version), nil
	default:
		what := "missing tables created, existing tables left as they were"
		if m == schema.Pull {
			what += ", stored procedures re-created"
		}
		return fmt.Sprintf("updated the %s schema in %s from version %s to %s: %s", m, where, meta["schema_version"], version, what), nil
	}
}
