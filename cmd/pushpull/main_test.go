package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{}) }

// result is what one command line did.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs one pushpull command line in-process, as main does, with env as
// the whole environment.
func run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return runCtx(t, context.Background(), env, args...)
}

func runCtx(t *testing.T, ctx context.Context, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(ctx, args, &out, &errb, mapEnv(env))
	return result{out.String(), errb.String(), code}
}

// runErr runs a command line on a fresh root command and returns its error,
// for checks with errors.Is.
func runErr(t *testing.T, env map[string]string, args ...string) error {
	t.Helper()
	root := newRootCmd(mapEnv(env))
	root.SetArgs(args)
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	return root.ExecuteContext(context.Background())
}

func mapEnv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// mustRun runs a command line that must succeed and returns its stdout.
func mustRun(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	r := run(t, env, args...)
	if r.code != 0 {
		t.Fatalf("pushpull %s: %v", strings.Join(args, " "), r)
	}
	return r.stdout
}

// syncBuffer is a bytes.Buffer safe to read while a command writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestExitCodes(t *testing.T) {
	if got := exitCode(errors.New("boom")); got != exitError {
		t.Errorf("plain error: exit %d, want %d", got, exitError)
	}
	if got := exitCode(usagef("bad")); got != exitUsage {
		t.Errorf("usage error: exit %d, want %d", got, exitUsage)
	}
}

func TestRootHelp(t *testing.T) {
	r := run(t, nil)
	if r.code != 0 || !strings.Contains(r.stdout, "Available Commands") {
		t.Fatalf("pushpull with no arguments should print help: %v", r)
	}
	for _, name := range []string{"sandbox", "schema", "post", "follow", "unfollow", "timeline", "demo", "version"} {
		if !strings.Contains(r.stdout, name) {
			t.Errorf("help does not list %s", name)
		}
	}
}

// TestEveryCommandDocumented checks that every command has a Short, a Long
// and an Example.
func TestEveryCommandDocumented(t *testing.T) {
	root := newRootCmd(mapEnv(nil))
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			continue
		}
		if c.Short == "" || c.Long == "" || c.Example == "" {
			t.Errorf("%s: Short, Long and Example must all be set", c.Name())
		}
		r := run(t, nil, c.Name(), "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:") {
			t.Errorf("%s --help: %v", c.Name(), r)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	r := run(t, nil, "timline")
	if r.code != exitUsage {
		t.Fatalf("unknown command: %v", r)
	}
	if !strings.Contains(r.stderr, `pushpull: unknown command "timline"`) || !strings.Contains(r.stderr, "timeline") {
		t.Errorf("unknown command should be named and a suggestion made: %q", r.stderr)
	}
}

func TestUnknownFlag(t *testing.T) {
	r := run(t, nil, "timeline", "--model", "push", "--user", "1", "--bogus")
	if r.code != exitUsage || !strings.Contains(r.stderr, "bogus") || !strings.HasPrefix(r.stderr, "pushpull: ") {
		t.Fatalf("unknown flag: %v", r)
	}
}

func TestVersion(t *testing.T) {
	out := mustRun(t, nil, "version")
	for _, want := range []string{"pushpull ", "module:   github.com/pushpull/pushpull", "go:       go1.", "revision: "} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
}
