package main

import (
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/registry/registrytest"
)

// nowhere is a server nothing listens on: a command that got as far as
// connecting would fail with exit 1, not 2.
const nowhere = "root@tcp(127.0.0.1:1)/"

// optionCommands are the command lines that open m, with --option opt
// added: the measuring commands for every model, and the one-shot store
// commands for those that keep their data.
func optionCommands(m registry.Model, opt string) [][]string {
	cmds := [][]string{
		{"bench", "--models", m.Name, "--dsn", nowhere},
		{"sweep", "--vary", "scale", "--values", "0.01", "--models", m.Name, "--dsn", nowhere},
		{"recommend", "--models", m.Name, "--dsn", nowhere},
	}
	if m.Persistent() {
		cmds = append(cmds,
			[]string{"timeline", "--model", m.Name, "--user", "1"},
			[]string{"post", "--model", m.Name, "--author", "1", "hello"},
			[]string{"follow", "--model", m.Name, "1", "2"},
			[]string{"unfollow", "--model", m.Name, "1", "2"},
		)
	}
	for i := range cmds {
		cmds[i] = append(cmds[i], "--option", opt)
	}
	return cmds
}

// TestMisspelledOption: every command that opens a model refuses an
// option the model does not declare, before it connects anywhere, with
// exit 2 and the model's valid options.
func TestMisspelledOption(t *testing.T) {
	env := map[string]string{dsnEnv: nowhere, vtgateEnv: nowhere, memcacheEnv: "127.0.0.1:1"}
	for _, m := range registry.Listed() {
		bad := registrytest.Misspelled(m)
		valid := "(it takes no options)"
		if len(m.Options) > 0 {
			valid = "(valid: " + strings.Join(m.OptionNames(), ", ") + ")"
		}
		for _, args := range optionCommands(m, bad+"=20") {
			r := run(t, env, args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, `unknown option "`+bad+`"`) || !strings.Contains(r.stderr, valid) {
				t.Errorf("pushpull %s: %v\nwant exit 2, unknown option %q and %s", strings.Join(args, " "), r, bad, valid)
			}
		}
	}
	// The demo opens every model: an option none declares is refused.
	r := run(t, nil, "demo", "--option", "cpa=20")
	if r.code != exitUsage || !strings.Contains(r.stderr, `unknown option "cpa": none of the models`) || !strings.Contains(r.stderr, "cap") {
		t.Errorf("demo --option cpa=20: %v", r)
	}
}

// TestBadOptionValue: every command refuses a value an option does not
// take, with exit 2 and what it wants.
func TestBadOptionValue(t *testing.T) {
	env := map[string]string{dsnEnv: nowhere, vtgateEnv: nowhere, memcacheEnv: "127.0.0.1:1"}
	for _, m := range registry.Listed() {
		for _, o := range m.Options {
			for _, v := range registrytest.Malformed(o) {
				for _, args := range optionCommands(m, o.Name+"="+v) {
					r := run(t, env, args...)
					if r.code != exitUsage || !strings.Contains(r.stderr, "option "+o.Name+"=") || !strings.Contains(r.stderr, "want ") {
						t.Errorf("pushpull %s: %v\nwant exit 2 saying what %s wants", strings.Join(args, " "), r, o.Name)
					}
				}
			}
		}
	}
}

// TestSharedOptions: the measuring commands give an option to the models
// that declare it and refuse one that none of them declares.
func TestSharedOptions(t *testing.T) {
	var with, without registry.Model
	for _, m := range registry.Listed() {
		switch {
		case with.Name == "" && len(m.Options) > 0 && !m.OnVitess():
			with = m
		case without.Name == "" && len(m.Options) == 0 && m.Persistent() && !m.OnVitess():
			without = m
		}
	}
	opt := with.Options[0]
	models := with.Name + "," + without.Name
	r := run(t, nil, "bench", "--models", without.Name, "--dsn", nowhere, "--option", opt.Name+"="+opt.Default)
	if r.code != exitUsage || !strings.Contains(r.stderr, "model "+without.Name+`: unknown option "`+opt.Name+`"`) {
		t.Errorf("an option the one model measured does not declare: %v", r)
	}
	// Taken by one of the two: the run goes on, to the server it cannot
	// reach.
	r = run(t, nil, "bench", "--models", models, "--dsn", nowhere, "--option", opt.Name+"="+opt.Default, "--scale", "0.002")
	if r.code != exitError {
		t.Errorf("an option one of %s declares: %v, want the run to fail on the server (exit 1)", models, r)
	}
}

// TestOptionsInHelp: pushpull --help prints every model's and variant's
// options from their declarations, and --option points there.
func TestOptionsInHelp(t *testing.T) {
	help := strings.Join(strings.Fields(mustRun(t, nil, "--help")), " ")
	declarations := map[string][]registry.Option{}
	for _, m := range registry.Models() {
		declarations[m.Name] = m.Options
	}
	for _, v := range registry.Variants() {
		declarations["+"+v.Name] = v.Options
	}
	for name, opts := range declarations {
		for _, o := range opts {
			want := strings.Join(strings.Fields("option "+o.Name+" (default "+o.Default+"): "+o.Help+"; "+o.Values()+"."), " ")
			if !strings.Contains(help, want) {
				t.Errorf("pushpull --help lacks %s's %q", name, want)
			}
		}
	}
	for _, cmd := range []string{"bench", "sweep", "recommend", "demo", "timeline", "post", "follow", "unfollow"} {
		out := strings.Join(strings.Fields(mustRun(t, nil, cmd, "--help")), " ")
		if !strings.Contains(out, "--option stringArray model option, name=value") || !strings.Contains(out, "pushpull --help lists each model's options") {
			t.Errorf("%s --help: --option does not point to pushpull --help:\n%s", cmd, out)
		}
	}
}

// TestOptionOpens: the store commands give their model its options.
func TestOptionOpens(t *testing.T) {
	env := map[string]string{dsnEnv: testserver.DSN(t)}
	var capped registry.Model
	for _, m := range registry.Models() {
		if _, ok := m.Option("cap"); ok && m.Needs == registry.MariaDB {
			capped = m
		}
	}
	db := testserver.Database(t)
	store := func(args ...string) []string {
		return append([]string{args[0], "--model", capped.Name, "--database", db, "--option", "cap=2"}, args[1:]...)
	}
	mustRun(t, env, store("follow", "1", "2")...)
	for i := range 5 {
		mustRun(t, env, store("post", "--author", "2", "post", string(rune('a'+i)))...)
	}
	out := mustRun(t, env, store("timeline", "--user", "1", "--limit", "5")...)
	if ids := tableIDs(t, out); len(ids) != 5 {
		t.Fatalf("%s with cap=2: %d messages on a page of 5, want all 5 (the rest merged by pull):\n%s", capped.Name, len(ids), out)
	}
	if n := testserver.CountRows(t, db, "mailbox")["mailbox"]; n > 3 {
		t.Errorf("%s with cap=2: %d mailbox rows, want at most cap + slack (3)", capped.Name, n)
	}
}
