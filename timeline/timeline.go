// Package timeline defines the home timeline ("the newest messages of the
// people I follow") as one interface, Store, with its contract written down
// here and enforced by the conformance suite in package timelinetest.
//
// Many designs sit behind the interface, between two ends: the push model
// (package push) fans every message out to its author's followers when it
// is posted, and the pull model (package pull) stores only messages and
// merges the followees' newest messages when a timeline is read; package
// registry lists them all. Memory is the reference implementation that
// every one is checked against. What a store may do beyond Store (settle,
// count its work, ...) is a named ability, in abilities.go.
package timeline

import (
	"context"
	"time"
)

// UserID identifies a user. Valid ids are positive. There is no user
// registry: any positive id may post, follow and read.
type UserID int64

// MessageID identifies a message. Ids are assigned by the Store, are positive,
// and increase with time: a message posted after another one returned has a
// larger id. Timelines are ordered by id, newest (largest) first.
type MessageID int64

// Message is one posted message.
type Message struct {
	ID        MessageID
	Author    UserID
	Body      string
	CreatedAt time.Time
}

// Cursor marks where the next page of a timeline starts. Cursors are opaque:
// callers get them from Page.Next and hand them back in Query.Before. A cursor
// is bound to the user whose timeline produced it and to the store's key; a
// forged, corrupted or foreign cursor is rejected with ErrInvalidCursor.
type Cursor string

// Limits on input, shared by every Store.
const (
	DefaultLimit = 20  // Query.Limit 0 means this
	MaxLimit     = 200 // the largest page a Query may ask for
	MaxBodyChars = 280 // characters (Unicode code points), not bytes
)

// Query asks for one page of a home timeline.
type Query struct {
	// Limit is the page size, 1..MaxLimit; 0 means DefaultLimit.
	Limit int
	// Before is the Next cursor of the previous page; empty for the newest
	// page.
	Before Cursor
}

// Page is one page of a home timeline.
type Page struct {
	// Messages are newest first (strictly decreasing ids), at most Limit.
	Messages []Message
	// Next continues the walk to older messages. It is empty exactly when no
	// older message remains, so a walk never ends on an empty page.
	Next Cursor
}

// Store keeps messages and the follow graph and serves home timelines.
//
// The contract, which every implementation must meet (timelinetest.Run
// checks it):
//
//   - A user's home timeline holds the messages of the users they currently
//     follow, and never their own messages, newest first by id.
//   - Follow makes the followee's earlier messages visible at once; Unfollow
//     removes them at once. Both are idempotent. Following yourself is an
//     error (ErrSelfFollow).
//   - Walking a timeline by Page.Next never repeats a message and never skips
//     one that existed when the first page was read, even while new messages
//     are posted. (Pages are keyset pages on the message id, never offsets.)
//   - Bodies are valid UTF-8 of 1..MaxBodyChars characters, not blank, with
//     no control character but tab, line feed and carriage return; they are
//     stored and returned whole, byte for byte.
//   - Invalid input is rejected with an error that matches ErrInvalidInput and
//     the specific sentinel (ErrInvalidUser, ErrInvalidBody, ErrInvalidLimit,
//     ErrInvalidCursor, ErrSelfFollow) under errors.Is, names the bad field
//     via *InputError, and writes nothing.
//   - All methods are safe for concurrent use and honour ctx cancellation.
type Store interface {
	// Post stores a message by author and returns it with its assigned id
	// and creation time.
	Post(ctx context.Context, author UserID, body string) (Message, error)

	// Follow makes follower follow followee. Following again is a no-op.
	Follow(ctx context.Context, follower, followee UserID) error

	// Unfollow makes follower stop following followee. Unfollowing someone
	// not followed is a no-op.
	Unfollow(ctx context.Context, follower, followee UserID) error

	// Timeline returns one page of user's home timeline.
	Timeline(ctx context.Context, user UserID, q Query) (Page, error)

	// Close releases the store's resources. Calling it twice is harmless;
	// other methods must not be called after it.
	Close() error
}
