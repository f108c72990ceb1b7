package all_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/hybrid"
	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/internal/vtstats"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/load"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// hybridThreshold is hybrid@vitess's threshold in TestLoadVitess: about
// the mean follower count of its dataset, so that some authors are
// pulled and the others pushed.
const hybridThreshold = 7

// TestLoadVitess bulk-loads a small dataset into a push, a pull and a
// hybrid keyspace through vtgate (load.Vitess, the benchmark's load) and
// requires every model on Vitess to read every user's whole timeline as
// the in-memory store fed the same dataset does, with the dataset's
// times; hybrid@vitess's mailbox lacks the pulled authors' messages,
// which its pull_authors and pull_follows must supply.
func TestLoadVitess(t *testing.T) {
	ctx := context.Background()
	spec, err := dataset.PaperSpec().Scaled(0.003) // 30 users, 3,000 messages
	if err != nil {
		t.Fatal(err)
	}
	spec.AvgFollowees = 6
	d, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	mem := timeline.NewMemory()
	if err := d.Apply(ctx, mem); err != nil {
		t.Fatal(err)
	}
	keyspaces := map[schema.Model]string{schema.PushVitess: testserver.Keyspace(t), schema.PullVitess: testserver.Keyspace(t),
		schema.HybridVitess: testserver.Keyspace(t)}
	var readers []registry.Model
	var targets []load.Target
	stores := map[string]timeline.Store{}
	for _, m := range registry.Models() {
		if !m.OnVitess() {
			continue
		}
		cfg := config(t, m, keyspaces[m.Schema])
		if m.Name == hybrid.VitessModelName { // some authors pulled, some pushed
			cfg.Options = map[string]string{hybrid.OptionThreshold: strconv.Itoa(hybridThreshold)}
		}
		s, err := m.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[m.Name] = s
		readers = append(readers, m)
		if !slices.ContainsFunc(targets, func(x load.Target) bool { return x.Schema == m.Schema }) {
			tg := load.Target{Name: keyspaces[m.Schema], DB: s.(timeline.DBHolder).DB(), Schema: m.Schema}
			if pm, ok := timeline.As[registry.PartialMailbox](s); ok {
				tg.Mailbox = pm.MailboxShape()
			}
			targets = append(targets, tg)
		}
	}
	if len(targets) != 3 || len(readers) < 5 {
		t.Fatalf("%d keyspaces, %d models on Vitess", len(targets), len(readers))
	}
	seq, err := mysqlx.Open(ctx, mysqlx.Options{DSN: testserver.Vtgate(t), Database: schema.SequenceKeyspace, MaxConns: 1, Vitess: true})
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Close()
	loaded, err := load.Vitess(ctx, d, targets, seq, 2)
	if err != nil {
		t.Fatal(err)
	}
	st := d.Stats()
	var pulledAuthors int
	for u := range uint32(spec.Users) {
		if len(d.Followers(u+1)) >= hybridThreshold {
			pulledAuthors++
		}
	}
	if pulledAuthors == 0 || pulledAuthors == spec.Users {
		t.Fatalf("%d of %d authors have %d followers or more: hybrid@vitess would not mix pushed and pulled authors", pulledAuthors, spec.Users, hybridThreshold)
	}
	for _, tl := range loaded.Tables {
		if tl.Database == keyspaces[schema.HybridVitess] && (tl.Table == "mailbox" || tl.Table == "pull_follows") {
			continue // part of the mailbox, the rest pulled: the walks below compare them
		}
		want := map[string]int64{"follows": st.Edges, "followers": st.Edges, "messages": int64(st.Messages), "mailbox": d.MailboxRows(),
			"pull_authors": int64(pulledAuthors)}[tl.Table]
		if tl.Rows != want {
			t.Fatalf("%s.%s: loaded %d rows, generated %d", tl.Database, tl.Table, tl.Rows, want)
		}
	}
	if counted := testserver.CountRowsAt(t, testserver.Vtgate(t), keyspaces[schema.PushVitess], "mailbox", "followers"); counted["mailbox"] != d.MailboxRows() || counted["followers"] != st.Edges || d.MailboxRows() == 0 {
		t.Fatalf("push keyspace holds %v, dataset %s", counted, st)
	}
	for u := timeline.UserID(1); u <= timeline.UserID(spec.Users); u++ {
		want := describeAll(timelinetest.Walk(t, mem, u, 25))
		for _, m := range readers {
			msgs := timelinetest.Walk(t, stores[m.Name], u, 25)
			if got := describeAll(msgs); !slices.Equal(got, want) {
				t.Fatalf("user %d: %s read %d messages, the memory store %d: %s", u, m.Name, len(got), len(want), firstDifference(want, got))
			}
			for _, msg := range msgs {
				if !msg.CreatedAt.Equal(d.CreatedAt(uint64(msg.ID))) {
					t.Fatalf("%s: message %d created %v, dataset says %v", m.Name, msg.ID, msg.CreatedAt, d.CreatedAt(uint64(msg.ID)))
				}
			}
		}
	}
}

func describeAll(ms []timeline.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%d/%d/%q", m.ID, m.Author, m.Body)
	}
	return out
}

// TestRecentVitess reads pull-recent@vitess's paths that the conformance
// suite's short timelines leave out, on a keyspace of two shards: lists
// shorter than the timelines, so that deep pages read the authors beyond
// their lists from their shards (sqlread.VitessTables.Page), bodies read
// by author and id with no message cache, and forged lists that the rows
// read from the authors' shards must expose. Every page must equal the
// posts; and a page served through the lists must not have fallen back
// to pull-merge@vitess, which would hide a statement vtgate refused.
func TestRecentVitess(t *testing.T) {
	ctx := context.Background()
	keyspace := testserver.Keyspace(t)
	cfg := pull.Config{
		DSN: testserver.Vtgate(t), Database: keyspace, Vitess: true, MaxConns: 8,
		Memcache: []string{testserver.Memcache(t)}, Namespace: keyspace + "/",
		Read: recent.Recent{RecentLen: 3, MessageCache: -1},
	}
	s, err := pull.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	var posts []timeline.Message
	for a := timeline.UserID(2); a <= 7; a++ {
		timelinetest.Follow(t, s, 1, a)
	}
	for i := range 40 {
		author := timeline.UserID(2 + i%6)
		if i%3 == 0 {
			author = 2 // one author far beyond its list
		}
		posts = append(posts, timelinetest.Post(t, s, author, fmt.Sprintf("post %d", i)))
	}
	want := timelinetest.NewestFirst(posts)
	check := func(what string) pull.Stats {
		t.Helper()
		for _, limit := range []int{1, 4, 7} {
			if got := timelinetest.WalkIDs(t, s, 1, limit); !slices.Equal(got, want) {
				t.Fatalf("%s, pages of %d: timeline %v, want %v", what, limit, got, want)
			}
		}
		return s.Stats()
	}
	st := check("cold")
	if st.CacheErrors != 0 || st.Fallbacks == 0 || st.Rebuilds == 0 {
		t.Fatalf("cold walks: want lists rebuilt, authors read beyond them, no error: %+v", st)
	}
	st2 := check("warm")
	if st2.CacheErrors != 0 || st2.Rebuilds != st.Rebuilds || st2.CacheHits <= st.CacheHits {
		t.Fatalf("warm walks: want the lists from memcached, no rebuild, no error: before %+v, after %+v", st, st2)
	}

	// Forged lists, which pass the checksum: one claims a message of
	// another followee, one a message that does not exist.
	keys, err := recent.Open(ctx, sqlread.Env{DB: s.DB(), Pages: new(sqlread.PageCount)}, recent.Options{
		Servers: cfg.Memcache, Namespace: cfg.Namespace, Tables: sqlread.VitessTables{},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	mc, err := memcached.New(t.Context(), memcached.Options{Servers: cfg.Memcache, Prefix: keys.KeyPrefix(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	newest := posts[len(posts)-1]
	other := timeline.UserID(3)
	if newest.Author == other {
		other = 4
	}
	for _, forged := range []uint64{uint64(newest.ID), uint64(newest.ID) + 1000} {
		key := keys.ListKey(other)
		if err := mc.Set(ctx, &memcache.Item{Key: key, Value: recent.EncodeList(key, []uint64{forged}, false, time.Now().Unix())}); err != nil {
			t.Fatal(err)
		}
		before := s.Stats()
		check(fmt.Sprintf("list of %d claiming %d", other, forged))
		if after := s.Stats(); after.CacheErrors == before.CacheErrors {
			t.Fatalf("list of %d claiming %d: not caught: %+v", other, forged, after)
		}
	}
}

// TestPushVitessPageIsOneCall: a push@vitess page, newest or older, is one
// tablet call, to the reader's shard, whatever shards its authors live
// on; the mailbox rows carry what the page shows. The store prepares the
// page's statements when it opens, on the one connection its pool has
// here (every call of this test runs on it in turn): a connection that
// had not prepared them would add one call, vtgate's for the columns.
func TestPushVitessPageIsOneCall(t *testing.T) {
	ctx := context.Background()
	keyspace := testserver.Keyspace(t)
	status := testserver.VtgateStatus(t)
	s, err := push.OpenVitess(ctx, push.Config{DSN: testserver.Vtgate(t), Database: keyspace, VtgateStatus: status})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var posts []timeline.Message
	for a := timeline.UserID(2); a <= 17; a++ {
		timelinetest.Follow(t, s, 1, a)
		posts = append(posts, timelinetest.Post(t, s, a, fmt.Sprintf("by %d", a)))
	}
	calls := func() int64 {
		t.Helper()
		c, err := vtstats.Calls(ctx, status, keyspace)
		if err != nil {
			t.Fatal(err)
		}
		return c[vtstats.TabletCalls]
	}
	before := calls()
	first, err := s.Timeline(ctx, 1, timeline.Query{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	mid := calls()
	older, err := s.Timeline(ctx, 1, timeline.Query{Limit: 10, Before: first.Next})
	if err != nil {
		t.Fatal(err)
	}
	after := calls()
	shown := append(first.Messages, older.Messages...)
	if got, want := timelinetest.IDs(shown), timelinetest.NewestFirst(posts); !slices.Equal(got, want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	for _, got := range shown {
		m := posts[slices.IndexFunc(posts, func(p timeline.Message) bool { return p.ID == got.ID })]
		if got.Body != m.Body || got.Author != m.Author || !got.CreatedAt.Equal(m.CreatedAt) {
			t.Fatalf("message %d on the page: %+v, posted %+v", m.ID, got, m)
		}
	}
	if mid-before != 1 || after-mid != 1 {
		t.Fatalf("tablet calls: newest page %d, older page %d; want 1 each", mid-before, after-mid)
	}
}

// TestVitessStrictMode: the strict SQL mode holds through vtgate, as on
// MariaDB: a statement that would truncate a body of 281 characters, or
// store a negative id, fails and writes nothing, for both models' schemas.
func TestVitessStrictMode(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"push@vitess", "pull-merge@vitess"} {
		t.Run(name, func(t *testing.T) {
			m := lookup(t, name)
			keyspace := fresh(t, m)
			s, err := m.Open(ctx, config(t, m, keyspace))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			db := s.(timeline.DBHolder).DB()
			var mode string
			if err := db.QueryRowContext(ctx, `SELECT @@SESSION.sql_mode`).Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(mode, "STRICT_ALL_TABLES") && !strings.Contains(mode, "STRICT_TRANS_TABLES") {
				t.Errorf("sql_mode through vtgate is %q: not strict", mode)
			}
			for what, q := range map[string]string{
				"a 281-character body": `INSERT INTO messages (author_id, body, created_at) VALUES (7, REPEAT('x', 281), NOW(6))`,
				"a negative author":    `INSERT INTO messages (author_id, body, created_at) VALUES (-7, 'x', NOW(6))`,
			} {
				if _, err := db.ExecContext(ctx, q); err == nil {
					t.Errorf("%s through vtgate: no error", what)
				}
			}
			var n int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE author_id = 7`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d rows written by statements that failed", n)
			}
		})
	}
}

// TestVitessNoScatter: every statement a model on Vitess sends for a
// page (newest and older, cold and warm), a post, a follow, an unfollow
// and a delete is routed to one shard, or by an IN list to the shards its
// values live on, or to the sequence: vtgate's plan of it (VEXPLAIN PLAN,
// with the arguments the store sent) has no Scatter route, which would
// call every shard of the keyspace.
func TestVitessNoScatter(t *testing.T) {
	ctx := context.Background()
	for _, m := range registry.Models() {
		if !m.OnVitess() {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			cfg := config(t, m, fresh(t, m))
			if m.Name == hybrid.VitessModelName { // every author pulled: its reads and posts
				cfg.Options = map[string]string{hybrid.OptionThreshold: "1"}
			}
			s, err := m.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			holder, ok := timeline.As[timeline.DBHolder](s)
			if !ok {
				t.Fatalf("%s hands out no connection pool", m.Name)
			}
			type statement struct {
				op, query string
				args      []any
			}
			var mu sync.Mutex // pull-client sends a page's statements in parallel
			var sent []statement
			as := func(op string) context.Context {
				return mysqlx.WithObserver(ctx, func(q string, args []any) {
					mu.Lock()
					defer mu.Unlock()
					sent = append(sent, statement{op, q, args})
				})
			}
			for a := timeline.UserID(2); a <= 9; a++ {
				if err := s.Follow(as("follow"), 1, a); err != nil {
					t.Fatal(err)
				}
			}
			var posts []timeline.Message
			for i := range 30 {
				msg, err := s.Post(as("post"), timeline.UserID(2+i%8), fmt.Sprintf("post %d", i))
				if err != nil {
					t.Fatal(err)
				}
				posts = append(posts, msg)
			}
			timelinetest.Settle(t, s)
			for _, op := range []string{"newest page", "newest page, warm"} {
				page, err := s.Timeline(as(op), 1, timeline.Query{Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Timeline(as("older page"), 1, timeline.Query{Limit: 10, Before: page.Next}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Unfollow(as("unfollow"), 1, 3); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(as("delete"), posts[0].Author, posts[0].ID); err != nil {
				t.Fatal(err)
			}
			ops := map[string]int{}
			for _, st := range sent {
				ops[st.op]++
				var plan string
				if err := holder.DB().QueryRowContext(ctx, "VEXPLAIN PLAN "+st.query, st.args...).Scan(&plan); err != nil {
					t.Errorf("%s: VEXPLAIN PLAN %s: %v", st.op, st.query, err)
					continue
				}
				if variants := routeVariants(t, plan); slices.Contains(variants, "Scatter") {
					t.Errorf("%s sends a scatter statement: %s\nplan: %s", st.op, st.query, plan)
				}
			}
			for _, op := range []string{"newest page", "follow", "post", "unfollow", "delete"} {
				if ops[op] == 0 {
					t.Errorf("no statement seen for a %s: the observer missed them", op)
				}
			}
			t.Logf("statements explained, by operation: %v", ops)
		})
	}
}

// routeVariants returns the Variant of every operator of plan (VEXPLAIN
// PLAN's JSON), depth first.
func routeVariants(t *testing.T, plan string) []string {
	t.Helper()
	var root any
	if err := json.Unmarshal([]byte(plan), &root); err != nil {
		t.Fatalf("plan %q: %v", plan, err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["Variant"].(string); ok {
				out = append(out, s)
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(root)
	return out
}
