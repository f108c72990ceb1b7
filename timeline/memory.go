package timeline

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// Memory is the in-memory reference Store: simple enough to be obviously
// right, so the tests use it as the oracle for the SQL stores, and free of
// dependencies, so a service can embed it. It is safe for concurrent use.
type Memory struct {
	codec *CursorCodec
	now   func() time.Time

	mu        sync.RWMutex
	closed    bool
	lastID    MessageID
	byAuthor  map[UserID][]Message // each author's messages, oldest first
	byID      map[MessageID]Message
	followees map[UserID]map[UserID]struct{}
	followers map[UserID]map[UserID]struct{}
}

var _ Store = (*Memory)(nil)

// MemoryModel is the in-memory store's model name in package registry.
const MemoryModel = "memory"

// NewMemory returns an empty in-memory store with a random cursor key.
func NewMemory() *Memory {
	codec, _ := NewCursorCodec(NewCursorKey())
	return &Memory{
		codec:     codec,
		now:       time.Now,
		byAuthor:  make(map[UserID][]Message),
		byID:      make(map[MessageID]Message),
		followees: make(map[UserID]map[UserID]struct{}),
		followers: make(map[UserID]map[UserID]struct{}),
	}
}

// begin checks ctx and the store before a call: it returns the lock to
// release, or an error.
func (m *Memory) begin(ctx context.Context, write bool) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if write {
		m.mu.Lock()
		unlock = m.mu.Unlock
	} else {
		m.mu.RLock()
		unlock = m.mu.RUnlock
	}
	if m.closed {
		unlock()
		return nil, errClosed
	}
	return unlock, nil
}

// Post implements Store.
func (m *Memory) Post(ctx context.Context, author UserID, body string) (Message, error) {
	if err := CheckPost(author, body); err != nil {
		return Message{}, err
	}
	unlock, err := m.begin(ctx, true)
	if err != nil {
		return Message{}, err
	}
	defer unlock()
	m.lastID++
	msg := Message{ID: m.lastID, Author: author, Body: body, CreatedAt: m.now().UTC()}
	m.byAuthor[author] = append(m.byAuthor[author], msg)
	m.byID[msg.ID] = msg
	return msg, nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, author UserID, id MessageID) error {
	if err := CheckDelete(author, id); err != nil {
		return err
	}
	unlock, err := m.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	if msg, ok := m.byID[id]; !ok || msg.Author != author {
		return ErrNotFound
	}
	delete(m.byID, id)
	msgs := m.byAuthor[author]
	i := sort.Search(len(msgs), func(i int) bool { return msgs[i].ID >= id })
	m.byAuthor[author] = slices.Delete(msgs, i, i+1)
	return nil
}

// Follow implements Store.
func (m *Memory) Follow(ctx context.Context, follower, followee UserID) error {
	if err := CheckFollow(follower, followee); err != nil {
		return err
	}
	unlock, err := m.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	add := func(sets map[UserID]map[UserID]struct{}, a, b UserID) {
		if sets[a] == nil {
			sets[a] = make(map[UserID]struct{})
		}
		sets[a][b] = struct{}{}
	}
	add(m.followees, follower, followee)
	add(m.followers, followee, follower)
	return nil
}

// Unfollow implements Store.
func (m *Memory) Unfollow(ctx context.Context, follower, followee UserID) error {
	if err := CheckFollow(follower, followee); err != nil {
		return err
	}
	unlock, err := m.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	delete(m.followees[follower], followee)
	delete(m.followers[followee], follower)
	return nil
}

// Timeline implements Store.
func (m *Memory) Timeline(ctx context.Context, user UserID, q Query) (Page, error) {
	return m.serve(ctx, "user", user, q, func(r Request) []Message {
		// Take at most Fetch() messages below the cursor from each
		// followee; the newest Fetch() of their union is the page (plus
		// one to look ahead).
		var out []Message
		for followee := range m.followees[user] {
			out = append(out, below(m.byAuthor[followee], r)...)
		}
		slices.SortFunc(out, func(a, b Message) int { return cmp.Compare(b.ID, a.ID) })
		return out[:min(len(out), r.Fetch())]
	})
}

// AuthorTimeline implements Store.
func (m *Memory) AuthorTimeline(ctx context.Context, author UserID, q Query) (Page, error) {
	return m.serve(ctx, "author", author, q, func(r Request) []Message {
		return below(m.byAuthor[author], r)
	})
}

// serve reads a timeline under the read lock with read.
func (m *Memory) serve(ctx context.Context, field string, owner UserID, q Query, read func(Request) []Message) (Page, error) {
	return m.codec.Serve(ctx, field, owner, q, func(ctx context.Context, r Request) ([]Message, error) {
		unlock, err := m.begin(ctx, false)
		if err != nil {
			return nil, err
		}
		defer unlock()
		return slices.Clip(read(r)), nil
	})
}

// below returns the newest r.Fetch() of msgs (oldest first) below
// r.Before, newest first, in a new slice.
func below(msgs []Message, r Request) []Message {
	end := len(msgs)
	if r.Before > 0 {
		end = sort.Search(len(msgs), func(i int) bool { return msgs[i].ID >= r.Before })
	}
	out := make([]Message, 0, min(end, r.Fetch()))
	for i := end - 1; i >= 0 && i >= end-r.Fetch(); i-- {
		out = append(out, msgs[i])
	}
	return out
}

// Message implements Store.
func (m *Memory) Message(ctx context.Context, id MessageID) (Message, error) {
	if err := CheckMessageID(id); err != nil {
		return Message{}, err
	}
	unlock, err := m.begin(ctx, false)
	if err != nil {
		return Message{}, err
	}
	defer unlock()
	msg, ok := m.byID[id]
	if !ok {
		return Message{}, ErrNotFound
	}
	return msg, nil
}

// Followees implements Store.
func (m *Memory) Followees(ctx context.Context, user UserID, q FollowQuery) (FollowPage, error) {
	return m.follows(ctx, m.followees, user, q)
}

// Followers implements Store.
func (m *Memory) Followers(ctx context.Context, user UserID, q FollowQuery) (FollowPage, error) {
	return m.follows(ctx, m.followers, user, q)
}

func (m *Memory) follows(ctx context.Context, sets map[UserID]map[UserID]struct{}, user UserID, q FollowQuery) (FollowPage, error) {
	limit, err := CheckFollowQuery(user, q)
	if err != nil {
		return FollowPage{}, err
	}
	unlock, err := m.begin(ctx, false)
	if err != nil {
		return FollowPage{}, err
	}
	defer unlock()
	users := slices.Sorted(maps.Keys(sets[user]))
	i, _ := slices.BinarySearch(users, q.After+1)
	return MakeFollowPage(limit, slices.Clip(users[i:min(len(users), i+limit+1)])), nil
}

// Follows implements Store.
func (m *Memory) Follows(ctx context.Context, follower, followee UserID) (bool, error) {
	if err := CheckFollows(follower, followee); err != nil {
		return false, err
	}
	unlock, err := m.begin(ctx, false)
	if err != nil {
		return false, err
	}
	defer unlock()
	_, ok := m.followees[follower][followee]
	return ok, nil
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}
