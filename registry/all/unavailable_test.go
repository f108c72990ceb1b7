package all_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// unavailDeadline is the deadline of every call while the database is
// down, and unavailMargin how much later than that a call may return.
// A dead server refuses at once: a call that runs out its deadline
// instead gives context.DeadlineExceeded, and fails the test all the same.
const (
	unavailDeadline = 5 * time.Second
	unavailMargin   = time.Second
)

// downStore is one store of TestUnavailable and what it wrote before the
// database went down.
type downStore struct {
	model  string
	s      timeline.Store
	older  timeline.Cursor    // continues reader's timeline past its newest message
	first  timeline.MessageID // the author's first message
	doomed timeline.MessageID // a message of the author's that Delete takes once the server is back
}

// Who does what in TestUnavailable: the reader follows both authors, and
// only the first author has posted; the reader's newest page at the
// default size has never been read, so no cache in front of the database
// holds it.
const (
	unavailReader  = timeline.UserID(1)
	unavailAuthor  = timeline.UserID(2)
	unavailAuthor2 = timeline.UserID(3)
)

// TestUnavailable: for every model that keeps its data on MariaDB, a
// store whose MariaDB is killed (-9) returns, from every operation, an
// error matching timeline.ErrUnavailable within the call's deadline, not
// the driver's own error and not the deadline's; and once the server is
// back, the same store works again without being opened anew.
func TestUnavailable(t *testing.T) {
	sb := testserver.StartFaultSandbox(t, 1, true)
	var stores []*downStore
	for i, m := range registry.Listed() {
		if m.Needs&registry.MariaDB == 0 {
			continue
		}
		cfg := registry.Config{DSN: sb.DSN, Database: fmt.Sprintf("unavail_%d", i), MaxConns: 4}
		if m.Needs&registry.Memcached != 0 {
			cfg.Memcache = sb.MemcacheAddrs
			cfg.Namespace = fmt.Sprintf("unavail%d/", i)
		}
		if m.Needs&registry.Redis != 0 {
			cfg.Redis = sb.RedisAddr
			cfg.Namespace = fmt.Sprintf("unavail%d/", i)
		}
		stores = append(stores, openDownStore(t, m, cfg))
	}
	db := sb.MariaDB()
	if err := db.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("MariaDB killed; %d stores", len(stores))
	checkDown(t, stores, "the database")
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.Restart(rctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("MariaDB restarted")
	checkBack(t, stores)
}

// TestUnavailableVitess: the models on Vitess report a vtgate that went
// away (every connection closed, new ones refused) as TestUnavailable
// requires of a dead MariaDB. The test's vtgate serves other tests, so
// it goes away behind a proxy.
func TestUnavailableVitess(t *testing.T) {
	var stores []*downStore
	vtgate, err := mysql.ParseDSN(testserver.Vtgate(t))
	if err != nil {
		t.Fatal(err)
	}
	p := testserver.StartProxy(t, vtgate.Net, vtgate.Addr)
	vtgate.Net, vtgate.Addr = "tcp", p.Addr
	for _, m := range registry.Listed() {
		if !m.OnVitess() {
			continue
		}
		cfg := config(t, m, fresh(t, m))
		cfg.Vtgate = vtgate.FormatDSN()
		stores = append(stores, openDownStore(t, m, cfg))
	}
	if len(stores) == 0 {
		t.Fatal("no model on Vitess")
	}
	p.Cut()
	checkDown(t, stores, "vtgate")
	p.Restore(t)
	checkBack(t, stores)
}

// openDownStore opens a store of m for TestUnavailable and writes a
// little to it.
func openDownStore(t *testing.T, m registry.Model, cfg registry.Config) *downStore {
	t.Helper()
	s, err := registry.OpenModel(context.Background(), m.Name, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", m.Name, err)
	}
	t.Cleanup(func() { s.Close() })
	timelinetest.Follow(t, s, unavailReader, unavailAuthor)
	timelinetest.Follow(t, s, unavailReader, unavailAuthor2)
	doomed := timelinetest.Post(t, s, unavailAuthor, "to be deleted")
	posted := timelinetest.PostN(t, s, unavailAuthor, 2)
	p := timelinetest.Page(t, s, unavailReader, timeline.Query{Limit: 1})
	if p.Next == "" {
		t.Fatalf("%s: a page of one of two messages has no Next", m.Name)
	}
	return &downStore{model: m.Name, s: s, older: p.Next, first: posted[0].ID, doomed: doomed.ID}
}

// checkDown calls every operation of every store, the stores at once, and
// requires each to fail with timeline.ErrUnavailable by its deadline.
func checkDown(t *testing.T, stores []*downStore, server string) {
	t.Helper()
	var wg sync.WaitGroup
	for _, d := range stores {
		wg.Go(func() {
			for _, op := range d.ops() {
				c, cancel := context.WithTimeout(context.Background(), unavailDeadline)
				start := time.Now()
				err := op.call(c)
				took := time.Since(start)
				cancel()
				switch {
				case err == nil:
					t.Errorf("%s: %s with %s down: no error", d.model, op.name, server)
				case !errors.Is(err, timeline.ErrUnavailable):
					t.Errorf("%s: %s with %s down, after %v: %v; want an error matching timeline.ErrUnavailable", d.model, op.name, server, took.Round(time.Millisecond), err)
				case took > unavailDeadline+unavailMargin:
					t.Errorf("%s: %s took %v, past its %v deadline", d.model, op.name, took.Round(time.Millisecond), unavailDeadline)
				}
			}
		})
	}
	wg.Wait()
}

// checkBack requires every operation of every store to work again within
// a bounded time once the server is back (the first calls may still find
// connections that broke), and the reader's older page to hold what was
// written before the server went down.
func checkBack(t *testing.T, stores []*downStore) {
	t.Helper()
	var wg sync.WaitGroup
	for _, d := range stores {
		wg.Go(func() {
			deadline := time.Now().Add(30 * time.Second)
			for _, op := range d.ops() {
				for {
					c, cancel := context.WithTimeout(context.Background(), unavailDeadline)
					err := op.call(c)
					cancel()
					if err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("%s: %s once the server is back: %v", d.model, op.name, err)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, d := range stores {
		p := timelinetest.Page(t, d.s, unavailReader, timeline.Query{Limit: 1, Before: d.older})
		if len(p.Messages) != 1 || p.Messages[0].Body != fmt.Sprintf("message 0 from %d", unavailAuthor) {
			t.Errorf("%s: the older page once the server is back: %+v", d.model, p.Messages)
		}
	}
}

type storeOp struct {
	name string
	call func(ctx context.Context) error
}

// ops are the calls TestUnavailable makes of every store.
func (d *downStore) ops() []storeOp {
	s := d.s
	return []storeOp{
		{"Post", func(ctx context.Context) error {
			_, err := s.Post(ctx, unavailAuthor2, "while the database is down")
			return err
		}},
		{"Follow", func(ctx context.Context) error { return s.Follow(ctx, unavailAuthor2, unavailAuthor) }},
		{"Unfollow", func(ctx context.Context) error { return s.Unfollow(ctx, unavailReader, unavailAuthor2) }},
		{"Timeline (newest page)", func(ctx context.Context) error {
			_, err := s.Timeline(ctx, unavailReader, timeline.Query{})
			return err
		}},
		{"Timeline (older page)", func(ctx context.Context) error {
			_, err := s.Timeline(ctx, unavailReader, timeline.Query{Limit: 1, Before: d.older})
			return err
		}},
		{"Timeline (newer page)", func(ctx context.Context) error {
			_, err := s.Timeline(ctx, unavailReader, timeline.Query{After: timeline.IDCursor(d.first)})
			return err
		}},
		{"AuthorTimeline", func(ctx context.Context) error {
			_, err := s.AuthorTimeline(ctx, unavailAuthor, timeline.Query{})
			return err
		}},
		{"Message", func(ctx context.Context) error {
			_, err := s.Message(ctx, d.first)
			return err
		}},
		{"Followees", func(ctx context.Context) error {
			_, err := s.Followees(ctx, unavailReader, timeline.FollowQuery{})
			return err
		}},
		{"Followers", func(ctx context.Context) error {
			_, err := s.Followers(ctx, unavailAuthor, timeline.FollowQuery{})
			return err
		}},
		{"Follows", func(ctx context.Context) error {
			_, err := s.Follows(ctx, unavailReader, unavailAuthor)
			return err
		}},
		{"Delete", func(ctx context.Context) error { return s.Delete(ctx, unavailAuthor, d.doomed) }},
	}
}
