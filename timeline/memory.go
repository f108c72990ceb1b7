package timeline

import (
	"cmp"
	"context"
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
	followees map[UserID]map[UserID]struct{}
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
		followees: make(map[UserID]map[UserID]struct{}),
	}
}

// Post implements Store.
func (m *Memory) Post(ctx context.Context, author UserID, body string) (Message, error) {
	if err := CheckPost(author, body); err != nil {
		return Message{}, err
	}
	if err := ctx.Err(); err != nil {
		return Message{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Message{}, errClosed
	}
	m.lastID++
	msg := Message{ID: m.lastID, Author: author, Body: body, CreatedAt: m.now().UTC()}
	m.byAuthor[author] = append(m.byAuthor[author], msg)
	return msg, nil
}

// Follow implements Store.
func (m *Memory) Follow(ctx context.Context, follower, followee UserID) error {
	if err := CheckFollow(follower, followee); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	set := m.followees[follower]
	if set == nil {
		set = make(map[UserID]struct{})
		m.followees[follower] = set
	}
	set[followee] = struct{}{}
	return nil
}

// Unfollow implements Store.
func (m *Memory) Unfollow(ctx context.Context, follower, followee UserID) error {
	if err := CheckFollow(follower, followee); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	delete(m.followees[follower], followee)
	return nil
}

// Timeline implements Store.
func (m *Memory) Timeline(ctx context.Context, user UserID, q Query) (Page, error) {
	r, err := m.codec.ParseQuery(user, q)
	if err != nil {
		return Page{}, err
	}
	if err := ctx.Err(); err != nil {
		return Page{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return Page{}, errClosed
	}
	// Take at most Fetch() messages below the cursor from each followee;
	// the newest Fetch() of their union is the page (plus one to look
	// ahead).
	var out []Message
	for followee := range m.followees[user] {
		msgs := m.byAuthor[followee]
		end := len(msgs)
		if r.Before > 0 {
			end = sort.Search(len(msgs), func(i int) bool { return msgs[i].ID >= r.Before })
		}
		for i := end - 1; i >= 0 && i >= end-r.Fetch(); i-- {
			out = append(out, msgs[i])
		}
	}
	slices.SortFunc(out, func(a, b Message) int { return cmp.Compare(b.ID, a.ID) })
	if len(out) > r.Fetch() {
		out = out[:r.Fetch()]
	}
	return m.codec.MakePage(r, slices.Clip(out)), nil
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}
