package all_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/sandbox"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// faultAt is a Checker that makes a fault once, at the first check or
// repair (at) after it is armed; or, with stmt set, in the middle of the
// first repair after it is armed that runs nth statements beginning with
// stmt, just before the nth runs (the statements before it in the
// repair's transaction have run, uncommitted).
type faultAt struct {
	reconcile.Checker
	at    string // "check" or "repair"
	stmt  string
	nth   int
	fault func()
	armed atomic.Bool
	once  sync.Once
}

func (f *faultAt) trip(at string) {
	if f.at == at && f.stmt == "" && f.armed.Load() {
		f.once.Do(f.fault)
	}
}

func (f *faultAt) Check(ctx context.Context, users []timeline.UserID) (reconcile.Batch, error) {
	f.trip("check")
	return f.Checker.Check(ctx, users)
}

func (f *faultAt) Repair(ctx context.Context, user timeline.UserID, drift []reconcile.Drift) (int, error) {
	f.trip("repair")
	if f.at == "repair" && f.stmt != "" && f.armed.Load() {
		var seen atomic.Int32
		ctx = mysqlx.WithObserver(ctx, func(query string, _ []any) {
			if strings.HasPrefix(strings.TrimSpace(query), f.stmt) && int(seen.Add(1)) == f.nth {
				f.once.Do(f.fault)
			}
		})
	}
	return f.Checker.Repair(ctx, user, drift)
}

// ackTraffic posts as the authors 100 and 101, whom readers 2 and 4
// follow, and has 102 follow and unfollow readers 7 to 9, each call
// bounded by a deadline, until stopped; it keeps the posts acknowledged.
type ackTraffic struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  []timeline.Message
	calls  atomic.Int64
}

var (
	ackAuthors  = []timeline.UserID{100, 101}
	ackReaders  = []timeline.UserID{2, 4}
	ackFollower = timeline.UserID(102)
)

func startAckTraffic(s timeline.Store) *ackTraffic {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &ackTraffic{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(tr.done)
		for i := 0; ctx.Err() == nil; i++ {
			cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
			switch i % 3 {
			case 0, 1:
				a := ackAuthors[i%2]
				if m, err := s.Post(cctx, a, fmt.Sprintf("acked %d", i)); err == nil {
					tr.mu.Lock()
					tr.acked = append(tr.acked, m)
					tr.mu.Unlock()
				}
			case 2:
				u := timeline.UserID(7 + i%3)
				if i%2 == 0 {
					s.Follow(cctx, ackFollower, u)
				} else {
					s.Unfollow(cctx, ackFollower, u)
				}
			}
			ccancel()
			tr.calls.Add(1)
		}
	}()
	return tr
}

func (tr *ackTraffic) stop() []timeline.Message {
	tr.cancel()
	<-tr.done
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.acked)
}

// TestReconcileFaults runs reconcile's repair while posts and follows go
// on, and makes a server fail in the middle of the walk: MariaDB frozen
// or killed as a mailbox repair starts, memcached frozen as a check of
// pull-active's lists and indexes starts, Redis frozen as a check of
// push-redis's feeds starts. Each case must pass runFault (a kill -9 of
// the durable test MariaDB loses no acknowledged post).
func TestReconcileFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test: -short")
	}
	sb := testserver.StartFaultSandbox(t, 1, true)
	thaw := func(p *sandbox.Proc) func() error { return p.Thaw }
	restart := func(p *sandbox.Proc) func() error {
		return func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			return p.Restart(ctx)
		}
	}
	for i, tc := range []struct {
		name, model string
		at          string
		server      *sandbox.Proc
		fault       func(*sandbox.Proc) error
		heal        func(*sandbox.Proc) func() error
		// timeout: the error is reconcile's own timeout (MariaDB's
		// client has no deadline of its own); names: it names the server.
		timeout bool
		names   string
		corrupt bool
	}{
		{"MariaDB frozen", push.ModelName, "repair", sb.MariaDB(), (*sandbox.Proc).Freeze, thaw, true, "", true},
		{"MariaDB killed", push.ModelName, "repair", sb.MariaDB(), (*sandbox.Proc).Kill, restart, false, "MySQL at unix " + sb.Socket, true},
		{"memcached frozen", "pull-active", "check", sb.Memcached(0), (*sandbox.Proc).Freeze, thaw, false, "memcached " + sb.MemcacheAddrs[0], false},
		{"Redis frozen", "push-redis", "check", sb.Redis(), (*sandbox.Proc).Freeze, thaw, false, "Redis " + sb.RedisAddr, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := registry.Config{DSN: sb.DSN, Database: fmt.Sprintf("reconcile_fault_%d", i), MaxConns: 8,
				Memcache: sb.MemcacheAddrs, Redis: sb.RedisAddr, Namespace: fmt.Sprintf("rf%d/", i)}
			m, err := registry.Lookup(tc.model)
			if err != nil {
				t.Fatal(err)
			}
			if m.Needs&registry.Memcached == 0 {
				cfg.Memcache = nil
			}
			if m.Needs&registry.Redis == 0 {
				cfg.Redis = ""
			}
			s, c := reconciletest.Open(t, tc.model, cfg)
			w := faultWorld(t, s)
			var want []reconcile.Drift
			if tc.corrupt {
				want = reconciletest.MailboxDrift(t, s, s.(timeline.DBHolder).DB(), w, push.MailboxView)
			}
			runFault(t, s, c, w, want, fault{
				at: tc.at, fault: func() error { return tc.fault(tc.server) }, heal: tc.heal(tc.server),
				timeout: tc.timeout, names: tc.names, wait: 3 * time.Second,
			})
		})
	}
}

// faultWorld builds reconciletest's world through s, and has the readers
// of the acknowledged traffic follow its authors.
func faultWorld(t *testing.T, s timeline.Store) reconciletest.World {
	w := reconciletest.Build(t, s)
	for _, u := range ackReaders {
		for _, a := range ackAuthors {
			timelinetest.Follow(t, s, u, a)
		}
	}
	return w
}

// fault is a fault runFault makes.
type fault struct {
	at          string // "check" or "repair": the call it is made in
	stmt        string // if set, at the nth statement beginning with stmt of the repair (see faultAt)
	nth         int
	fault, heal func() error
	// timeout: the run's error matches reconcile.ErrTimeout; names: it
	// contains names.
	timeout bool
	names   string
	wait    time.Duration // Options.Timeout
	// stopped, if set, runs once the run has stopped and the server is
	// back, before the run is resumed.
	stopped func(t *testing.T)
}

// ofTraffic reports whether d can be what ackTraffic left half written
// in world w when a fault cut one of its calls short: an entry of its
// follower 102, whose follows it makes, or a mailbox entry of one of its
// readers for a message that is not the world's and was not acknowledged
// (a post acknowledged must be whole).
func ofTraffic(d reconcile.Drift, w reconciletest.World, acked []timeline.Message) bool {
	if d.User == ackFollower {
		return true
	}
	if d.View != push.MailboxView || !slices.Contains(ackReaders, d.User) {
		return false
	}
	id := timeline.MessageID(d.Item)
	for _, posts := range w.Posts {
		if slices.Contains(posts, id) {
			return false
		}
	}
	return !slices.ContainsFunc(acked, func(m timeline.Message) bool { return m.ID == id })
}

// runFault runs reconcile's repair of c while posts and follows go on
// through s, and makes f's fault after the walk's first batch. The run
// must stop with an error (f.timeout: one matching reconcile.ErrTimeout,
// after f.wait) naming f.names, and hold the last batch it finished; once
// the server is healed, a run resumed from that report completes, finds
// want (the drift made in world w) exactly once, beside at most what the
// traffic's calls cut short left (ofTraffic), and leaves none. Then a
// check finds no drift, every post acknowledged to the traffic is in its
// author's followers' timelines, and every timeline is the record's: no
// repair was wrong.
func runFault(t *testing.T, s timeline.Store, c reconcile.Checker, w reconciletest.World, want []reconcile.Drift, f fault) {
	ctx := context.Background()
	tr := startAckTraffic(s)
	defer tr.stop()

	faulty := &faultAt{Checker: c, at: f.at, stmt: f.stmt, nth: f.nth, fault: func() {
		if err := f.fault(); err != nil {
			t.Errorf("fault: %v", err)
		}
	}}
	opts := reconcile.Options{Batch: 3, Rate: math.Inf(1), Repair: true, Timeout: f.wait,
		Progress: func(reconcile.Report) { faulty.armed.Store(true) }}
	r, err := reconcile.Run(ctx, faulty, opts)
	healed := false
	heal := func() {
		if !healed {
			healed = true
			if err := f.heal(); err != nil {
				t.Fatalf("heal: %v", err)
			}
		}
	}
	defer heal()
	if err == nil || r.Complete || r.Last == 0 {
		t.Fatalf("a walk with the fault: %v, %+v; want an error after its first batch", err, r)
	}
	if f.timeout != errors.Is(err, reconcile.ErrTimeout) || !strings.Contains(err.Error(), f.names) {
		t.Errorf("%v (ErrTimeout: %v), want ErrTimeout %v, naming %q", err, errors.Is(err, reconcile.ErrTimeout), f.timeout, f.names)
	}
	t.Logf("stopped after user %d: %v", r.Last, err)
	heal()
	if f.stopped != nil {
		f.stopped(t)
	}

	// Resumed from the report, until the store's clients use the
	// server again.
	opts.Progress = nil
	testserver.Poll(t, 2*time.Minute, "a resumed walk that completes", func() bool {
		opts.From = &r
		next, err := reconcile.Run(ctx, c, opts)
		if err != nil {
			t.Logf("resumed walk: %v", err)
		}
		r = next
		return err == nil
	})
	found, left := r.Found()
	if left != 0 {
		t.Errorf("the resumed repair left drift: %+v", r.Counts)
	}
	acked := tr.stop()
	if len(want) > 0 {
		// Beside the drift made, a walk may find what the traffic left
		// half written when the fault cut one of its calls short (a
		// transaction over several Vitess shards commits shard by
		// shard): that is drift too, found once and repaired. Anything
		// else, or an item found twice, is the walk's mistake.
		traffic := 0
		seen := map[reconcile.Key]bool{}
		for _, d := range r.Drift {
			if seen[d.Key()] {
				t.Errorf("found twice: %v", d)
			}
			seen[d.Key()] = true
			switch {
			case slices.ContainsFunc(want, func(e reconcile.Drift) bool { return e.Key() == d.Key() }):
			case ofTraffic(d, w, acked):
				traffic++
				t.Logf("drift the traffic's cut calls left: %v", d)
			default:
				t.Errorf("drift neither made nor the traffic's: %v", d)
			}
		}
		if r.Truncated || found != int64(len(r.Drift)) || found != int64(len(want)+traffic) {
			t.Errorf("the walk and its resumption found %d drift items (%+v; listed %d, truncated %v), want the %d made and %d of the traffic's",
				found, r.Counts, len(r.Drift), r.Truncated, len(want), traffic)
		}
		for _, d := range want {
			if !seen[d.Key()] {
				t.Errorf("never found: %v", d)
			}
		}
	}
	if tr.calls.Load() == 0 || len(acked) == 0 {
		t.Fatalf("the traffic made %d calls, %d acknowledged posts", tr.calls.Load(), len(acked))
	}
	timelinetest.Settle(t, s)
	check, err := reconcile.Run(ctx, c, reconcile.Options{Rate: math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	if found, _ := check.Found(); found != 0 {
		t.Errorf("drift after the resumed repair: %v", check.Drift)
	}
	for _, u := range ackReaders {
		got := timelinetest.WalkIDs(t, s, u, 50)
		for _, p := range acked {
			if !slices.Contains(got, p.ID) {
				t.Errorf("post %d of %d, acknowledged, is not in the timeline of %d", p.ID, p.Author, u)
			}
		}
	}
	for _, u := range []timeline.UserID{1, 2, 3, 4, 5, 6, 7, 12, 102} {
		if got, want := timelinetest.WalkIDs(t, s, u, 50), reconciletest.RecordTimeline(t, s, u); !slices.Equal(got, want) {
			t.Errorf("timeline of %d:\n got %v\nwant %v (the record's)", u, got, want)
		}
	}
}
