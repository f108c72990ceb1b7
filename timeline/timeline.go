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

// Cursor marks a place in a timeline: a message id. Cursors a store issues
// (Page.Next, Page.Prev) are opaque, bound to the timeline that produced
// them and to the store's key; a forged, corrupted or foreign one is
// rejected with ErrInvalidCursor. A service that holds a message id
// already (a client's max_id, since_id or min_id) makes a cursor of it
// with IDCursor, which every store accepts for any timeline.
type Cursor string

// Limits on input, shared by every Store.
const (
	DefaultLimit = 20  // Query.Limit 0 means this
	MaxLimit     = 200 // the largest page a Query may ask for
	MaxBodyChars = 280 // characters (Unicode code points), not bytes
)

// Query asks for one page of a timeline (a user's home timeline, or an
// author's own messages). The three cursors bound the page by message id,
// as the max_id, since_id and min_id of Mastodon's and Twitter's APIs do:
//
//   - no cursor: the newest Limit messages;
//   - Before: the newest Limit older than it (paging down, Page.Next);
//   - Since: the newest Limit newer than it (a poll that may leave a gap
//     below the page when more than Limit are newer);
//   - After: the oldest Limit newer than it, returned newest first (a poll
//     that leaves no gap: Page.Prev continues it upward).
//
// Before combines with Since or After (both bounds hold); Since and After
// exclude each other.
type Query struct {
	// Limit is the page size, 1..MaxLimit; 0 means DefaultLimit.
	Limit int
	// Before is the Next cursor of the previous page, or IDCursor(id);
	// empty for no upper bound.
	Before Cursor
	// Since and After are a Prev cursor, or IDCursor(id); empty for no
	// lower bound.
	Since, After Cursor
}

// Page is one page of a timeline.
type Page struct {
	// Messages are newest first (strictly decreasing ids), at most Limit.
	Messages []Message
	// Next continues the walk to older messages (as Query.Before). It is
	// empty exactly when no older message remains, so a walk never ends
	// on an empty page; a page with nothing in its bounds has none.
	Next Cursor
	// Prev asks for the messages newer than this page (as Query.After,
	// to poll without a gap, or as Query.Since); empty when the page is.
	Prev Cursor
}

// FollowQuery asks for one page of a user's followees or followers, in
// ascending order of user id.
type FollowQuery struct {
	// Limit is the page size, 1..MaxLimit; 0 means DefaultLimit.
	Limit int
	// After is the Next of the previous page; 0 starts at the lowest id.
	After UserID
}

// FollowPage is one page of a follow list.
type FollowPage struct {
	// Users are ascending, at most Limit.
	Users []UserID
	// Next continues the list (as FollowQuery.After); 0 when it ends.
	Next UserID
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
//     are posted; polling by Page.Prev as Query.After never skips or repeats
//     either. (Pages are keyset pages on the message id, never offsets.)
//   - Delete removes a message, by its author only, from every timeline,
//     the author's own, and Message: at once for a store that applies its
//     writes before it returns, once settled (Settler) for one that does
//     not. A deleted or unknown message is ErrNotFound.
//   - An author's own timeline (AuthorTimeline) holds their messages, newest
//     first, paged as a home timeline is. Followees, Followers and Follows
//     read the follow graph as Follow and Unfollow left it.
//   - Bodies are valid UTF-8 of 1..MaxBodyChars characters, not blank, with
//     no control character but tab, line feed and carriage return; they are
//     stored and returned whole, byte for byte.
//   - Invalid input is rejected with an error that matches ErrInvalidInput and
//     the specific sentinel (ErrInvalidUser, ErrInvalidBody, ErrInvalidLimit,
//     ErrInvalidCursor, ErrInvalidMessage, ErrSelfFollow) under errors.Is,
//     names the bad field via *InputError, and writes nothing.
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

	// Delete deletes author's message id. A message that does not exist,
	// was deleted already or is another author's is ErrNotFound.
	Delete(ctx context.Context, author UserID, id MessageID) error

	// Timeline returns one page of user's home timeline.
	Timeline(ctx context.Context, user UserID, q Query) (Page, error)

	// AuthorTimeline returns one page of author's own messages.
	AuthorTimeline(ctx context.Context, author UserID, q Query) (Page, error)

	// Message returns the message id, or ErrNotFound.
	Message(ctx context.Context, id MessageID) (Message, error)

	// Followees returns one page of the users user follows.
	Followees(ctx context.Context, user UserID, q FollowQuery) (FollowPage, error)

	// Followers returns one page of the users who follow user.
	Followers(ctx context.Context, user UserID, q FollowQuery) (FollowPage, error)

	// Follows reports whether follower follows followee.
	Follows(ctx context.Context, follower, followee UserID) (bool, error)

	// Close releases the store's resources. Calling it twice is harmless;
	// other methods must not be called after it.
	Close() error
}
