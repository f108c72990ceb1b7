package reconciletest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// hangingStore never answers a post or a follow, whatever its context
// says, until released.
type hangingStore struct {
	timeline.Store
	release chan struct{}
}

func (h hangingStore) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	<-h.release
	return timeline.Message{}, context.Canceled
}

func (h hangingStore) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	<-h.release
	return context.Canceled
}

// within fails t unless f returns within limit.
func within(t *testing.T, limit time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not return within %v", what, limit)
	}
}

// A walk that waits for writes of a traffic whose context has ended (the
// test's deadline) returns, and the traffic reports why it stopped.
func TestAwaitEndedTraffic(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tr := startTraffic(ctx, timeline.NewMemory(), false)
	within(t, 10*time.Second, "the first await", func() { tr.await(2) })
	cancel()
	within(t, 10*time.Second, "an await after the traffic's context ended", func() { tr.await(2) })
	if _, err := tr.failure(); err == nil || !strings.Contains(err.Error(), "traffic ended") {
		t.Errorf("failure after the context ended: %v, want the traffic ended", err)
	}
}

// A walk that waits for a write that never returns gives up after
// awaitLimit, and says so.
func TestAwaitHangingStore(t *testing.T) {
	h := hangingStore{Store: timeline.NewMemory(), release: make(chan struct{})}
	defer close(h.release)
	defer func(l time.Duration) { awaitLimit = l }(awaitLimit)
	awaitLimit = 200 * time.Millisecond
	tr := startTraffic(context.Background(), h, false)
	within(t, 10*time.Second, "an await on a store that hangs", func() { tr.await(2) })
	stacks, err := tr.failure()
	if err == nil || !strings.Contains(err.Error(), "no write") {
		t.Errorf("failure on a hanging store: %v, want no write within the limit", err)
	}
	if !strings.Contains(string(stacks), "hangingStore") {
		t.Errorf("the stacks kept at the stall do not show the hanging write:\n%.2000s", stacks)
	}
	tr.cancel()
}
