package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/registry"
)

// TestDemo runs the demo end to end: it starts its own MariaDB.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MariaDB sandbox")
	}
	r := run(t, nil, "demo")
	if r.code != 0 {
		t.Fatalf("demo: %v", r)
	}
	for _, want := range []string{
		fmt.Sprintf("Agreement: all %d models returned identical timelines for all 6 users", len(demoModels())),
		strings.Join(registry.Names(demoModels()), "  "),
		"Café crème at the corner bistro, très bien ☕🥐",
		`Shopping list:\n- oat milk`,
		"next: (end)",
		"test settings",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "DISAGREEMENT") || strings.Contains(r.stdout, "*") {
		t.Errorf("demo reports a disagreement:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "starting") {
		t.Errorf("demo should report progress on stderr: %q", r.stderr)
	}
}

// TestSandboxCommand runs `pushpull sandbox` until its context is cancelled
// (as SIGINT does), using the server it prints in between.
func TestSandboxCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MariaDB and memcached")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"sandbox",
			"--dir", t.TempDir(),
			"--memcached-mb", "16",
			"--set", "innodb_buffer_pool_size=64M",
			"--set", "innodb-log-file-size=32M",
			"--set", "innodb_flush_log_at_trx_commit=0",
		}, &out, &errb, mapEnv(nil))
	}()

	export := regexp.MustCompile(`(?m)^export PUSHPULL_DSN='([^']+)'$`)
	var dsn string
	deadline := time.After(2 * time.Minute)
	for dsn == "" {
		select {
		case code := <-done:
			t.Fatalf("sandbox exited early with %d:\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
		case <-deadline:
			t.Fatalf("sandbox not ready after 2 minutes:\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
		case <-time.After(50 * time.Millisecond):
		}
		if m := export.FindStringSubmatch(out.String()); m != nil {
			dsn = m[1]
		}
	}
	printed := out.String()
	for _, want := range []string{"MariaDB DSN:    " + dsn, "memcached:      127.0.0.1:", "(16 MB)", "directory:", "innodb_buffer_pool_size          64M  (--set)", "innodb_log_file_size             32M  (--set)", "innodb_flush_method"} {
		if !strings.Contains(printed, want) {
			t.Errorf("sandbox output lacks %q:\n%s", want, printed)
		}
	}
	dir := regexp.MustCompile(`(?m)^directory: +(\S+)`).FindStringSubmatch(printed)[1]

	// The exported DSN works for the other commands.
	env := map[string]string{"PUSHPULL_DSN": dsn}
	mustRun(t, env, "follow", "--model", "push", "1", "2")
	mustRun(t, env, "post", "--model", "push", "--author", "2", "hello from the sandbox")
	if got := mustRun(t, env, "timeline", "--model", "push", "--user", "1"); !strings.Contains(got, "hello from the sandbox") {
		t.Errorf("timeline on the sandbox:\n%s", got)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("sandbox exit %d after interrupt:\n%s", code, errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("sandbox did not stop within a minute of its interrupt")
	}
	if !strings.Contains(errb.String(), "stopped; removed") {
		t.Errorf("stderr: %q", errb.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("sandbox directory %s still exists (%v)", dir, err)
	}
}
