// Package reconcile finds and repairs drift between a design's derived
// views and the record they are derived from.
//
// The record is the follows and messages tables: what users follow and
// what they posted (a deleted message is gone from it). Every design but
// pure pull keeps views derived from it beside it: mailboxes, floors and
// entry counts, active-reader flags, fan-out queues, pulled authors and
// edges, lists and indexes in memcached, feeds in Redis. Their write paths
// keep them right; a restored backup, two versions of a service writing
// side by side, a lost cache or a bug can leave them wrong, and nothing
// on the request path notices.
//
// A design declares how its views are checked beside its model: a
// Checker, which the registry carries (registry.Model.Reconcile). This
// package knows no design. Run walks the users a Checker names in bounded
// batches, at a bounded rate of rows read, asks the Checker to compare
// each batch's views with what the design's rule says they must hold,
// and, when asked to, to repair what differs; it counts drift by kind and
// view, and reports progress as it goes, so that a run stopped part way
// can be resumed after the last user it finished (Options.From).
//
// # What a Checker must guarantee
//
//   - Check compares a batch in one consistent snapshot of the record and
//     the views (one read-only transaction where both are in one
//     database), so that writes committed while it runs are never
//     mistaken for drift; where no snapshot spans them (views in memcached
//     or Redis, tables on a sharded keyspace), it reports only what two
//     looks a while apart found alike (Looks).
//   - Repair is idempotent: it re-reads each item it is given under the
//     locks the design's writes take, and changes only what is still
//     wrong then. It writes only derived state, never the record, so a
//     repair never removes what a concurrent post or follow has just
//     added: an entry is removed only while the record, locked, says it
//     must not be there, and an entry is added only while the record,
//     locked, says it may be.
//
// Run re-checks a batch it repaired, and repairs again what the re-check
// still finds (a repair of a design's state can reveal drift of the
// entries it governs), at most MaxPasses times.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// Kind is a kind of drift.
type Kind string

const (
	// Missing: the view lacks an entry the design's rule says it must
	// hold (a mailbox row of a followed author's message, a pulled
	// follow of a listed author).
	Missing Kind = "missing"
	// Extra: the view holds an entry of the record that the rule says it
	// must not (a row below a floor, a row of a pulled edge, an edge in
	// both edge tables).
	Extra Kind = "extra"
	// Unfollowed: the view holds an entry of an author the user does not
	// follow.
	Unfollowed Kind = "unfollowed"
	// Deleted: the view holds an entry of a message that no longer
	// exists.
	Deleted Kind = "deleted"
	// WrongState: a floor, count or flag disagrees with the entries it
	// describes.
	WrongState Kind = "wrong-state"
	// Stale: state kept in memcached or Redis differs from the record,
	// or a copy of the record (push@vitess's mailbox rows copy their
	// messages) differs from what it copies.
	Stale Kind = "stale"
)

// Kinds are the kinds of drift, in the order reports list them.
var Kinds = []Kind{Missing, Extra, Unfollowed, Deleted, WrongState, Stale}

// Drift is one entry or value of a view that differs from the rule.
type Drift struct {
	Kind Kind `json:"kind"`
	// View names the view: a table ("mailbox"), a column of one
	// ("mailbox_state.entries"), or a key space ("redis feed").
	View string `json:"view"`
	// User is the user whose view it is.
	User timeline.UserID `json:"user"`
	// Item is the entry: a message id, or an author's id for views of
	// authors (pulled follows, edges); 0 for a value of the user's own.
	Item int64 `json:"item,omitempty"`
	// Have and Want are, for WrongState, the value found and the value
	// the entries give.
	Have int64 `json:"have,omitempty"`
	Want int64 `json:"want,omitempty"`
}

func (d Drift) String() string {
	s := fmt.Sprintf("%s %s of user %d", d.Kind, d.View, d.User)
	if d.Item != 0 {
		s += fmt.Sprintf(" item %d", d.Item)
	}
	if d.Kind == WrongState {
		s += fmt.Sprintf(": have %d, want %d", d.Have, d.Want)
	}
	return s
}

// Key is what identifies a drift, without the values it was found with.
type Key struct {
	Kind Kind
	View string
	User timeline.UserID
	Item int64
}

// Key returns d's key.
func (d Drift) Key() Key { return Key{d.Kind, d.View, d.User, d.Item} }

// Batch is what a check of a batch of users found.
type Batch struct {
	Drift []Drift
	// Rows are the rows and entries the check read: the record's and the
	// views'.
	Rows int64
}

// Checker checks and repairs one store's derived views. A design's
// registration carries the function that makes one from its store
// (registry.Model.Reconcile).
type Checker interface {
	// Users returns up to limit users above after, in ascending order:
	// every user the record or a view names, so that a walk of them
	// visits every view; none when the walk is done.
	Users(ctx context.Context, after timeline.UserID, limit int) ([]timeline.UserID, error)
	// Check compares the views of users with the design's rule, in one
	// consistent snapshot, and returns the drift it found.
	Check(ctx context.Context, users []timeline.UserID) (Batch, error)
	// Repair fixes the drift of one user that Check found, re-reading
	// each item under locks first, and returns how many entries or
	// values it changed. Repairing drift that is gone changes nothing.
	Repair(ctx context.Context, user timeline.UserID, drift []Drift) (int, error)
}

// Defaults and bounds of Options.
const (
	// DefaultBatch is how many users a batch checks unless told.
	DefaultBatch = 50
	// MaxBatch bounds Options.Batch.
	MaxBatch = 10000
	// DefaultRate is how many rows a second a run reads at most unless
	// told: the pace that added little to the p99 of live traffic in the
	// measured runs on MariaDB. On Vitess, where every row read costs
	// vtgate and a tablet too, it did add some (see DefaultVitessRate).
	DefaultRate = 20000
	// DefaultVitessRate is the rows a second a run on Vitess reads at most
	// unless told (registry.Model.ReconcileRate; Options.Rate's default
	// is DefaultRate, whatever the checker): beside a closed loop of
	// push@vitess's pages and posts on two shards, a check at
	// DefaultRate cost the traffic 0.77x to 0.89x its operations a
	// second and up to 1.67x its p99, and one at 5,000 nothing
	// measurable (docs/reconcile.md, evidence/reconcile-vitess).
	DefaultVitessRate = 5000
	// DefaultKeep is how many drift items a report lists unless told.
	DefaultKeep = 1000
	// MaxPasses bounds how many times a repaired batch is re-checked and
	// repaired again.
	MaxPasses = 3
	// DefaultTimeout bounds each call to a Checker unless told: far
	// more than a batch takes on a server that answers, so that only a
	// server that hangs reaches it.
	DefaultTimeout = time.Minute
)

// ErrTimeout is what Run's error matches when a call to the Checker (a
// list of users, a check or a repair) did not finish within
// Options.Timeout: a server that hangs. The report says where to resume.
var ErrTimeout = errors.New("no answer in time")

// ErrBadOption is what a malformed Options matches.
var ErrBadOption = errors.New("bad reconcile option")

// Options say how Run walks.
type Options struct {
	// Batch is how many users one check reads; 0 means DefaultBatch.
	Batch int
	// Rate is how many rows a second the walk reads at most, averaged
	// from its start: Run waits between batches to keep below it. 0 means
	// DefaultRate; math.Inf(1) means no limit.
	Rate float64
	// Repair: fix the drift found, and re-check what was fixed.
	Repair bool
	// Keep is how many drift items the report lists (the counts have
	// them all); 0 means DefaultKeep, -1 none.
	Keep int
	// From continues an earlier run, stopped part way: the walk starts
	// after its Last user and adds to its counts. nil starts afresh.
	From *Report
	// Timeout bounds each call to the Checker: a list of users, a check
	// or a repair of one user. One that takes longer is abandoned (its
	// transaction rolls back) and Run returns an error matching
	// ErrTimeout. 0 means DefaultTimeout.
	Timeout time.Duration
	// Progress, if set, is called after every batch with the report so
	// far (a copy the callee may keep), e.g. to print progress or to save
	// the report for a later resume.
	Progress func(Report)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends; nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (o *Options) check() error {
	switch {
	case o.Batch < 0 || o.Batch > MaxBatch:
		return fmt.Errorf("%w: batch %d: want 1 to %d users (0: %d)", ErrBadOption, o.Batch, MaxBatch, DefaultBatch)
	case math.IsNaN(o.Rate) || o.Rate < 0:
		return fmt.Errorf("%w: rate %v: want rows a second above 0 (0: %d, +Inf: no limit)", ErrBadOption, o.Rate, DefaultRate)
	case o.Timeout < 0:
		return fmt.Errorf("%w: timeout %v: want a duration above 0 (0: %v)", ErrBadOption, o.Timeout, DefaultTimeout)
	case o.Keep < -1:
		return fmt.Errorf("%w: keep %d: want drift items to list, -1 for none", ErrBadOption, o.Keep)
	case o.From != nil && o.From.Complete:
		return fmt.Errorf("%w: the run to resume is complete", ErrBadOption)
	case o.From != nil && o.From.Repair != o.Repair:
		return fmt.Errorf("%w: the run to resume was a %s, this is a %s", ErrBadOption, mode(o.From.Repair), mode(o.Repair))
	}
	if o.Batch == 0 {
		o.Batch = DefaultBatch
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.Keep == 0 {
		o.Keep = DefaultKeep
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	return nil
}

func mode(repair bool) string {
	if repair {
		return "repair"
	}
	return "check"
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Count is the drift of one kind in one view.
type Count struct {
	Kind Kind   `json:"kind"`
	View string `json:"view"`
	// Found is how many items the walk's checks found: each batch's,
	// and what its re-checks after a repair found besides.
	Found int64 `json:"found"`
	// Left is how many the last check of each batch still found: after a
	// repair, what it could not fix; without one, Found.
	Left int64 `json:"left"`
}

// Report is what a run found and did. It is the JSON the command line
// writes, and what a later run resumes from.
type Report struct {
	Model  string `json:"model,omitempty"`
	Repair bool   `json:"repair"`
	// Rate is the limit the run kept to, rows a second (0: none).
	Rate    float64   `json:"rate"`
	Batch   int       `json:"batch"`
	Started time.Time `json:"started"`
	// Seconds is how long the walk ran, over all its resumed parts.
	Seconds float64 `json:"seconds"`
	// Users and Rows are the users walked and the rows their checks read
	// (re-checks of repaired batches included).
	Users int64 `json:"users"`
	Rows  int64 `json:"rows"`
	// RowsPerSecond is Rows over Seconds.
	RowsPerSecond float64 `json:"rows_per_second"`
	// Repaired is how many entries and values the repairs changed.
	Repaired int64 `json:"repaired"`
	// Counts are the drift found, by kind and view.
	Counts []Count `json:"counts"`
	// Drift lists the first items found (Options.Keep).
	Drift []Drift `json:"drift"`
	// Truncated: more items were found than Drift lists.
	Truncated bool `json:"truncated,omitempty"`
	// Last is the last user whose batch finished: a resumed run starts
	// after it.
	Last timeline.UserID `json:"last_user"`
	// Complete: the walk reached the last user.
	Complete bool `json:"complete"`
}

// Found is the total drift found, and Left what remains of it.
func (r Report) Found() (found, left int64) {
	for _, c := range r.Counts {
		found += c.Found
		left += c.Left
	}
	return found, left
}

func (r *Report) clone() Report {
	c := *r
	c.Counts = slices.Clone(r.Counts)
	c.Drift = slices.Clone(r.Drift)
	return c
}

func (r *Report) count(drift []Drift, found bool) {
	for _, d := range drift {
		i := slices.IndexFunc(r.Counts, func(c Count) bool { return c.Kind == d.Kind && c.View == d.View })
		if i < 0 {
			r.Counts = append(r.Counts, Count{Kind: d.Kind, View: d.View})
			i = len(r.Counts) - 1
		}
		if found {
			r.Counts[i].Found++
		} else {
			r.Counts[i].Left++
		}
	}
	slices.SortFunc(r.Counts, func(a, b Count) int {
		if c := slices.Index(Kinds, a.Kind) - slices.Index(Kinds, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.View, b.View)
	})
}

// found counts the drift not seen before in this batch and lists it.
func (r *Report) found(drift []Drift, seen map[Key]bool, keep int) {
	var fresh []Drift
	for _, d := range drift {
		if !seen[d.Key()] {
			seen[d.Key()] = true
			fresh = append(fresh, d)
		}
	}
	r.count(fresh, true)
	for _, d := range fresh {
		if keep >= 0 && len(r.Drift) < keep {
			r.Drift = append(r.Drift, d)
		} else {
			r.Truncated = true
		}
	}
}

// Run walks c's users in batches, checks each batch and, with
// opts.Repair, repairs it, and returns the report. It stops at the first
// error or when ctx ends; the report then holds the batches finished (and
// the rows read and entries repaired of the one that failed), and a run
// From it walks the failed batch again.
func Run(ctx context.Context, c Checker, opts Options) (Report, error) {
	if err := opts.check(); err != nil {
		return Report{}, err
	}
	var r Report
	if opts.From != nil {
		r = opts.From.clone()
	} else {
		r = Report{Repair: opts.Repair, Started: opts.Now().UTC()}
	}
	r.Batch = opts.Batch
	r.Rate = opts.Rate
	if math.IsInf(opts.Rate, 1) {
		r.Rate = 0
	}
	start, before := opts.Now(), r.Seconds
	var rowsHere int64 // rows read by this part of the walk, for the rate
	elapsed := func() time.Duration { return opts.Now().Sub(start) }
	c = bounded{c, opts.Timeout}
	for {
		users, err := c.Users(ctx, r.Last, opts.Batch)
		if err != nil {
			return r, fmt.Errorf("reconcile: users after %d: %w", r.Last, err)
		}
		if len(users) == 0 {
			r.Complete = true
			break
		}
		// A batch that fails is walked again by a run resumed after
		// r.Last, which finds its drift again: what this part found of it
		// is taken back. What its repairs changed stays in Repaired, and
		// its rows read in Rows.
		counts, drift, truncated := slices.Clone(r.Counts), slices.Clone(r.Drift), r.Truncated
		fail := func(err error) (Report, error) {
			r.Counts, r.Drift, r.Truncated = counts, drift, truncated
			r.Seconds = before + elapsed().Seconds()
			return r, err
		}
		b, err := c.Check(ctx, users)
		if err != nil {
			return fail(fmt.Errorf("reconcile: check users %d to %d: %w", users[0], users[len(users)-1], err))
		}
		rowsHere += b.Rows
		r.Rows += b.Rows
		seen := map[Key]bool{}
		r.found(b.Drift, seen, opts.Keep)
		left := b.Drift
		for pass := 0; opts.Repair && len(left) > 0 && pass < MaxPasses; pass++ {
			n, err := repair(ctx, c, left)
			r.Repaired += int64(n)
			if err != nil {
				return fail(err)
			}
			again, err := c.Check(ctx, usersOf(left))
			if err != nil {
				return fail(fmt.Errorf("reconcile: re-check: %w", err))
			}
			rowsHere += again.Rows
			r.Rows += again.Rows
			// Drift a repair revealed (of another user, or governed by
			// the state it fixed) is drift found.
			r.found(again.Drift, seen, opts.Keep)
			left = again.Drift
		}
		r.count(left, false)
		r.Users += int64(len(users))
		r.Last = users[len(users)-1]
		r.Seconds = before + elapsed().Seconds()
		if r.Seconds > 0 {
			r.RowsPerSecond = float64(r.Rows) / r.Seconds
		}
		if opts.Progress != nil {
			opts.Progress(r.clone())
		}
		if !math.IsInf(opts.Rate, 1) {
			due := time.Duration(float64(rowsHere) / opts.Rate * float64(time.Second))
			if wait := due - elapsed(); wait > 0 {
				if err := opts.Sleep(ctx, wait); err != nil {
					return r, err
				}
			}
		}
	}
	r.Seconds = before + elapsed().Seconds()
	if r.Seconds > 0 {
		r.RowsPerSecond = float64(r.Rows) / r.Seconds
	}
	return r, nil
}

// repair hands each user's drift to c.Repair, in the order of users.
func repair(ctx context.Context, c Checker, drift []Drift) (int, error) {
	total := 0
	for _, u := range usersOf(drift) {
		var mine []Drift
		for _, d := range drift {
			if d.User == u {
				mine = append(mine, d)
			}
		}
		n, err := c.Repair(ctx, u, mine)
		total += n
		if err != nil {
			return total, fmt.Errorf("reconcile: repair user %d: %w", u, err)
		}
	}
	return total, nil
}

// usersOf returns the users drift names, ascending, once each.
func usersOf(drift []Drift) []timeline.UserID {
	var us []timeline.UserID
	for _, d := range drift {
		us = append(us, d.User)
	}
	slices.Sort(us)
	return slices.Compact(us)
}

// bounded is a Checker whose every call ends within timeout: one that
// does not returns an error matching ErrTimeout (and the context's).
type bounded struct {
	c       Checker
	timeout time.Duration
}

// call runs f under the timeout, and names a timeout that was its own.
func (b bounded) call(ctx context.Context, f func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	err := f(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: nothing within %v: %w", ErrTimeout, b.timeout, err)
	}
	return err
}

func (b bounded) Users(ctx context.Context, after timeline.UserID, limit int) (us []timeline.UserID, err error) {
	err = b.call(ctx, func(ctx context.Context) error {
		us, err = b.c.Users(ctx, after, limit)
		return err
	})
	return us, err
}

func (b bounded) Check(ctx context.Context, users []timeline.UserID) (batch Batch, err error) {
	err = b.call(ctx, func(ctx context.Context) error {
		batch, err = b.c.Check(ctx, users)
		return err
	})
	return batch, err
}

func (b bounded) Repair(ctx context.Context, user timeline.UserID, drift []Drift) (n int, err error) {
	err = b.call(ctx, func(ctx context.Context) error {
		n, err = b.c.Repair(ctx, user, drift)
		return err
	})
	return n, err
}
