package all_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/hybrid"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/memcache"
	"github.com/pushpull/pushpull/registry"
	_ "github.com/pushpull/pushpull/registry/all"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) {
	testserver.Main(m, testserver.Options{Memcached: true, Redis: true, Vitess: true})
}

// config is the Config of a store on database: the test memcached and
// Redis for the models that need them, under the database's name, so that
// no two stores of a run share keys, and the test vtgate for the models
// on Vitess.
func config(t *testing.T, m registry.Model, database string) registry.Config {
	cfg := registry.Config{DSN: testserver.DSN(t), Database: database}
	if m.OnVitess() {
		cfg.Vtgate = testserver.Vtgate(t)
	}
	if m.Needs&registry.Memcached != 0 {
		cfg.Memcache = []string{testserver.Memcache(t)}
		cfg.Namespace = database + "/"
	}
	if m.Needs&registry.Redis != 0 {
		cfg.Redis = testserver.Redis(t)
		cfg.Namespace = database + "/"
	}
	return cfg
}

// fresh returns an empty database for a store of m: a borrowed keyspace
// on Vitess.
func fresh(t *testing.T, m registry.Model) string {
	if m.OnVitess() {
		return testserver.Keyspace(t)
	}
	return testserver.Database(t)
}

// countRows counts the rows of tables in m's database db.
func countRows(t *testing.T, m registry.Model, db string, tables ...string) map[string]int64 {
	if m.OnVitess() {
		return testserver.CountRowsAt(t, testserver.Vtgate(t), db, tables...)
	}
	return testserver.CountRows(t, db, tables...)
}

// TestVitessConformance runs the conformance suite on every model on
// Vitess, each check on an empty keyspace of two shards.
func TestVitessConformance(t *testing.T) {
	var configs []timelinetest.Config
	for _, m := range registry.Models() {
		if !m.OnVitess() {
			continue
		}
		configs = append(configs, timelinetest.Config{Name: m.Name, Open: func(t *testing.T) timeline.Store {
			s, err := m.Open(context.Background(), config(t, m, fresh(t, m)))
			if err != nil {
				t.Fatalf("open %s: %v", m.Name, err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}})
	}
	if len(configs) < 4 {
		t.Fatalf("%d models on Vitess, want push and three pull strategies at least", len(configs))
	}
	// hybrid@vitess at the default threshold fans every post out, as
	// push@vitess does; at 1 it fans none out.
	m, err := registry.Lookup(hybrid.VitessModelName)
	if err != nil {
		t.Fatal(err)
	}
	configs = append(configs, timelinetest.Config{Name: m.Name + " threshold 1", Open: func(t *testing.T) timeline.Store {
		cfg := config(t, m, fresh(t, m))
		cfg.Options = map[string]string{hybrid.OptionThreshold: "1"}
		s, err := m.Open(context.Background(), cfg)
		if err != nil {
			t.Fatalf("open %s: %v", m.Name, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}})
	timelinetest.RunConfigs(t, configs)
}

// persistent are the registered base models that keep their data in a
// database.
func persistent() []registry.Model {
	var out []registry.Model
	for _, m := range registry.Models() {
		if m.Persistent() {
			out = append(out, m)
		}
	}
	return out
}

var seedFlag = flag.Uint64("seed", 0, "seed for TestEquivalence (0: time-based)")

// smallSettings are models opened a second time by TestEquivalence, with
// options under which their designs act on its small stream: mailboxes
// pass their cap, authors cross the follower threshold, readers drown.
var smallSettings = []struct {
	model   string
	options map[string]string
}{
	{"push", map[string]string{"drowning_follows": "2"}},
	{"push-async", map[string]string{"drowning_follows": "2"}},
	{"push-capped", map[string]string{"cap": "4", "slack": "2", "drowning_follows": "2"}},
	{"hybrid", map[string]string{"threshold": "3", "drowning_follows": "2"}},
	{"hybrid@vitess", map[string]string{"threshold": "3"}},
	{"hybrid-memcached", map[string]string{"threshold": "3"}},
	{"selective", map[string]string{"h": "1", "l": "1", "flush": "5", "drowning_follows": "2"}},
	{"push-active", map[string]string{"window": "1ms", "rebuild": "4", "drowning_follows": "2"}},
	{"push-redis", map[string]string{"cap": "4", "window": "1s", "drowning_follows": "2"}},
	{"pull-redis", map[string]string{"window": "1s"}},
}

// openAll opens every model, and those of smallSettings again, each SQL
// one in a fresh database of its own, so that each receives the whole
// stream of writes. It returns the stores and their names.
func openAll(t *testing.T) ([]timeline.Store, []string) {
	t.Helper()
	var out []timeline.Store
	var names []string
	open := func(m registry.Model, options map[string]string) {
		cfg := config(t, m, fresh(t, m))
		cfg.Options = options
		s, err := m.Open(context.Background(), cfg)
		if err != nil {
			t.Fatalf("open %s: %v", m.Name, err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
		name := m.Name
		if options != nil {
			name = fmt.Sprintf("%s %v", m.Name, options)
		}
		names = append(names, name)
	}
	for _, m := range registry.Models() {
		open(m, nil)
	}
	// The variants, whose caches the stream's reads fill and its writes
	// must keep current.
	for _, m := range registry.Listed() {
		if m.Variant != "" {
			open(m, nil)
		}
	}
	for _, small := range smallSettings {
		m, err := registry.Lookup(small.model)
		if err != nil {
			t.Fatal(err)
		}
		open(m, small.options)
	}
	return out, names
}

// TestEquivalence applies one random stream of posts, deletes, follows,
// unfollows and newest-page reads (with some invalid writes, and deletes
// of messages that are gone or someone else's) to every store, settles
// each, then reads everything in each and requires identical results: the
// same errors; every user's whole timeline page by page, and every
// author's own (the same messages, by the order they were posted, authors,
// bodies, and page boundaries); the pages newer than a point of each; the
// follow lists; messages by id. The reads in the stream fill the caches
// the variants keep, which the writes after them must keep current.
func TestEquivalence(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with: go test ./registry/all -run TestEquivalence -seed %d)", seed, seed)
	defer func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d", seed)
		}
	}()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	const users, ops = 200, 5000
	ss, names := openAll(t)
	ctx := context.Background()

	// canon maps each store's message ids to the post's index in the
	// stream: stores number messages independently.
	canon := make([]map[timeline.MessageID]int, len(ss))
	for i := range canon {
		canon[i] = make(map[timeline.MessageID]int)
	}
	// ids maps each store's post indexes back to its message ids, and
	// authors the indexes to their authors.
	ids := make([]map[int]timeline.MessageID, len(ss))
	for i := range ids {
		ids[i] = make(map[int]timeline.MessageID)
	}
	var authors []timeline.UserID
	posts, deletes := 0, 0
	user := func() timeline.UserID { return timeline.UserID(1 + rng.IntN(users)) }
	// apply runs call on every store at once, and requires the same
	// outcome of each: success, the same input error, or not found.
	apply := func(op int, kind string, call func(i int, s timeline.Store) error) {
		t.Helper()
		errs := make([]error, len(ss))
		var g errgroup.Group
		for i, s := range ss {
			g.Go(func() error { errs[i] = call(i, s); return nil })
		}
		g.Wait()
		for i := range ss {
			if errText(errs[i]) != errText(errs[0]) {
				t.Fatalf("op %d (%s): %s says %v, %s says %v", op, kind, names[0], errs[0], names[i], errs[i])
			}
			if errs[i] != nil && !errors.Is(errs[i], timeline.ErrInvalidInput) && !errors.Is(errs[i], timeline.ErrNotFound) {
				t.Fatalf("op %d (%s): %s failed: %v", op, kind, names[i], errs[i])
			}
		}
	}
	for op := range ops {
		var kind string
		var call func(i int, s timeline.Store) error
		switch p := rng.IntN(100); {
		case p < 50:
			author, body := user(), randomBody(rng)
			if rng.IntN(200) == 0 {
				body = "" // invalid: every store must reject it
			}
			idx := posts
			posts++
			authors = append(authors, author)
			kind = fmt.Sprintf("post by %d", author)
			call = func(i int, s timeline.Store) error {
				m, err := s.Post(ctx, author, body)
				if err == nil {
					canon[i][m.ID] = idx
					ids[i][idx] = m.ID
				}
				return err
			}
		case p < 55 && posts > 0:
			// A random earlier post: often one that is gone already,
			// or that failed; now and then by the wrong author.
			idx := rng.IntN(posts)
			author := authors[idx]
			if rng.IntN(10) == 0 {
				author = user()
			}
			deletes++
			kind = fmt.Sprintf("delete #%d by %d", idx, author)
			call = func(i int, s timeline.Store) error {
				id, ok := ids[i][idx]
				if !ok {
					id = 1 << 40 // the post failed: no message has this id
				}
				return s.Delete(ctx, author, id)
			}
		case p < 62:
			u := user()
			kind = fmt.Sprintf("newest page of %d", u)
			call = func(_ int, s timeline.Store) error {
				_, err := s.Timeline(ctx, u, timeline.Query{})
				return err
			}
		case p < 88:
			a, b := user(), user()
			kind = fmt.Sprintf("follow %d→%d", a, b)
			call = func(_ int, s timeline.Store) error { return s.Follow(ctx, a, b) }
		default:
			a, b := user(), user()
			kind = fmt.Sprintf("unfollow %d→%d", a, b)
			call = func(_ int, s timeline.Store) error { return s.Unfollow(ctx, a, b) }
		}
		apply(op, kind, call)
	}
	// The tail: every user's newest page is read, warm in any cache, then
	// recent messages (the ones such pages show) are deleted, with nothing
	// between that would refresh a cache.
	for u := timeline.UserID(1); u <= users; u++ {
		apply(ops, fmt.Sprintf("newest page of %d", u), func(_ int, s timeline.Store) error {
			_, err := s.Timeline(ctx, u, timeline.Query{})
			return err
		})
	}
	for range 40 {
		idx := max(0, posts-1-rng.IntN(300))
		author := authors[idx]
		deletes++
		apply(ops, fmt.Sprintf("delete #%d by %d", idx, author), func(i int, s timeline.Store) error {
			id, ok := ids[i][idx]
			if !ok {
				id = 1 << 40
			}
			return s.Delete(ctx, author, id)
		})
	}

	// An asynchronous store is compared once it has applied what it
	// acknowledged. The newest pages first, while any cache still holds
	// the pages the tail read (a cache's entries outlive the test only
	// when nothing invalidates them).
	for _, s := range ss {
		timelinetest.Settle(t, s)
	}
	for u := timeline.UserID(1); u <= users; u++ {
		var want []string
		for i, s := range ss {
			p, err := s.Timeline(ctx, u, timeline.Query{})
			if err != nil {
				t.Fatalf("newest page of %d: %v", u, err)
			}
			var got []string
			for _, m := range p.Messages {
				got = append(got, fmt.Sprintf("#%d", canon[i][m.ID]))
			}
			if i == 0 {
				want = got
			} else if !slices.Equal(got, want) {
				t.Fatalf("newest page of %d after the tail: %s and %s differ: %s", u, names[0], names[i], firstDifference(want, got))
			}
		}
	}
	var walked, messages int
	for u := timeline.UserID(1); u <= users; u++ {
		limit := 1 + rng.IntN(12)
		var want []string
		for i, s := range ss {
			got := walk(t, s, canon[i], u, limit)
			if i == 0 {
				want = got
				messages += len(got) - strings.Count(strings.Join(got, ""), "|page|")
				continue
			}
			if !slices.Equal(got, want) {
				t.Fatalf("user %d, limit %d: %s and %s differ: %s",
					u, limit, names[0], names[i], firstDifference(want, got))
			}
		}
		walked++
	}
	t.Logf("%d ops (%d posts, %d deletes); %d timelines walked in %d stores, %d entries each", ops, posts, deletes, walked, len(ss), messages)
	if messages == 0 || deletes == 0 {
		t.Fatal("no timeline held any message, or nothing was deleted: the test exercised nothing")
	}
	// Every other read, compared the same way.
	for u := timeline.UserID(1); u <= users; u++ {
		limit := 1 + rng.IntN(12)
		var point int // a post to page newer than, in every store
		if posts > 0 {
			point = rng.IntN(posts)
		}
		var want []string
		for i, s := range ss {
			got := otherReads(t, s, canon[i], ids[i], u, limit, point)
			if i == 0 {
				want = got
				continue
			}
			if !slices.Equal(got, want) {
				t.Fatalf("user %d, limit %d: %s and %s differ: %s",
					u, limit, names[0], names[i], firstDifference(want, got))
			}
		}
	}
}

// otherReads describes, store-independently, what s answers for user
// besides the home timeline walk: the user's own timeline page by page; the
// pages of the home and own timelines newer than post point (by After,
// and the first by Since); the follow lists; whether the user follows the
// next user; and the message of post point.
func otherReads(t *testing.T, s timeline.Store, canon map[timeline.MessageID]int, ids map[int]timeline.MessageID,
	user timeline.UserID, limit, point int) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	describe := func(what string, p timeline.Page, err error) {
		if err != nil {
			t.Fatalf("%s of %d: %v", what, user, err)
		}
		for _, m := range p.Messages {
			idx, ok := canon[m.ID]
			if !ok {
				t.Fatalf("%s of %d holds unknown message %d", what, user, m.ID)
			}
			out = append(out, fmt.Sprintf("%s #%d by %d: %q", what, idx, m.Author, m.Body))
		}
		out = append(out, fmt.Sprintf("%s |page| next %t prev %t", what, p.Next != "", p.Prev != ""))
	}
	q := timeline.Query{Limit: limit}
	for {
		p, err := s.AuthorTimeline(ctx, user, q)
		describe("own", p, err)
		if p.Next == "" {
			break
		}
		q.Before = p.Next
	}
	if id, ok := ids[point]; ok {
		after := timeline.Query{Limit: limit, After: timeline.IDCursor(id)}
		for range 3 {
			p, err := s.Timeline(ctx, user, after)
			describe("home after", p, err)
			if p.Prev == "" {
				break
			}
			after.After = p.Prev
		}
		p, err := s.Timeline(ctx, user, timeline.Query{Limit: limit, Since: timeline.IDCursor(id)})
		describe("home since", p, err)
		p, err = s.AuthorTimeline(ctx, user, timeline.Query{Limit: limit, After: timeline.IDCursor(id)})
		describe("own after", p, err)
		m, err := s.Message(ctx, id)
		switch {
		case errors.Is(err, timeline.ErrNotFound):
			out = append(out, "message not found")
		case err != nil:
			t.Fatalf("message #%d: %v", point, err)
		default:
			out = append(out, fmt.Sprintf("message #%d by %d: %q", canon[m.ID], m.Author, m.Body))
		}
	}
	for _, list := range []struct {
		what string
		read func(context.Context, timeline.UserID, timeline.FollowQuery) (timeline.FollowPage, error)
	}{{"followees", s.Followees}, {"followers", s.Followers}} {
		q := timeline.FollowQuery{Limit: limit}
		for {
			p, err := list.read(ctx, user, q)
			if err != nil {
				t.Fatalf("%s of %d: %v", list.what, user, err)
			}
			out = append(out, fmt.Sprintf("%s %v", list.what, p.Users))
			if p.Next == 0 {
				break
			}
			q.After = p.Next
		}
	}
	follows, err := s.Follows(ctx, user, user+1)
	if err != nil {
		t.Fatalf("does %d follow %d: %v", user, user+1, err)
	}
	return append(out, fmt.Sprintf("follows the next: %t", follows))
}

// firstDifference describes where two walks part, with a little context.
func firstDifference(want, got []string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(0, i-2)
	return fmt.Sprintf("%d and %d entries, first difference at entry %d:\n  want %q\n  got  %q",
		len(want), len(got), i, want[from:min(len(want), i+3)], got[from:min(len(got), i+3)])
}

func errText(err error) string {
	var ie *timeline.InputError
	if errors.As(err, &ie) {
		return ie.Error()
	}
	if errors.Is(err, timeline.ErrNotFound) {
		return "not found"
	}
	if err != nil {
		return "error"
	}
	return ""
}

// walk reads user's whole timeline and describes it store-independently:
// one entry per message (post index, author, body) and a marker per page
// boundary.
func walk(t *testing.T, s timeline.Store, canon map[timeline.MessageID]int, user timeline.UserID, limit int) []string {
	t.Helper()
	var out []string
	q := timeline.Query{Limit: limit}
	for {
		p, err := s.Timeline(context.Background(), user, q)
		if err != nil {
			t.Fatalf("timeline of %d: %v", user, err)
		}
		for _, m := range p.Messages {
			idx, ok := canon[m.ID]
			if !ok {
				t.Fatalf("timeline of %d holds unknown message %d", user, m.ID)
			}
			out = append(out, fmt.Sprintf("#%d by %d: %q", idx, m.Author, m.Body))
		}
		if p.Next == "" {
			return out
		}
		out = append(out, "|page|")
		q.Before = p.Next
	}
}

var words = strings.Fields("the a timeline push pull fan out merge mailbox index cursor page read write 日本 café 😀 follow post newest older")

func randomBody(rng *rand.Rand) string {
	n := 1 + rng.IntN(12)
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// TestBadInputChangesNoRows runs every rejected call against each SQL
// model and checks the row counts of every table afterwards.
func TestBadInputChangesNoRows(t *testing.T) {
	ctx := context.Background()
	for _, m := range persistent() {
		t.Run(m.Name, func(t *testing.T) {
			db := fresh(t, m)
			s, err := m.Open(ctx, config(t, m, db))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, f := range [][2]timeline.UserID{{1, 2}, {2, 1}, {3, 2}} {
				if err := s.Follow(ctx, f[0], f[1]); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 3 {
				if _, err := s.Post(ctx, timeline.UserID(i%2+1), "seed"); err != nil {
					t.Fatal(err)
				}
			}
			timelinetest.Settle(t, s) // no fan-out still to come
			tables := []string{"pushpull_meta"}
			for _, tb := range schema.DataTables(m.Schema) {
				tables = append(tables, tb.Name)
			}
			before := countRows(t, m, db, tables...)
			if before["messages"] != 3 || before["follows"] != 3 {
				t.Fatalf("setup: %v", before)
			}
			for _, bad := range timelinetest.BadInputs() {
				timelinetest.CheckInputError(t, bad.Name, bad.Call(ctx, s), bad.Sentinel, bad.Field)
				if after := countRows(t, m, db, tables...); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("%s changed rows: before %v, after %v", bad.Name, before, after)
				}
			}
		})
	}
}

// TestUnreachableServer: every SQL model reports an unreachable server as
// timeline.ErrUnavailable, promptly.
func TestUnreachableServer(t *testing.T) {
	for _, dsn := range []string{
		"root@tcp(127.0.0.1:1)/",
		"root@unix(/nonexistent/mariadb.sock)/",
	} {
		for _, m := range persistent() {
			model := m.Name
			start := time.Now()
			cfg := config(t, m, "")
			cfg.DSN, cfg.Vtgate = dsn, dsn
			s, err := m.Open(context.Background(), cfg)
			if err == nil {
				s.Close()
				t.Fatalf("%s at %s: opened", model, dsn)
			}
			if !errors.Is(err, timeline.ErrUnavailable) {
				t.Fatalf("%s at %s: got %v, want ErrUnavailable", model, dsn, err)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Fatalf("%s at %s: took %v to fail", model, dsn, d)
			}
		}
	}
	// A memcached that does not answer, for the models that need one.
	for _, m := range registry.Listed() {
		if m.Needs&registry.Memcached == 0 {
			continue
		}
		model := m.Name
		cfg := config(t, m, fresh(t, m))
		cfg.Memcache = []string{"127.0.0.1:1"}
		s, err := m.Open(context.Background(), cfg)
		if err == nil {
			s.Close()
			t.Fatalf("%s with memcached at 127.0.0.1:1: opened", model)
		}
		if !errors.Is(err, timeline.ErrUnavailable) {
			t.Fatalf("%s with memcached at 127.0.0.1:1: got %v, want ErrUnavailable", model, err)
		}
	}
	// A redis-server that does not answer, for the models that need one.
	for _, m := range registry.Listed() {
		if m.Needs&registry.Redis == 0 {
			continue
		}
		cfg := config(t, m, fresh(t, m))
		cfg.Redis = "127.0.0.1:1"
		s, err := m.Open(context.Background(), cfg)
		if err == nil {
			s.Close()
			t.Fatalf("%s with Redis at 127.0.0.1:1: opened", m.Name)
		}
		if !errors.Is(err, timeline.ErrUnavailable) {
			t.Fatalf("%s with Redis at 127.0.0.1:1: got %v, want ErrUnavailable", m.Name, err)
		}
	}
}

// TestCachedModels: each cached model serves a repeated newest page from
// memcached, sees a post at once (policy invalidate), and never serves a
// page cached for an earlier database of the same name.
func TestCachedModels(t *testing.T) {
	ctx := context.Background()
	cached := registry.Offered(memcache.Variant)
	if len(cached) == 0 {
		t.Fatal("no model is offered with the memcache variant")
	}
	for _, m := range cached {
		model := m.Name
		t.Run(model, func(t *testing.T) {
			db := testserver.Database(t)
			cfg := registry.Config{DSN: testserver.DSN(t), Database: db, Memcache: []string{testserver.Memcache(t)}, Namespace: "t/"}
			open := func() *memcache.Store {
				s, err := m.Open(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				cs, ok := s.(*memcache.Store)
				if !ok || cs.Policy() != memcache.PolicyInvalidate {
					t.Fatalf("%s opened %T", model, s)
				}
				return cs
			}
			newest := func(s timeline.Store) []string {
				p, err := s.Timeline(ctx, 1, timeline.Query{})
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, m := range p.Messages {
					out = append(out, m.Body)
				}
				return out
			}
			s := open()
			if err := s.Follow(ctx, 1, 2); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Post(ctx, 2, "first database"); err != nil {
				t.Fatal(err)
			}
			newest(s)
			if got := newest(s); !slices.Equal(got, []string{"first database"}) || s.Stats().Hits != 1 {
				t.Fatalf("second read %q, stats %+v: want one hit", got, s.Stats())
			}
			if _, err := s.Post(ctx, 2, "second post"); err != nil {
				t.Fatal(err)
			}
			if got := newest(s); !slices.Equal(got, []string{"second post", "first database"}) {
				t.Fatalf("after a post: %q", got)
			}

			// The same database name, dropped and made again: the old
			// page stays in memcached, but under another identity.
			admin := testserver.Admin(t)
			defer admin.Close()
			if _, err := admin.Exec("DROP DATABASE `" + db + "`"); err != nil {
				t.Fatal(err)
			}
			s2 := open()
			if got := newest(s2); len(got) != 0 {
				t.Fatalf("a re-created database was served the old one's page: %q", got)
			}
		})
	}
}

func TestBadConfig(t *testing.T) {
	ctx := context.Background()
	withMemcache := func(cfg registry.Config) registry.Config {
		cfg.Memcache = []string{testserver.Memcache(t)}
		return cfg
	}
	dsn := registry.Config{DSN: testserver.DSN(t)}
	fresh := func() registry.Config {
		return registry.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)}
	}
	badPolicy := withMemcache(fresh())
	badPolicy.Options = map[string]string{memcache.OptionPolicy: "sometimes"}
	badNamespace := withMemcache(fresh())
	badNamespace.Namespace = "a b"
	for name, tc := range map[string]struct {
		model string
		cfg   registry.Config
		want  string
		is    error
	}{
		"unknown model":         {"pull-magic", dsn, "unknown", registry.ErrUnknownModel},
		"no memcached":          {"pull-recent", dsn, "memcached", registry.ErrMissingServer},
		"no memcached (active)": {"pull-active", dsn, "memcached", registry.ErrMissingServer},
		"bad namespace":         {"pull-recent", badNamespace, "namespace", nil},
		"unknown family":        {"gossip", dsn, "want one of", registry.ErrUnknownModel},
		"cached, no memcached":  {"push+memcache", dsn, "memcached", registry.ErrMissingServer},
		"cached memory":         {"memory+memcache", withMemcache(dsn), "does not wrap", registry.ErrUnknownModel},
		"cached twice":          {"push+memcache+memcache", withMemcache(dsn), "no variant", registry.ErrUnknownModel},
		"unknown variant":       {"push+redis", withMemcache(dsn), "no variant", registry.ErrUnknownModel},
		"bad cache policy":      {"push+memcache", badPolicy, "policy", nil},
		"no DSN":                {"push", registry.Config{}, "DSN", registry.ErrMissingServer},
		"no vtgate":             {"push@vitess", dsn, "vtgate", registry.ErrMissingServer},
		"vtgate for MariaDB":    {"pull-client", registry.Config{DSN: testserver.Vtgate(t), Database: "pushpull_pull"}, "vtgate", mysqlx.ErrWrongServer},
		"MariaDB for a vtgate":  {"push@vitess", registry.Config{Vtgate: testserver.DSN(t), Database: "x"}, "not a vtgate", mysqlx.ErrWrongServer},
		"keyspace missing":      {"pull-merge@vitess", registry.Config{Vtgate: testserver.Vtgate(t), Database: "no_such_keyspace"}, "no_such_keyspace", nil},
		"garbage DSN":           {"push", registry.Config{DSN: "not a dsn"}, "DSN", nil},
		"bad database":          {"push", registry.Config{DSN: testserver.DSN(t), Database: "x; DROP TABLE y"}, "database name", nil},
		"database too big":      {"pull-sp", registry.Config{DSN: testserver.DSN(t), Database: strings.Repeat("a", 65)}, "database name", nil},
	} {
		s, err := registry.OpenModel(ctx, tc.model, tc.cfg)
		if err == nil {
			s.Close()
			t.Fatalf("%s: opened", name)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: error %q does not mention %q", name, err, tc.want)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Fatalf("%s: error %q does not match %v", name, err, tc.is)
		}
	}
}

// TestCacheRefusesAsynchronousModels: memcached cannot be put in front of
// a model that applies its writes after they return (push-async): a page
// read before the fan-out ran would be cached and served after Settle.
// Asking for one is an error that says so, not a store that breaks
// read-your-writes.
func TestCacheRefusesAsynchronousModels(t *testing.T) {
	var async []registry.Model
	for _, m := range registry.Models() {
		if !m.Persistent() || m.OnVitess() {
			continue
		}
		s, err := m.Open(context.Background(), config(t, m, fresh(t, m)))
		if err != nil {
			t.Fatalf("open %s: %v", m.Name, err)
		}
		if _, ok := timeline.As[timeline.Settler](s); ok {
			async = append(async, m)
		}
		s.Close()
	}
	if len(async) == 0 {
		t.Fatal("no registered model applies its writes later: nothing to check")
	}
	for _, base := range async {
		name := base.Name + "+" + memcache.Variant
		m, err := registry.Lookup(name)
		if err != nil {
			continue // refused by name: as good
		}
		s, err := m.Open(context.Background(), config(t, m, fresh(t, m)))
		if err == nil {
			s.Close()
			t.Errorf("%s opened: its cached pages cannot be kept current", name)
			continue
		}
		if !errors.Is(err, memcache.ErrApplyLater) {
			t.Errorf("%s: %v, want an error matching memcache.ErrApplyLater", name, err)
		}
	}
}
