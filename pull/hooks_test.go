package pull_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
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

// messageCount counts the rows of messages in s's database.
func messageCount(t *testing.T, s *pull.Store) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM messages`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWriteHooksReachOpenStores: a store opened before another recorded
// write hooks, as in another process that was running already, learns of
// them at its next write: every write fails with ErrWriteHooks, naming
// the hooks it lacks, and changes nothing; a store that runs the lists
// but not the hints learns of the hints the same way. A store that
// ignores the hooks (a benchmark's) writes.
func TestWriteHooksReachOpenStores(t *testing.T) {
	ctx := context.Background()
	db := testserver.Database(t)
	plain := config(t, pull.StrategySP, db)
	early, ignoring := openConfig(t, plain), openConfig(t, plain)
	ignoring.WriteGuard().Ignore()
	old, err := early.Post(ctx, 2, "before the hooks")
	if err != nil {
		t.Fatal(err)
	}
	if err := early.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}

	recentCfg := config(t, pull.StrategyRecent, db)
	openConfig(t, recentCfg)
	refused := func(s *pull.Store, want string) {
		t.Helper()
		n := messageCount(t, s)
		errs := map[string]error{}
		_, errs["post"] = s.Post(ctx, 2, "after the hooks")
		errs["follow"] = s.Follow(ctx, 3, 2)
		errs["unfollow"] = s.Unfollow(ctx, 1, 2)
		errs["delete"] = s.Delete(ctx, 2, old.ID)
		for op, err := range errs {
			if !errors.Is(err, pull.ErrWriteHooks) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s through a store without the %s hooks: got %v, want an ErrWriteHooks naming them", op, want, err)
			}
		}
		if got := messageCount(t, s); got != n {
			t.Errorf("the refused writes changed the messages: %d rows, want %d", got, n)
		}
		if ok, err := s.Follows(ctx, 1, 2); err != nil || !ok {
			t.Errorf("the refused unfollow removed the edge (follows: %v, %v)", ok, err)
		}
		if ok, err := s.Follows(ctx, 3, 2); err != nil || ok {
			t.Errorf("the refused follow added the edge (follows: %v, %v)", ok, err)
		}
	}
	refused(early, "lists")

	withHooks := recentCfg
	withHooks.Read = plain.Read
	writer := openConfig(t, withHooks)
	if _, err := writer.Post(ctx, 2, "with the lists"); err != nil {
		t.Fatal(err)
	}
	activeCfg := recentCfg
	activeCfg.Read = recent.Active{}
	openConfig(t, activeCfg)
	refused(writer, "hints")

	if _, err := ignoring.Post(ctx, 2, "ignoring the hooks"); err != nil {
		t.Fatalf("a store that ignores the hooks: %v", err)
	}
	if err := ignoring.Follow(ctx, 3, 2); err != nil {
		t.Fatalf("a store that ignores the hooks: %v", err)
	}
}

// TestNoWriteSlipsPastARecording: writers of a store without hooks post
// while a pull-recent store opens on their database, records the lists
// hook and reads (building its lists from the database). Every post that
// succeeded is on the reader's page afterwards: it committed before the
// recording, which waited for it, or it was refused.
func TestNoWriteSlipsPastARecording(t *testing.T) {
	ctx := context.Background()
	db := testserver.Database(t)
	plain := config(t, pull.StrategySP, db)
	early := openConfig(t, plain)
	const authors = 8
	for a := timeline.UserID(2); a < 2+authors; a++ {
		if err := early.Follow(ctx, 1, a); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu      sync.Mutex
		posted  []timeline.MessageID
		refused int
		wg      sync.WaitGroup
	)
	read := make(chan struct{}) // closed once the reader has read
	for a := timeline.UserID(2); a < 2+authors; a++ {
		wg.Go(func() {
			// Posts after the reader read must all be refused: a few
			// tries each show it (without the guard they succeed).
			after := 0
			for after < 5 {
				select {
				case <-read:
					after++
				default:
				}
				m, err := early.Post(ctx, a, "racing")
				mu.Lock()
				switch {
				case err == nil:
					posted = append(posted, m.ID)
				case errors.Is(err, pull.ErrWriteHooks):
					refused++
				default:
					mu.Unlock()
					t.Error(err)
					return
				}
				mu.Unlock()
			}
		})
	}
	// Let the writers post a little before the recording.
	for {
		mu.Lock()
		n := len(posted)
		mu.Unlock()
		if n >= 2*authors {
			break
		}
		runtime.Gosched()
	}
	reader := openConfig(t, config(t, pull.StrategyRecent, db))
	if _, err := reader.Timeline(ctx, 1, timeline.Query{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	close(read)
	wg.Wait()
	if refused == 0 {
		t.Fatal("no post was refused after the hooks were recorded")
	}
	seen := map[timeline.MessageID]bool{}
	for p, err := range timeline.Pages(ctx, reader, 1, timeline.Query{Limit: timeline.MaxLimit}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Messages {
			seen[m.ID] = true
		}
	}
	for _, id := range posted {
		if !seen[id] {
			t.Errorf("post %d succeeded but is not on the reader's pages (%d posted, %d refused)", id, len(posted), refused)
		}
	}
}
