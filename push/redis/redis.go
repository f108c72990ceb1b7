// Package redis is push-redis: the push model with each home feed kept in
// Redis as a list of message ids, newest first, capped as Mastodon's
// FeedManager caps its sorted sets (and as Twitter kept its timelines in
// Redis lists), beside MariaDB, which stays the system of record.
package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushpull/pushpull/internal/directmap"
	"github.com/pushpull/pushpull/internal/mckey"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
)

// ModelName is the model's name in package registry.
const ModelName = "push-redis"

// DefaultDatabase is the database the model uses unless told otherwise.
const DefaultDatabase = "pushpull_push_redis"

// Defaults and bounds of Config.
const (
	// DefaultCap is Config.Cap's default: Mastodon and Twitter keep about
	// 800 entries of a home feed.
	DefaultCap = 800
	// MaxCap bounds Config.Cap.
	MaxCap = 100_000
	// DefaultWindow is Config.Window's default: Mastodon keeps the home
	// feeds of users active within the last 7 days.
	DefaultWindow = 7 * 24 * time.Hour
	// MaxWindow bounds Config.Window.
	MaxWindow = 100 * 365 * 24 * time.Hour
	// DefaultMessageCache is how many messages a store keeps in process
	// for its pages' bodies unless Config.MessageCache says otherwise.
	DefaultMessageCache = 1 << 18
)

// fanOutChunk is how many followers one script call of a post's fan-out
// writes at most; the calls of one post go out in one pipeline.
const fanOutChunk = 1000

// tombstoneTTL is how long a delete's and an unfollow's tombstones live:
// far longer than a write's Redis calls may take (each is bounded by the
// client's timeout), and a write that failed is covered by the fence.
const tombstoneTTL = 10 * time.Minute

// Config says where the store lives.
type Config struct {
	// DSN is a go-sql-driver DSN of the MariaDB server; its database
	// name is ignored.
	DSN string
	// Database holds the messages and follows (pull's tables); ""
	// means DefaultDatabase.
	Database string
	// MaxConns caps the connection pool; 0 means 64.
	MaxConns int
	// Force applies the schema even to a database holding other tables.
	Force bool
	// Redis is the redis-server, "host:port".
	Redis string
	// Namespace prefixes the Redis keys (printable ASCII, no spaces), so
	// that stores on different databases, or tests, can share a server.
	// Stores that write to one database must share it.
	Namespace string
	// Cap is how many ids a feed keeps (the newest); 0 means DefaultCap.
	// A feed is trimmed back to Cap once it holds Cap/8 more.
	Cap int
	// Window is how long a feed lives after its reader's last read; 0
	// means DefaultWindow. Posts reach only the feeds that live: those
	// of the followers who read within the window. It is kept to the
	// second.
	Window time.Duration
	// MessageCache is how many messages are kept in process for the
	// pages' bodies; 0 means DefaultMessageCache, a negative number none.
	MessageCache int
	// Timeout bounds each Redis call; 0 means redisx.DefaultTimeout.
	Timeout time.Duration
	// Drowning is what posts and reads do for the readers who follow far
	// more authors than anyone else, as for push (push.Drowning): under
	// push.DrowningPull a post adds its id to no feed of theirs and their
	// pages are read by pull from MariaDB; under push.DrowningLossy a
	// post reaches their feed when push.LossyKeeps keeps it. The zero
	// value treats them as everyone else. With it on, the database gets
	// push's drowning_readers table.
	Drowning push.Drowning
}

// Store is push-redis. It implements timeline.Store: writes and the
// reads of the record are pull's (the pull store with its merge, which
// also serves every page Redis cannot), and each write then keeps the
// feeds in Redis current.
//
// # Feeds
//
// A user's feed is a Redis list of message ids, newest first, each once,
// ending in a sentinel that says what the feed holds: a floor F >= 0 (the
// feed holds every id of the timeline above F, and trimming raises F), or
// minus a token while a rebuild builds it. A feed exists only for a user
// who read within Window: a read refreshes its TTL, and a post adds its
// id to the feeds that exist, so a post costs Redis work only for its
// active readers (Mastodon's 7-day rule). A post's id is pushed before
// the feed's head (two commands a follower, in constant time), or, when
// it reached Redis after a newer post, put in its place by a scan from
// the head. A page is one LRANGE from the head or from the cursor's
// place (found among the first 64 ids, else by a binary search) above
// the floor; what lies at or below the floor comes from pull's merge;
// the bodies come from the in-process message cache, or by primary key.
//
// A list, not the sorted set Mastodon uses: a sorted set small enough to
// be kept compact (a listpack, 7 bytes an id against about 90 in a
// skiplist) is scanned whole by every ZADD, so that a post cost 13 µs of
// Redis CPU a follower with feeds of 800 ids (BenchmarkFanOut); a list
// takes the id at its head in 1.4 µs, is as compact (4 to 6 bytes an id),
// and is written whole by a rebuild in one RPUSH (docs/designs.md).
//
// A read that finds no feed (the user was idle, Redis lost it, or the
// epoch changed) rebuilds it, synchronously: it starts the build (the
// sentinel becomes -token, the feed empty), reads the newest Cap+1
// entries of the timeline with pull's merge, and completes the feed with
// them (the floor is the (Cap+1)-th), only if the sentinel still holds
// its token. The page is served from that read, so it is exact whether
// the feed was stored or not.
//
// # Races
//
// Every change to a feed is one Lua script, so Redis applies it whole.
// Writes change MariaDB first and Redis after it:
//
//   - A post racing a rebuild: the post's fan-out reads the followers
//     after its commit, and a building feed takes its id. If the fan-out
//     reached Redis before the build started, the rebuild's read, which
//     comes after, sees the committed post. Either way the feed has it.
//   - A delete sets a tombstone for the id, then reads the followers,
//     then removes the id from their feeds, and deletes the feeds being
//     built (whose rebuild may have read the message). A follow's merge
//     skips tombstoned ids: a merge that reached Redis before the
//     tombstone committed its follow before the delete read the
//     followers, so the delete removes the id after it.
//   - A follow merges the followee's newest Cap ids into a complete
//     feed, raising its floor below them if the followee has older ones;
//     it deletes a feed being built, whose rebuild may have read the
//     timeline before the follow committed.
//   - An unfollow sets a tombstone for the edge (a field of its
//     followee's hash of them, so that a post looks at its followers'
//     tombstones only when its author has any), then reads the
//     followee's ids, then removes them (or deletes a building feed). A
//     post's fan-out skips a follower with a tombstone for its author; one
//     that came before the tombstone committed before the unfollow read
//     the ids, so the unfollow removes it. A follow clears the tombstone
//     before it reads the followee's ids, so a post it made a fan-out
//     skip is among them.
//   - Tombstones live tombstoneTTL (10 minutes), far longer than any of
//     these calls: each is bounded by the client's timeout.
//
// # When Redis fails
//
// Reads fall back to pull's merge on any Redis error (or while the
// server is marked down), so losing Redis costs only speed. A write
// whose Redis part failed may or may not have been applied (a frozen
// server applies what it received when it resumes), so the feeds it
// meant to change cannot be trusted: the store owes a fence. It replaces
// the epoch (a random token in Redis that every script checks, and whose
// value names the sentinel of every valid feed), which makes every feed
// missing for every process at once, to be rebuilt on its next read. A
// write is acknowledged only once its Redis part succeeded or the fence
// is paid; until then the process reads from MariaDB, and a background
// loop pays the fence as soon as Redis answers. A write refused by a
// server that is not running needs no fence: the next one starts empty.
//
// # When MariaDB fails a write
//
// A write whose MariaDB statement failed may have committed all the same
// (a canceled statement can still run on the server), and then its Redis
// part never ran. Such a write drops the feeds it could have changed,
// and only those: a post's or a delete's, the feeds of its author's
// followers (read again with a context of its own, bounded by the
// caller's deadline or repairTimeout, 500 ms, whichever is later);
// a follow's or an unfollow's, the follower's feed (a follow also clears
// the edge's tombstone, as it would have). Each is rebuilt on its next
// read, from what MariaDB holds then, so a failed write may show up. The
// fence is owed instead only when that repair fails (MariaDB cannot list
// the followers, or Redis does not answer): so a MariaDB that is down
// still costs a fence, and reads report it down meanwhile. A write that
// proves it changed nothing owes nothing: one whose context had ended
// before it started (it fails with the context's error and sends
// nothing), and one with invalid input. Once its
// statement committed, a write's reads of the followers or the
// followee's ids and its Redis calls run to their own bounds even if its
// context ends, so that a caller's cancellation after the commit does
// not leave the feeds behind.
//
// What neither covers: a write that returned an error (its MariaDB part
// may have committed), between Redis's return and the repair or the
// fence being done by the process that owes it, or between the repair
// and a statement the server still ran after it; and a process that
// dies owing one. Acknowledged writes are always in every feed that is
// read, and every wait is bounded: by the client's timeout in Redis,
// by repairTimeout past the caller's deadline in MariaDB's repair reads.
type Store struct {
	*pull.Store
	rc            *redisx.Client
	codec         *timeline.CursorCodec
	merge         sqlread.Reader // pages Redis cannot serve
	rebuildMerge  sqlread.Reader // rebuilds' reads
	messages      *directmap.Messages
	fence         *redisx.Fence
	prefix        string
	cap, limit    int
	ttl           string // Window in seconds
	closeOnce     sync.Once
	pushed, skip  atomic.Int64
	rebuilds      atomic.Int64
	dropped       atomic.Int64
	rebuildRows   atomic.Int64
	fallbacks     atomic.Int64
	feedPages     atomic.Int64
	pagesBelowCap atomic.Int64
	// drowning is Config.Drowning, drowningSet the process's copy of
	// the drowning readers, puller their reader by pull.
	drowning    push.Drowning
	drowningSet *push.DrowningReaders
	puller      *push.DrowningPuller
}

var (
	_ timeline.Store    = (*Store)(nil)
	_ timeline.Counting = (*Store)(nil)
	_ timeline.Degraded = (*Store)(nil)
	_ timeline.DBHolder = (*Store)(nil)
)

// Open connects to MariaDB and Redis, creates the database and schema if
// needed, and returns the store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	if cfg.Cap == 0 {
		cfg.Cap = DefaultCap
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MessageCache == 0 {
		cfg.MessageCache = DefaultMessageCache
	}
	if err := (Config{Cap: cfg.Cap, Window: cfg.Window}).check(); err != nil {
		return nil, fmt.Errorf("open %s store: %w", ModelName, err)
	}
	if err := cfg.Drowning.Check(ModelName); err != nil {
		return nil, fmt.Errorf("open %s store: %w", ModelName, err)
	}
	if err := mckey.CheckNamespace(cfg.Namespace); err != nil {
		return nil, fmt.Errorf("open %s store: %w", ModelName, err)
	}
	base, err := pull.Open(ctx, pull.Config{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force, Read: sqlread.Merge{}})
	if err != nil {
		return nil, fmt.Errorf("open %s store: %w", ModelName, err)
	}
	s, err := open(ctx, base, cfg)
	if err != nil {
		base.Close()
		return nil, fmt.Errorf("open %s store: %w", ModelName, err)
	}
	return s, nil
}

func open(ctx context.Context, base *pull.Store, cfg Config) (*Store, error) {
	db := base.DB()
	codec, err := schema.CursorCodec(ctx, db)
	if err != nil {
		return nil, err
	}
	id, err := schema.Identity(ctx, db, "pushpull redis feeds")
	if err != nil {
		return nil, err
	}
	if cfg.Drowning.On() {
		if err := schema.ApplyDrowning(ctx, db); err != nil {
			return nil, err
		}
		if _, err := cfg.Drowning.Mark(ctx, db, 0); err != nil {
			return nil, fmt.Errorf("mark drowning readers: %w", err)
		}
	}
	rc, err := redisx.New(ctx, redisx.Options{Addr: cfg.Redis, Timeout: cfg.Timeout})
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", timeline.ErrUnavailable, err)
	}
	prefix := cfg.Namespace + "pf:" + id + ":"
	s := &Store{
		Store: base, rc: rc, codec: codec,
		merge:        sqlread.Merge{}.NewReader(sqlread.Env{DB: db, Pages: &sqlread.PageCount{}}),
		rebuildMerge: sqlread.Merge{}.NewReader(sqlread.Env{DB: db, Pages: &sqlread.PageCount{}}),
		messages:     directmap.NewMessages(cfg.MessageCache),
		prefix:       prefix,
		cap:          cfg.Cap, limit: cfg.Cap + max(1, cfg.Cap/8),
		ttl:      strconv.FormatInt(max(1, int64(cfg.Window/time.Second)), 10),
		drowning: cfg.Drowning, drowningSet: push.NewDrowningReaders(db, cfg.Drowning), puller: push.NewDrowningPuller(db),
	}
	if s.fence, err = redisx.NewFence(ctx, rc, prefix+"epoch"); err != nil {
		rc.Close()
		return nil, fmt.Errorf("%w: redis %s: %w", timeline.ErrUnavailable, cfg.Redis, err)
	}
	// Every write must reach the feeds: a store of this database that
	// keeps none fails its writes from now on (schema.HookGuard).
	if err := base.WriteGuard().Record(ctx, schema.HookFeeds); err != nil {
		rc.Close()
		return nil, err
	}
	return s, nil
}

// Cap returns how many ids a feed keeps.
func (s *Store) Cap() int { return s.cap }

// Redis returns the store's Redis client.
func (s *Store) Redis() *redisx.Client { return s.rc }

// FeedKey returns user's feed's key.
func (s *Store) FeedKey(user timeline.UserID) string {
	return s.prefix + "f" + strconv.FormatInt(int64(user), 10)
}

func (s *Store) deletedKey(id timeline.MessageID) string {
	return s.prefix + "d" + strconv.FormatInt(int64(id), 10)
}

func (s *Store) unfollowedKey(followee timeline.UserID) string {
	return s.prefix + "u" + strconv.FormatInt(int64(followee), 10)
}

// DownServers implements timeline.Degraded: the redis-server while it is
// failing (pages come from MariaDB meanwhile).
func (s *Store) DownServers() []string { return s.rc.DownServers() }

// Counters implements timeline.Counting: the feeds posts reached and
// passed over (inactive followers), the rebuilds and the ids they wrote,
// the pages served from feeds and those that fell back to MariaDB, the
// fences paid, the feeds failed writes dropped, and the Redis commands
// sent.
func (s *Store) Counters() map[string]int64 {
	return map[string]int64{
		counter.PushedRows:    s.pushed.Load(),
		counter.SkippedRows:   s.skip.Load(),
		counter.Rebuilds:      s.rebuilds.Load(),
		counter.RebuildRows:   s.rebuildRows.Load(),
		counter.CacheErrors:   s.fallbacks.Load(),
		counter.FeedPages:     s.feedPages.Load(),
		counter.PagesBelowCap: s.pagesBelowCap.Load(),
		counter.Fences:        s.fence.Paid(),
		counter.DroppedFeeds:  s.dropped.Load(),
		counter.RedisCalls:    s.rc.Calls(),
	}
}

// Prime implements timeline.Primer: pull's, and with Config.Drowning on,
// every reader who follows more than Drowning.Follows authors made a
// drowning reader, as after a bulk load of the follows.
func (s *Store) Prime(ctx context.Context, users []timeline.UserID) error {
	if err := s.Store.Prime(ctx, users); err != nil {
		return err
	}
	if _, err := s.drowning.Mark(ctx, s.DB(), 0); err != nil {
		return fmt.Errorf("%s: mark drowning readers: %w", ModelName, err)
	}
	s.drowningSet.Invalidate()
	return nil
}

// Drowning returns what the store does for drowning readers.
func (s *Store) Drowning() push.Drowning { return s.drowning }

// Close implements timeline.Store.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.fence.Close()
		s.rc.Close()
	})
	return s.Store.Close()
}

// mutate runs script as the Redis part of a write whose MariaDB part is
// done (redisx.Fence.Mutate).
func (s *Store) mutate(ctx context.Context, script *redisx.Script, calls []redisx.Call) ([]redisx.Result, error) {
	res, err := s.fence.Mutate(ctx, script, calls)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", timeline.ErrUnavailable, err)
	}
	return res, nil
}

// oweFence records that a feed may lack a write whose MariaDB part may
// have committed (redisx.Fence.Owe).
func (s *Store) oweFence(ctx context.Context, cause error) error {
	if err := s.fence.Owe(ctx, cause); err != nil {
		return fmt.Errorf("%w: %w", timeline.ErrUnavailable, err)
	}
	return nil
}

// repairTimeout bounds each MariaDB read a write makes once its statement
// may have committed, past its caller's deadline or cancellation
// (mysqlx.Detached): the followers a committed post goes to, the
// followee's ids a follow merges, or the followers whose feeds a write of
// unknown outcome drops.
const repairTimeout = 500 * time.Millisecond

// dropFeeds deletes users' feeds, to be rebuilt from MariaDB on their
// next read: the repair of a write whose outcome is unknown, which could
// have changed those feeds and no other (redisx.Fence.Drop; a rebuild
// under way finds its feed gone and does not complete it). When Redis does
// not answer, the fence is owed instead.
func (s *Store) dropFeeds(ctx context.Context, users []timeline.UserID) error {
	keys := make([]string, len(users))
	for i, u := range users {
		keys[i] = s.FeedKey(u)
	}
	s.dropped.Add(int64(len(users)))
	if err := s.fence.Drop(ctx, keys, fanOutChunk); err != nil {
		return fmt.Errorf("%w: %w", timeline.ErrUnavailable, err)
	}
	return nil
}

// repairFollowers repairs the feeds after a write of author's whose
// MariaDB part failed with cause but may have committed (a post or a
// delete): it drops the feeds of author's followers, read with a fresh
// bounded context, and owes the fence when it cannot read them.
func (s *Store) repairFollowers(ctx context.Context, author timeline.UserID, cause error) error {
	rctx, cancel := mysqlx.Detached(ctx, repairTimeout)
	followers, err := mysqlx.Followers(rctx, s.DB(), author)
	cancel()
	if err != nil {
		return s.oweFence(ctx, fmt.Errorf("%w; then %w", cause, err))
	}
	return s.dropFeeds(ctx, followers)
}

// Post implements timeline.Store: pull's INSERT, then the id to the feed
// of every follower that has one (drowning readers as Config.Drowning
// says), in chunks of fanOutChunk followers, one pipeline. Once the
// INSERT has committed, the fan-out runs to its own bounds (repairTimeout
// for reading the followers, the client's timeout for each Redis call)
// even if ctx ends. A post whose INSERT failed but may have committed
// drops the feeds of the author's followers (those it could have
// reached), so that each shows the post on its next read if it committed.
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	if err := mysqlx.Unstarted(ctx, timeline.CheckPost(author, body)); err != nil {
		return timeline.Message{}, fmt.Errorf("%s post: %w", ModelName, err)
	}
	msg, err := s.Store.Post(ctx, author, body)
	if err != nil {
		if !mysqlx.Unsent(err) {
			if ferr := s.repairFollowers(ctx, author, err); ferr != nil {
				return msg, fmt.Errorf("%s post: %w (after %w)", ModelName, ferr, err)
			}
		}
		return msg, err
	}
	s.messages.Put(msg)
	rctx, cancel := mysqlx.Detached(ctx, repairTimeout)
	followers, err := mysqlx.Followers(rctx, s.DB(), author)
	var list *push.DrowningList
	if err == nil {
		list, err = s.drowningSet.Read(rctx)
	}
	cancel()
	if err != nil {
		if ferr := s.oweFence(ctx, err); ferr != nil {
			return timeline.Message{}, fmt.Errorf("%s post: %w", ModelName, ferr)
		}
		return msg, nil
	}
	audience := len(followers)
	if list.Len() > 0 {
		followers = slices.DeleteFunc(followers, func(f timeline.UserID) bool { return !list.Writes(msg.ID, f) })
	}
	if len(followers) == 0 {
		s.skip.Add(int64(audience))
		return msg, nil
	}
	id := strconv.FormatInt(int64(msg.ID), 10)
	capArg, limitArg := strconv.Itoa(s.cap), strconv.Itoa(s.limit)
	unfollowed, deleted := s.unfollowedKey(author), s.deletedKey(msg.ID)
	var calls []redisx.Call
	for chunk := range slices.Chunk(followers, fanOutChunk) {
		keys := make([]string, 1, len(chunk)+1)
		keys[0] = s.fence.Key()
		args := make([]string, 6, len(chunk)+6)
		args[1], args[2], args[3], args[4], args[5] = id, capArg, limitArg, unfollowed, deleted
		for _, f := range chunk {
			u := strconv.FormatInt(int64(f), 10)
			keys = append(keys, s.prefix+"f"+u)
			args = append(args, u)
		}
		calls = append(calls, redisx.Call{Keys: keys, Args: args})
	}
	res, err := s.mutate(ctx, fanOut, calls)
	if err != nil {
		return timeline.Message{}, fmt.Errorf("%s post: %w", ModelName, err)
	}
	var n int64
	for _, r := range res {
		if v, err := r.AsInt64(); err == nil {
			n += v
		}
	}
	s.pushed.Add(n)
	s.skip.Add(int64(audience) - n)
	return msg, nil
}

// Delete implements timeline.Store: pull's DELETE, then a tombstone for
// the id, then the id out of the feeds of the author's followers.
func (s *Store) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	if err := mysqlx.Unstarted(ctx, timeline.CheckDelete(author, id)); err != nil {
		return fmt.Errorf("%s delete: %w", ModelName, err)
	}
	err := s.Store.Delete(ctx, author, id)
	if errors.Is(err, timeline.ErrInvalidInput) || errors.Is(err, timeline.ErrNotFound) {
		return err
	}
	s.messages.Forget(id)
	if err != nil {
		if !mysqlx.Unsent(err) { // the DELETE may have committed
			if ferr := s.repairFollowers(ctx, author, err); ferr != nil {
				return fmt.Errorf("%s delete: %w (after %w)", ModelName, ferr, err)
			}
		}
		return err
	}
	if _, err := s.mutate(ctx, tombstone, []redisx.Call{{Keys: []string{s.fence.Key(), s.deletedKey(id)}, Args: []string{"", s.tombstoneTTL()}}}); err != nil {
		return fmt.Errorf("%s delete: %w", ModelName, err)
	}
	rctx, cancel := mysqlx.Detached(ctx, repairTimeout)
	followers, err := mysqlx.Followers(rctx, s.DB(), author)
	cancel()
	if err != nil {
		if ferr := s.oweFence(ctx, err); ferr != nil {
			return fmt.Errorf("%s delete: %w", ModelName, ferr)
		}
		return nil
	}
	var calls []redisx.Call
	idArg := strconv.FormatInt(int64(id), 10)
	for chunk := range slices.Chunk(followers, fanOutChunk) {
		keys := []string{s.fence.Key()}
		for _, f := range chunk {
			keys = append(keys, s.FeedKey(f))
		}
		calls = append(calls, redisx.Call{Keys: keys, Args: []string{"", idArg}})
	}
	if _, err := s.mutate(ctx, remove, calls); err != nil {
		return fmt.Errorf("%s delete: %w", ModelName, err)
	}
	return nil
}

func (s *Store) tombstoneTTL() string { return strconv.Itoa(int(tombstoneTTL / time.Second)) }

// Follow implements timeline.Store: pull's INSERT, then (when it takes
// the follower past Drowning.Follows) the follower marked drowning, then
// the edge's tombstone cleared, then the followee's newest Cap ids merged into the
// follower's feed (those above its floor; if the followee has more, the
// floor rises to just below the oldest of them).
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	if err := mysqlx.Unstarted(ctx, timeline.CheckFollow(follower, followee)); err != nil {
		return fmt.Errorf("%s follow: %w", ModelName, err)
	}
	err := s.Store.Follow(ctx, follower, followee)
	if err != nil {
		if !mysqlx.Unsent(err) { // the INSERT may have committed
			if ferr := s.repairFollow(ctx, follower, followee); ferr != nil {
				return fmt.Errorf("%s follow: %w (after %w)", ModelName, ferr, err)
			}
		}
		return err
	}
	if marked, err := s.drowning.Mark(ctx, s.DB(), follower); err != nil {
		return fmt.Errorf("%s follow: mark drowning reader: %w", ModelName, err)
	} else if marked {
		s.drowningSet.Invalidate()
	}
	if _, err := s.mutate(ctx, edgeTombstone, []redisx.Call{{Keys: []string{"", s.unfollowedKey(followee)}, Args: []string{"", strconv.FormatInt(int64(follower), 10), "0"}}}); err != nil {
		return fmt.Errorf("%s follow: %w", ModelName, err)
	}
	rctx, cancel := mysqlx.Detached(ctx, repairTimeout)
	ids, err := s.newestOf(rctx, followee, s.cap)
	cancel()
	if err != nil {
		if ferr := s.oweFence(ctx, err); ferr != nil {
			return fmt.Errorf("%s follow: %w", ModelName, ferr)
		}
		return nil
	}
	floor := "0" // the followee's every id is among ids
	if len(ids) == s.cap {
		lowest, _ := strconv.ParseInt(ids[len(ids)-1], 10, 64)
		floor = strconv.FormatInt(lowest-1, 10)
	}
	args := append([]string{"", strconv.Itoa(s.cap), strconv.Itoa(s.limit), s.prefix + "d", floor}, ids...)
	if _, err := s.mutate(ctx, follow, []redisx.Call{{Keys: []string{s.fence.Key(), s.FeedKey(follower)}, Args: args}}); err != nil {
		return fmt.Errorf("%s follow: %w", ModelName, err)
	}
	return nil
}

// Unfollow implements timeline.Store: pull's DELETE, then a tombstone
// for the edge, then the followee's ids out of the follower's feed (a
// feed holds at most Cap + Cap/8 ids, so the followee's newest that many
// are all it can hold).
func (s *Store) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	if err := mysqlx.Unstarted(ctx, timeline.CheckFollow(follower, followee)); err != nil {
		return fmt.Errorf("%s unfollow: %w", ModelName, err)
	}
	err := s.Store.Unfollow(ctx, follower, followee)
	if err != nil {
		if !mysqlx.Unsent(err) { // the DELETE may have committed
			if ferr := s.dropFeeds(ctx, []timeline.UserID{follower}); ferr != nil {
				return fmt.Errorf("%s unfollow: %w (after %w)", ModelName, ferr, err)
			}
		}
		return err
	}
	if _, err := s.mutate(ctx, edgeTombstone, []redisx.Call{{Keys: []string{"", s.unfollowedKey(followee)}, Args: []string{"", strconv.FormatInt(int64(follower), 10), s.tombstoneTTL()}}}); err != nil {
		return fmt.Errorf("%s unfollow: %w", ModelName, err)
	}
	rctx, cancel := mysqlx.Detached(ctx, repairTimeout)
	ids, err := s.newestOf(rctx, followee, s.limit)
	cancel()
	if err != nil {
		if ferr := s.oweFence(ctx, err); ferr != nil {
			return fmt.Errorf("%s unfollow: %w", ModelName, ferr)
		}
		return nil
	}
	if _, err := s.mutate(ctx, remove, []redisx.Call{{Keys: []string{s.fence.Key(), s.FeedKey(follower)}, Args: append([]string{""}, ids...)}}); err != nil {
		return fmt.Errorf("%s unfollow: %w", ModelName, err)
	}
	return nil
}

// repairFollow repairs the feeds after a follow whose MariaDB part failed
// but may have committed: it clears the edge's tombstone, as the follow
// would (else the followee's next posts would pass over the follower's
// feed), then drops the follower's feed, the one feed a follow changes;
// the fence is owed when Redis does not answer. (An unfollow's repair
// only drops the feed: a tombstone for an edge that stayed would keep the
// followee's next posts out of it.)
func (s *Store) repairFollow(ctx context.Context, follower, followee timeline.UserID) error {
	if _, err := s.mutate(ctx, edgeTombstone, []redisx.Call{{Keys: []string{"", s.unfollowedKey(followee)}, Args: []string{"", strconv.FormatInt(int64(follower), 10), "0"}}}); err != nil {
		return err
	}
	return s.dropFeeds(ctx, []timeline.UserID{follower})
}

// newestOf returns author's newest n message ids, as decimal strings.
func (s *Store) newestOf(ctx context.Context, author timeline.UserID, n int) ([]string, error) {
	var scans sqlread.AuthorScans
	scans.Add(author, 0, n)
	byAuthor, err := scans.Run(ctx, s.DB())
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(byAuthor[author]))
	for _, id := range byAuthor[author] {
		out = append(out, strconv.FormatUint(id, 10))
	}
	return out, nil
}

// Timeline implements timeline.Store: the page from the reader's feed in
// Redis (rebuilt first if it is missing), the part at or below its floor
// and every page Redis cannot serve from pull's merge.
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	return s.codec.Serve(ctx, "user", user, q, func(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
		msgs, err := s.read(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("%s timeline: %w", ModelName, err)
		}
		return msgs, nil
	})
}

// read reads r's page: from Redis when it can, else from pull's merge. A
// read never fails because of Redis while MariaDB is up. A drowning
// reader under push.DrowningPull reads by pull (push.DrowningPuller),
// and never builds a feed.
func (s *Store) read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.drowning.Pulls() {
		list, err := s.drowningSet.Read(ctx)
		if err != nil {
			return nil, err
		}
		if list.Has(r.User) {
			return s.puller.Read(ctx, r)
		}
	}
	if s.fence.Owed() {
		s.fallbacks.Add(1)
		return s.merge.Read(ctx, r)
	}
	rctx, cancel := redisx.ReadContext(ctx, s.rc.Timeout())
	msgs, err := s.readFeed(rctx, r)
	cancel()
	if err == nil {
		return msgs, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	s.fallbacks.Add(1)
	return s.merge.Read(ctx, r)
}

// errMissing: the feed is missing (or being built).
var errMissing = errors.New("feed missing")

// readFeed reads r's page from the feed, rebuilding it if it is missing.
func (s *Store) readFeed(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	for range 2 {
		ids, floor, err := s.feedPage(ctx, r)
		if errors.Is(err, errMissing) {
			msgs, started, err := s.rebuild(ctx, r)
			if err != nil || started {
				return msgs, err
			}
			continue // another read completed it meanwhile
		}
		if err != nil {
			return nil, err
		}
		msgs, err := s.bodies(ctx, ids)
		if err != nil {
			return nil, err
		}
		s.feedPages.Add(1)
		if len(msgs) == r.Fetch() || floor == 0 {
			return msgs, nil
		}
		// The rest lies at or below the floor: pull's.
		s.pagesBelowCap.Add(1)
		below := floor + 1
		if r.Before != 0 && r.Before < below {
			below = r.Before
		}
		rest, err := s.merge.Read(ctx, timeline.Request{User: r.User, Limit: r.Fetch() - len(msgs) - 1, Before: below})
		if err != nil {
			return nil, err
		}
		return append(msgs, rest...), nil
	}
	return nil, errMissing
}

// feedPage reads the ids of r's page above the feed's floor, and the
// floor.
func (s *Store) feedPage(ctx context.Context, r timeline.Request) ([]uint64, timeline.MessageID, error) {
	bound := ""
	if r.Before != 0 {
		bound = strconv.FormatInt(int64(r.Before), 10)
	}
	res, err := s.fence.Run(ctx, true, readFeed, []redisx.Call{{
		Keys: []string{s.fence.Key(), s.FeedKey(r.User)},
		Args: []string{"", bound, strconv.Itoa(r.Fetch()), s.ttl},
	}})
	if err != nil {
		return nil, 0, err
	}
	vals, err := res[0].AsStrSlice()
	if err != nil {
		return nil, 0, err
	}
	if len(vals) == 0 || vals[0] == "-" {
		return nil, 0, errMissing
	}
	floor, err := strconv.ParseInt(vals[0], 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("feed floor %q: %w", vals[0], err)
	}
	ids := make([]uint64, len(vals)-1)
	for i, v := range vals[1:] {
		if ids[i], err = strconv.ParseUint(v, 10, 64); err != nil {
			return nil, 0, fmt.Errorf("feed id %q: %w", v, err)
		}
	}
	return ids, timeline.MessageID(floor), nil
}

// errGone: a feed names a message that is not in the database (deleted
// while the page was read).
var errGone = errors.New("a feed names a message the database does not have")

// bodies returns the messages of ids (newest first): from the message
// cache when it has every one, else by primary key.
func (s *Store) bodies(ctx context.Context, ids []uint64) ([]timeline.Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if msgs, ok := s.messages.GetAll(ids); ok {
		return msgs, nil
	}
	msgs, err := sqlread.MessagesByID(ctx, s.DB(), ids)
	if err != nil {
		return nil, err
	}
	if len(msgs) != len(ids) {
		return nil, errGone
	}
	s.messages.PutAll(msgs)
	return msgs, nil
}

// rebuild builds r.User's feed from pull's merge and serves r's page from
// what it read. started is false when the feed was complete already (a
// concurrent read built it), and nothing was read.
func (s *Store) rebuild(ctx context.Context, r timeline.Request) (msgs []timeline.Message, started bool, err error) {
	token := strconv.FormatInt(redisx.BuildToken(), 10)
	feed := []string{s.fence.Key(), s.FeedKey(r.User)}
	res, err := s.fence.Run(ctx, false, beginRebuild, []redisx.Call{{Keys: feed, Args: []string{"", token, s.ttl}}})
	if err != nil {
		return nil, false, err
	}
	if n, err := res[0].AsInt64(); err != nil || n == 0 {
		return nil, false, err
	}
	// The build has started: every post committed from now on reaches
	// the feed, and this read sees every one committed before.
	newest, err := s.rebuildMerge.Read(ctx, timeline.Request{User: r.User, Limit: s.cap})
	if err != nil {
		return nil, true, err
	}
	s.messages.PutAll(newest)
	floor, kept := timeline.MessageID(0), newest
	if len(newest) > s.cap {
		floor, kept = newest[s.cap].ID, newest[:s.cap]
	}
	args := make([]string, 4, len(kept)+4)
	args[1], args[2], args[3] = token, strconv.FormatInt(int64(floor), 10), strconv.Itoa(s.cap)
	for _, m := range kept {
		args = append(args, strconv.FormatInt(int64(m.ID), 10))
	}
	// Whether it completes or not, the page comes from what was read.
	if res, err := s.fence.Run(ctx, false, completeRebuild, []redisx.Call{{Keys: feed, Args: args}}); err == nil {
		if n, _ := res[0].AsInt64(); n == 1 {
			s.rebuilds.Add(1)
			s.rebuildRows.Add(int64(len(kept)))
		}
	}
	page := newest
	if r.Before != 0 {
		i := slices.IndexFunc(newest, func(m timeline.Message) bool { return m.ID < r.Before })
		if i < 0 {
			i = len(newest)
		}
		page = newest[i:]
	}
	switch {
	case len(page) >= r.Fetch():
		return page[:r.Fetch()], true, nil
	case len(newest) <= s.cap:
		return page, true, nil // the whole timeline
	}
	msgs, err = s.merge.Read(ctx, r) // deeper than the rebuild read
	return msgs, true, err
}
