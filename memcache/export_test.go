package memcache

import "github.com/pushpull/pushpull/timeline"

// SetInFlight makes every miss of s call f once it has started the read
// of its page from the wrapped store, or joined one in flight, before it
// waits for it. Set it before s is used.
func SetInFlight(s *Store, f func(user timeline.UserID)) { s.inFlight = f }
