package timelinetest

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/pushpull/pushpull/timeline"
)

// recorder is a testing.TB that records the first failure and ends the
// check's goroutine, so that a check can be run on a store built to fail
// it without failing the test that runs it.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failed   string
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == "" {
		r.failed = fmt.Sprintf(format, args...)
	}
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// failure runs check on s and returns what it failed with, "" if nothing.
func failure(t *testing.T, check func(testing.TB, timeline.Store), s timeline.Store) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r, s)
	}()
	<-done
	for _, f := range r.cleanups {
		f()
	}
	return r.failed
}

// staleCache keeps every user's newest page once read and serves it again,
// whatever is written since: a cache without invalidation.
type staleCache struct {
	*timeline.Memory
	mu    sync.Mutex
	pages map[timeline.UserID]timeline.Page
}

func (s *staleCache) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	if q != (timeline.Query{}) {
		return s.Memory.Timeline(ctx, user, q)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pages[user]; ok {
		return p, nil
	}
	p, err := s.Memory.Timeline(ctx, user, q)
	if err == nil {
		s.pages[user] = p
	}
	return p, err
}

// hiddenDelete deletes a message from its author's own timeline and from
// Message only, as a design that forgot its derived views would.
type hiddenDelete struct {
	*timeline.Memory
	mu      sync.Mutex
	deleted map[timeline.MessageID]bool
}

func (s *hiddenDelete) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	m, err := s.Memory.Message(ctx, id)
	if err != nil || m.Author != author {
		return timeline.ErrNotFound
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted[id] {
		return timeline.ErrNotFound
	}
	s.deleted[id] = true
	return nil
}

func (s *hiddenDelete) Message(ctx context.Context, id timeline.MessageID) (timeline.Message, error) {
	s.mu.Lock()
	gone := s.deleted[id]
	s.mu.Unlock()
	if gone {
		return timeline.Message{}, timeline.ErrNotFound
	}
	return s.Memory.Message(ctx, id)
}

func (s *hiddenDelete) AuthorTimeline(ctx context.Context, author timeline.UserID, q timeline.Query) (timeline.Page, error) {
	p, err := s.Memory.AuthorTimeline(ctx, author, q)
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := p.Messages[:0:0]
	for _, m := range p.Messages {
		if !s.deleted[m.ID] {
			kept = append(kept, m)
		}
	}
	p.Messages = kept
	return p, err
}

// sinceForAfter answers After as if it were Since: the newest messages
// above the bound instead of the oldest, which leaves a gap.
type sinceForAfter struct{ *timeline.Memory }

func (s sinceForAfter) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	if q.After != "" {
		q.Since, q.After = q.After, ""
	}
	return s.Memory.Timeline(ctx, user, q)
}

// TestSuiteCatchesBrokenStores: the checks of deletes, reads after writes
// and newer pages fail on stores broken in the way each is there to
// catch, and pass on the memory store.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	for _, c := range []struct {
		name  string
		check func(testing.TB, timeline.Store)
		store func() timeline.Store
	}{
		{"a page cache that is never invalidated", testReadAfterWarmWrite, func() timeline.Store {
			return &staleCache{Memory: timeline.NewMemory(), pages: map[timeline.UserID]timeline.Page{}}
		}},
		{"a delete that leaves followers' timelines alone", testDelete, func() timeline.Store {
			return &hiddenDelete{Memory: timeline.NewMemory(), deleted: map[timeline.MessageID]bool{}}
		}},
		{"After answered as Since", testNewerPages, func() timeline.Store { return sinceForAfter{timeline.NewMemory()} }},
		{"polling answered as Since", testPollingWhilePosting, func() timeline.Store { return sinceForAfter{timeline.NewMemory()} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.store()
			defer s.Close()
			if got := failure(t, c.check, s); got == "" {
				t.Fatal("the check passed on a broken store")
			} else {
				t.Logf("failed as it should: %s", got)
			}
			m := timeline.NewMemory()
			defer m.Close()
			if got := failure(t, c.check, m); got != "" {
				t.Fatalf("the check failed on the memory store: %s", got)
			}
		})
	}
}
