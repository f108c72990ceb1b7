package memcache

import (
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// SetInFlight makes every miss of s call f once it has started the read
// of its page from the wrapped store, or joined one in flight, before it
// waits for it. Set it before s is used.
func SetInFlight(s *Store, f func(user timeline.UserID)) { s.inFlight = f }

// SetClock makes s read the time of its TTL (when a read begins, when a
// fill read the wrapped store) from now. Set it before s is used.
func SetClock(s *Store, now func() time.Time) { s.now = now }
