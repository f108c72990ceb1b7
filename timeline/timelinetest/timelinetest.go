// Package timelinetest is the kit every timeline.Store is tested and
// measured with, so that all of them keep the same contract (see the
// timeline.Store doc comment) and are measured the same way:
//
//   - Run is the conformance suite; RunConfigs runs it under several
//     configurations of one model from a table.
//   - Post, PostN, Follow, Unfollow, Page, Newest, Walk and WalkIDs are the
//     steps tests write with; each fails the test on an error.
//   - RunBenchmarks measures a newest page, an older page and a post on a
//     small dataset it writes through the store.
//
// A store that applies part of a write after acknowledging it (a
// timeline.Settler, such as an asynchronous fan-out) is settled before every
// read of the suite and of the read helpers, so that it is held to the same
// contract as a synchronous store once its writes have landed.
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
// Before it reads what it wrote, it calls Settle on a store that is a
// timeline.Settler; reads that race writes on purpose (paging while posting)
// only settle before they begin.
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
		{"FollowsRacePosts", testFollowsRacePosts},
		{"CanceledContext", testCanceledContext},
		{"CanceledContextWarm", testCanceledContextWarm},
		{"Delete", anyTB(testDelete)},
		{"AuthorTimeline", anyTB(testAuthorTimeline)},
		{"MessageByID", anyTB(testMessageByID)},
		{"FollowLists", anyTB(testFollowLists)},
		{"NewerPages", anyTB(testNewerPages)},
		{"PollingWhilePosting", anyTB(testPollingWhilePosting)},
		{"ReadAfterWarmWrite", anyTB(testReadAfterWarmWrite)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

// anyTB runs a check written for any testing.TB as a subtest's function;
// the kit's own tests run such checks on purpose-broken stores.
func anyTB(check func(testing.TB, timeline.Store)) func(*testing.T, timeline.Store) {
	return func(t *testing.T, s timeline.Store) { check(t, s) }
}

// Config is one configuration of a model for RunConfigs: typically the same
// model with other settings (small list lengths, an index of one followee)
// or behind a wrapper.
type Config struct {
	// Name names the configuration's subtest.
	Name string
	// Open returns a fresh, empty store of the configuration for one
	// check, as NewStore does for Run.
	Open NewStore
	// After, if set, runs in the configuration's subtest once the whole
	// suite has run under it: for checks over the run as a whole, such as
	// that a cache was hit at all, without which the suite proved little.
	After func(t *testing.T)
}

// RunConfigs runs the conformance suite under each configuration, as a
// subtest named by Config.Name, so that one table replaces hand-made
// copies of the Run call:
//
//	timelinetest.RunConfigs(t, []timelinetest.Config{
//		{Name: "default", Open: func(t *testing.T) timeline.Store { return open(t, Config{}) }},
//		{Name: "index of one", Open: func(t *testing.T) timeline.Store { return open(t, Config{IndexLen: 1}) }},
//	})
//
// Names must be unique and not empty.
func RunConfigs(t *testing.T, configs []Config) {
	t.Helper()
	seen := make(map[string]bool)
	for _, c := range configs {
		if c.Name == "" || seen[c.Name] || c.Open == nil {
			t.Fatalf("RunConfigs: configuration %q is unnamed, named twice, or has no Open", c.Name)
		}
		seen[c.Name] = true
	}
	for _, c := range configs {
		t.Run(c.Name, func(t *testing.T) {
			Run(t, c.Open)
			if c.After != nil {
				c.After(t)
			}
		})
	}
}

func testEmptyTimeline(t *testing.T, s timeline.Store) {
	p := Newest(t, s, 1)
	if len(p.Messages) != 0 || p.Next != "" {
		t.Fatalf("empty store: got %+v, want an empty last page", p)
	}
	Follow(t, s, 1, 2)
	p = Newest(t, s, 1)
	if len(p.Messages) != 0 || p.Next != "" {
		t.Fatalf("followee without messages: got %+v, want an empty last page", p)
	}
}

func testPostAssignsIncreasingIDs(t *testing.T, s timeline.Store) {
	before := time.Now().Add(-time.Minute)
	var last timeline.MessageID
	for i := range 5 {
		m := Post(t, s, timeline.UserID(i%2+1), fmt.Sprintf("hello %d", i))
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
	Follow(t, s, 1, 2)
	Follow(t, s, 1, 3)
	Follow(t, s, 4, 1) // someone follows 1: 1's posts go to 4, not to 1
	var want []timeline.Message
	for i := range 6 {
		want = append(want, Post(t, s, timeline.UserID(i%3+2), fmt.Sprintf("m%d", i))) // authors 2,3,4
		Post(t, s, 1, fmt.Sprintf("own %d", i))
		Post(t, s, 5, fmt.Sprintf("stranger %d", i))
	}
	// 4 is not followed by 1.
	want = slices.DeleteFunc(want, func(m timeline.Message) bool { return m.Author == 4 })
	p := Newest(t, s, 1)
	wantIDs(t, "timeline of 1", p.Messages, NewestFirst(want))
	for i, m := range p.Messages {
		var w timeline.Message
		for _, x := range want {
			if x.ID == m.ID {
				w = x
			}
		}
		if !SameMessage(m, w) {
			t.Fatalf("message %d: got %+v, want %+v", i, m, w)
		}
	}
	if p := Newest(t, s, 4); len(p.Messages) != 6 {
		t.Fatalf("follower of 1 sees %d messages, want 6", len(p.Messages))
	}
	if p := Newest(t, s, 2); len(p.Messages) != 0 {
		t.Fatalf("user 2 follows nobody but sees %d messages", len(p.Messages))
	}
}

func testFollowBackfillsUnfollowRemoves(t *testing.T, s timeline.Store) {
	a := PostN(t, s, 2, 5)
	b := PostN(t, s, 3, 5)
	Follow(t, s, 1, 2)
	wantIDs(t, "after follow", Newest(t, s, 1).Messages, NewestFirst(a))
	Follow(t, s, 1, 3)
	wantIDs(t, "after second follow", Newest(t, s, 1).Messages, NewestFirst(a, b))
	Unfollow(t, s, 1, 2)
	wantIDs(t, "after unfollow", Newest(t, s, 1).Messages, NewestFirst(b))
	c := PostN(t, s, 2, 2) // posted while not followed
	Follow(t, s, 1, 2)
	wantIDs(t, "after follow again", Newest(t, s, 1).Messages, NewestFirst(a, b, c))
	Unfollow(t, s, 1, 2)
	Unfollow(t, s, 1, 3)
	if p := Newest(t, s, 1); len(p.Messages) != 0 || p.Next != "" {
		t.Fatalf("after unfollowing everyone: %+v", p)
	}
}

func testFollowIdempotent(t *testing.T, s timeline.Store) {
	a := PostN(t, s, 2, 3)
	Follow(t, s, 1, 2)
	Follow(t, s, 1, 2)
	b := PostN(t, s, 2, 2)
	Follow(t, s, 1, 2)
	wantIDs(t, "after repeated follows", Walk(t, s, 1, 2), NewestFirst(a, b))
	Unfollow(t, s, 1, 2)
	Unfollow(t, s, 1, 2)
	Unfollow(t, s, 1, 9) // never followed
	if p := Newest(t, s, 1); len(p.Messages) != 0 {
		t.Fatalf("after repeated unfollows: %d messages", len(p.Messages))
	}
	Follow(t, s, 1, 2)
	wantIDs(t, "after follow, unfollow, follow", Walk(t, s, 1, 3), NewestFirst(a, b))
}

func testSelfFollowRejected(t *testing.T, s timeline.Store) {
	PostN(t, s, 1, 2)
	for _, op := range []struct {
		name string
		fn   func(context.Context, timeline.UserID, timeline.UserID) error
	}{{"Follow", s.Follow}, {"Unfollow", s.Unfollow}} {
		err := op.fn(Context(t), 1, 1)
		CheckInputError(t, op.name+"(1, 1)", err, timeline.ErrSelfFollow, "followee")
	}
	if p := Newest(t, s, 1); len(p.Messages) != 0 {
		t.Fatalf("self-follow showed own messages: %+v", p)
	}
}

// CheckInputError fails t unless err is an input error matching sentinel
// and ErrInvalidInput, and naming field.
func CheckInputError(t testing.TB, what string, err, sentinel error, field string) {
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
	Follow(t, s, 1, 2)
	msgs := PostN(t, s, 2, timeline.MaxLimit+5)
	all := NewestFirst(msgs)
	for _, tc := range []struct{ limit, want int }{
		{0, timeline.DefaultLimit}, {1, 1}, {7, 7}, {timeline.MaxLimit, timeline.MaxLimit},
	} {
		p := Page(t, s, 1, timeline.Query{Limit: tc.limit})
		wantIDs(t, fmt.Sprintf("limit %d", tc.limit), p.Messages, all[:tc.want])
		if p.Next == "" {
			t.Fatalf("limit %d: no Next although older messages remain", tc.limit)
		}
	}
	for _, limit := range []int{-1, -20, timeline.MaxLimit + 1, 1 << 40} {
		_, err := s.Timeline(Context(t), 1, timeline.Query{Limit: limit})
		CheckInputError(t, fmt.Sprintf("limit %d", limit), err, timeline.ErrInvalidLimit, "limit")
	}
}

func testPagingWalksEverything(t *testing.T, s timeline.Store) {
	var want []timeline.Message
	for f := timeline.UserID(2); f <= 5; f++ {
		Follow(t, s, 1, f)
	}
	for i := range 47 {
		want = append(want, Post(t, s, timeline.UserID(i%4+2), fmt.Sprintf("m%d", i)))
	}
	for _, limit := range []int{1, 3, 10, 46, 47, 48, 0} {
		wantIDs(t, fmt.Sprintf("walk with limit %d", limit), Walk(t, s, 1, limit), NewestFirst(want))
	}
}

func testPagingExactMultiple(t *testing.T, s timeline.Store) {
	Follow(t, s, 1, 2)
	msgs := PostN(t, s, 2, 6)
	p := Page(t, s, 1, timeline.Query{Limit: 3})
	p = Page(t, s, 1, timeline.Query{Limit: 3, Before: p.Next})
	wantIDs(t, "second page", p.Messages, NewestFirst(msgs)[3:])
	if p.Next != "" {
		t.Fatalf("last full page has Next %q; Next must be empty when nothing older remains", p.Next)
	}
}

// testPagingWhilePosting walks a timeline while other goroutines post: the
// walk must hold every message that existed when the first page was read, in
// order, without repeats.
func testPagingWhilePosting(t *testing.T, s timeline.Store) {
	for f := timeline.UserID(2); f <= 4; f++ {
		Follow(t, s, 1, f)
	}
	var existing []timeline.Message
	for i := range 30 {
		existing = append(existing, Post(t, s, timeline.UserID(i%3+2), fmt.Sprintf("old %d", i)))
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
	got := Walk(t, s, 1, 4) // strictly decreasing: no repeats
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Post: %v", err)
	}
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

// swapCase turns every ASCII letter of s to the other case: a cursor
// with any letter changes (upper-casing one alone would not change a
// cursor that happened to hold none in lower case).
func swapCase(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return r - 'a' + 'A'
		case 'A' <= r && r <= 'Z':
			return r - 'A' + 'a'
		}
		return r
	}, s)
}

func testCursorRejected(t *testing.T, s timeline.Store) {
	Follow(t, s, 1, 2)
	Follow(t, s, 3, 2)
	PostN(t, s, 2, 5)
	p := Page(t, s, 1, timeline.Query{Limit: 2})
	if p.Next == "" {
		t.Fatal("no Next cursor")
	}
	other := Page(t, s, 3, timeline.Query{Limit: 2}).Next
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
		"case swapped":       timeline.Cursor(swapCase(string(p.Next))),
		"sql":                "' OR 1=1 --",
		"zero bytes":         "AAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"very long":          timeline.Cursor(strings.Repeat("A", 10000)),
		"invalid base64 pad": timeline.Cursor(string(p.Next) + "=="),
	}
	for name, c := range bad {
		if c == p.Next {
			t.Fatalf("%s: test cursor equals the real one", name)
		}
		_, err := s.Timeline(Context(t), 1, timeline.Query{Limit: 2, Before: c})
		CheckInputError(t, "cursor "+name, err, timeline.ErrInvalidCursor, "cursor")
	}
	// The real cursor still works.
	if got := Page(t, s, 1, timeline.Query{Limit: 2, Before: p.Next}); len(got.Messages) != 2 {
		t.Fatalf("genuine cursor: got %d messages", len(got.Messages))
	}
}

func testBodiesStoredWhole(t *testing.T, s timeline.Store) {
	Follow(t, s, 1, 2)
	bodies := []string{
		"x",
		strings.Repeat("a", timeline.MaxBodyChars),
		strings.Repeat("😀", timeline.MaxBodyChars), // 4-byte characters: needs utf8mb4
		strings.Repeat("日本", timeline.MaxBodyChars/2),
		"trailing spaces   ",
		"  leading and\ttabs\nand newlines\r\n",
		"quotes ' \" ` \\ and % _ wildcards",
		"tab\tinside, and a line\nbreak",
		"e\u0301 combining, ǅ title case, \u200b zero width",
		"Ä vs ä vs A: case and accents must not be folded",
	}
	var want []timeline.Message
	for _, b := range bodies {
		m := Post(t, s, 2, b)
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
		out[u] = WalkIDs(t, s, u, timeline.MaxLimit)
	}
	return out
}

func testBadInputWritesNothing(t *testing.T, s timeline.Store) {
	Follow(t, s, 1, 2)
	Follow(t, s, 2, 1)
	PostN(t, s, 1, 2)
	PostN(t, s, 2, 2)
	before := snapshot(t, s, 3)

	for _, tc := range BadInputs() {
		CheckInputError(t, tc.Name, tc.Call(Context(t), s), tc.Sentinel, tc.Field)
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
		Follow(t, s, 1, f)
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
	wantIDs(t, "after concurrent posts", Walk(t, s, 1, 7), NewestFirst(posted))
}

// testFollowsRacePosts starts a post and a follow (then a post and an
// unfollow) of the same author at once, for several pairs of users side
// by side: whichever way each race goes, once both calls have returned
// the follower holds the post after the follow and nothing of the author
// after the unfollow.
func testFollowsRacePosts(t *testing.T, s timeline.Store) {
	const pairs = 8
	ctx := Context(t)
	author := func(i int) timeline.UserID { return timeline.UserID(100 + 2*i) }
	follower := func(i int) timeline.UserID { return timeline.UserID(101 + 2*i) }
	race := func(what string, edge func(i int) error) []timeline.Message {
		posted := make([]timeline.Message, pairs)
		errs := make(chan error, 2*pairs)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range pairs {
			wg.Go(func() {
				<-start
				m, err := s.Post(ctx, author(i), fmt.Sprintf("%s race %d", what, i))
				posted[i] = m
				errs <- err
			})
			wg.Go(func() {
				<-start
				errs <- edge(i)
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("%s racing a post: %v", what, err)
			}
		}
		Settle(t, s)
		return posted
	}
	before := make([]timeline.Message, pairs)
	for i := range pairs {
		before[i] = Post(t, s, author(i), fmt.Sprintf("before %d", i))
	}
	posted := race("follow", func(i int) error { return s.Follow(ctx, follower(i), author(i)) })
	for i := range pairs {
		wantIDs(t, fmt.Sprintf("follower %d after a follow raced a post", follower(i)),
			Newest(t, s, follower(i)).Messages, NewestFirst([]timeline.Message{before[i], posted[i]}))
	}
	race("unfollow", func(i int) error { return s.Unfollow(ctx, follower(i), author(i)) })
	for i := range pairs {
		if p := Newest(t, s, follower(i)); len(p.Messages) != 0 {
			t.Fatalf("follower %d after an unfollow raced a post: %d messages, want none", follower(i), len(p.Messages))
		}
	}
}

func testCanceledContext(t *testing.T, s timeline.Store) {
	Follow(t, s, 1, 2)
	PostN(t, s, 2, 1)
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

// testCanceledContextWarm: a canceled context fails a read even when the
// store could serve the page without touching a server (from memcached or
// caches in process, warmed by the same reads just before).
func testCanceledContextWarm(t *testing.T, s timeline.Store) {
	for a := timeline.UserID(2); a <= 4; a++ {
		Follow(t, s, 1, a)
		PostN(t, s, a, 5)
	}
	first := Page(t, s, 1, timeline.Query{})
	queries := []timeline.Query{{}, {Limit: 3}, {Limit: 4, Before: first.Next}}
	if first.Next == "" {
		queries = queries[:2]
	}
	for range 2 { // warm
		for _, q := range queries {
			Page(t, s, 1, q)
		}
	}
	c, cancel := context.WithCancel(context.Background())
	cancel()
	for _, q := range queries {
		if p, err := s.Timeline(c, 1, q); !errors.Is(err, context.Canceled) {
			t.Fatalf("Timeline %+v with a canceled context on a warm store: got %d messages and %v, want context.Canceled", q, len(p.Messages), err)
		}
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
	readAuthor := func(author timeline.UserID, q timeline.Query) func(context.Context, timeline.Store) error {
		return func(c context.Context, s timeline.Store) error { _, err := s.AuthorTimeline(c, author, q); return err }
	}
	del := func(author timeline.UserID, id timeline.MessageID) func(context.Context, timeline.Store) error {
		return func(c context.Context, s timeline.Store) error { return s.Delete(c, author, id) }
	}
	message := func(id timeline.MessageID) func(context.Context, timeline.Store) error {
		return func(c context.Context, s timeline.Store) error { _, err := s.Message(c, id); return err }
	}
	followees := func(user timeline.UserID, q timeline.FollowQuery) func(context.Context, timeline.Store) error {
		return func(c context.Context, s timeline.Store) error { _, err := s.Followees(c, user, q); return err }
	}
	followers := func(user timeline.UserID, q timeline.FollowQuery) func(context.Context, timeline.Store) error {
		return func(c context.Context, s timeline.Store) error { _, err := s.Followers(c, user, q); return err }
	}
	follows := func(a, b timeline.UserID) func(context.Context, timeline.Store) error {
		return func(c context.Context, s timeline.Store) error { _, err := s.Follows(c, a, b); return err }
	}
	return []BadInput{
		{"post by user 0", postBody(0, "hi"), timeline.ErrInvalidUser, "author"},
		{"post by negative user", postBody(-5, "hi"), timeline.ErrInvalidUser, "author"},
		{"empty body", postBody(2, ""), timeline.ErrInvalidBody, "body"},
		{"281 characters", postBody(2, long), timeline.ErrInvalidBody, "body"},
		{"281 emoji", postBody(2, strings.Repeat("😀", timeline.MaxBodyChars+1)), timeline.ErrInvalidBody, "body"},
		{"invalid UTF-8", postBody(2, "ab\xff\xfe"), timeline.ErrInvalidBody, "body"},
		{"truncated UTF-8", postBody(2, "abc\xe6\x97"), timeline.ErrInvalidBody, "body"},
		{"blank body", postBody(2, "   "), timeline.ErrInvalidBody, "body"},
		{"blank body of tabs and newlines", postBody(2, " \t\r\n\u00a0\u3000"), timeline.ErrInvalidBody, "body"},
		{"NUL in the body", postBody(2, "NUL \x00 byte"), timeline.ErrInvalidBody, "body"},
		{"escape in the body", postBody(2, "red \x1b[31m text"), timeline.ErrInvalidBody, "body"},
		{"C1 control in the body", postBody(2, "next line \u0085 here"), timeline.ErrInvalidBody, "body"},
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
		{"timeline bad id cursor", read(1, timeline.Query{Before: "id.0"}), timeline.ErrInvalidCursor, "cursor"},
		{"timeline id cursor with a sign", read(1, timeline.Query{Before: "id.+5"}), timeline.ErrInvalidCursor, "cursor"},
		{"timeline bad since", read(1, timeline.Query{Since: "bogus"}), timeline.ErrInvalidCursor, "since"},
		{"timeline bad after", read(1, timeline.Query{After: "id.x"}), timeline.ErrInvalidCursor, "after"},
		{"timeline since and after", read(1, timeline.Query{Since: timeline.IDCursor(1), After: timeline.IDCursor(1)}), timeline.ErrInvalidCursor, "after"},
		{"own timeline of user 0", readAuthor(0, timeline.Query{}), timeline.ErrInvalidUser, "author"},
		{"own timeline limit 201", readAuthor(2, timeline.Query{Limit: timeline.MaxLimit + 1}), timeline.ErrInvalidLimit, "limit"},
		{"own timeline bad cursor", readAuthor(2, timeline.Query{Before: "bogus"}), timeline.ErrInvalidCursor, "cursor"},
		{"delete by user 0", del(0, 1), timeline.ErrInvalidUser, "author"},
		{"delete message 0", del(2, 0), timeline.ErrInvalidMessage, "id"},
		{"delete a negative id", del(2, -4), timeline.ErrInvalidMessage, "id"},
		{"message 0", message(0), timeline.ErrInvalidMessage, "id"},
		{"followees of user 0", followees(0, timeline.FollowQuery{}), timeline.ErrInvalidUser, "user"},
		{"followees after -1", followees(1, timeline.FollowQuery{After: -1}), timeline.ErrInvalidUser, "after"},
		{"followers limit 201", followers(1, timeline.FollowQuery{Limit: timeline.MaxLimit + 1}), timeline.ErrInvalidLimit, "limit"},
		{"followers of a negative user", followers(-2, timeline.FollowQuery{}), timeline.ErrInvalidUser, "user"},
		{"follows by user 0", follows(0, 1), timeline.ErrInvalidUser, "follower"},
		{"follows of user -1", follows(1, -1), timeline.ErrInvalidUser, "followee"},
	}
}
