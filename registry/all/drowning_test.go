package all_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/push"
	pushredis "github.com/pushpull/pushpull/push/redis"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// drowningModels are the base models that declare the drowning readers'
// options (push.DrowningOptions).
func drowningModels(t *testing.T) []registry.Model {
	var out []registry.Model
	for _, m := range registry.Models() {
		if slices.Contains(m.OptionNames(), push.OptionDrowningFollows) {
			out = append(out, m)
		}
	}
	if len(out) < 7 {
		t.Fatalf("%d models declare %s, want push and the designs that fan out on write", len(out), push.OptionDrowningFollows)
	}
	return out
}

// openDrowning opens a store of m in a fresh database with the drowning
// readers' options: readers following more than follows authors are
// drowning, written to as mode says.
func openDrowning(t *testing.T, m registry.Model, follows int, mode string) (timeline.Store, reconcile.Checker) {
	t.Helper()
	cfg := config(t, m, fresh(t, m))
	cfg.Options = map[string]string{push.OptionDrowningFollows: strconv.Itoa(follows), push.OptionDrowning: mode}
	s, err := m.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open %s with %v: %v", m.Name, cfg.Options, err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := m.Checker(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// feeds is a store that keeps its view in Redis lists (push-redis).
type feeds interface {
	FeedKey(timeline.UserID) string
	Redis() *redisx.Client
}

// viewRows returns user's entries in s's view, newest first: the rows of
// push's mailbox table, or the ids of the user's feed in Redis.
func viewRows(t *testing.T, s timeline.Store, user timeline.UserID) []timeline.MessageID {
	t.Helper()
	var ids []timeline.MessageID
	if f, ok := s.(feeds); ok {
		members, err := f.Redis().Do(timelinetest.Context(t), func(b redisx.Builder) redisx.Completed {
			return b.Lrange().Key(f.FeedKey(user)).Start(0).Stop(-1).Build()
		}).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members { // every member but the sentinel is an id
			if id, err := strconv.ParseInt(m, 10, 64); err == nil {
				ids = append(ids, timeline.MessageID(id))
			}
		}
		return ids
	}
	err := reconcile.ScanInts(timelinetest.Context(t), s.(timeline.DBHolder).DB(),
		`SELECT message_id FROM mailbox WHERE user_id = ? ORDER BY message_id DESC`, 1,
		func(v []int64) { ids = append(ids, timeline.MessageID(v[0])) }, user)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// dropRow removes message id from user's view, behind s's back, and
// returns the drift reconcile reports of it.
func dropRow(t *testing.T, s timeline.Store, user timeline.UserID, id timeline.MessageID) reconcile.Drift {
	t.Helper()
	item := strconv.FormatInt(int64(id), 10)
	if f, ok := s.(feeds); ok {
		if err := f.Redis().Do(timelinetest.Context(t), func(b redisx.Builder) redisx.Completed {
			return b.Lrem().Key(f.FeedKey(user)).Count(0).Element(item).Build()
		}).Error(); err != nil {
			t.Fatal(err)
		}
		return reconcile.Drift{Kind: reconcile.Missing, View: pushredis.FeedView, User: user, Item: int64(id)}
	}
	if _, err := s.(timeline.DBHolder).DB().Exec(`DELETE FROM mailbox WHERE user_id = ? AND message_id = ?`, user, id); err != nil {
		t.Fatal(err)
	}
	return reconcile.Drift{Kind: reconcile.Missing, View: push.MailboxView, User: user, Item: int64(id)}
}

// The scene of the drowning readers' tests: reader drowner follows the
// authors 1 to 5, reader light authors 1 and 2; each reads their newest
// page once (so that designs that write only to readers who read write to
// them), then every author posts perAuthor messages.
const (
	drowner   timeline.UserID = 100
	light     timeline.UserID = 101
	perAuthor                 = 24
)

// drowningScene plays the scene on s and on the memory store, which it
// returns, and settles s.
func drowningScene(t *testing.T, s timeline.Store) *timeline.Memory {
	mem := timeline.NewMemory()
	t.Cleanup(func() { mem.Close() })
	for _, st := range []timeline.Store{s, mem} {
		for a := timeline.UserID(1); a <= 5; a++ {
			timelinetest.Follow(t, st, drowner, a)
		}
		timelinetest.Follow(t, st, light, 1)
		timelinetest.Follow(t, st, light, 2)
		timelinetest.Settle(t, st)
		timelinetest.Newest(t, st, drowner)
		timelinetest.Newest(t, st, light)
		for range perAuthor {
			for a := timeline.UserID(1); a <= 5; a++ {
				timelinetest.Post(t, st, a, "post")
			}
		}
		timelinetest.Settle(t, st)
	}
	return mem
}

// checkDrift runs c over the scene's readers and fails t unless it finds
// exactly want (in any order).
func checkDrift(t *testing.T, c reconcile.Checker, want []reconcile.Drift) {
	t.Helper()
	b, err := c.Check(timelinetest.Context(t), []timeline.UserID{drowner, light})
	if err != nil {
		t.Fatal(err)
	}
	got := b.Drift
	byKey := func(a, b reconcile.Drift) int {
		if a.Key() == b.Key() {
			return 0
		}
		if a.String() < b.String() {
			return -1
		}
		return 1
	}
	slices.SortFunc(got, byKey)
	slices.SortFunc(want, byKey)
	if !slices.EqualFunc(got, want, func(a, b reconcile.Drift) bool { return a.Key() == b.Key() }) {
		t.Errorf("reconcile found %v, want %v", got, want)
	}
}

// TestDrowningConformance runs the conformance suite on every model that
// declares the drowning readers' options, with every reader who follows
// more than one author drowning under drowning=pull: their pages, read
// by pull, must be what the contract says.
func TestDrowningConformance(t *testing.T) {
	var configs []timelinetest.Config
	for _, m := range drowningModels(t) {
		configs = append(configs, timelinetest.Config{Name: m.Name, Open: func(t *testing.T) timeline.Store {
			s, _ := openDrowning(t, m, 1, push.DrowningPull)
			return s
		}})
	}
	timelinetest.RunConfigs(t, configs)
}

// TestDrowningPull: under drowning=pull with drowning_follows 3, every
// model writes no view row of any post to the reader of 5 authors and
// every row to the reader of 2; both read every page as the memory store
// does, the drowning reader by pull; reconcile finds no drift.
func TestDrowningPull(t *testing.T) {
	for _, m := range drowningModels(t) {
		t.Run(m.Name, func(t *testing.T) {
			s, c := openDrowning(t, m, 3, push.DrowningPull)
			mem := drowningScene(t, s)
			if got := viewRows(t, s, drowner); len(got) != 0 {
				t.Errorf("drowning reader's view holds %d rows of posts made after they drowned, want 0", len(got))
			}
			if got := viewRows(t, s, light); len(got) != 2*perAuthor {
				t.Errorf("reader of 2 authors' view holds %d rows, want %d", len(got), 2*perAuthor)
			}
			for _, u := range []timeline.UserID{drowner, light} {
				for _, limit := range []int{7, 20} {
					got, want := timelinetest.WalkIDs(t, s, u, limit), timelinetest.WalkIDs(t, mem, u, limit)
					if !slices.Equal(got, want) {
						t.Errorf("reader %d, pages of %d: got %v, want %v", u, limit, got, want)
					}
				}
			}
			if got := viewRows(t, s, drowner); len(got) != 0 {
				t.Errorf("reading the drowning reader's pages wrote %d view rows, want 0", len(got))
			}
			checkDrift(t, c, nil)
		})
	}
}

// TestDrowningLossy: under drowning=lossy with drowning_follows 2, every
// model writes to the reader of 5 authors exactly the posts
// push.LossyKeeps picks at the loss factor 2/5 (some, not all), and their
// pages are those; the reader of 2 gets every post. Reconcile finds no
// drift, and, with a kept row deleted, finds it missing (the hash rule
// says it must be there); a row the hash did not keep is not drift.
func TestDrowningLossy(t *testing.T) {
	for _, m := range drowningModels(t) {
		t.Run(m.Name, func(t *testing.T) {
			d := push.Drowning{Follows: 2, Mode: push.DrowningLossy}
			s, c := openDrowning(t, m, d.Follows, d.Mode)
			mem := drowningScene(t, s)
			all := timelinetest.WalkIDs(t, mem, drowner, 0)
			var want []timeline.MessageID
			for _, id := range all {
				if push.LossyKeeps(id, drowner, d.LossyKeep(5)) {
					want = append(want, id)
				}
			}
			if n := len(want); n == 0 || n == len(all) {
				t.Fatalf("loss factor 2/5 kept %d of %d posts: want some and not all", n, len(all))
			}
			got := viewRows(t, s, drowner)
			if !slices.Equal(got, want) {
				t.Fatalf("lossy view: got %d rows %v, want the %d LossyKeeps picks %v", len(got), got, len(want), want)
			}
			if page := timelinetest.WalkIDs(t, s, drowner, 7); !slices.Equal(page, want) {
				t.Errorf("lossy reader's pages: got %v, want the view's %v", page, want)
			}
			if got := len(viewRows(t, s, light)); got != 2*perAuthor {
				t.Errorf("reader of 2 authors: %d rows, want %d", got, 2*perAuthor)
			}
			checkDrift(t, c, nil)
			missing := dropRow(t, s, drowner, want[len(want)/2])
			b, err := c.Check(timelinetest.Context(t), []timeline.UserID{drowner, light})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(b.Drift, func(d reconcile.Drift) bool { return d.Key() == missing.Key() }) {
				t.Errorf("a kept row deleted: reconcile found %v, want %v among it", b.Drift, missing)
			}
		})
	}
}
