// Package timelinetest is the conformance suite for timeline.Store: every
// backend runs Run against a fresh store, so that all of them keep the same
// contract (see the timeline.Store doc comment).
package timelinetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pushpull/pushpull/timeline"
)

// NewStore returns an empty store for one subtest and arranges (with
// t.Cleanup) for it to be closed and discarded.
type NewStore func(t *testing.T) timeline.Store

// Run runs every conformance check as a subtest, each on its own fresh store.
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		fn   func(*testing.T, timeline.Store)
	}{
		{"EmptyTimeline", testEmptyTimeline},
		{"PostAssignsIncreasingIDs", testPostAssignsIncreasingIDs},
		{"TimelineHoldsFolloweesOnly", testTimelineHoldsFolloweesOnly},
		{"FollowBackfillsUnfollowRemoves", testFollowBackfillsUnfollowRemoves},
		{"FollowIdempotent", testFollowIdempotent},
		{"SelfFollowRejected", testSelfFollowRejected},
		{"Limits", testLimits},
		{"PagingWalksEverything", testPagingWalksEverything},
		{"PagingExactMultiple", testPagingExactMultiple},
		{"PagingWhilePosting", testPagingWhilePosting},
		{"CursorRejected", testCursorRejected},
		{"BodiesStoredWhole", testBodiesStoredWhole},
		{"BadInputWritesNothing", testBadInputWritesNothing},
		{"ConcurrentPosts", testConcurrentPosts},
		{"CanceledContext", testCanceledContext},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func post(t *testing.T, s timeline.Store, author timeline.UserID, body string) timeline.Message {
	t.Helper()
	m, err := s.Post(ctx(t), author, body)
	if err != nil {
		t.Fatalf("Post(%d, %q): %v", author, body, err)
	}
	return m
}

func follow(t *testing.T, s timeline.Store, follower, followee timeline.UserID) {
	t.Helper()
	if err := s.Follow(ctx(t), follower, followee); err != nil {
		t.Fatalf("Follow(%d, %d): %v", follower, followee, err)
	}
}

func unfollow(t *testing.T, s timeline.Store, follower, followee timeline.UserID) {
	t.Helper()
	if err := s.Unfollow(ctx(t), follower, followee); err != nil {
		t.Fatalf("Unfollow(%d, %d): %v", follower, followee, err)
	}
}

func page(t *testing.T, s timeline.Store, user timeline.UserID, q timeline.Query) timeline.Page {
	t.Helper()
	p, err := s.Timeline(ctx(t), user, q)
	if err != nil {
		t.Fatalf("Timeline(%d, %+v): %v", user, q, err)
	}
	checkOrder(t, p.Messages)
	return p
}

// Walk reads user's whole timeline page by page with the given limit and
// returns every message, checking order and the Next contract on the way.
func Walk(t *testing.T, s timeline.Store, user timeline.UserID, limit int) []timeline.Message {
	t.Helper()
	var all []timeline.Message
	q := timeline.Query{Limit: limit}
	for pages := 0; ; pages++ {
		if pages > 100000 {
			t.Fatalf("timeline of %d does not end", user)
		}
		p := page(t, s, user, q)
		if limit > 0 && len(p.Messages) > limit {
			t.Fatalf("page of %d messages, limit %d", len(p.Messages), limit)
		}
		if p.Next != "" && len(p.Messages) == 0 {
			t.Fatalf("empty page with a Next cursor")
		}
		all = append(all, p.Messages...)
		if p.Next == "" {
			break
		}
		q.Before = p.Next
	}
	checkOrder(t, all)
	return all
}

func checkOrder(t *testing.T, msgs []timeline.Message) {
	t.Helper()
	for i := 1; i < len(msgs); i++ {
		if msgs[i].ID >= msgs[i-1].ID {
			t.Fatalf("messages not strictly newest first: id %d after %d", msgs[i].ID, msgs[i-1].ID)
		}
	}
}

func ids(msgs []timeline.Message) []timeline.MessageID {
	out := make([]timeline.MessageID, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// newestFirst returns the ids of msgs sorted newest first.
func newestFirst(msgs ...[]timeline.Message) []timeline.MessageID {
	var out []timeline.MessageID
	for _, ms := range msgs {
		out = append(out, ids(ms)...)
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

func postN(t *testing.T, s timeline.Store, author timeline.UserID, n int) []timeline.Message {
	t.Helper()
	out := make([]timeline.Message, n)
	for i := range out {
		out[i] = post(t, s, author, fmt.Sprintf("message %d from %d", i, author))
	}
	return out
}

func wantIDs(t *testing.T, what string, got []timeline.Message, want []timeline.MessageID) {
	t.Helper()
	if g := ids(got); !slices.Equal(g, want) {
		t.Fatalf("%s: got ids %v, want %v", what, g, want)
	}
}

func testEmptyTimeline(t *testing.T, s timeline.Store) {
	p := page(t, s, 1, timeline.Query{})
	if len(p.Messages) != 0 || p.Next != "" {
		t.Fatalf("empty store: got %+v, want an empty last page", p)
	}
	follow(t, s, 1, 2)
	p = page(t, s, 1, timeline.Query{})
	if len(p.Messages) != 0 || p.Next != "" {
		t.Fatalf("followee without messages: got %+v, want an empty last page", p)
	}
}

func testPostAssignsIncreasingIDs(t *testing.T, s timeline.Store) {
	before := time.Now().Add(-time.Minute)
	var last timeline.MessageID
	for i := range 5 {
		m := post(t, s, timeline.UserID(i%2+1), fmt.Sprintf("hello %d", i))
		if m.ID <= last {
			t.Fatalf("id %d not above previous %d", m.ID, last)
		}
		last = m.ID
		if m.Author != timeline.UserID(i%2+1) || m.Body != fmt.Sprintf("hello %d", i) {
			t.Fatalf("Post returned %+v", m)
		}
		if m.CreatedAt.Before(before) || m.CreatedAt.After(time.Now().Add(time.Minute)) {
			t.Fatalf("CreatedAt %v is not now", m.CreatedAt)
		}
	}
}

func testTimelineHoldsFolloweesOnly(t *testing.T, s timeline.Store) {
	follow(t, s, 1, 2)
	follow(t, s, 1, 3)
	follow(t, s, 4, 1) // someone follows 1: 1's posts go to 4, not to 1
	var want []timeline.Message
	for i := range 6 {
		want = append(want, post(t, s, timeline.UserID(i%3+2), fmt.Sprintf("m%d", i))) // authors 2,3,4
		post(t, s, 1, fmt.Sprintf("own %d", i))
		post(t, s, 5, fmt.Sprintf("stranger %d", i))
	}
	// 4 is not followed by 1.
	want = slices.DeleteFunc(want, func(m timeline.Message) bool { return m.Author == 4 })
	p := page(t, s, 1, timeline.Query{})
	wantIDs(t, "timeline of 1", p.Messages, newestFirst(want))
	for i, m := range p.Messages {
		var w timeline.Message
		for _, x := range want {
			if x.ID == m.ID {
				w = x
			}
		}
		if m.Author != w.Author || m.Body != w.Body || !m.CreatedAt.Equal(w.CreatedAt) {
			t.Fatalf("message %d: got %+v, want %+v", i, m, w)
		}
	}
	if p := page(t, s, 4, timeline.Query{}); len(p.Messages) != 6 {
		t.Fatalf("follower of 1 sees %d messages, want 6", len(p.Messages))
	}
	if p := page(t, s, 2, timeline.Query{}); len(p.Messages) != 0 {
		t.Fatalf("user 2 follows nobody but sees %d messages", len(p.Messages))
	}
}

func testFollowBackfillsUnfollowRemoves(t *testing.T, s timeline.Store) {
	a := postN(t, s, 2, 5)
	b := postN(t, s, 3, 5)
	follow(t, s, 1, 2)
	wantIDs(t, "after follow", page(t, s, 1, timeline.Query{}).Messages, newestFirst(a))
	follow(t, s, 1, 3)
	wantIDs(t, "after second follow", page(t, s, 1, timeline.Query{}).Messages, newestFirst(a, b))
	unfollow(t, s, 1, 2)
	wantIDs(t, "after unfollow", page(t, s, 1, timeline.Query{}).Messages, newestFirst(b))
	c := postN(t, s, 2, 2) // posted while not followed
	follow(t, s, 1, 2)
	wantIDs(t, "after follow again", page(t, s, 1, timeline.Query{}).Messages, newestFirst(a, b, c))
	unfollow(t, s, 1, 2)
	unfollow(t, s, 1, 3)
	if p := page(t, s, 1, timeline.Query{}); len(p.Messages) != 0 || p.Next != "" {
		t.Fatalf("after unfollowing everyone: %+v", p)
	}
}

func testFollowIdempotent(t *testing.T, s timeline.Store) {
	a := postN(t, s, 2, 3)
	follow(t, s, 1, 2)
	follow(t, s, 1, 2)
	b := postN(t, s, 2, 2)
	follow(t, s, 1, 2)
	wantIDs(t, "after repeated follows", Walk(t, s, 1, 2), newestFirst(a, b))
	unfollow(t, s, 1, 2)
	unfollow(t, s, 1, 2)
	unfollow(t, s, 1, 9) // never followed
	if p := page(t, s, 1, timeline.Query{}); len(p.Messages) != 0 {
		t.Fatalf("after repeated unfollows: %d messages", len(p.Messages))
	}
	follow(t, s, 1, 2)
	wantIDs(t, "after follow, unfollow, follow", Walk(t, s, 1, 3), newestFirst(a, b))
}

func testSelfFollowRejected(t *testing.T, s timeline.Store) {
	postN(t, s, 1, 2)
	for _, op := range []struct {
		name string
		fn   func(context.Context, timeline.UserID, timeline.UserID) error
	}{{"Follow", s.Follow}, {"Unfollow", s.Unfollow}} {
		err := op.fn(ctx(t), 1, 1)
		CheckInputError(t, op.name+"(1, 1)", err, timeline.ErrSelfFollow, "followee")
	}
	if p := page(t, s, 1, timeline.Query{}); len(p.Messages) != 0 {
		t.Fatalf("self-follow showed own messages: %+v", p)
	}
}

// CheckInputError fails t unless err is an input error matching sentinel
// and ErrInvalidInput, and naming field.
func CheckInputError(t *testing.T, what string, err, sentinel error, field string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: got error %v, want %v", what, err, sentinel)
	}
	if !errors.Is(err, timeline.ErrInvalidInput) {
		t.Fatalf("%s: error %v does not match ErrInvalidInput", what, err)
	}
	var ie *timeline.InputError
	if !errors.As(err, &ie) || ie.Field != field {
		t.Fatalf("%s: error %v does not name field %q", what, err, field)
	}
}

func testLimits(t *testing.T, s timeline.Store) {
	follow(t, s, 1, 2)
	msgs := postN(t, s, 2, timeline.MaxLimit+5)
	all := newestFirst(msgs)
	for _, tc := range []struct{ limit, want int }{
		{0, timeline.DefaultLimit}, {1, 1}, {7, 7}, {timeline.MaxLimit, timeline.MaxLimit},
	} {
		p := page(t, s, 1, timeline.Query{Limit: tc.limit})
		wantIDs(t, fmt.Sprintf("limit %d", tc.limit), p.Messages, all[:tc.want])
		if p.Next == "" {
			t.Fatalf("limit %d: no Next although older messages remain", tc.limit)
		}
	}
	for _, limit := range []int{-1, -20, timeline.MaxLimit + 1, 1 << 40} {
		_, err := s.Timeline(ctx(t), 1, timeline.Query{Limit: limit})
		CheckInputError(t, fmt.Sprintf("limit %d", limit), err, timeline.ErrInvalidLimit, "limit")
	}
}

func testPagingWalksEverything(t *testing.T, s timeline.Store) {
	var want []timeline.Message
	for f := timeline.UserID(2); f <= 5; f++ {
		follow(t, s, 1, f)
	}
	for i := range 47 {
		want = append(want, post(t, s, timeline.UserID(i%4+2), fmt.Sprintf("m%d", i)))
	}
	for _, limit := range []int{1, 3, 10, 46, 47, 48, 0} {
		wantIDs(t, fmt.Sprintf("walk with limit %d", limit), Walk(t, s, 1, limit), newestFirst(want))
	}
}

func testPagingExactMultiple(t *testing.T, s timeline.Store) {
	follow(t, s, 1, 2)
	msgs := postN(t, s, 2, 6)
	p := page(t, s, 1, timeline.Query{Limit: 3})
	p = page(t, s, 1, timeline.Query{Limit: 3, Before: p.Next})
	wantIDs(t, "second page", p.Messages, newestFirst(msgs)[3:])
	if p.Next != "" {
		t.Fatalf("last full page has Next %q; Next must be empty when nothing older remains", p.Next)
	}
}

// testPagingWhilePosting walks a timeline while other goroutines post: the
// walk must hold every message that existed when the first page was read, in
// order, without repeats.
func testPagingWhilePosting(t *testing.T, s timeline.Store) {
	for f := timeline.UserID(2); f <= 4; f++ {
		follow(t, s, 1, f)
	}
	var existing []timeline.Message
	for i := range 30 {
		existing = append(existing, post(t, s, timeline.UserID(i%3+2), fmt.Sprintf("old %d", i)))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Post(context.Background(), timeline.UserID(w+2), fmt.Sprintf("new %d", i)); err != nil {
					errs <- err
					return
				}
				if i >= 200 {
					return
				}
			}
		})
	}
	var got []timeline.Message
	q := timeline.Query{Limit: 4}
	for {
		p := page(t, s, 1, q)
		got = append(got, p.Messages...)
		if p.Next == "" {
			break
		}
		q.Before = p.Next
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Post: %v", err)
	}
	checkOrder(t, got) // strictly decreasing: no repeats
	seen := make(map[timeline.MessageID]bool)
	for _, m := range got {
		seen[m.ID] = true
	}
	for _, m := range existing {
		if !seen[m.ID] {
			t.Fatalf("walk skipped message %d that existed before it began", m.ID)
		}
	}
}

func testCursorRejected(t *testing.T, s timeline.Store) {
	follow(t, s, 1, 2)
	follow(t, s, 3, 2)
	postN(t, s, 2, 5)
	p := page(t, s, 1, timeline.Query{Limit: 2})
	if p.Next == "" {
		t.Fatal("no Next cursor")
	}
	other := page(t, s, 3, timeline.Query{Limit: 2}).Next
	flipped := []byte(p.Next)
	flipped[len(flipped)/2] ^= 0x01
	if flipped[len(flipped)/2] == '.' || flipped[len(flipped)/2] > 'z' {
		flipped[len(flipped)/2] = 'A'
	}
	bad := map[string]timeline.Cursor{
		"garbage":            "not a cursor",
		"number":             "12345",
		"truncated":          p.Next[:len(p.Next)-2],
		"extended":           p.Next + "AA",
		"bit flipped":        timeline.Cursor(flipped),
		"other user's":       other,
		"upper-cased":        timeline.Cursor(strings.ToUpper(string(p.Next))),
		"sql":                "' OR 1=1 --",
		"zero bytes":         "AAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"very long":          timeline.Cursor(strings.Repeat("A", 10000)),
		"invalid base64 pad": timeline.Cursor(string(p.Next) + "=="),
	}
	for name, c := range bad {
		if c == p.Next {
			t.Fatalf("%s: test cursor equals the real one", name)
		}
		_, err := s.Timeline(ctx(t), 1, timeline.Query{Limit: 2, Before: c})
		CheckInputError(t, "cursor "+name, err, timeline.ErrInvalidCursor, "cursor")
	}
	// The real cursor still works.
	if got := page(t, s, 1, timeline.Query{Limit: 2, Before: p.Next}); len(got.Messages) != 2 {
		t.Fatalf("genuine cursor: got %d messages", len(got.Messages))
	}
}

func testBodiesStoredWhole(t *testing.T, s timeline.Store) {
	follow(t, s, 1, 2)
	bodies := []string{
		"x",
		strings.Repeat("a", timeline.MaxBodyChars),
		strings.Repeat("😀", timeline.MaxBodyChars), // 4-byte characters: needs utf8mb4
		strings.Repeat("日本", timeline.MaxBodyChars/2),
		"trailing spaces   ",
		"  leading and\ttabs\nand newlines\r\n",
		"quotes ' \" ` \\ and % _ wildcards",
		"NUL \x00 byte",
		"e\u0301 combining, ǅ title case, \u200b zero width",
		"Ä vs ä vs A: case and accents must not be folded",
	}
	var want []timeline.Message
	for _, b := range bodies {
		m := post(t, s, 2, b)
		if m.Body != b {
			t.Fatalf("Post returned body %q, want %q", m.Body, b)
		}
		want = append(want, m)
	}
	got := Walk(t, s, 1, 3)
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d", len(got), len(want))
	}
	for i, m := range got {
		w := want[len(want)-1-i]
		if m.ID != w.ID || m.Body != w.Body {
			t.Fatalf("message %d: body %q (%d chars), want %q (%d chars)",
				m.ID, m.Body, utf8.RuneCountInString(m.Body), w.Body, utf8.RuneCountInString(w.Body))
		}
	}
}

// snapshot is everything observable about users 1..n.
func snapshot(t *testing.T, s timeline.Store, n int) map[timeline.UserID][]timeline.MessageID {
	t.Helper()
	out := make(map[timeline.UserID][]timeline.MessageID)
	for u := timeline.UserID(1); u <= timeline.UserID(n); u++ {
		out[u] = ids(Walk(t, s, u, timeline.MaxLimit))
	}
	return out
}

func testBadInputWritesNothing(t *testing.T, s timeline.Store) {
	follow(t, s, 1, 2)
	follow(t, s, 2, 1)
	postN(t, s, 1, 2)
	postN(t, s, 2, 2)
	before := snapshot(t, s, 3)

	for _, tc := range BadInputs() {
		CheckInputError(t, tc.Name, tc.Call(ctx(t), s), tc.Sentinel, tc.Field)
	}
	if after := snapshot(t, s, 3); !mapsEqual(before, after) {
		t.Fatalf("rejected input changed timelines:\nbefore %v\nafter  %v", before, after)
	}
}

func mapsEqual(a, b map[timeline.UserID][]timeline.MessageID) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func testConcurrentPosts(t *testing.T, s timeline.Store) {
	const workers, each = 4, 25
	for f := timeline.UserID(2); f < 2+workers; f++ {
		follow(t, s, 1, f)
	}
	var mu sync.Mutex
	var posted []timeline.Message
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				m, err := s.Post(context.Background(), timeline.UserID(w+2), fmt.Sprintf("w%d-%d", w, i))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				posted = append(posted, m)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Post: %v", err)
	}
	wantIDs(t, "after concurrent posts", Walk(t, s, 1, 7), newestFirst(posted))
}

func testCanceledContext(t *testing.T, s timeline.Store) {
	follow(t, s, 1, 2)
	postN(t, s, 2, 1)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Timeline(c, 1, timeline.Query{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Timeline with canceled context: got %v, want context.Canceled", err)
	}
	if _, err := s.Post(c, 2, "too late"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Post with canceled context: got %v, want context.Canceled", err)
	}
	if err := s.Follow(c, 1, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow with canceled context: got %v, want context.Canceled", err)
	}
	if got := Walk(t, s, 1, 0); len(got) != 1 {
		t.Fatalf("canceled Post was stored: %d messages", len(got))
	}
}

// BadInput is one call that breaks an input rule. Users 1, 2 and 3 are the
// ones it touches.
type BadInput struct {
	Name     string
	Call     func(context.Context, timeline.Store) error
	Sentinel error  // the error it must match
	Field    string // the field the error must name
}

// BadInputs lists a call for every input rule of the contract. The SQL
// backends' tests also check that none of them changes a row.
func BadInputs() []BadInput {
	long := strings.Repeat("a", timeline.MaxBodyChars+1)
	postBody := func(author timeline.UserID, body string) func(context.Context, timeline.Store) error {
		return func(c context.Context, s timeline.Store) error { _, err := s.Post(c, author, body); return err }
	}
	follow := func(a, b timeline.UserID) func(context.Context, timeline.Store) error {
		return func(c context.Context, s timeline.Store) error { return s.Follow(c, a, b) }
	}
	unfollow := func(a, b timeline.UserID) func(context.Context, timeline.Store) error {
		return func(c context.Context, s timeline.Store) error { return s.Unfollow(c, a, b) }
	}
	read := func(user timeline.UserID, q timeline.Query) func(context.Context, timeline.Store) error {
		return func(c context.Context, s timeline.Store) error { _, err := s.Timeline(c, user, q); return err }
	}
	return []BadInput{
		{"post by user 0", postBody(0, "hi"), timeline.ErrInvalidUser, "author"},
		{"post by negative user", postBody(-5, "hi"), timeline.ErrInvalidUser, "author"},
		{"empty body", postBody(2, ""), timeline.ErrInvalidBody, "body"},
		{"281 characters", postBody(2, long), timeline.ErrInvalidBody, "body"},
		{"281 emoji", postBody(2, strings.Repeat("😀", timeline.MaxBodyChars+1)), timeline.ErrInvalidBody, "body"},
		{"invalid UTF-8", postBody(2, "ab\xff\xfe"), timeline.ErrInvalidBody, "body"},
		{"truncated UTF-8", postBody(2, "abc\xe6\x97"), timeline.ErrInvalidBody, "body"},
		{"follow by user 0", follow(0, 3), timeline.ErrInvalidUser, "follower"},
		{"follow user 0", follow(3, 0), timeline.ErrInvalidUser, "followee"},
		{"follow negative", follow(3, -1), timeline.ErrInvalidUser, "followee"},
		{"follow self", follow(3, 3), timeline.ErrSelfFollow, "followee"},
		{"unfollow by user 0", unfollow(0, 2), timeline.ErrInvalidUser, "follower"},
		{"unfollow user -1", unfollow(1, -1), timeline.ErrInvalidUser, "followee"},
		{"unfollow self", unfollow(1, 1), timeline.ErrSelfFollow, "followee"},
		{"timeline of user 0", read(0, timeline.Query{}), timeline.ErrInvalidUser, "user"},
		{"timeline of negative user", read(-1, timeline.Query{}), timeline.ErrInvalidUser, "user"},
		{"timeline limit -1", read(1, timeline.Query{Limit: -1}), timeline.ErrInvalidLimit, "limit"},
		{"timeline limit 201", read(1, timeline.Query{Limit: timeline.MaxLimit + 1}), timeline.ErrInvalidLimit, "limit"},
		{"timeline bad cursor", read(1, timeline.Query{Before: "bogus"}), timeline.ErrInvalidCursor, "cursor"},
		{"timeline forged cursor", read(1, timeline.Query{Before: "AQAAAAAAAAAFAAAAAAAAAAAAAAAA"}), timeline.ErrInvalidCursor, "cursor"},
	}
}
