package timelinetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/timeline"
)

// The checks of the operations beyond posting, following and reading a
// home timeline: deletes, an author's own timeline, messages by id, the
// follow lists, pages newer than a cursor, and reads after writes on a
// warm store.

// Delete deletes author's message id.
func Delete(t testing.TB, s timeline.Store, author timeline.UserID, id timeline.MessageID) {
	t.Helper()
	if err := s.Delete(Context(t), author, id); err != nil {
		t.Fatalf("Delete(%d, %d): %v", author, id, err)
	}
}

// AuthorPage settles s and reads one page of author's own timeline,
// checking that it is newest first.
func AuthorPage(t testing.TB, s timeline.Store, author timeline.UserID, q timeline.Query) timeline.Page {
	t.Helper()
	Settle(t, s)
	p, err := s.AuthorTimeline(Context(t), author, q)
	if err != nil {
		t.Fatalf("AuthorTimeline(%d, %+v): %v", author, q, err)
	}
	checkOrder(t, p.Messages)
	return p
}

// WalkAuthor reads author's whole own timeline in pages of limit.
func WalkAuthor(t testing.TB, s timeline.Store, author timeline.UserID, limit int) []timeline.MessageID {
	t.Helper()
	var all []timeline.MessageID
	q := timeline.Query{Limit: limit}
	for range 100000 {
		p := AuthorPage(t, s, author, q)
		all = append(all, IDs(p.Messages)...)
		if p.Next == "" {
			return all
		}
		q.Before = p.Next
	}
	t.Fatalf("the own timeline of %d does not end", author)
	return nil
}

// FollowList reads the whole of a follow list (s.Followees or s.Followers)
// of user in pages of limit.
func FollowList(t testing.TB, list func(timeline.UserID, timeline.FollowQuery) (timeline.FollowPage, error), user timeline.UserID, limit int) []timeline.UserID {
	t.Helper()
	var all []timeline.UserID
	q := timeline.FollowQuery{Limit: limit}
	for range 100000 {
		p, err := list(user, q)
		if err != nil {
			t.Fatalf("follow list of %d after %d: %v", user, q.After, err)
		}
		if len(p.Users) > max(limit, 1) && limit > 0 {
			t.Fatalf("follow list page of %d users, limit %d", len(p.Users), limit)
		}
		all = append(all, p.Users...)
		if p.Next == 0 {
			if !slices.IsSorted(all) {
				t.Fatalf("follow list of %d not ascending: %v", user, all)
			}
			return all
		}
		q.After = p.Next
	}
	t.Fatalf("the follow list of %d does not end", user)
	return nil
}

func testDelete(t testing.TB, s timeline.Store) {
	Follow(t, s, 1, 2)
	ms := PostN(t, s, 2, 4)
	other := Post(t, s, 3, "by another author")
	Follow(t, s, 1, 3)
	Delete(t, s, 2, ms[1].ID)
	if got, want := WalkIDs(t, s, 1, 2), NewestFirst([]timeline.Message{ms[0], ms[2], ms[3], other}); !slices.Equal(got, want) {
		t.Fatalf("timeline after a delete: got %v, want %v", got, want)
	}
	if got, want := WalkAuthor(t, s, 2, 2), NewestFirst([]timeline.Message{ms[0], ms[2], ms[3]}); !slices.Equal(got, want) {
		t.Fatalf("own timeline after a delete: got %v, want %v", got, want)
	}
	if _, err := s.Message(Context(t), ms[1].ID); !errors.Is(err, timeline.ErrNotFound) {
		t.Fatalf("Message of a deleted message: %v, want ErrNotFound", err)
	}
	for _, c := range []struct {
		what   string
		author timeline.UserID
		id     timeline.MessageID
	}{
		{"the same delete again", 2, ms[1].ID},
		{"another author's message", 3, ms[0].ID},
		{"a message that never was", 2, other.ID + 1000},
	} {
		if err := s.Delete(Context(t), c.author, c.id); !errors.Is(err, timeline.ErrNotFound) {
			t.Fatalf("delete of %s: %v, want ErrNotFound", c.what, err)
		}
	}
	// A follow made after the delete, and one made again, do not bring it
	// back.
	Follow(t, s, 4, 2)
	Unfollow(t, s, 1, 2)
	Follow(t, s, 1, 2)
	want := NewestFirst([]timeline.Message{ms[0], ms[2], ms[3]})
	if got := WalkIDs(t, s, 4, 0); !slices.Equal(got, want) {
		t.Fatalf("timeline of a follower who came after the delete: got %v, want %v", got, want)
	}
	if got := WalkIDs(t, s, 1, 0); !slices.Equal(got, NewestFirst([]timeline.Message{ms[0], ms[2], ms[3], other})) {
		t.Fatalf("timeline after unfollowing and following again: %v", got)
	}
	// Every message of an author can go.
	for _, m := range []timeline.Message{ms[0], ms[2], ms[3]} {
		Delete(t, s, 2, m.ID)
	}
	if got := WalkIDs(t, s, 4, 0); len(got) != 0 {
		t.Fatalf("timeline after every message was deleted: %v", got)
	}
	if p := AuthorPage(t, s, 2, timeline.Query{}); len(p.Messages) != 0 || p.Next != "" {
		t.Fatalf("own timeline after every message was deleted: %+v", p)
	}
}

func testAuthorTimeline(t testing.TB, s timeline.Store) {
	if p := AuthorPage(t, s, 2, timeline.Query{}); len(p.Messages) != 0 || p.Next != "" || p.Prev != "" {
		t.Fatalf("own timeline of an author who never posted: %+v", p)
	}
	a := PostN(t, s, 2, 5)
	b := PostN(t, s, 3, 3)
	Follow(t, s, 2, 3) // an author's own timeline holds none of their followees'
	if got, want := WalkAuthor(t, s, 2, 2), NewestFirst(a); !slices.Equal(got, want) {
		t.Fatalf("own timeline of 2: got %v, want %v", got, want)
	}
	if got, want := WalkAuthor(t, s, 3, 0), NewestFirst(b); !slices.Equal(got, want) {
		t.Fatalf("own timeline of 3: got %v, want %v", got, want)
	}
	p := AuthorPage(t, s, 2, timeline.Query{Limit: 2})
	for i, m := range p.Messages {
		if !SameMessage(m, a[len(a)-1-i]) {
			t.Fatalf("own timeline message %d: %+v, want %+v", i, m, a[len(a)-1-i])
		}
	}
	// Paging newer works on it as on a home timeline.
	q := timeline.Query{Limit: 2, After: timeline.IDCursor(a[1].ID)}
	if got := AuthorPage(t, s, 2, q); !slices.Equal(IDs(got.Messages), []timeline.MessageID{a[3].ID, a[2].ID}) {
		t.Fatalf("own timeline after %d: %v", a[1].ID, IDs(got.Messages))
	}
	// A cursor of the author's own timeline continues it; one of another
	// timeline (a home timeline's) is refused.
	Follow(t, s, 4, 2)
	home := Page(t, s, 4, timeline.Query{Limit: 1})
	if _, err := s.AuthorTimeline(Context(t), 2, timeline.Query{Before: home.Next}); !errors.Is(err, timeline.ErrInvalidCursor) {
		t.Fatalf("another timeline's cursor: %v, want ErrInvalidCursor", err)
	}
}

func testMessageByID(t testing.TB, s timeline.Store) {
	m := Post(t, s, 2, "find me")
	PostN(t, s, 3, 2)
	got, err := s.Message(Context(t), m.ID)
	if err != nil {
		t.Fatalf("Message(%d): %v", m.ID, err)
	}
	if !SameMessage(got, m) {
		t.Fatalf("Message(%d) = %+v, want %+v", m.ID, got, m)
	}
	if _, err := s.Message(Context(t), m.ID+1000); !errors.Is(err, timeline.ErrNotFound) {
		t.Fatalf("Message of an id never used: %v, want ErrNotFound", err)
	}
}

func testFollowLists(t testing.TB, s timeline.Store) {
	ctx := Context(t)
	for _, b := range []timeline.UserID{9, 3, 5, 7} {
		Follow(t, s, 1, b)
	}
	Follow(t, s, 4, 5)
	Follow(t, s, 6, 5)
	Follow(t, s, 1, 3) // again: still one follow
	Settle(t, s)
	if got := FollowList(t, func(u timeline.UserID, q timeline.FollowQuery) (timeline.FollowPage, error) {
		return s.Followees(ctx, u, q)
	}, 1, 3); !slices.Equal(got, []timeline.UserID{3, 5, 7, 9}) {
		t.Fatalf("followees of 1 in pages of 3: %v", got)
	}
	followers := func(u timeline.UserID, q timeline.FollowQuery) (timeline.FollowPage, error) {
		return s.Followers(ctx, u, q)
	}
	if got := FollowList(t, followers, 5, 1); !slices.Equal(got, []timeline.UserID{1, 4, 6}) {
		t.Fatalf("followers of 5 in pages of 1: %v", got)
	}
	if got := FollowList(t, followers, 2, 0); len(got) != 0 {
		t.Fatalf("followers of 2, whom nobody follows: %v", got)
	}
	p, err := s.Followees(ctx, 1, timeline.FollowQuery{Limit: 2, After: 5})
	if err != nil || !slices.Equal(p.Users, []timeline.UserID{7, 9}) || p.Next != 0 {
		t.Fatalf("followees of 1 after 5: %+v, %v; want [7 9] and the end", p, err)
	}
	Unfollow(t, s, 4, 5)
	Settle(t, s)
	if got := FollowList(t, followers, 5, 0); !slices.Equal(got, []timeline.UserID{1, 6}) {
		t.Fatalf("followers of 5 after an unfollow: %v", got)
	}
	for _, c := range []struct {
		a, b timeline.UserID
		want bool
	}{{1, 5, true}, {5, 1, false}, {4, 5, false}, {1, 1, false}, {1, 2, false}} {
		if got, err := s.Follows(ctx, c.a, c.b); err != nil || got != c.want {
			t.Fatalf("Follows(%d, %d) = %v, %v; want %v", c.a, c.b, got, err, c.want)
		}
	}
}

func testNewerPages(t testing.TB, s timeline.Store) {
	Follow(t, s, 1, 2)
	ms := PostN(t, s, 2, 10) // ms[0] oldest
	id := func(i int) timeline.MessageID { return ms[i].ID }
	ids := func(is ...int) []timeline.MessageID {
		out := make([]timeline.MessageID, len(is))
		for k, i := range is {
			out[k] = id(i)
		}
		return out
	}
	// After: the oldest Limit above the bound, newest first, then on up
	// by Prev, with no gap.
	p := Page(t, s, 1, timeline.Query{Limit: 3, After: timeline.IDCursor(id(2))})
	wantIDs(t, "after message 2", p.Messages, ids(5, 4, 3))
	if p.Next == "" || p.Prev == "" {
		t.Fatalf("after message 2: Next %q, Prev %q; want both", p.Next, p.Prev)
	}
	wantIDs(t, "the page older than it", Page(t, s, 1, timeline.Query{Limit: 3, Before: p.Next}).Messages, ids(2, 1, 0))
	p = Page(t, s, 1, timeline.Query{Limit: 3, After: p.Prev})
	wantIDs(t, "after message 5", p.Messages, ids(8, 7, 6))
	p = Page(t, s, 1, timeline.Query{Limit: 3, After: p.Prev})
	wantIDs(t, "after message 8", p.Messages, ids(9))
	top := Page(t, s, 1, timeline.Query{Limit: 3, After: p.Prev})
	if len(top.Messages) != 0 || top.Prev != "" || top.Next != "" {
		t.Fatalf("after the newest message: %+v, want an empty page without cursors", top)
	}
	// Since: the newest Limit above the bound.
	p = Page(t, s, 1, timeline.Query{Limit: 3, Since: timeline.IDCursor(id(2))})
	wantIDs(t, "since message 2", p.Messages, ids(9, 8, 7))
	if p.Next == "" {
		t.Fatal("since message 2: no Next, though older messages remain")
	}
	// Both bounds.
	p = Page(t, s, 1, timeline.Query{Limit: 10, Before: timeline.IDCursor(id(8)), Since: timeline.IDCursor(id(3))})
	wantIDs(t, "between messages 3 and 8", p.Messages, ids(7, 6, 5, 4))
	p = Page(t, s, 1, timeline.Query{Limit: 2, Before: timeline.IDCursor(id(8)), After: timeline.IDCursor(id(3))})
	wantIDs(t, "the oldest two between messages 3 and 8", p.Messages, ids(5, 4))
	p = Page(t, s, 1, timeline.Query{Before: timeline.IDCursor(id(4)), After: timeline.IDCursor(id(3))})
	if len(p.Messages) != 0 {
		t.Fatalf("between adjacent messages: %v", IDs(p.Messages))
	}
	// An id cursor pages down like Next.
	wantIDs(t, "before message 3", Page(t, s, 1, timeline.Query{Before: timeline.IDCursor(id(3))}).Messages, ids(2, 1, 0))
	// The newest page's Prev polls for what comes after it.
	newest := Newest(t, s, 1)
	more := PostN(t, s, 2, 2)
	p = Page(t, s, 1, timeline.Query{After: newest.Prev})
	wantIDs(t, "after the newest page", p.Messages, NewestFirst(more))
}

// testPollingWhilePosting: a reader who polls by Prev while a followee
// posts sees every post once, in order, none skipped.
func testPollingWhilePosting(t testing.TB, s timeline.Store) {
	Follow(t, s, 1, 2)
	PostN(t, s, 2, 3)
	prev := Newest(t, s, 1).Prev
	var want, seen []timeline.MessageID
	for round := range 5 {
		for range round + 1 {
			want = append(want, Post(t, s, 2, fmt.Sprintf("round %d", round)).ID)
		}
		for {
			p := Page(t, s, 1, timeline.Query{Limit: 2, After: prev})
			if len(p.Messages) == 0 {
				break
			}
			got := IDs(p.Messages)
			slices.Reverse(got)
			seen = append(seen, got...)
			prev = p.Prev
		}
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("polled %v, want every post once in order: %v", seen, want)
	}
}

// testReadAfterWarmWrite: each write changes the newest page that was
// just read (and so is warm in any cache the store keeps) as the contract
// says, on the read after it.
func testReadAfterWarmWrite(t testing.TB, s timeline.Store) {
	warm := func() {
		t.Helper()
		for range 2 {
			Newest(t, s, 1)
		}
	}
	Follow(t, s, 1, 2)
	a := PostN(t, s, 2, 2)
	b := PostN(t, s, 3, 2)
	warm()
	c := Post(t, s, 2, "after a warm read")
	wantIDs(t, "newest page after a followee posted", Newest(t, s, 1).Messages, NewestFirst(a, []timeline.Message{c}))
	warm()
	Follow(t, s, 1, 3)
	wantIDs(t, "newest page after a follow", Newest(t, s, 1).Messages, NewestFirst(a, b, []timeline.Message{c}))
	warm()
	Unfollow(t, s, 1, 2)
	wantIDs(t, "newest page after an unfollow", Newest(t, s, 1).Messages, NewestFirst(b))
	warm()
	Delete(t, s, 3, b[1].ID)
	wantIDs(t, "newest page after a followee's delete", Newest(t, s, 1).Messages, NewestFirst(b[:1]))
	// Another reader's warm page is not the one that changed.
	Follow(t, s, 4, 3)
	for range 2 {
		Newest(t, s, 4)
	}
	d := Post(t, s, 3, "for both")
	wantIDs(t, "the other reader's page", Newest(t, s, 4).Messages, NewestFirst(b[:1], []timeline.Message{d}))
}
