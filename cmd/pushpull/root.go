package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/registry"
	_ "github.com/pushpull/pushpull/registry/all" // every model
	"github.com/pushpull/pushpull/timeline"
)

// dsnEnv, memcacheEnv and redisEnv name the environment variables that
// --dsn, --memcache and --redis default to.
const (
	dsnEnv      = "PUSHPULL_DSN"
	vtgateEnv   = "PUSHPULL_VTGATE"
	memcacheEnv = "PUSHPULL_MEMCACHE"
	redisEnv    = "PUSHPULL_REDIS"
)

// newRootCmd builds the whole command tree. Each call returns fresh commands
// with fresh flags, so tests can run many command lines in one process.
// getenv is how commands read the environment (os.Getenv in main).
func newRootCmd(getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "pushpull",
		Short: "Home timelines on MySQL/MariaDB, push (fan-out on write) versus pull (merge on read)",
		Long:  rootLong(),
		Example: `  pushpull demo
  pushpull sandbox                     # in one terminal; then export PUSHPULL_DSN=...
  pushpull follow --model {push} 1 2
  pushpull post --model {push} --author 2 hello world
  pushpull timeline --model {push} --user 1`,
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
		newDeleteCmd(getenv),
		newFollowCmd(getenv, true),
		newFollowCmd(getenv, false),
		newTimelineCmd(getenv),
		newServeCmd(getenv),
		newFanoutCmd(getenv),
		newReconcileCmd(getenv),
		newDemoCmd(),
		newBenchCmd(),
		newSweepCmd(),
		newRecommendCmd(),
		newPlanCmd(),
		newReportCmd(),
		newVersionCmd(),
	)
	for _, c := range root.Commands() {
		c.DisableFlagsInUseLine = true // each Use line lists its flags
	}
	fillExamples(root, exampleNames())
	return root
}

// rootLong is the root command's description; its list of models comes
// from the registry.
func rootLong() string {
	var b strings.Builder
	b.WriteString(`pushpull serves Twitter-style home timelines ("the newest messages of the
people I follow") from MySQL or MariaDB with two designs behind one interface:
push (fan-out on write) and pull (merge on read), in several variants:

`)
	b.WriteString(modelList(registry.Models()))
	b.WriteString(`
Variants put something in front of a model; "MODEL+VARIANT" names one:

`)
	for _, v := range registry.Variants() {
		writeEntry(&b, "+"+v.Name, fmt.Sprintf("%s. Needs %s; offered as %s.", v.Summary, v.Needs,
			strings.Join(registry.Names(registry.Offered(v.Name)), ", ")))
		writeOptions(&b, v.Options)
	}
	b.WriteString(`
Models with the same database share it and differ only in how they read
and what they keep beside it; see each model's database above.

A model's options are set with --option name=value (the commands that open
models take it); an option the model does not declare is refused. Durations
are Go durations (168h, 500ms).

Commands that talk to a server take --dsn, a go-sql-driver DSN such as
'user:pass@tcp(127.0.0.1:3306)/', defaulting to $PUSHPULL_DSN. If you have no
server, 'pushpull sandbox' starts a private one and prints the line to export.`)
	return b.String()
}

// modelList describes models, one per paragraph, wrapped for a terminal:
// name, summary, database, needs and traits, then the model's options.
func modelList(ms []registry.Model) string {
	var b strings.Builder
	for _, m := range ms {
		text := m.Summary
		if m.Persistent() {
			text += fmt.Sprintf(". Database %s; needs %s.", m.Database, m.Needs)
		} else {
			text += "."
		}
		if m.Traits != 0 {
			text += fmt.Sprintf(" Traits: %s.", m.Traits)
		}
		writeEntry(&b, m.Name, text)
		writeOptions(&b, m.Options)
	}
	return b.String()
}

// writeOptions writes each option's declaration under its model's entry:
// name, default, help and values.
func writeOptions(b *strings.Builder, opts []registry.Option) {
	for _, o := range opts {
		text := fmt.Sprintf("option %s (default %s): %s; %s.", o.Name, o.Default, o.Help, o.Values())
		for i, l := range wrap(text, 60) {
			indent := ""
			if i > 0 {
				indent = "  "
			}
			fmt.Fprintf(b, "  %-13s %s%s\n", "", indent, l)
		}
	}
}

// writeEntry writes name and its text wrapped beside it.
func writeEntry(b *strings.Builder, name, text string) {
	for i, l := range wrap(text, 62) {
		if i > 0 {
			name = ""
		}
		fmt.Fprintf(b, "  %-13s %s\n", name, l)
	}
}

// wrap breaks text into lines of at most width bytes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// exampleNames maps the placeholders of help texts and examples to model
// names from the registry: {push} is the paper's push model and {pull} the
// paper's pull model.
func exampleNames() *strings.Replacer {
	pick := func(f registry.Family) string {
		for _, m := range registry.Models() {
			if m.Family == f && m.Bench.Paper {
				return m.Name
			}
		}
		return string(f)
	}
	return strings.NewReplacer("{push}", pick(registry.FamilyPush), "{pull}", pick(registry.FamilyPull))
}

// fillExamples fills the placeholders in c's and its subcommands' texts.
func fillExamples(c *cobra.Command, r *strings.Replacer) {
	c.Long, c.Example, c.Use = r.Replace(c.Long), r.Replace(c.Example), r.Replace(c.Use)
	for _, sub := range c.Commands() {
		fillExamples(sub, r)
	}
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
	redis    string
	options  []string
	maxConns int            // the store's connections; 0 means 4
	cmd      *cobra.Command // for its error stream
}

func (f *serverFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	cmd.Flags().StringVar(&f.dsn, "dsn", "", "go-sql-driver DSN of the server, e.g. 'user:pass@tcp(127.0.0.1:3306)/' (default $"+dsnEnv+"); for a model on Vitess, a vtgate's (default $"+vtgateEnv+")")
	cmd.Flags().StringVar(&f.database, "database", "", "database to use instead of the model's default (see pushpull --help)")
	cmd.Flags().StringVar(&f.memcache, "memcache", "", "memcached servers as host:port, comma-separated; "+strings.Join(needingMemcached(), ", ")+" need them (default $"+memcacheEnv+")")
	cmd.Flags().StringVar(&f.redis, "redis", "", "redis-server as host:port; "+strings.Join(needing(registry.Redis), ", ")+" need it (default $"+redisEnv+")")
	cmd.Flags().StringArrayVar(&f.options, "option", nil, optionUsage+"; the model must declare it")
}

// optionUsage begins the help of every --option flag.
const optionUsage = "model option, name=value (repeatable), e.g. --option cap=400; pushpull --help lists each model's options"

// parseOptions turns --option name=value flags into Config.Options. It
// checks their shape only: which names and values a model takes is the
// registry's to say (registry.Model.CheckOptions, registry.CheckShared).
func parseOptions(flags []string) (map[string]string, error) {
	options := map[string]string{}
	for _, kv := range flags {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef("--option %q: want name=value, e.g. cap=400", kv)
		}
		options[strings.TrimSpace(k)] = strings.TrimSpace(v) // the last of a name counts
	}
	return options, nil
}

// modelOptions returns the --option flags as the options of model, or a
// usage error naming what model does not take.
func (f *serverFlags) modelOptions(model registry.Model) (map[string]string, error) {
	options, err := parseOptions(f.options)
	if err != nil {
		return nil, err
	}
	if err := model.CheckOptions(options); err != nil {
		return nil, &usageError{fmt.Errorf("--option: %w", err)}
	}
	return options, nil
}

// needing names the base models that need server.
func needing(server registry.Servers) []string {
	var out []string
	for _, m := range registry.Models() {
		if m.Needs&server != 0 {
			out = append(out, m.Name)
		}
	}
	return out
}

// resolveRedis returns the server of --redis, else $PUSHPULL_REDIS; model
// says whether it is required.
func (f *serverFlags) resolveRedis(model registry.Model) (string, error) {
	addr := f.redis
	if addr == "" {
		addr = f.getenv(redisEnv)
	}
	if addr == "" && model.Needs&registry.Redis != 0 {
		return "", usagef("--model %s keeps data in Redis: pass --redis host:port or export %s (`pushpull sandbox` prints its address)", model.Name, redisEnv)
	}
	return addr, nil
}

// needingMemcached names the listed models that need memcached, and the
// variants that add it.
func needingMemcached() []string {
	var out []string
	for _, m := range registry.Models() {
		if m.Needs&registry.Memcached != 0 {
			out = append(out, m.Name)
		}
	}
	for _, v := range registry.Variants() {
		if v.Needs&registry.Memcached != 0 {
			out = append(out, "the +"+v.Name+" models")
		}
	}
	return out
}

// resolveMemcache returns the servers of --memcache, else $PUSHPULL_MEMCACHE,
// checked for shape; model says whether they are required.
func (f *serverFlags) resolveMemcache(model registry.Model) ([]string, error) {
	list := f.memcache
	if list == "" {
		list = f.getenv(memcacheEnv)
	}
	servers, err := parseServers(list)
	if err != nil {
		return nil, usagef("--memcache: %v", err)
	}
	if len(servers) == 0 && model.Needs&registry.Memcached != 0 {
		return nil, usagef("--model %s keeps data in memcached: pass --memcache host:port or export %s (`pushpull sandbox` prints both servers)", model.Name, memcacheEnv)
	}
	return servers, nil
}

// parseServers splits a comma-separated list of memcached addresses and
// checks them as package memcache does (host:port, or a unix socket path).
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
	if err := memcache.CheckServers(out); err != nil {
		return nil, err
	}
	return out, nil
}

// resolveDSN returns --dsn, else $PUSHPULL_DSN, else a usage error that says
// how to get a server.
func (f *serverFlags) resolveDSN() (string, error) {
	return f.resolveServer(dsnEnv, "`pushpull sandbox`")
}

// resolveServer returns --dsn, else $env, else a usage error that says
// how to get a server with start.
func (f *serverFlags) resolveServer(env, start string) (string, error) {
	dsn := f.dsn
	if dsn == "" {
		dsn = f.getenv(env)
	}
	if dsn == "" {
		return "", usagef("no server given: start one with %s and export %s, or pass --dsn", start, env)
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

// storeModel looks --model up among the models that keep their data on a
// server. The memory model is refused: it keeps nothing from one
// invocation to the next.
func storeModel(name string) (registry.Model, error) {
	list := strings.Join(persistentNames(), ", ")
	if name == "" {
		return registry.Model{}, usagef("--model is required: one of %s", list)
	}
	m, err := registry.Lookup(name)
	if err != nil {
		return registry.Model{}, usagef("unknown model %q: want one of %s", name, list)
	}
	if !m.Persistent() {
		return registry.Model{}, usagef("--model %s keeps nothing between invocations, so it cannot be used here: use one of %s (`pushpull demo` shows it next to the others)", name, list)
	}
	return m, nil
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

// parseMessageID parses a message id given on the command line.
func parseMessageID(field, s string) (timeline.MessageID, error) {
	n, err := parseUserID(field, s)
	if err != nil {
		var ie *timeline.InputError
		if errors.As(err, &ie) {
			ie.Err = timeline.ErrInvalidMessage
		}
		return 0, err
	}
	return timeline.MessageID(n), nil
}

// parseBound parses a page bound given on the command line: a cursor a
// page printed, or a message id, which is made a cursor (timeline.IDCursor).
func parseBound(field, s string) (timeline.Cursor, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return timeline.Cursor(s), nil
	}
	id, err := parseMessageID(field, s)
	if err != nil {
		return "", err
	}
	return timeline.IDCursor(id), nil
}

// serverAddr describes where a DSN points without its credentials.
func serverAddr(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return cfg.Net + " " + cfg.Addr
}

// openStore opens model (from storeModel) on the server and database the
// flags name, after checking them. A server that cannot be reached gives an
// error matching timeline.ErrUnavailable with a hint on how to get one.
func (f *serverFlags) openStore(ctx context.Context, model registry.Model) (timeline.Store, error) {
	if err := checkDatabase(f.database); err != nil {
		return nil, err
	}
	options, err := f.modelOptions(model)
	if err != nil {
		return nil, err
	}
	cfg := registry.Config{Database: f.database, MaxConns: f.maxConns, Options: options}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 4
	}
	if model.OnVitess() {
		cfg.Vtgate, err = f.resolveServer(vtgateEnv, "`pushpull sandbox --vitess`")
	} else {
		cfg.DSN, err = f.resolveDSN()
	}
	if err != nil {
		return nil, err
	}
	if cfg.Memcache, err = f.resolveMemcache(model); err != nil {
		return nil, err
	}
	if cfg.Redis, err = f.resolveRedis(model); err != nil {
		return nil, err
	}
	s, err := model.Open(ctx, cfg)
	if err != nil {
		return nil, withHint(err)
	}
	warnDegraded(f.cmd.ErrOrStderr(), s)
	return s, nil
}

// warnDegraded tells the user which servers a store opened without.
func warnDegraded(w io.Writer, s timeline.Store) {
	if d, ok := timeline.As[timeline.Degraded](s); ok {
		if down := d.DownServers(); len(down) > 0 {
			fmt.Fprintf(w, "warning: memcached %s not answering; working without it (reads of its keys go to the database)\n", strings.Join(down, ", "))
		}
	}
}

// withHint adds advice to errors whose cause people can act on.
func withHint(err error) error {
	if errors.Is(err, timeline.ErrUnavailable) {
		return fmt.Errorf("%w\n(is the server running and the DSN right? `pushpull sandbox` starts a private server)", err)
	}
	return err
}
