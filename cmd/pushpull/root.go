package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/cache"
	"github.com/pushpull/pushpull/internal/stores"
	"github.com/pushpull/pushpull/timeline"
)

// dsnEnv and memcacheEnv name the environment variables that --dsn and
// --memcache default to.
const (
	dsnEnv      = "PUSHPULL_DSN"
	memcacheEnv = "PUSHPULL_MEMCACHE"
)

// newRootCmd builds the whole command tree. Each call returns fresh commands
// with fresh flags, so tests can run many command lines in one process.
// getenv is how commands read the environment (os.Getenv in main).
func newRootCmd(getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "pushpull",
		Short: "Home timelines on MySQL/MariaDB, push (fan-out on write) versus pull (merge on read)",
		Long: `pushpull serves Twitter-style home timelines ("the newest messages of the
people I follow") from MySQL or MariaDB with two designs behind one interface:

  push         fan-out on write: posting copies the message id into every
               follower's mailbox; reading is one index range scan.
  pull-sp      merge on read, run by stored procedures (one CALL per page).
  pull-client  merge on read, run as concurrent small queries from the client.
  pull-naive   merge on read as one JOIN ... ORDER BY ... LIMIT (the baseline).
  pull-union   merge on read: newest id per followee, then one UNION ALL
               statement for the top followees' messages (two round trips).
  pull-merge   merge on read with early stop: a k-way merge over followees
               fetched in small batches, dropping a followee once it can no
               longer reach the page.
  pull-recent  merge on read from each author's newest ids kept in memcached
               (one GetMulti), then one fetch of the page's bodies; needs
               --memcache. The database stays the system of record.
  pull-active  pull-recent plus, for users following more than 128 authors,
               an index of the 64 who posted last, so a page fetches 21
               lists, not all; each post hints the index of every such
               follower. Needs --memcache.

Any of push, pull-sp and pull-client + "+memcache" (push+memcache, ...) puts
memcached in front of the newest page, kept current by invalidation on every
write (see package cache); it needs --memcache too.

The pull-* models share one database (pushpull_pull) and differ only in how
they read; push has its own database (pushpull_push).

Commands that talk to a server take --dsn, a go-sql-driver DSN such as
'user:pass@tcp(127.0.0.1:3306)/', defaulting to $PUSHPULL_DSN. If you have no
server, 'pushpull sandbox' starts a private one and prints the line to export.`,
		Example: `  pushpull demo
  pushpull sandbox                     # in one terminal; then export PUSHPULL_DSN=...
  pushpull follow --model push 1 2
  pushpull post --model push --author 2 hello world
  pushpull timeline --model push --user 1`,
		// Without Args, cobra reports unknown commands as plain errors;
		// this makes them usage errors (exit code 2).
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
				}
				return &usageError{fmt.Errorf("%s", msg)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{err}
	})
	root.CompletionOptions.DisableDefaultCmd = true
	root.SuggestionsMinimumDistance = 2
	root.AddCommand(
		newSandboxCmd(),
		newSchemaCmd(getenv),
		newPostCmd(getenv),
		newFollowCmd(getenv, true),
		newFollowCmd(getenv, false),
		newTimelineCmd(getenv),
		newDemoCmd(),
		newBenchCmd(),
		newReportCmd(),
		newVersionCmd(),
	)
	for _, c := range root.Commands() {
		c.DisableFlagsInUseLine = true // each Use line lists its flags
	}
	return root
}

// exactArgs is cobra.ExactArgs with usage errors that say what is expected.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %d arguments (%s), got %d", cmd.Name(), n, what, len(args))
		}
		return nil
	}
}

// noArgs is cobra.NoArgs with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q", cmd.Name(), args)
	}
	return nil
}

// serverFlags are the flags of every command that connects to a server.
type serverFlags struct {
	getenv   func(string) string
	dsn      string
	database string
	memcache string
}

func (f *serverFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dsn, "dsn", "", "go-sql-driver DSN of the server, e.g. 'user:pass@tcp(127.0.0.1:3306)/' (default $"+dsnEnv+")")
	cmd.Flags().StringVar(&f.database, "database", "", "database to use instead of the model's default (pushpull_push or pushpull_pull)")
	cmd.Flags().StringVar(&f.memcache, "memcache", "", "memcached servers as host:port, comma-separated; pull-recent, pull-active and the +memcache models need them (default $"+memcacheEnv+")")
}

// resolveMemcache returns the servers of --memcache, else $PUSHPULL_MEMCACHE,
// checked for shape; model says whether they are required.
func (f *serverFlags) resolveMemcache(model string) ([]string, error) {
	list := f.memcache
	if list == "" {
		list = f.getenv(memcacheEnv)
	}
	servers, err := parseServers(list)
	if err != nil {
		return nil, usagef("--memcache: %v", err)
	}
	if len(servers) == 0 && stores.NeedsMemcache(model) {
		return nil, usagef("--model %s keeps data in memcached: pass --memcache host:port or export %s (`pushpull sandbox` prints both servers)", model, memcacheEnv)
	}
	return servers, nil
}

// parseServers splits a comma-separated list of memcached addresses and
// checks them as package cache does (host:port, or a unix socket path).
func parseServers(list string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	if err := cache.CheckServers(out); err != nil {
		return nil, err
	}
	return out, nil
}

// resolveDSN returns --dsn, else $PUSHPULL_DSN, else a usage error that says
// how to get a server.
func (f *serverFlags) resolveDSN() (string, error) {
	dsn := f.dsn
	if dsn == "" {
		dsn = f.getenv(dsnEnv)
	}
	if dsn == "" {
		return "", usagef("no database given: start one with `pushpull sandbox` and export %s, or pass --dsn", dsnEnv)
	}
	if _, err := mysql.ParseDSN(dsn); err != nil {
		return "", usagef("--dsn: %v", err)
	}
	return dsn, nil
}

var databaseName = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// checkDatabase validates --database ("" means the model's default).
func checkDatabase(name string) error {
	if name != "" && !databaseName.MatchString(name) {
		return usagef("--database %q: want 1-64 letters, digits or '_'", name)
	}
	return nil
}

// checkStoreModel accepts the SQL models. Memory is refused: it keeps
// nothing from one invocation to the next.
func checkStoreModel(model string) error {
	valid := strings.Join(stores.SQLModels, ", ") + ", or " + strings.Join(stores.CachedModels, ", ")
	switch {
	case model == "":
		return usagef("--model is required: one of %s", valid)
	case model == stores.Memory:
		return usagef("--model memory keeps nothing between invocations, so it cannot be used here: use one of %s (`pushpull demo` shows memory next to the others)", valid)
	}
	if slices.Contains(stores.ServerModels, model) {
		return nil
	}
	return usagef("unknown model %q: want one of %s", model, valid)
}

// parseUserID parses a user id argument strictly: decimal digits only, in
// range, positive. Errors are timeline input errors naming field.
func parseUserID(field, s string) (timeline.UserID, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil && strings.Trim(s, "0123456789") != "" {
		err = strconv.ErrSyntax // ParseInt accepts a sign; ids are digits only
	}
	if err != nil {
		reason := fmt.Sprintf("%q is not a decimal integer", s)
		if errors.Is(err, strconv.ErrRange) {
			reason = fmt.Sprintf("%s is out of range (at most %d)", s, int64(1<<63-1))
		}
		return 0, &timeline.InputError{Field: field, Reason: reason, Err: timeline.ErrInvalidUser}
	}
	id := timeline.UserID(n)
	if err := timeline.CheckUser(field, id); err != nil {
		return 0, err
	}
	return id, nil
}

// serverAddr describes where a DSN points without its credentials.
func serverAddr(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return cfg.Net + " " + cfg.Addr
}

// openStore opens model (already checked by checkStoreModel) on the server
// and database the flags name, after checking them. A server that cannot be reached gives an error matching
// timeline.ErrUnavailable with a hint on how to get one.
func (f *serverFlags) openStore(ctx context.Context, model string) (timeline.Store, error) {
	if err := checkDatabase(f.database); err != nil {
		return nil, err
	}
	dsn, err := f.resolveDSN()
	if err != nil {
		return nil, err
	}
	servers, err := f.resolveMemcache(model)
	if err != nil {
		return nil, err
	}
	s, err := stores.Open(ctx, model, stores.Config{DSN: dsn, Database: f.database, MaxConns: 4, Memcache: servers})
	if err != nil {
		return nil, withHint(err)
	}
	return s, nil
}

// withHint adds advice to errors whose cause people can act on.
func withHint(err error) error {
	if errors.Is(err, timeline.ErrUnavailable) {
		return fmt.Errorf("%w\n(is the server running and the DSN right? `pushpull sandbox` starts a private server)", err)
	}
	return err
}
