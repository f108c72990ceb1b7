package pull

import (
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
