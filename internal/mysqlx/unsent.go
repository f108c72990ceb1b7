package mysqlx

import (
	"context"
	"errors"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// Unsent reports whether err, a write's error, proves that the write
// changed nothing in the database: its input was refused
// (timeline.ErrInvalidInput). Any other error leaves the outcome unknown
// to the store: a statement canceled, timed out or cut off may still
// commit on the server. (A refused connection changed nothing either, but
// it means the database is down: a store that keeps state beside it
// repairs as for an unknown outcome, which then falls back to its fence,
// so that its reads report the database down rather than serve that
// state meanwhile.) A write whose context had ended before it started
// sends nothing either; the caller knows that by looking before it
// starts (Unstarted).
func Unsent(err error) bool {
	return errors.Is(err, timeline.ErrInvalidInput)
}

// Detached returns a context that keeps ctx's values but not its
// cancellation, and ends at ctx's deadline or d from now, whichever is
// later: for the work a write owes once its statement may have committed
// (reading whom it reached, repairing state kept beside the database),
// which its caller's cancellation must not cut off, and which must not
// wait without bound either, nor much past the caller's deadline (a
// server frozen past it is frozen for the repair too).
func Detached(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(d)
	if dl, ok := ctx.Deadline(); ok && dl.After(deadline) {
		deadline = dl
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

// Unstarted returns the error of a write that sends nothing: invalid,
// its input's, or else its context's if that has ended already. A write
// that fails with it changed nothing.
func Unstarted(ctx context.Context, invalid error) error {
	if invalid != nil {
		return invalid
	}
	return ctx.Err()
}
