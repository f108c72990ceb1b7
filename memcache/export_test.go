package memcache

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/timeline"
)

// SetInFlight makes every miss of s call f once it has started the read
// of its page from the wrapped store, or joined one in flight, before it
// waits for it. Set it before s is used.
func SetInFlight(s *Store, f func(user timeline.UserID)) { s.inFlight = f }

// SetClock makes s read the time of its TTL (when a read begins, when a
// fill read the wrapped store) from now. Set it before s is used.
func SetClock(s *Store, now func() time.Time) { s.now = now }

// PoisonPage rewrites user's cached page without its message at index i,
// under the generation it carries, so that it stays current.
func PoisonPage(ctx context.Context, s *Store, user timeline.UserID, i int) error {
	items, err := s.mc.Get(ctx, []string{s.pageKey(user)})
	if err != nil {
		return err
	}
	if items[0] == nil {
		return fmt.Errorf("no page of user %d", user)
	}
	e, err := decodeEntry(items[0].Value)
	if err != nil {
		return err
	}
	e.page.Messages = slices.Delete(e.page.Messages, i, i+1)
	v, err := appendEntry(nil, &e)
	if err != nil {
		return err
	}
	return s.mc.Set(ctx, &memcached.Item{Key: s.pageKey(user), Value: v})
}
