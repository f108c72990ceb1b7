package timeline

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every input error also matches ErrInvalidInput, so a
// caller can tell "your request was wrong" from "the store failed" with one
// errors.Is.
var (
	ErrInvalidInput   = errors.New("invalid input")
	ErrInvalidUser    = errors.New("invalid user id")
	ErrInvalidBody    = errors.New("invalid message body")
	ErrInvalidLimit   = errors.New("invalid page limit")
	ErrInvalidCursor  = errors.New("invalid cursor")
	ErrInvalidMessage = errors.New("invalid message id")
	ErrSelfFollow     = errors.New("a user cannot follow themselves")

	// ErrNotFound means the message asked for does not exist: it never
	// did, it was deleted, or (for Delete) it is another author's.
	ErrNotFound = errors.New("message not found")

	// ErrUnavailable wraps failures to reach a backing server: a store
	// that cannot reach its database (or, when opened, any of its
	// memcached servers) returns an error matching it, from any
	// operation, so that a service can answer 503. The error also wraps
	// the driver's. It never stands for an error the server sent, nor for
	// the end of the caller's context (a frozen server gives the call
	// context.DeadlineExceeded).
	ErrUnavailable = errors.New("server unavailable")
)

// InputError describes one rejected argument. It matches its sentinel (Err)
// and ErrInvalidInput under errors.Is.
type InputError struct {
	Field  string // the argument's name: "author", "follower", "followee", "user", "body", "limit", "cursor", "id"
	Reason string // what is wrong with it, for people
	Err    error  // one of the sentinels above
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%s: %v: %s", e.Field, e.Err, e.Reason)
}

// Unwrap returns the sentinel, so errors.Is(err, ErrInvalidBody) works.
func (e *InputError) Unwrap() error { return e.Err }

// Is makes every InputError match ErrInvalidInput as well as its sentinel.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

func inputError(field string, sentinel error, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// errClosed is returned by the memory store after Close.
var errClosed = errors.New("timeline: store is closed")
