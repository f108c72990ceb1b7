package pull_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/timeline"
)

// TestWriteHooks: a pull-recent store records the lists hook in its
// database, and a pull-active store the hints hook; a store of another
// strategy opened afterwards without memcached refuses to open, and one
// with memcached runs them: its posts reach the lists and the indexes. A
// store opened before the hooks were recorded keeps writing plainly.
func TestWriteHooks(t *testing.T) {
	ctx := context.Background()
	db := testserver.Database(t)
	plain := config(t, pull.StrategySP, db)
	early := openConfig(t, plain)

	recentCfg := config(t, pull.StrategyRecent, db)
	reader := openConfig(t, recentCfg)
	recorded := func() string {
		t.Helper()
		var v string
		if err := reader.DB().QueryRowContext(ctx, `SELECT value FROM pushpull_meta WHERE name = 'write_hooks'`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := recorded(); v != "lists" {
		t.Fatalf("after pull-recent opened, write_hooks = %q, want \"lists\"", v)
	}
	refused := func(want string) {
		t.Helper()
		s, err := pull.Open(ctx, plain)
		if err == nil {
			s.Close()
			t.Fatal("a store without memcached opened on a database that needs write hooks")
		}
		if !errors.Is(err, pull.ErrWriteHooks) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Config.Memcache") {
			t.Fatalf("want an ErrWriteHooks naming %q and Config.Memcache, got: %v", want, err)
		}
	}
	refused("lists")
	if h := early.Hooks(); h != 0 {
		t.Fatalf("a store opened before the hooks were recorded runs %v", h)
	}

	// With the memcached and namespace of the reader, an SP store keeps
	// the lists: its post reaches the reader's next page by an append,
	// with no rebuild.
	withHooks := recentCfg
	withHooks.Read = plain.Read
	writer := openConfig(t, withHooks)
	if h := writer.Hooks(); h != pull.HookLists {
		t.Fatalf("SP store with memcached runs %v, want lists", h)
	}
	for a := timeline.UserID(2); a <= 6; a++ {
		if err := writer.Follow(ctx, 1, a); err != nil {
			t.Fatal(err)
		}
		if _, err := writer.Post(ctx, a, "before"); err != nil {
			t.Fatal(err)
		}
	}
	newest := func(s *pull.Store, limit int) []timeline.MessageID {
		t.Helper()
		p, err := s.Timeline(ctx, 1, timeline.Query{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var ids []timeline.MessageID
		for _, m := range p.Messages {
			ids = append(ids, m.ID)
		}
		return ids
	}
	newest(reader, 5) // builds the lists
	rebuilds := reader.Stats().Rebuilds
	m, err := writer.Post(ctx, 3, "through the hooks")
	if err != nil {
		t.Fatal(err)
	}
	if got := newest(reader, 1); !slices.Equal(got, []timeline.MessageID{m.ID}) {
		t.Fatalf("the reader's newest page is %v, want the SP store's post %d", got, m.ID)
	}
	if st := reader.Stats(); st.Rebuilds != rebuilds || st.CacheMisses != 5 {
		t.Fatalf("the post should reach the list by its append: %+v", st)
	}

	// pull-active adds the hints hook; a store opened afterwards hints
	// the indexes of heavy followers.
	activeCfg := recentCfg
	activeCfg.Read = recent.Active{ActiveLen: 2} // an index for users following 5 or more
	indexed := openConfig(t, activeCfg)
	if v := recorded(); v != "lists,hints" {
		t.Fatalf("after pull-active opened, write_hooks = %q, want \"lists,hints\"", v)
	}
	refused("lists,hints")
	if h := writer.Hooks(); h != pull.HookLists {
		t.Fatalf("a store opened before the hints hook was recorded runs %v, want lists", h)
	}
	hinter := openConfig(t, withHooks)
	if h := hinter.Hooks(); h != pull.HookLists|pull.HookHints {
		t.Fatalf("SP store with memcached runs %v, want lists,hints", h)
	}
	newest(indexed, 1) // builds user 1's index
	newest(indexed, 1)
	builds := indexed.Stats().IndexBuilds
	m, err = hinter.Post(ctx, 4, "hinted")
	if err != nil {
		t.Fatal(err)
	}
	if st := hinter.Stats(); st.Hints != 1 {
		t.Fatalf("the SP store's post should hint user 1's index: %+v", st)
	}
	if got := newest(indexed, 1); !slices.Equal(got, []timeline.MessageID{m.ID}) {
		t.Fatalf("the indexed newest page is %v, want %d", got, m.ID)
	}
	if st := indexed.Stats(); st.IndexBuilds != builds || st.IndexReads < 2 {
		t.Fatalf("the post should reach the index by its hint: %+v", st)
	}
}
