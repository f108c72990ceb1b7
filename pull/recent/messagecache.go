package recent

import "github.com/pushpull/pushpull/internal/directmap"

// DefaultMessageCache is how many messages a reader keeps in process
// unless Recent.MessageCache says otherwise: about 45 MB at the paper's
// body lengths.
const DefaultMessageCache = 1 << 18

// messageCache is the in-process cache of bodies (directmap.Messages):
// no list or index names a deleted message's id once the delete's hooks
// have run (State.Deleted), so no read asks for another process's copy of
// it.
type messageCache = directmap.Messages

// newMessageCache returns a cache of at least size slots, or nil for size
// <= 0.
func newMessageCache(size int) *messageCache { return directmap.NewMessages(size) }

// directMapped is the lock-free table the in-process caches are made of.
type directMapped[T any] = directmap.Table[T]

func newDirectMapped[T any](size int) directMapped[T] { return directmap.New[T](size) }
