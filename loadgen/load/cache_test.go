package load

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/pushpull/pushpull/internal/tablecache"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/results"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// TestLoadCache loads a dataset with a load cache, then loads it again
// into fresh databases: the second load restores the cached tables, which
// must equal the loaded ones (CHECKSUM TABLE) and take new rows as loaded
// tables do; an entry spoiled on disk loads instead, and a different
// dataset misses.
func TestLoadCache(t *testing.T) {
	ctx := context.Background()
	spec, err := dataset.PaperSpec().Scaled(0.005) // 50 users, 5,000 messages
	if err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := tablecache.Open(t.TempDir(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Cache: cache, CacheMinRows: 3000, ChunkRows: d.MailboxRows() / 3}

	open := func() *push.Store {
		t.Helper()
		s, err := push.Open(ctx, push.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	load := func(d *dataset.Dataset) (*push.Store, *results.DataLoad) {
		t.Helper()
		s := open()
		res, err := Load(ctx, d, []Target{{Name: "push", DB: s.DB(), Schema: schema.Push}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return s, res
	}
	outcome := func(res *results.DataLoad) map[string]string {
		out := map[string]string{}
		for _, tl := range res.Tables {
			out[tl.Table] = tl.Cache
		}
		return out
	}
	checksums := func(db *sql.DB) map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		for _, tb := range []string{"follows", "messages", "mailbox"} {
			var name string
			var sum int64
			if err := db.QueryRowContext(ctx, "CHECKSUM TABLE `"+tb+"`").Scan(&name, &sum); err != nil {
				t.Fatal(err)
			}
			out[tb] = sum
		}
		return out
	}
	check := func(what string, got, want map[string]string) {
		t.Helper()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s's cache outcome %q, want %q (all: %v)", what, k, got[k], v, got)
			}
		}
	}

	first, res := load(d)
	if d.MailboxRows() < opts.CacheMinRows || int64(d.Spec.Messages) < opts.CacheMinRows || d.Spec.Edges() >= opts.CacheMinRows {
		t.Fatalf("dataset of %d mailbox rows, %d messages, %d follows: the test needs the first two cached and the third not", d.MailboxRows(), d.Spec.Messages, d.Spec.Edges())
	}
	check("first load", outcome(res), map[string]string{"mailbox": results.CacheStored, "messages": results.CacheStored, "follows": ""})
	want := checksums(first.DB())

	second, res := load(d)
	check("second load", outcome(res), map[string]string{"mailbox": results.CacheRestored, "messages": results.CacheRestored, "follows": ""})
	if got := checksums(second.DB()); got["mailbox"] != want["mailbox"] || got["messages"] != want["messages"] {
		t.Fatalf("restored tables' checksums %v, loaded %v", got, want)
	}
	// A restored table takes writes: the next message id follows the
	// loaded ones, and the post reaches its author's followers.
	author := timeline.UserID(1)
	m, err := second.Post(ctx, author, "after the restore")
	if err != nil {
		t.Fatal(err)
	}
	id := m.ID
	if uint64(id) != uint64(d.Spec.Messages)+1 {
		t.Fatalf("post after the restore got id %d, want %d", id, d.Spec.Messages+1)
	}
	if fs := d.Followers(uint32(author)); len(fs) > 0 {
		page, err := second.Timeline(ctx, timeline.UserID(fs[0]), timeline.Query{Limit: 1})
		if err != nil || len(page.Messages) != 1 || page.Messages[0].ID != id {
			t.Fatalf("follower %d's newest after the post: %+v, %v; want message %d", fs[0], page, err, id)
		}
	}

	// Spoil the cached mailbox: the next load must load it instead, and
	// keep it again.
	entries, _ := filepath.Glob(filepath.Join(cache.Path(), "*", "mailbox.ibd"))
	if len(entries) != 1 {
		t.Fatalf("cache holds %d mailbox files, want 1", len(entries))
	}
	if err := os.Truncate(entries[0], 3*16384); err != nil {
		t.Fatal(err)
	}
	third, res := load(d)
	check("load after a spoiled entry", outcome(res), map[string]string{"mailbox": results.CacheStored, "messages": results.CacheRestored})
	if got := checksums(third.DB()); got["mailbox"] != want["mailbox"] {
		t.Fatalf("mailbox loaded after a spoiled entry: checksum %d, want %d", got["mailbox"], want["mailbox"])
	}

	// Other rows, other entries.
	spec.Seed++
	other, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	_, res = load(other)
	check("another dataset", outcome(res), map[string]string{"mailbox": results.CacheStored, "messages": results.CacheStored})

	// Two databases of the same tables in one load keep each table once.
	spec.Seed++
	twice, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(cache.Path(), "*"))
	a, b := open(), open()
	res, err = Load(ctx, twice, []Target{{Name: "a", DB: a.DB(), Schema: schema.Push}, {Name: "b", DB: b.DB(), Schema: schema.Push}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tables {
		if tl.Table != "follows" && tl.Cache != results.CacheStored {
			t.Errorf("%s.%s: cache outcome %q, want %q", tl.Database, tl.Table, tl.Cache, results.CacheStored)
		}
	}
	if after, _ := filepath.Glob(filepath.Join(cache.Path(), "*")); len(after) != len(before)+2 {
		t.Fatalf("cache went from %d entries to %d, want 2 more", len(before), len(after))
	}
}
