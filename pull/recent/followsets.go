package recent

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/timeline"
)

// DefaultFolloweeCache is how many users' followee lists a reader keeps
// in process unless Recent.FolloweeCache says otherwise.
const DefaultFolloweeCache = 1 << 16

// followSets keeps users' followee lists in this process, so that a
// Recent read needs no database query to learn whom to merge: its
// one multi-get fetches the authors' lists together with the user's follow
// token, and the token says whether the cached followees are still the
// user's.
//
// The token is a random value in memcached (key prefix + "f" + user) that
// every follow and unfollow replaces after its database write commits
// (followsChanged). A followee list is cached together with the token read
// before the database read that produced it, so:
//
//   - if the token is unchanged at a later read, no follow or unfollow
//     has returned since that database read: the list is current;
//   - a follow that commits while a list is being read replaces the token
//     after the commit, so that list, whatever it holds, is reloaded at
//     the next read;
//   - a token that memcached lost is a mismatch too: the reader adds a
//     fresh one (Add, so that racing readers agree on one) and reloads.
//
// The one gap is a follow whose token could not be replaced because
// memcached failed: this process forgets the user's list at once, and the
// others reload theirs once it is older than recentMaxAge, the same bound
// as for an author's list that a post could not reach.
//
// The table is direct-mapped by user id (directMapped): a collision costs
// a reload, never a wrong answer.
type followSets struct{ directMapped[followSet] }

// followSet is one user's followees as of token; immutable once stored.
type followSet struct {
	user      timeline.UserID
	token     string
	followees []timeline.UserID
	sorted    []timeline.UserID // followees in ascending order, for lookups
	keys      []string          // memcached keys: the followees' lists, then the token
	loadedAt  time.Time
}

// newFollowSets returns a cache of at least size slots (rounded up to a
// power of two), or nil for size <= 0.
func newFollowSets(size int) *followSets {
	if size <= 0 {
		return nil
	}
	return &followSets{newDirectMapped[followSet](size)}
}

// get returns user's cached followees, unless they are missing or older
// than recentMaxAge.
func (c *followSets) get(user timeline.UserID, now time.Time) *followSet {
	if c == nil {
		return nil
	}
	fs := c.Slot(uint64(user)).Load()
	if fs == nil || fs.user != user || now.Sub(fs.loadedAt) > recentMaxAge {
		return nil
	}
	return fs
}

func (c *followSets) put(fs *followSet) {
	if c == nil {
		return
	}
	c.Slot(uint64(fs.user)).Store(fs)
}

// forget drops user's followees, so that this process reloads them.
func (c *followSets) forget(user timeline.UserID) {
	if c == nil {
		return
	}
	slot := c.Slot(uint64(user))
	if fs := slot.Load(); fs != nil && fs.user == user {
		slot.CompareAndSwap(fs, nil)
	}
}

// followKey is the memcached key of user's follow token.
func (st *State) followKey(user timeline.UserID) string {
	return st.prefix + "f" + strconv.FormatInt(int64(user), 10)
}

// newToken returns a follow token: 16 random hex digits, so that two
// tokens ever set for one user practically never collide.
func newToken() []byte {
	return strconv.AppendUint(make([]byte, 0, 16), rand.Uint64()|1<<63, 16)
}

// followsChanged tells every store that user's followees changed: it
// replaces the user's follow token. Called after the database write, and
// also after a failed one, which may have committed all the same.
func (st *State) followsChanged(ctx context.Context, user timeline.UserID) {
	st.follows.forget(user)
	key := st.followKey(user)
	err := st.mc.Set(ctx, &memcached.Item{Key: key, Value: newToken()})
	if err == nil {
		return
	}
	st.cacheFailed(ctx)
	// A deleted token works as well as a new one (readers add a fresh
	// one), if memcached takes that.
	if err := st.mc.Delete(ctx, key); err != nil && !errors.Is(err, memcached.ErrCacheMiss) {
		st.cacheFailed(ctx)
	}
}

// followToken returns user's current follow token, adding one if memcached
// has none.
func (st *State) followToken(ctx context.Context, user timeline.UserID) (string, error) {
	key := st.followKey(user)
	for range 3 {
		it, err := st.mc.GetOne(ctx, key)
		if err == nil {
			return string(it.Value), nil
		}
		if !errors.Is(err, memcached.ErrCacheMiss) {
			return "", err
		}
		tok := newToken()
		switch err := st.mc.Add(ctx, &memcached.Item{Key: key, Value: tok}); {
		case err == nil:
			return string(tok), nil
		case !errors.Is(err, memcached.ErrNotStored):
			return "", err
		}
		// Another reader or a follow set one first: read it.
	}
	return "", errors.New("follow token keeps vanishing")
}
