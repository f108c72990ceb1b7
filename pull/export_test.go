package pull

import "github.com/pushpull/pushpull/timeline"

// RecentKey returns the memcached key of author's list, for tests that
// damage it.
func (s *Store) RecentKey(author timeline.UserID) string { return s.recent.key(author) }

// EncodeList lets tests forge lists that pass the checksum.
func EncodeList(key string, ids []uint64, complete bool, builtAt int64) []byte {
	return encodeList(key, ids, complete, builtAt)
}

// FollowKey returns the memcached key of user's follow token.
func (s *Store) FollowKey(user timeline.UserID) string { return s.recent.followKey(user) }

// IndexKey returns the memcached key of user's recently-active index.
func (s *Store) IndexKey(user timeline.UserID) string { return s.recent.indexKey(user) }

// EncodeHint lets tests forge the hint a post appends to an index.
func EncodeHint(key string, author timeline.UserID, id uint64) []byte {
	return encodeHint(key, author, id)
}

// TargetsKey returns the memcached key of author's hint targets.
func (s *Store) TargetsKey(author timeline.UserID) string { return s.recent.targetsKey(author) }
