package timelinetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// The helpers below are what tests of any Store write again and again: each
// call fails the test (t.Fatal) on an error, so a test reads as its steps.
// Call them from the test's own goroutine only, as t.Fatal requires.
//
// The read helpers (Page, Newest, Walk, WalkIDs) see what was written before
// them: a store that applies writes later (a timeline.Settler) is settled
// first. To observe a store before it settles, call Store.Timeline directly.

// Context returns a context for one call of a test, canceled when the test
// ends and at most two minutes long, so that a hung server fails the test
// instead of the whole run.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Settle waits, if s is a timeline.Settler, until every write acknowledged
// so far is applied. For any other store it returns at once.
func Settle(t testing.TB, s timeline.Store) {
	t.Helper()
	if st, ok := timeline.As[timeline.Settler](s); ok {
		if err := st.Settle(Context(t)); err != nil {
			t.Fatalf("Settle: %v", err)
		}
	}
}

// Post posts body by author and returns the stored message.
func Post(t testing.TB, s timeline.Store, author timeline.UserID, body string) timeline.Message {
	t.Helper()
	m, err := s.Post(Context(t), author, body)
	if err != nil {
		t.Fatalf("Post(%d, %q): %v", author, body, err)
	}
	return m
}

// PostN posts n messages by author ("message 0 from 7", ...) and returns
// them, oldest first.
func PostN(t testing.TB, s timeline.Store, author timeline.UserID, n int) []timeline.Message {
	t.Helper()
	out := make([]timeline.Message, n)
	for i := range out {
		out[i] = Post(t, s, author, fmt.Sprintf("message %d from %d", i, author))
	}
	return out
}

// Follow makes follower follow followee.
func Follow(t testing.TB, s timeline.Store, follower, followee timeline.UserID) {
	t.Helper()
	if err := s.Follow(Context(t), follower, followee); err != nil {
		t.Fatalf("Follow(%d, %d): %v", follower, followee, err)
	}
}

// Unfollow makes follower stop following followee.
func Unfollow(t testing.TB, s timeline.Store, follower, followee timeline.UserID) {
	t.Helper()
	if err := s.Unfollow(Context(t), follower, followee); err != nil {
		t.Fatalf("Unfollow(%d, %d): %v", follower, followee, err)
	}
}

// Page settles s, reads one page of user's timeline and checks that it is
// newest first.
func Page(t testing.TB, s timeline.Store, user timeline.UserID, q timeline.Query) timeline.Page {
	t.Helper()
	Settle(t, s)
	return read(t, s, user, q)
}

// Newest is Page for the newest page at the default limit.
func Newest(t testing.TB, s timeline.Store, user timeline.UserID) timeline.Page {
	t.Helper()
	return Page(t, s, user, timeline.Query{})
}

// read is Page without settling.
func read(t testing.TB, s timeline.Store, user timeline.UserID, q timeline.Query) timeline.Page {
	t.Helper()
	p, err := s.Timeline(Context(t), user, q)
	if err != nil {
		t.Fatalf("Timeline(%d, %+v): %v", user, q, err)
	}
	checkOrder(t, p.Messages)
	return p
}

// Walk reads user's whole timeline page by page with the given limit and
// returns every message, checking order and the Next contract on the way.
// It settles s once, before the first page.
func Walk(t testing.TB, s timeline.Store, user timeline.UserID, limit int) []timeline.Message {
	t.Helper()
	Settle(t, s)
	var all []timeline.Message
	pages := 0
	for p, err := range timeline.Pages(Context(t), s, user, timeline.Query{Limit: limit}) {
		if err != nil {
			t.Fatalf("walking the timeline of %d after %d pages: %v", user, pages, err)
		}
		if pages++; pages > 100000 {
			t.Fatalf("timeline of %d does not end", user)
		}
		checkOrder(t, p.Messages)
		if limit > 0 && len(p.Messages) > limit {
			t.Fatalf("page of %d messages, limit %d", len(p.Messages), limit)
		}
		if p.Next != "" && len(p.Messages) == 0 {
			t.Fatalf("empty page with a Next cursor")
		}
		all = append(all, p.Messages...)
	}
	checkOrder(t, all)
	return all
}

// WalkIDs is Walk returning the ids, newest first.
func WalkIDs(t testing.TB, s timeline.Store, user timeline.UserID, limit int) []timeline.MessageID {
	t.Helper()
	return IDs(Walk(t, s, user, limit))
}

// IDs returns the ids of msgs, in their order.
func IDs(msgs []timeline.Message) []timeline.MessageID {
	out := make([]timeline.MessageID, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// NewestFirst returns the ids of all of msgs sorted newest first: the
// timeline that holds exactly those messages.
func NewestFirst(msgs ...[]timeline.Message) []timeline.MessageID {
	var out []timeline.MessageID
	for _, ms := range msgs {
		out = append(out, IDs(ms)...)
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

// SameMessage reports whether a and b agree in every field (CreatedAt as
// the same instant, whatever its location).
func SameMessage(a, b timeline.Message) bool {
	return a.ID == b.ID && a.Author == b.Author && a.Body == b.Body && a.CreatedAt.Equal(b.CreatedAt)
}

func checkOrder(t testing.TB, msgs []timeline.Message) {
	t.Helper()
	for i := 1; i < len(msgs); i++ {
		if msgs[i].ID >= msgs[i-1].ID {
			t.Fatalf("messages not strictly newest first: id %d after %d", msgs[i].ID, msgs[i-1].ID)
		}
	}
}

func wantIDs(t testing.TB, what string, got []timeline.Message, want []timeline.MessageID) {
	t.Helper()
	if g := IDs(got); !slices.Equal(g, want) {
		t.Fatalf("%s: got ids %v, want %v", what, g, want)
	}
}

// SameTimelines walks each user's timeline in got and in want, at each
// page length, and fails t at the first user whose messages differ. ids
// maps got's message ids to want's (stores number messages apart); nil
// compares ids as they are. Walk checks each page against its limit, so
// equal walks also mean equal page boundaries.
func SameTimelines(t testing.TB, got, want timeline.Store, users []timeline.UserID, limits []int, ids map[timeline.MessageID]timeline.MessageID) {
	t.Helper()
	for _, u := range users {
		for _, limit := range limits {
			g := WalkIDs(t, got, u, limit)
			if ids != nil {
				for i, id := range g {
					g[i] = ids[id]
				}
			}
			if w := WalkIDs(t, want, u, limit); !slices.Equal(g, w) {
				t.Fatalf("user %d, limit %d: got %d messages %v\nwant %d %v", u, limit, len(g), g, len(w), w)
			}
		}
	}
}
