package main

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

var nextLine = regexp.MustCompile(`(?m)^next: (\S+)$`)

// next returns the cursor printed by timeline, "" at the end.
func next(t *testing.T, out string) string {
	t.Helper()
	m := nextLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no next: line in\n%s", out)
	}
	if m[1] == "(end)" {
		return ""
	}
	return m[1]
}

// field returns the value of the line that starts with name ("prev:").
func field(t *testing.T, out, name string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	t.Fatalf("no %s line in\n%s", name, out)
	return ""
}

// tableIDs returns the message ids of a timeline table, in order.
func tableIDs(t *testing.T, out string) []int64 {
	t.Helper()
	var ids []int64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "id" || f[0] == "next:" || f[0] == "prev:" || f[0] == "(no" {
			continue
		}
		id, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("unexpected line %q in\n%s", line, out)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestRoundTrip applies the schema, follows, posts and reads a timeline page
// by page, for push and for the pull models (written through pull-sp, read
// through all three).
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		schema  string
		writer  string
		readers []string
	}{
		{"push", "push", []string{"push"}},
		{"pull", "pull-sp", []string{"pull-sp", "pull-client", "pull-naive"}},
	} {
		t.Run(tc.writer, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"PUSHPULL_DSN": testserver.DSN(t)}
			db := testserver.Database(t)
			store := func(model string, args ...string) []string {
				return append([]string{args[0], "--model", model, "--database", db}, args[1:]...)
			}

			out := mustRun(t, env, "schema", "--model", tc.schema, "--database", db)
			if !strings.Contains(out, "created the "+tc.schema+" schema") || !strings.Contains(out, db) {
				t.Errorf("first schema: %q", out)
			}
			out = mustRun(t, env, "schema", "--model", tc.schema, "--database", db)
			if !strings.Contains(out, "already current") {
				t.Errorf("second schema: %q", out)
			}

			if out := mustRun(t, env, store(tc.writer, "follow", "1", "2")...); !strings.Contains(out, "user 1 now follows user 2") {
				t.Errorf("follow: %q", out)
			}
			mustRun(t, env, store(tc.writer, "follow", "1", "3")...)
			bodies := []string{"first post", "Café crème ☕🥐", "two\nlines\tand a tab", "fourth", "fifth"}
			var ids []int64
			for i, b := range bodies {
				author := "2"
				if i%2 == 1 {
					author = "3"
				}
				// The body is several arguments joined by spaces.
				out := mustRun(t, env, store(tc.writer, append([]string{"post", "--author", author}, strings.Split(b, " ")...)...)...)
				id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
				if err != nil {
					t.Fatalf("post printed %q, want an id", out)
				}
				ids = append(ids, id)
			}
			// Own messages never appear in one's timeline.
			mustRun(t, env, store(tc.writer, "post", "--author", "1", "not in my own timeline")...)
			slices.Reverse(ids) // newest first

			for _, reader := range tc.readers {
				out := mustRun(t, env, store(reader, "timeline", "--user", "1")...)
				if !strings.Contains(out, "Café crème ☕🥐") || !strings.Contains(out, `two\nlines\tand a tab`) {
					t.Errorf("%s: timeline lacks a body (whole, escaped):\n%s", reader, out)
				}
				if strings.Contains(out, "own timeline") {
					t.Errorf("%s: own message in timeline:\n%s", reader, out)
				}
				if next(t, out) != "" {
					t.Errorf("%s: 5 messages, default limit: want next: (end):\n%s", reader, out)
				}

				// Page through with --limit 2 and the printed cursors.
				var got []int64
				args := store(reader, "timeline", "--user", "1", "--limit", "2")
				for page := 0; ; page++ {
					if page > 5 {
						t.Fatalf("%s: walk does not end", reader)
					}
					out := mustRun(t, env, args...)
					got = append(got, tableIDs(t, out)...)
					cur := next(t, out)
					if cur == "" {
						break
					}
					args = store(reader, "timeline", "--user", "1", "--limit", "2", "--before", cur)
				}
				if !slices.Equal(got, ids) {
					t.Errorf("%s: walk in pages of 2 gave ids %v, want %v", reader, got, ids)
				}

				// --json.
				out = mustRun(t, env, store(reader, "timeline", "--user", "1", "--limit", "3", "--json")...)
				var page struct {
					Messages []struct {
						ID        int64  `json:"id"`
						Author    int64  `json:"author"`
						Body      string `json:"body"`
						CreatedAt string `json:"created_at"`
					} `json:"messages"`
					Next string `json:"next"`
				}
				if err := json.Unmarshal([]byte(out), &page); err != nil {
					t.Fatalf("%s: --json output does not parse: %v\n%s", reader, err, out)
				}
				if len(page.Messages) != 3 || page.Next == "" {
					t.Fatalf("%s: --json page: %+v", reader, page)
				}
				if page.Messages[2].ID != ids[2] || page.Messages[2].Body != bodies[2] || page.Messages[2].Author != 2 || page.Messages[2].CreatedAt == "" {
					t.Errorf("%s: --json message: %+v, want id %d by 2 %q", reader, page.Messages[2], ids[2], bodies[2])
				}
				// The JSON cursor continues the walk like the printed one.
				out = mustRun(t, env, store(reader, "timeline", "--user", "1", "--limit", "3", "--before", page.Next)...)
				if got := tableIDs(t, out); !slices.Equal(got, ids[3:]) {
					t.Errorf("%s: page after the JSON cursor: %v, want %v", reader, got, ids[3:])
				}
			}

			// A poll for what is newer than the newest page finds
			// nothing, then the next post; the author's own timeline
			// holds the author's messages alone; a delete takes a
			// message out of both.
			out = mustRun(t, env, store(tc.readers[0], "timeline", "--user", "1")...)
			prev := field(t, out, "prev:")
			if out := mustRun(t, env, store(tc.readers[0], "timeline", "--user", "1", "--after", prev)...); !strings.Contains(out, "(no messages)") {
				t.Errorf("poll with nothing new:\n%s", out)
			}
			newer, err := strconv.ParseInt(strings.TrimSpace(mustRun(t, env, store(tc.writer, "post", "--author", "3", "one more")...)), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if got := tableIDs(t, mustRun(t, env, store(tc.readers[0], "timeline", "--user", "1", "--after", prev)...)); !slices.Equal(got, []int64{newer}) {
				t.Errorf("poll after a post: %v, want [%d]", got, newer)
			}
			if got := tableIDs(t, mustRun(t, env, store(tc.readers[0], "timeline", "--user", "1", "--since", strconv.FormatInt(ids[1], 10))...)); !slices.Equal(got, []int64{newer, ids[0]}) {
				t.Errorf("since message %d: %v, want [%d %d]", ids[1], got, newer, ids[0])
			}
			if got := tableIDs(t, mustRun(t, env, store(tc.readers[0], "timeline", "--author", "2")...)); !slices.Equal(got, []int64{ids[0], ids[2], ids[4]}) {
				t.Errorf("own timeline of 2: %v, want [%d %d %d]", got, ids[0], ids[2], ids[4])
			}
			if out := mustRun(t, env, store(tc.writer, "delete", "--author", "2", strconv.FormatInt(ids[0], 10))...); !strings.Contains(out, "deleted message") {
				t.Errorf("delete: %q", out)
			}
			if got := tableIDs(t, mustRun(t, env, store(tc.readers[0], "timeline", "--author", "2")...)); !slices.Equal(got, []int64{ids[2], ids[4]}) {
				t.Errorf("own timeline of 2 after a delete: %v", got)
			}
			if got := tableIDs(t, mustRun(t, env, store(tc.readers[0], "timeline", "--user", "1")...)); slices.Contains(got, ids[0]) {
				t.Errorf("home timeline after a delete still holds %d: %v", ids[0], got)
			}
			r := run(t, env, store(tc.writer, "delete", "--author", "2", strconv.FormatInt(ids[0], 10))...)
			if r.code != 1 || !strings.Contains(r.stderr, "not found") {
				t.Errorf("second delete: exit %d, %q; want 1 and not found", r.code, r.stderr)
			}

			// Unfollow both: the timeline empties.
			mustRun(t, env, store(tc.writer, "unfollow", "1", "2")...)
			if out := mustRun(t, env, store(tc.writer, "unfollow", "1", "3")...); !strings.Contains(out, "user 1 no longer follows user 3") {
				t.Errorf("unfollow: %q", out)
			}
			out = mustRun(t, env, store(tc.readers[len(tc.readers)-1], "timeline", "--user", "1")...)
			if !strings.Contains(out, "(no messages)") || next(t, out) != "" {
				t.Errorf("timeline after unfollowing everyone:\n%s", out)
			}
		})
	}
}

// TestInputErrors checks that bad input exits 2 and names the field, with
// the typed timeline error underneath.
func TestInputErrors(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PUSHPULL_DSN": testserver.DSN(t)}
	db := testserver.Database(t)
	mustRun(t, env, "follow", "--model", "push", "--database", db, "1", "2")
	mustRun(t, env, "post", "--model", "push", "--database", db, "--author", "2", "hello")
	for _, tc := range []struct {
		name  string
		args  []string
		field string
		err   error
	}{
		{"non-numeric author", []string{"post", "--author", "bob", "hi"}, "author", timeline.ErrInvalidUser},
		{"zero author", []string{"post", "--author", "0", "hi"}, "author", timeline.ErrInvalidUser},
		{"hex user", []string{"timeline", "--user", "0x10"}, "user", timeline.ErrInvalidUser},
		{"negative user", []string{"timeline", "--user=-3"}, "user", timeline.ErrInvalidUser},
		{"user out of range", []string{"timeline", "--user", "9223372036854775808"}, "user", timeline.ErrInvalidUser},
		{"user with space", []string{"timeline", "--user", " 1"}, "user", timeline.ErrInvalidUser},
		{"bad follower", []string{"follow", "x", "2"}, "follower", timeline.ErrInvalidUser},
		{"bad followee", []string{"unfollow", "1", "1.5"}, "followee", timeline.ErrInvalidUser},
		{"self follow", []string{"follow", "7", "7"}, "followee", timeline.ErrSelfFollow},
		{"limit too large", []string{"timeline", "--user", "1", "--limit", "201"}, "limit", timeline.ErrInvalidLimit},
		{"negative limit", []string{"timeline", "--user", "1", "--limit=-1"}, "limit", timeline.ErrInvalidLimit},
		{"long body", []string{"post", "--author", "1", strings.Repeat("é", timeline.MaxBodyChars+1)}, "body", timeline.ErrInvalidBody},
		{"forged cursor", []string{"timeline", "--user", "1", "--before", "AQAAAAAAAAAEwkYtl-CA_6zi9iew"}, "cursor", timeline.ErrInvalidCursor},
		{"garbage cursor", []string{"timeline", "--user", "1", "--before", "not a cursor"}, "cursor", timeline.ErrInvalidCursor},
		{"garbage since", []string{"timeline", "--user", "1", "--since", "x y"}, "since", timeline.ErrInvalidCursor},
		{"zero after", []string{"timeline", "--user", "1", "--after", "0"}, "after", timeline.ErrInvalidMessage},
		{"bad own timeline", []string{"timeline", "--author", "-1"}, "author", timeline.ErrInvalidUser},
		{"bad message id", []string{"delete", "--author", "2", "12a"}, "id", timeline.ErrInvalidMessage},
		{"zero message id", []string{"delete", "--author", "2", "0"}, "id", timeline.ErrInvalidMessage},
		{"bad delete author", []string{"delete", "--author", "x", "5"}, "author", timeline.ErrInvalidUser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{tc.args[0], "--model", "push", "--database", db}, tc.args[1:]...)
			r := run(t, env, args...)
			if r.code != exitUsage {
				t.Fatalf("want exit %d: %v", exitUsage, r)
			}
			if !strings.HasPrefix(r.stderr, "pushpull: "+tc.field+": ") {
				t.Errorf("stderr should start with %q: %q", "pushpull: "+tc.field+": ", r.stderr)
			}
			err := runErr(t, env, args...)
			var ie *timeline.InputError
			if !errors.Is(err, tc.err) || !errors.Is(err, timeline.ErrInvalidInput) || !errors.As(err, &ie) || ie.Field != tc.field {
				t.Errorf("error %v: want an *InputError for %q matching %v", err, tc.field, tc.err)
			}
		})
	}

}

func TestForeignCursor(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PUSHPULL_DSN": testserver.DSN(t)}
	db := testserver.Database(t)
	base := []string{"--model", "pull-sp", "--database", db}
	for _, f := range [][]string{{"1", "2"}, {"3", "2"}} {
		mustRun(t, env, append(append([]string{"follow"}, base...), f...)...)
	}
	for range 3 {
		mustRun(t, env, append(append([]string{"post"}, base...), "--author", "2", "hi")...)
	}
	out := mustRun(t, env, append(append([]string{"timeline"}, base...), "--user", "1", "--limit", "1")...)
	cur := next(t, out)
	if cur == "" {
		t.Fatalf("want a cursor:\n%s", out)
	}
	// Valid for user 1 on every pull model; refused for user 3.
	for _, m := range []string{"pull-client", "pull-naive"} {
		mustRun(t, env, "timeline", "--model", m, "--database", db, "--user", "1", "--limit", "1", "--before", cur)
	}
	r := run(t, env, append(append([]string{"timeline"}, base...), "--user", "3", "--before", cur)...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "cursor") {
		t.Errorf("user 1's cursor used for user 3: %v", r)
	}
}

func TestMissingDSN(t *testing.T) {
	for _, args := range [][]string{
		{"timeline", "--model", "push", "--user", "1"},
		{"post", "--model", "pull-sp", "--author", "1", "hi"},
		{"follow", "--model", "pull-naive", "1", "2"},
		{"schema", "--model", "push"},
	} {
		r := run(t, map[string]string{}, args...)
		if r.code != exitUsage {
			t.Errorf("%v without a DSN: %v", args, r)
		}
		if !strings.Contains(r.stderr, "pushpull sandbox") || !strings.Contains(r.stderr, "PUSHPULL_DSN") || !strings.Contains(r.stderr, "--dsn") {
			t.Errorf("%v: the error should say how to get a server: %q", args, r.stderr)
		}
	}
}

func TestDSNFlagOverridesEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PUSHPULL_DSN": "root@tcp(127.0.0.1:1)/"}
	db := testserver.Database(t)
	mustRun(t, env, "follow", "--model", "push", "--database", db, "--dsn", testserver.DSN(t), "1", "2")
}

func TestModelChecks(t *testing.T) {
	env := map[string]string{"PUSHPULL_DSN": "root@tcp(127.0.0.1:1)/"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"timeline", "--model", "nope", "--user", "1"}, []string{`"nope"`, "push, push-compressed, push-async, push-capped, push-active, push-redis, pull-sp, pull-client, pull-naive"}},
		{[]string{"post", "--model", "pull", "--author", "1", "x"}, []string{`"pull"`, "push, push-compressed, push-async, push-capped, push-active, push-redis, pull-sp, pull-client, pull-naive"}},
		{[]string{"follow", "1", "2"}, []string{"--model is required", "push, push-compressed, push-async, push-capped, push-active, push-redis, pull-sp, pull-client, pull-naive"}},
		{[]string{"timeline", "--model", "memory", "--user", "1"}, []string{"memory", "between invocations", "push, push-compressed, push-async, push-capped, push-active, push-redis, pull-sp"}},
		{[]string{"schema", "--model", "nope"}, []string{`"nope"`, "push or pull"}},
		{[]string{"timeline", "--model", "push", "--user", "1", "--database", "x;drop"}, []string{"--database"}},
		{[]string{"timeline", "--model", "push"}, []string{"give one of --user"}},
		{[]string{"timeline", "--model", "push", "--user", "1", "--author", "2"}, []string{"give one of --user"}},
		{[]string{"timeline", "--model", "push", "--user", "1", "--since", "3", "--after", "4"}, []string{"exclude each other"}},
		{[]string{"delete", "--model", "push", "5"}, []string{"--author is required"}},
		{[]string{"post", "--model", "push", "hi"}, []string{"--author is required"}},
		{[]string{"post", "--model", "push", "--author", "1"}, []string{"body"}},
		{[]string{"follow", "--model", "push", "1"}, []string{"2 arguments"}},
		{[]string{"timeline", "--model", "push", "--user", "1", "extra"}, []string{"no arguments"}},
		{[]string{"timeline", "--model", "push", "--user", "1", "--limit", "ten"}, []string{"--limit"}},
		{[]string{"timeline", "--model", "push", "--user", "1", "--dsn", "nonsense"}, []string{"--dsn"}},
		{[]string{"sandbox", "--set", "novalue"}, []string{"key=value"}},
		{[]string{"sandbox", "--memcached-mb", "0"}, []string{"--memcached-mb"}},
		{[]string{"sandbox", "--set", "datadir=/x"}, []string{"datadir"}},
	} {
		r := run(t, env, tc.args...)
		if r.code != exitUsage {
			t.Errorf("%v: want exit %d: %v", tc.args, exitUsage, r)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr lacks %q: %q", tc.args, w, r.stderr)
			}
		}
	}
}

func TestUnreachableServer(t *testing.T) {
	const dsn = "root@tcp(127.0.0.1:1)/"
	for _, args := range [][]string{
		{"timeline", "--model", "push", "--user", "1", "--dsn", dsn},
		{"post", "--model", "pull-client", "--author", "1", "--dsn", dsn, "hi"},
		{"schema", "--model", "pull", "--dsn", dsn},
	} {
		err := runErr(t, nil, args...)
		if !errors.Is(err, timeline.ErrUnavailable) {
			t.Errorf("%v: error %v, want one matching timeline.ErrUnavailable", args, err)
		}
		r := run(t, nil, args...)
		if r.code != exitError || !strings.Contains(r.stderr, "pushpull sandbox") {
			t.Errorf("%v: %v", args, r)
		}
	}
}

func TestSchemaPrint(t *testing.T) {
	// No DSN anywhere: --print must not connect.
	out := mustRun(t, nil, "schema", "--model", "push", "--print")
	for _, want := range []string{"CREATE TABLE IF NOT EXISTS mailbox", "CREATE TABLE IF NOT EXISTS follows", "PRIMARY KEY (user_id, message_id)"} {
		if !strings.Contains(out, want) {
			t.Errorf("push --print lacks %q", want)
		}
	}
	out = mustRun(t, nil, "schema", "--model", "pull-sp", "--print")
	for _, want := range []string{"CREATE TABLE IF NOT EXISTS messages", "DELIMITER //", "CREATE PROCEDURE pull_timeline_newest", "DELIMITER ;"} {
		if !strings.Contains(out, want) {
			t.Errorf("pull --print lacks %q", want)
		}
	}
	if strings.Contains(out, "mailbox") {
		t.Errorf("pull schema mentions the push mailbox")
	}
}

func TestSchemaForeignDatabase(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PUSHPULL_DSN": testserver.DSN(t)}
	db := testserver.Database(t)
	admin := testserver.Admin(t)
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE `" + db + "`"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("CREATE TABLE `" + db + "`.customers (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	r := run(t, env, "schema", "--model", "push", "--database", db)
	if r.code != exitError || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("schema on a foreign database: %v", r)
	}
	r = run(t, env, "post", "--model", "push", "--database", db, "--author", "1", "hi")
	if r.code != exitError {
		t.Fatalf("post on a foreign database: %v", r)
	}
	out := mustRun(t, env, "schema", "--model", "push", "--database", db, "--force")
	if !strings.Contains(out, "1 tables not made by pushpull") {
		t.Errorf("schema --force: %q", out)
	}
	// Now the database is pushpull's; the other model is refused.
	r = run(t, env, "schema", "--model", "pull", "--database", db)
	if r.code != exitError || !strings.Contains(r.stderr, `"push" model`) {
		t.Errorf("pull schema on a push database: %v", r)
	}
	mustRun(t, env, "post", "--model", "push", "--database", db, "--author", "1", "hi")
}

// TestDegradedWarning: a model on two memcached servers, one of them dead,
// still posts and reads, and says on stderr which server it works without.
func TestDegradedWarning(t *testing.T) {
	// Killed behind a proxy that keeps its address: no other process
	// can answer there in its place.
	live, dead := testserver.StartMemcached(t, 0), testserver.StartRestartableMemcached(t)
	dead.Kill()
	m, err := registry.Lookup("pull-recent")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PUSHPULL_DSN": testserver.DSN(t), "PUSHPULL_MEMCACHE": live.Addr + "," + dead.Addr}
	db := testserver.Database(t)
	mustRun(t, env, "follow", "--model", m.Name, "--database", db, "1", "2")
	mustRun(t, env, "post", "--model", m.Name, "--database", db, "--author", "2", "still", "here")
	r := run(t, env, "timeline", "--model", m.Name, "--database", db, "--user", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "still here") {
		t.Fatalf("timeline with a memcached down: %v", r)
	}
	if !strings.Contains(r.stderr, "warning: memcached "+dead.Addr+" not answering") {
		t.Errorf("no warning naming the dead server on stderr: %q", r.stderr)
	}
	if strings.Contains(r.stderr, live.Addr) {
		t.Errorf("the live server named as down: %q", r.stderr)
	}
}
