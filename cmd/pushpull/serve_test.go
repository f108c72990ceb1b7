package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/httpapi"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// TestServeRefuses: serve refuses, with exit code 2 and before it opens
// anything, an address beyond loopback without --allow-remote, a
// malformed address, a cache size out of range, and a model it does not
// know.
func TestServeRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:8080"}, "--allow-remote"},
		{[]string{"--listen", ":8080"}, "--allow-remote"},
		{[]string{"--listen", "8080"}, "--listen"},
		{[]string{"--max-conns", "0"}, "--max-conns"},
		{[]string{"--status-cache-mb", "-1"}, "--status-cache-mb"},
		{[]string{"--status-cache-mb", "65537"}, "--status-cache-mb"},
	} {
		args := append([]string{"serve", "--model", registry.Names(registry.Models())[0]}, c.args...)
		r := run(t, nil, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("pushpull %s: %v", strings.Join(args, " "), r)
		}
	}
	if r := run(t, nil, "serve", "--model", "nosuchmodel"); r.code != exitUsage || !strings.Contains(r.stderr, "unknown model") {
		t.Errorf("an unknown model: %v", r)
	}
}

var servingLine = regexp.MustCompile(`serving \S+ on (http://\S+)`)

// TestServe: serve opens the model on the server the environment names,
// serves the API on a loopback port it picks, and when its context ends
// (as on SIGTERM) stops, exit code 0.
func TestServe(t *testing.T) {
	var m string
	for _, x := range registry.Models() {
		if x.Family == registry.FamilyPush && x.Bench.Paper {
			m = x.Name
		}
	}
	env := map[string]string{dsnEnv: testserver.DSN(t)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- execute(ctx, []string{"serve", "--model", m, "--database", testserver.Database(t), "--listen", "127.0.0.1:0"}, &out, &errb, mapEnv(env))
	}()
	var base string
	testserver.Poll(t, time.Minute, "the serving line", func() bool {
		if found := servingLine.FindStringSubmatch(errb.String()); found != nil {
			base = found[1]
			return true
		}
		select {
		case c := <-code:
			t.Fatalf("serve exited %d: %s", c, errb.String())
		default:
		}
		return false
	})
	c := httpapi.NewClient(strings.TrimPrefix(base, "http://"))
	bg := context.Background()
	if err := c.Follow(bg, 1, 2); err != nil {
		t.Fatal(err)
	}
	posted, err := c.Post(bg, 2, "hello over HTTP")
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.Timeline(bg, 1, timeline.Query{})
	if err != nil || len(page.Messages) != 1 || page.Messages[0] != posted {
		t.Fatalf("the timeline: %+v, %v; want %+v", page, err, posted)
	}
	cancel()
	if got := <-code; got != exitOK || !strings.Contains(errb.String(), "stopped") {
		t.Fatalf("serve after its context ended: exit %d\n%s", got, errb.String())
	}
}
