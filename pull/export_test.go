package pull

import (
	"context"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/timeline"
)

// RecentKey returns the memcached key of author's list, for tests that
// damage it.
func (s *Store) RecentKey(author timeline.UserID) string { return s.hooks.ListKey(author) }

// EncodeList lets tests forge lists that pass the checksum.
var EncodeList = recent.EncodeList

// FollowKey returns the memcached key of user's follow token.
func (s *Store) FollowKey(user timeline.UserID) string { return s.hooks.FollowKey(user) }

// IndexKey returns the memcached key of user's recently-active index.
func (s *Store) IndexKey(user timeline.UserID) string { return s.hooks.IndexKey(user) }

// EncodeHint lets tests forge the hint a post appends to an index.
var EncodeHint = recent.EncodeHint

// TargetsKey returns the memcached key of author's hint targets.
func (s *Store) TargetsKey(author timeline.UserID) string { return s.hooks.TargetsKey(author) }

// RawMemcache returns a client for the store's memcached keys, fenced as
// the store's own (see internal/memcached), with the calls tests use to
// delete, garble or forge them.
func (s *Store) RawMemcache(t testing.TB, servers ...string) RawMC {
	t.Helper()
	c, err := memcached.New(t.Context(), memcached.Options{Servers: servers, Prefix: s.hooks.KeyPrefix(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return RawMC{c}
}

// RawMC is RawMemcache's client, with gomemcache's signatures.
type RawMC struct{ c *memcached.Client }

func (r RawMC) Get(key string) (*memcache.Item, error) {
	return r.c.GetOne(context.Background(), key)
}
func (r RawMC) Set(it *memcache.Item) error { return r.c.Set(context.Background(), it) }
func (r RawMC) Delete(key string) error     { return r.c.Delete(context.Background(), key) }
func (r RawMC) Append(it *memcache.Item) error {
	return r.c.Append(context.Background(), []*memcache.Item{it})[0]
}
func (r RawMC) Close() error { return nil }
