package reconcile_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// views is a checker over a view held in memory: each user has entries,
// and the rule says which they must have.
type views struct {
	want, have map[timeline.UserID][]int64
	rows       int64 // rows a check of one user reads
	checks     [][]timeline.UserID
	failAfter  int // Check fails once this many checks ran (0: never)
	hangAfter  int // Check waits for its context once this many checks ran (0: never)
	repairErr  error
}

func (v *views) Users(_ context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error) {
	var us []timeline.UserID
	for u := range v.want {
		if u > after {
			us = append(us, u)
		}
	}
	slices.Sort(us)
	return us[:min(limit, len(us))], nil
}

func (v *views) Check(ctx context.Context, users []timeline.UserID) (reconcile.Batch, error) {
	if v.failAfter > 0 && len(v.checks) >= v.failAfter {
		return reconcile.Batch{}, errors.New("server gone")
	}
	if v.hangAfter > 0 && len(v.checks) >= v.hangAfter {
		<-ctx.Done() // a server that does not answer
		return reconcile.Batch{}, ctx.Err()
	}
	v.checks = append(v.checks, users)
	var b reconcile.Batch
	for _, u := range users {
		b.Rows += v.rows
		for _, e := range v.want[u] {
			if !slices.Contains(v.have[u], e) {
				b.Drift = append(b.Drift, reconcile.Drift{Kind: reconcile.Missing, View: "list", User: u, Item: e})
			}
		}
		for _, e := range v.have[u] {
			if !slices.Contains(v.want[u], e) {
				b.Drift = append(b.Drift, reconcile.Drift{Kind: reconcile.Extra, View: "list", User: u, Item: e})
			}
		}
	}
	return b, nil
}

func (v *views) Repair(_ context.Context, u timeline.UserID, drift []reconcile.Drift) (int, error) {
	if v.repairErr != nil {
		return 0, v.repairErr
	}
	n := 0
	for _, d := range drift {
		if d.User != u {
			return n, errors.New("drift of another user")
		}
		switch i := slices.Index(v.have[u], d.Item); {
		case d.Kind == reconcile.Missing && i < 0 && slices.Contains(v.want[u], d.Item):
			v.have[u] = append(v.have[u], d.Item)
			n++
		case d.Kind == reconcile.Extra && i >= 0 && !slices.Contains(v.want[u], d.Item):
			v.have[u] = slices.Delete(v.have[u], i, i+1)
			n++
		}
	}
	return n, nil
}

// newViews has users 1..n, each wanting entries 1..3 and having them,
// except user 2 (lacks 3) and user 5 (has 9 besides).
func newViews(n int) *views {
	v := &views{want: map[timeline.UserID][]int64{}, have: map[timeline.UserID][]int64{}, rows: 10}
	for u := timeline.UserID(1); u <= timeline.UserID(n); u++ {
		v.want[u] = []int64{1, 2, 3}
		v.have[u] = []int64{1, 2, 3}
	}
	v.have[2] = []int64{1, 2}
	v.have[5] = []int64{1, 2, 3, 9}
	return v
}

// clock is a test clock that moves only when the walk sleeps.
type clock struct {
	now    time.Time
	slept  []time.Duration
	cancel func() // called at the first sleep, if set
}

func (c *clock) opts(o reconcile.Options) reconcile.Options {
	o.Now = func() time.Time { return c.now }
	o.Sleep = func(ctx context.Context, d time.Duration) error {
		c.slept = append(c.slept, d)
		c.now = c.now.Add(d)
		if c.cancel != nil {
			c.cancel()
			return context.Canceled
		}
		return nil
	}
	return o
}

func TestRunChecksInBatches(t *testing.T) {
	v := newViews(7)
	c := &clock{now: time.Unix(1000, 0)}
	r, err := reconcile.Run(context.Background(), v, c.opts(reconcile.Options{Batch: 3, Rate: math.Inf(1)}))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(v.checks); got != 3 || !slices.Equal(v.checks[2], []timeline.UserID{7}) {
		t.Errorf("checks %v, want batches of 3: 1-3, 4-6, 7", v.checks)
	}
	if !r.Complete || r.Users != 7 || r.Rows != 70 || r.Last != 7 || r.Repaired != 0 {
		t.Errorf("report %+v", r)
	}
	found, left := r.Found()
	if found != 2 || left != 2 || len(r.Drift) != 2 {
		t.Errorf("found %d, left %d, listed %v; want the 2 made, none fixed", found, left, r.Drift)
	}
	if len(c.slept) != 0 {
		t.Errorf("slept %v with no rate limit", c.slept)
	}
	if len(v.have[2]) != 2 {
		t.Error("a check changed the view")
	}
}

func TestRunRepairsAndRechecks(t *testing.T) {
	v := newViews(7)
	r, err := reconcile.Run(context.Background(), v, reconcile.Options{Batch: 3, Rate: math.Inf(1), Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	found, left := r.Found()
	if found != 2 || left != 0 || r.Repaired != 2 {
		t.Errorf("found %d, left %d, repaired %d; want 2, 0, 2", found, left, r.Repaired)
	}
	// The batches with drift were checked again: 1-3, [2], 4-6, [5], 7.
	if len(v.checks) != 5 || !slices.Equal(v.checks[1], []timeline.UserID{2}) {
		t.Errorf("checks %v", v.checks)
	}
	again, err := reconcile.Run(context.Background(), v, reconcile.Options{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if found, _ := again.Found(); found != 0 || again.Repaired != 0 {
		t.Errorf("a second repair found %d and repaired %d", found, again.Repaired)
	}
}

// TestRunKeepsToItsRate: 10 rows a user, 2 users a batch, 40 rows a
// second: each batch is due half a second after the one before.
func TestRunKeepsToItsRate(t *testing.T) {
	v := newViews(6)
	c := &clock{now: time.Unix(1000, 0)}
	r, err := reconcile.Run(context.Background(), v, c.opts(reconcile.Options{Batch: 2, Rate: 40}))
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}
	if !slices.Equal(c.slept, want) {
		t.Errorf("slept %v, want %v", c.slept, want)
	}
	if r.Seconds != 1.5 || r.RowsPerSecond != 40 || r.Rate != 40 {
		t.Errorf("report %+v", r)
	}
}

// TestRunResumes: a walk stopped after its first batch, resumed from its
// report, ends with the counts of a walk never stopped.
func TestRunResumes(t *testing.T) {
	whole, err := reconcile.Run(context.Background(), newViews(7), reconcile.Options{Batch: 3, Rate: math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	v := newViews(7)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &clock{now: time.Unix(1000, 0), cancel: cancel}
	stopped, err := reconcile.Run(ctx, v, c.opts(reconcile.Options{Batch: 3, Rate: 1}))
	if !errors.Is(err, context.Canceled) || stopped.Complete || stopped.Last != 3 || stopped.Users != 3 {
		t.Fatalf("stopped run: %v, %+v", err, stopped)
	}
	resumed, err := reconcile.Run(context.Background(), v, reconcile.Options{Batch: 3, Rate: math.Inf(1), From: &stopped})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.checks[1], []timeline.UserID{4, 5, 6}) {
		t.Errorf("the resumed walk checked %v first, want 4-6", v.checks[1])
	}
	if resumed.Users != whole.Users || resumed.Rows != whole.Rows || !slices.Equal(resumed.Counts, whole.Counts) || !resumed.Complete {
		t.Errorf("resumed %+v\nwhole %+v", resumed, whole)
	}
	if _, err := reconcile.Run(context.Background(), v, reconcile.Options{From: &resumed}); !errors.Is(err, reconcile.ErrBadOption) {
		t.Errorf("resuming a complete run: %v", err)
	}
	if _, err := reconcile.Run(context.Background(), v, reconcile.Options{From: &stopped, Repair: true}); !errors.Is(err, reconcile.ErrBadOption) {
		t.Errorf("resuming a check as a repair: %v", err)
	}
}

func TestRunStopsAtAnError(t *testing.T) {
	v := newViews(7)
	v.failAfter = 1
	r, err := reconcile.Run(context.Background(), v, reconcile.Options{Batch: 3, Rate: math.Inf(1)})
	if err == nil || !strings.Contains(err.Error(), "server gone") || r.Last != 3 || r.Complete {
		t.Errorf("%v, %+v", err, r)
	}
}

// TestRunBoundsEachCall: a check that hangs ends the walk after
// Options.Timeout with an error matching ErrTimeout, and a run resumed
// from the report checks the batch that hung and ends as a walk never
// stopped.
func TestRunBoundsEachCall(t *testing.T) {
	whole, err := reconcile.Run(context.Background(), newViews(7), reconcile.Options{Batch: 3, Rate: math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	v := newViews(7)
	v.hangAfter = 1
	r, err := reconcile.Run(context.Background(), v, reconcile.Options{Batch: 3, Rate: math.Inf(1), Timeout: 20 * time.Millisecond})
	if !errors.Is(err, reconcile.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || r.Last != 3 || r.Complete {
		t.Fatalf("%v, %+v; want a timeout after users 1-3", err, r)
	}
	if !strings.Contains(err.Error(), "check users 4 to 6") {
		t.Errorf("the error does not name the batch: %v", err)
	}
	v.hangAfter = 0
	resumed, err := reconcile.Run(context.Background(), v, reconcile.Options{Batch: 3, Rate: math.Inf(1), From: &r})
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Users != whole.Users || !slices.Equal(resumed.Counts, whole.Counts) || !resumed.Complete {
		t.Errorf("resumed %+v\nwhole %+v", resumed, whole)
	}
}

// TestRunFailedBatchIsWalkedAgain: a repair that fails leaves a report
// without its batch's drift, so that a run resumed from it, which checks
// that batch again, counts each item once.
func TestRunFailedBatchIsWalkedAgain(t *testing.T) {
	v := newViews(7)
	v.repairErr = errors.New("server gone")
	r, err := reconcile.Run(context.Background(), v, reconcile.Options{Batch: 3, Rate: math.Inf(1), Repair: true})
	if err == nil || r.Last != 0 || r.Complete || r.Rows != 30 || len(r.Drift) != 0 {
		t.Fatalf("%v, %+v; want an error, no batch finished, its 30 rows read, no drift kept", err, r)
	}
	if found, _ := r.Found(); found != 0 {
		t.Errorf("the failed batch's drift is counted: %+v", r.Counts)
	}
	v.repairErr = nil
	resumed, err := reconcile.Run(context.Background(), v, reconcile.Options{Batch: 3, Rate: math.Inf(1), Repair: true, From: &r})
	if err != nil {
		t.Fatal(err)
	}
	if found, left := resumed.Found(); found != 2 || left != 0 || len(resumed.Drift) != 2 {
		t.Errorf("found %d, left %d, listed %v; want the 2 made, once each", found, left, resumed.Drift)
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []reconcile.Options{
		{Batch: -1}, {Batch: reconcile.MaxBatch + 1}, {Rate: -1}, {Rate: math.NaN()}, {Keep: -2}, {Timeout: -time.Second},
	} {
		v := newViews(3)
		if _, err := reconcile.Run(context.Background(), v, o); !errors.Is(err, reconcile.ErrBadOption) || len(v.checks) != 0 {
			t.Errorf("%+v: %v after %d checks", o, err, len(v.checks))
		}
	}
}

func TestKeepBoundsTheList(t *testing.T) {
	r, err := reconcile.Run(context.Background(), newViews(7), reconcile.Options{Keep: 1})
	if err != nil {
		t.Fatal(err)
	}
	if found, _ := r.Found(); found != 2 || len(r.Drift) != 1 || !r.Truncated {
		t.Errorf("found %d, listed %d, truncated %v", found, len(r.Drift), r.Truncated)
	}
}

func TestWriteTable(t *testing.T) {
	r, err := reconcile.Run(context.Background(), newViews(7), reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Model = "m"
	var b strings.Builder
	if err := reconcile.WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"check m: complete; 7 users, 70 rows", "missing  list      1     1", "extra  list      1     1", "total", "2     2"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
