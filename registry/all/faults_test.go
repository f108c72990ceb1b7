package all_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/sandbox"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// The fault test's shape: every model that keeps its data on a server
// runs two store instances (as two application servers would) on one
// database and memcached or Redis namespace, with a reader and a writer
// each, while one of two memcached servers, the Redis and then the
// MariaDB are frozen, thawed, killed (-9) and restarted under them.
const (
	faultReaders  = 4 // users 1..4, each following every author
	faultAuthors  = 6 // users 5..10
	faultDeadline = time.Second
	// faultMargin is how far past its deadline a call may return: a
	// write's invalidation has at least the memcached timeout (200 ms)
	// after the write returns, and one more to replace the fences; the
	// rest is slack for a loaded machine running the race detector.
	faultMargin = 1500 * time.Millisecond
)

// faultLog is what one model's traffic saw.
type faultLog struct {
	model string
	// settles: the store applies posts later (timeline.Settler), so a
	// read right after a post may lack it; only the end is checked.
	settles bool

	mu    sync.Mutex
	acked []ackedPost // posts whose Post returned nil, in ack order

	reads, readsFailedDBUp, readsFailedDBDown atomic.Int64
	stale                                     atomic.Int64
	posts, postsFailed                        atomic.Int64
	slowest                                   atomic.Int64 // nanoseconds, the longest call
	staleNote                                 atomic.Value // string: the first stale page
	failNote                                  atomic.Value // string: the first read that failed with the database up
}

type ackedPost struct {
	id  timeline.MessageID
	ack time.Time
}

func (l *faultLog) took(d time.Duration) {
	for {
		cur := l.slowest.Load()
		if int64(d) <= cur || l.slowest.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// ackedBefore returns the ids of posts acknowledged before t.
func (l *faultLog) ackedBefore(t time.Time) []timeline.MessageID {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []timeline.MessageID
	for _, p := range l.acked {
		if p.ack.Before(t) {
			ids = append(ids, p.id)
		}
	}
	return ids
}

// checkFresh counts page as stale if it lacks a post acknowledged before
// the read began that belongs on it: every reader follows every author, so
// a post belongs on the newest page unless the page is full and its oldest
// message is newer.
func (l *faultLog) checkFresh(user timeline.UserID, page timeline.Page, start time.Time, when string) {
	have := make(map[timeline.MessageID]bool, len(page.Messages))
	for _, m := range page.Messages {
		have[m.ID] = true
	}
	full := len(page.Messages) == timeline.DefaultLimit
	for _, id := range l.ackedBefore(start) {
		if have[id] || (full && id < page.Messages[len(page.Messages)-1].ID) {
			continue
		}
		if l.stale.Add(1) == 1 {
			l.staleNote.Store(fmt.Sprintf("%s: user %d's page %v lacks message %d", when, user, timelinetest.IDs(page.Messages), id))
		}
		return
	}
}

// faultWindow says whether the database is being faulted, so that a read
// failing then is allowed.
type faultWindow struct {
	dbDown atomic.Bool
	phase  atomic.Value // string: the last fault step, for messages
}

func (w *faultWindow) now() string {
	p, _ := w.phase.Load().(string)
	return fmt.Sprintf("after %q", p)
}

// TestFaults: under traffic from two store instances per model, a
// memcached (one of two) is frozen and thawed, killed and restarted; then
// the redis-server is; then the MariaDB is frozen and thawed, killed (-9) and restarted. For every
// model on those servers: no read fails while the database is up, no page
// read after a post was acknowledged lacks it (but for a timeline.Settler,
// which promises its posts once settled), no acknowledged post is lost,
// and every call returns within its deadline plus faultMargin.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test: -short")
	}
	sb := testserver.StartFaultSandbox(t, 2, true)
	ctx := context.Background()
	var models []registry.Model
	for _, m := range registry.Listed() {
		if m.Needs&registry.MariaDB != 0 { // the models on the servers it faults
			models = append(models, m)
		}
	}
	var window faultWindow
	type instance struct {
		s   timeline.Store
		log *faultLog
	}
	var instances []instance
	var logs []*faultLog
	for i, m := range models {
		cfg := registry.Config{DSN: sb.DSN, Database: fmt.Sprintf("fault_%d", i), MaxConns: 8}
		if m.Needs&registry.Memcached != 0 {
			cfg.Memcache = sb.MemcacheAddrs
			cfg.Namespace = fmt.Sprintf("fault%d/", i)
		}
		if m.Needs&registry.Redis != 0 {
			cfg.Redis = sb.RedisAddr
			cfg.Namespace = fmt.Sprintf("fault%d/", i)
		}
		log := &faultLog{model: m.Name}
		logs = append(logs, log)
		for range 2 {
			s, err := registry.OpenModel(ctx, m.Name, cfg)
			if err != nil {
				t.Fatalf("open %s: %v", m.Name, err)
			}
			t.Cleanup(func() { s.Close() })
			_, log.settles = s.(timeline.Settler)
			instances = append(instances, instance{s, log})
		}
		s := instances[len(instances)-1].s
		for u := timeline.UserID(1); u <= faultReaders; u++ {
			for a := timeline.UserID(faultReaders + 1); a <= faultReaders+faultAuthors; a++ {
				timelinetest.Follow(t, s, u, a)
			}
		}
		for a := timeline.UserID(faultReaders + 1); a <= faultReaders+faultAuthors; a++ {
			timelinetest.Post(t, s, a, "before the faults")
		}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, in := range instances {
		wg.Go(func() { // reader
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				user := timeline.UserID(1 + rng.IntN(faultReaders))
				dbDown := window.dbDown.Load()
				c, cancel := context.WithTimeout(ctx, faultDeadline)
				start := time.Now()
				page, err := in.s.Timeline(c, user, timeline.Query{})
				in.log.took(time.Since(start))
				cancel()
				in.log.reads.Add(1)
				switch {
				case err == nil && !in.log.settles:
					in.log.checkFresh(user, page, start, window.now())
				case err == nil:
					// A store that applies posts later promises them
					// only once settled: checked at the end.
				case dbDown || window.dbDown.Load():
					in.log.readsFailedDBDown.Add(1)
				default:
					if in.log.readsFailedDBUp.Add(1) == 1 {
						in.log.failNote.Store(fmt.Sprintf("%s, after %v: %v", window.now(), time.Since(start).Round(time.Millisecond), err))
					}
				}
			}
		})
		wg.Go(func() { // writer
			rng := rand.New(rand.NewPCG(uint64(i), 2))
			n := 0
			for {
				select {
				case <-stop:
					return
				case <-time.After(60 * time.Millisecond):
				}
				n++
				author := timeline.UserID(faultReaders + 1 + rng.IntN(faultAuthors))
				c, cancel := context.WithTimeout(ctx, faultDeadline)
				start := time.Now()
				m, err := in.s.Post(c, author, fmt.Sprintf("post %d of instance %d", n, i))
				in.log.took(time.Since(start))
				cancel()
				in.log.posts.Add(1)
				if err != nil {
					in.log.postsFailed.Add(1)
					continue
				}
				in.log.mu.Lock()
				in.log.acked = append(in.log.acked, ackedPost{m.ID, time.Now()})
				in.log.mu.Unlock()
			}
		})
	}

	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s", what)
		window.phase.Store(what)
	}
	pause := func(d time.Duration) { time.Sleep(d) }
	mc := sb.Memcached(1)
	db := sb.MariaDB()
	pause(500 * time.Millisecond)
	step("memcached 2 frozen", mc.Freeze())
	pause(1200 * time.Millisecond)
	step("memcached 2 thawed", mc.Thaw())
	pause(1500 * time.Millisecond)
	step("memcached 2 killed", mc.Kill())
	pause(1200 * time.Millisecond)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	step("memcached 2 restarted", mc.Restart(rctx))
	pause(1500 * time.Millisecond)
	rd := sb.Redis()
	step("Redis frozen", rd.Freeze())
	pause(1200 * time.Millisecond)
	step("Redis thawed", rd.Thaw())
	pause(1500 * time.Millisecond)
	step("Redis killed", rd.Kill())
	pause(1200 * time.Millisecond)
	step("Redis restarted", rd.Restart(rctx))
	pause(1500 * time.Millisecond)
	window.dbDown.Store(true)
	step("MariaDB frozen", db.Freeze())
	pause(1200 * time.Millisecond)
	step("MariaDB thawed", db.Thaw())
	pause(500 * time.Millisecond)
	step("MariaDB killed", db.Kill())
	pause(500 * time.Millisecond)
	step("MariaDB restarted", db.Restart(rctx))
	pause(1500 * time.Millisecond) // pools find their connections broken
	window.dbDown.Store(false)
	pause(1500 * time.Millisecond)
	close(stop)
	wg.Wait()

	// No acknowledged post lost: every reader's whole timeline has them
	// all, read through either instance (once it has settled: Walk
	// settles a timeline.Settler, within a bounded wait).
	lost := make(map[string]int)
	for i, in := range instances {
		if i%2 == 0 {
			continue
		}
		have := map[timeline.MessageID]bool{}
		for _, m := range timelinetest.Walk(t, in.s, 1, 0) {
			have[m.ID] = true
		}
		for _, id := range in.log.ackedBefore(time.Now()) {
			if !have[id] {
				lost[in.log.model]++
			}
		}
	}

	var report strings.Builder
	fmt.Fprintf(&report, "%-22s %6s %9s %11s %6s %6s %7s %5s %9s\n", "model", "reads", "failed up", "failed down", "stale", "posts", "refused", "lost", "slowest")
	for _, l := range logs {
		fmt.Fprintf(&report, "%-22s %6d %9d %11d %6d %6d %7d %5d %9v\n", l.model, l.reads.Load(), l.readsFailedDBUp.Load(), l.readsFailedDBDown.Load(),
			l.stale.Load(), l.posts.Load(), l.postsFailed.Load(), lost[l.model], time.Duration(l.slowest.Load()).Round(time.Millisecond))
	}
	t.Logf("deadline %v for every call; servers %v\n%s", faultDeadline, describe(sb), report.String())
	for _, l := range logs {
		if n := l.readsFailedDBUp.Load(); n > 0 {
			t.Errorf("%s: %d reads failed while the database was up; the first: %v", l.model, n, l.failNote.Load())
		}
		if n := l.stale.Load(); n > 0 {
			t.Errorf("%s: %d stale pages; the first: %v", l.model, n, l.staleNote.Load())
		}
		if n := lost[l.model]; n > 0 {
			t.Errorf("%s: %d acknowledged posts lost", l.model, n)
		}
		if d := time.Duration(l.slowest.Load()); d > faultDeadline+faultMargin {
			t.Errorf("%s: a call took %v, past its %v deadline by more than %v", l.model, d, faultDeadline, faultMargin)
		}
		if l.reads.Load() == 0 || l.posts.Load() == l.postsFailed.Load() {
			t.Errorf("%s: no traffic got through", l.model)
		}
	}
	if t.Failed() {
		return
	}
	if !slices.ContainsFunc(logs, func(l *faultLog) bool { return l.readsFailedDBDown.Load() > 0 }) {
		t.Errorf("no read failed while the database was frozen or dead: the faults did not happen")
	}
}

func describe(sb *sandbox.Sandbox) string {
	return fmt.Sprintf("MariaDB %s, memcached %v, Redis %s", sb.Socket, sb.MemcacheAddrs, sb.RedisAddr)
}
