// Package redisindex is pull-redis: the pull model with, for each active
// reader, an index in Redis of their followees ranked by their newest
// message, as Flickr bounded its MySQL feed query with a per-user sorted
// set of recently active contacts, so that a newest page merges only the
// followees who posted last.
package redisindex

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pushpull/pushpull/internal/mckey"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/redisx"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/sqlread"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/counter"
)

// ModelName is the model's name in package registry.
const ModelName = "pull-redis"

// DefaultDatabase is the database the model uses unless told otherwise:
// pull's tables, apart from the pull strategies' database, whose posts
// would not reach the indexes.
const DefaultDatabase = "pushpull_pull_redis"

// DefaultWindow is Config.Window's default: an index lives 7 days after
// its reader's last read, as push-redis's feeds do.
const DefaultWindow = 7 * 24 * time.Hour

// chunk is how many followers one script call of a post's updates
// reaches at most; the calls of one post go out in one pipeline.
const chunk = 1000

// tombstoneTTL is how long an unfollow's tombstone lives: far longer than
// a write's Redis calls may take.
const tombstoneTTL = 10 * time.Minute

// Config says where the store lives.
type Config struct {
	// DSN is a go-sql-driver DSN of the MariaDB server.
	DSN string
	// Database holds pull's tables; "" means DefaultDatabase.
	Database string
	// MaxConns caps the connection pool; 0 means 64.
	MaxConns int
	// Force applies the schema even to a database holding other tables.
	Force bool
	// Redis is the redis-server, "host:port".
	Redis string
	// Namespace prefixes the Redis keys; stores that write to one
	// database must share it.
	Namespace string
	// Window is how long an index lives after its reader's last read; 0
	// means DefaultWindow. Posts update only the indexes that live.
	Window time.Duration
	// Timeout bounds each Redis call; 0 means redisx.DefaultTimeout.
	Timeout time.Duration
}

// Store is pull-redis. It implements timeline.Store: writes and the
// reads of the record are pull's, and the pages that the index does not
// serve (older pages, and any page while Redis fails) come from pull's
// merge (sqlread.Merge).
//
// A newest page reads the Fetch() followees with the largest scores from
// the reader's index, one ZREVRANGEBYSCORE, and merges their messages
// with sqlread.MergeOver: the page's messages are no older than the
// Fetch()-th of those followees' newest ids, and every other followee's
// messages are older still, so the page is exact. Older pages would need
// each followee's newest id below the cursor, which the index does not
// keep; they are pull-merge's.
//
// A post raises its author's score in the index of every follower that
// has one (a reader within Window); an index is rebuilt from the database
// when a read finds it missing. Every change is one Lua script under a
// redisx.Fence, as in push-redis, and the races are answered the same
// way:
//
//   - A rebuild starts the index empty with a building sentinel, reads
//     the followees and their newest ids, and completes the index with
//     ZADD GT, keeping what posts raised meanwhile (a post adds its
//     author to a building index, behind the unfollow tombstones).
//   - A follow adds the followee with score 0 before it reads the
//     followee's newest id, and raises it after (only if still a
//     member): a post that raced it either reached the index after the
//     first step or committed before the read.
//   - An unfollow sets a tombstone and removes the followee (a post only
//     raises members of a complete index), or deletes an index being
//     built.
//   - A delete deletes the indexes where its author's score may name the
//     deleted message (the id or newer): only a rebuild knows the newest
//     that remains. Deletes are rare; a rebuild is one pull step.
//
// A write whose statement failed in MariaDB but may have committed (it
// was canceled or cut off while it ran) drops only the indexes it could
// have changed, as push-redis drops feeds: a post's or a delete's, those
// of its author's followers; a follow's or an unfollow's, the follower's.
// The fence is owed only when that fails. A write whose context had
// ended before it started sends nothing and owes nothing.
type Store struct {
	*pull.Store
	rc       *redisx.Client
	fence    *redisx.Fence
	codec    *timeline.CursorCodec
	merge    sqlread.Reader
	prefix   string
	ttl      string
	reached  atomic.Int64
	builds   atomic.Int64
	reads    atomic.Int64
	fellBack atomic.Int64
	dropped  atomic.Int64
}

var (
	_ timeline.Store    = (*Store)(nil)
	_ timeline.Counting = (*Store)(nil)
	_ timeline.Degraded = (*Store)(nil)
)

// Open connects to MariaDB and Redis, creates the database and schema if
// needed, and returns the store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if err := windowOption.Check(ModelName, cfg.Window); err != nil {
		return nil, fmt.Errorf("open %s store: %w", ModelName, err)
	}
	if err := mckey.CheckNamespace(cfg.Namespace); err != nil {
		return nil, fmt.Errorf("open %s store: %w", ModelName, err)
	}
	base, err := pull.Open(ctx, pull.Config{DSN: cfg.DSN, Database: cfg.Database, MaxConns: cfg.MaxConns, Force: cfg.Force, Read: sqlread.Merge{}})
	if err != nil {
		return nil, fmt.Errorf("open %s store: %w", ModelName, err)
	}
	s := &Store{Store: base, ttl: strconv.FormatInt(max(1, int64(cfg.Window/time.Second)), 10)}
	if err := s.connect(ctx, cfg); err != nil {
		base.Close()
		return nil, fmt.Errorf("open %s store: %w", ModelName, err)
	}
	return s, nil
}

// connect sets up what the store keeps beside pull's.
func (s *Store) connect(ctx context.Context, cfg Config) error {
	db := s.DB()
	var err error
	if s.codec, err = schema.CursorCodec(ctx, db); err != nil {
		return err
	}
	id, err := schema.Identity(ctx, db, "pushpull redis indexes")
	if err != nil {
		return err
	}
	s.prefix = cfg.Namespace + "pi:" + id + ":"
	s.merge = sqlread.Merge{}.NewReader(sqlread.Env{DB: db, Pages: &sqlread.PageCount{}})
	if s.rc, err = redisx.New(ctx, redisx.Options{Addr: cfg.Redis, Timeout: cfg.Timeout}); err != nil {
		if ctx.Err() == nil {
			err = fmt.Errorf("%w: %w", timeline.ErrUnavailable, err)
		}
		return err
	}
	if s.fence, err = redisx.NewFence(ctx, s.rc, s.prefix+"epoch"); err != nil {
		s.rc.Close()
		return fmt.Errorf("%w: redis %s: %w", timeline.ErrUnavailable, cfg.Redis, err)
	}
	// Every post must raise its author in the indexes, every follow and
	// unfollow change one: a store of this database that keeps none
	// fails its writes from now on (schema.HookGuard).
	if err := s.WriteGuard().Record(ctx, schema.HookIndex); err != nil {
		s.rc.Close()
		return err
	}
	return nil
}

// IndexKey returns user's index's key.
func (s *Store) IndexKey(user timeline.UserID) string {
	return s.prefix + "i" + strconv.FormatInt(int64(user), 10)
}

func (s *Store) tombstones(followee timeline.UserID) string {
	return s.prefix + "u" + strconv.FormatInt(int64(followee), 10)
}

// DownServers implements timeline.Degraded.
func (s *Store) DownServers() []string { return s.rc.DownServers() }

// Counters implements timeline.Counting: the indexes posts raised a score
// in (counter.Hints), the pages read through an index and the indexes
// built, the pages that fell back to MariaDB, the fences paid, the
// indexes failed writes dropped (counter.DroppedFeeds) and the Redis
// commands sent.
func (s *Store) Counters() map[string]int64 {
	return map[string]int64{
		counter.Hints:          s.reached.Load(),
		counter.IndexReads:     s.reads.Load(),
		counter.IndexBuilds:    s.builds.Load(),
		counter.IndexFallbacks: s.fellBack.Load(),
		counter.Fences:         s.fence.Paid(),
		counter.DroppedFeeds:   s.dropped.Load(),
		counter.RedisCalls:     s.rc.Calls(),
	}
}

// Close implements timeline.Store.
func (s *Store) Close() error {
	if s.fence != nil {
		s.fence.Close()
		s.rc.Close()
		s.fence = nil
	}
	return s.Store.Close()
}

// redisPart runs script as the Redis part of a write whose MariaDB part
// is done; err is the MariaDB part's error, after which the state is
// fenced instead (the write may have committed).
func (s *Store) redisPart(ctx context.Context, err error, script *redisx.Script, calls []redisx.Call) ([]redisx.Result, error) {
	if err != nil {
		s.fence.Owe(ctx, err)
		return nil, err
	}
	res, ferr := s.fence.Mutate(ctx, script, calls)
	if ferr != nil {
		return nil, fmt.Errorf("%s: %w: %w", ModelName, timeline.ErrUnavailable, ferr)
	}
	return res, nil
}

// repairTimeout bounds each MariaDB read a write makes once its statement
// may have committed, past its caller's deadline or cancellation
// (mysqlx.Detached): the followers its Redis part reaches or whose
// indexes it drops, the followee's newest id.
const repairTimeout = 500 * time.Millisecond

// dropIndexes deletes users' indexes, each rebuilt from MariaDB on its
// next read: the repair of a write whose outcome is unknown, which could
// have changed those and no other (redisx.Fence.Drop; a rebuild under way
// finds its index gone and does not complete it). When Redis does not
// answer, the fence is owed instead.
func (s *Store) dropIndexes(ctx context.Context, users []timeline.UserID) error {
	keys := make([]string, len(users))
	for i, u := range users {
		keys[i] = s.IndexKey(u)
	}
	s.dropped.Add(int64(len(users)))
	if err := s.fence.Drop(ctx, keys, chunk); err != nil {
		return fmt.Errorf("%s: %w: %w", ModelName, timeline.ErrUnavailable, err)
	}
	return nil
}

// repairFollowers returns the error of a post or a delete of author's
// whose statement failed with cause, after repairing the indexes: if it
// may have committed, it drops the indexes of author's followers (read
// with a context of its own, mysqlx.Detached), or owes the fence when
// it cannot read them.
func (s *Store) repairFollowers(ctx context.Context, author timeline.UserID, cause error) error {
	if mysqlx.Unsent(cause) {
		return cause
	}
	rctx, cancel := mysqlx.Detached(ctx, repairTimeout)
	followers, err := mysqlx.Followers(rctx, s.DB(), author)
	cancel()
	if err != nil {
		s.fence.Owe(ctx, fmt.Errorf("%w; then %w", cause, err))
		return cause
	}
	if err := s.dropIndexes(ctx, followers); err != nil {
		return fmt.Errorf("%w (after %w)", err, cause)
	}
	return cause
}

// Post implements timeline.Store: pull's INSERT, then the author's score
// raised in the index of every follower that has one. A post whose INSERT
// failed but may have committed drops those indexes instead (see
// repairFollowers).
func (s *Store) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	if err := mysqlx.Unstarted(ctx, timeline.CheckPost(author, body)); err != nil {
		return timeline.Message{}, fmt.Errorf("%s post: %w", ModelName, err)
	}
	msg, err := s.Store.Post(ctx, author, body)
	if err != nil {
		return timeline.Message{}, s.repairFollowers(ctx, author, err)
	}
	rctx, cancel := mysqlx.Detached(ctx, repairTimeout)
	followers, err := mysqlx.Followers(rctx, s.DB(), author)
	cancel()
	id, a := strconv.FormatInt(int64(msg.ID), 10), strconv.FormatInt(int64(author), 10)
	var calls []redisx.Call
	for part := range slices.Chunk(followers, chunk) {
		keys := make([]string, 1, len(part)+1)
		args := append(make([]string, 0, len(part)+4), "", id, a, s.tombstones(author))
		for _, f := range part {
			keys = append(keys, s.IndexKey(f))
			args = append(args, strconv.FormatInt(int64(f), 10))
		}
		calls = append(calls, redisx.Call{Keys: keys, Args: args})
	}
	if len(calls) == 0 && err == nil {
		return msg, nil
	}
	res, err := s.redisPart(ctx, err, post, calls)
	if err != nil {
		return timeline.Message{}, err
	}
	for _, r := range res {
		if n, err := r.AsInt64(); err == nil {
			s.reached.Add(n)
		}
	}
	return msg, nil
}

// Delete implements timeline.Store: pull's DELETE, then the indexes that
// may name the message deleted. A delete that failed but may have
// committed drops the indexes of the author's followers (see
// repairFollowers).
func (s *Store) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	if err := mysqlx.Unstarted(ctx, timeline.CheckDelete(author, id)); err != nil {
		return fmt.Errorf("%s delete: %w", ModelName, err)
	}
	err := s.Store.Delete(ctx, author, id)
	if errors.Is(err, timeline.ErrNotFound) {
		return err
	}
	if err != nil {
		return s.repairFollowers(ctx, author, err)
	}
	rctx, cancel := mysqlx.Detached(ctx, repairTimeout)
	followers, err := mysqlx.Followers(rctx, s.DB(), author)
	cancel()
	var calls []redisx.Call
	for part := range slices.Chunk(followers, chunk) {
		keys := []string{""}
		for _, f := range part {
			keys = append(keys, s.IndexKey(f))
		}
		calls = append(calls, redisx.Call{Keys: keys, Args: []string{"", strconv.FormatInt(int64(author), 10), strconv.FormatInt(int64(id), 10)}})
	}
	if len(calls) == 0 && err == nil {
		return nil
	}
	_, err = s.redisPart(ctx, err, remove, calls)
	return err
}

// Follow implements timeline.Store: pull's INSERT, then the followee
// added to the follower's index with score 0, then raised to its newest
// id.
func (s *Store) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	if err := mysqlx.Unstarted(ctx, timeline.CheckFollow(follower, followee)); err != nil {
		return fmt.Errorf("%s follow: %w", ModelName, err)
	}
	err := s.Store.Follow(ctx, follower, followee)
	keys := []string{"", s.IndexKey(follower), s.tombstones(followee)}
	args := []string{"", strconv.FormatInt(int64(followee), 10), strconv.FormatInt(int64(follower), 10), "0"}
	if err != nil {
		// The INSERT may have committed: clear the tombstone as the
		// follow would, and drop the one index it changes.
		if !mysqlx.Unsent(err) {
			if _, ferr := s.redisPart(ctx, nil, follow, []redisx.Call{{Keys: keys, Args: args}}); ferr != nil {
				return fmt.Errorf("%w (after %w)", ferr, err)
			}
			if ferr := s.dropIndexes(ctx, []timeline.UserID{follower}); ferr != nil {
				return fmt.Errorf("%w (after %w)", ferr, err)
			}
		}
		return err
	}
	if _, err := s.redisPart(ctx, nil, follow, []redisx.Call{{Keys: keys, Args: args}}); err != nil {
		return err
	}
	var newest uint64
	var scans sqlread.AuthorScans
	scans.Add(followee, 0, 1)
	rctx, cancel := mysqlx.Detached(ctx, repairTimeout)
	byAuthor, err := scans.Run(rctx, s.DB())
	cancel()
	if ids := byAuthor[followee]; len(ids) > 0 {
		newest = ids[0]
	}
	if err == nil && newest == 0 {
		return nil // score 0 is right
	}
	args = slices.Clone(args)
	args[3] = strconv.FormatUint(newest, 10)
	_, err = s.redisPart(ctx, err, follow, []redisx.Call{{Keys: keys, Args: args}})
	return err
}

// Unfollow implements timeline.Store: pull's DELETE, then a tombstone for
// the edge and the followee out of the follower's index.
func (s *Store) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	if err := mysqlx.Unstarted(ctx, timeline.CheckFollow(follower, followee)); err != nil {
		return fmt.Errorf("%s unfollow: %w", ModelName, err)
	}
	err := s.Store.Unfollow(ctx, follower, followee)
	if err != nil {
		// The DELETE may have committed: drop the one index it changes
		// (a tombstone for an edge that stayed would keep the
		// followee's next posts out of it).
		if !mysqlx.Unsent(err) {
			if ferr := s.dropIndexes(ctx, []timeline.UserID{follower}); ferr != nil {
				return fmt.Errorf("%w (after %w)", ferr, err)
			}
		}
		return err
	}
	_, err = s.redisPart(ctx, err, unfollow, []redisx.Call{{
		Keys: []string{"", s.IndexKey(follower), s.tombstones(followee)},
		Args: []string{"", strconv.FormatInt(int64(followee), 10), strconv.FormatInt(int64(follower), 10), strconv.Itoa(int(tombstoneTTL / time.Second))},
	}})
	return err
}

// Timeline implements timeline.Store: a newest page through the reader's
// index, others (and any page while Redis fails) by pull's merge.
func (s *Store) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	return s.codec.Serve(ctx, "user", user, q, func(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
		msgs, err := s.read(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("%s timeline: %w", ModelName, err)
		}
		return msgs, nil
	})
}

func (s *Store) read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	if r.Before != 0 {
		return s.merge.Read(ctx, r)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !s.fence.Owed() {
		rctx, cancel := redisx.ReadContext(ctx, s.rc.Timeout())
		heads, err := s.heads(rctx, r)
		cancel()
		if err == nil {
			s.reads.Add(1)
			return sqlread.MergeOver(ctx, s.DB(), r, heads, nil)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	s.fellBack.Add(1)
	return s.merge.Read(ctx, r)
}

// errMissing: the index is missing or being built.
var errMissing = errors.New("index missing")

// heads returns the r.Fetch() followees of r.User who posted last, with
// their newest ids, newest first: from the index, rebuilt first if it is
// missing.
func (s *Store) heads(ctx context.Context, r timeline.Request) ([]sqlread.AuthorNewest, error) {
	key := s.IndexKey(r.User)
	for range 2 {
		res, err := s.fence.Run(ctx, true, read, []redisx.Call{{Keys: []string{"", key}, Args: []string{"", strconv.Itoa(r.Fetch()), s.ttl}}})
		if err != nil {
			return nil, err
		}
		vals, err := res[0].AsStrSlice()
		if err != nil {
			return nil, err
		}
		if len(vals) == 1 && vals[0] == "-" {
			heads, started, err := s.rebuild(ctx, r.User)
			if err != nil || started {
				return heads[:min(len(heads), r.Fetch())], err
			}
			continue // completed by another read meanwhile
		}
		heads := make([]sqlread.AuthorNewest, 0, len(vals)/2)
		for i := 0; i+1 < len(vals); i += 2 {
			a, err1 := strconv.ParseInt(vals[i], 10, 64)
			n, err2 := strconv.ParseUint(vals[i+1], 10, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("index entry %q %q", vals[i], vals[i+1])
			}
			heads = append(heads, sqlread.AuthorNewest{Author: timeline.UserID(a), Newest: n})
		}
		return heads, nil
	}
	return nil, errMissing
}

// rebuild builds user's index from the database and returns the
// followees' newest ids as it read them (sorted newest first); started is
// false when the index was complete already and nothing was read.
func (s *Store) rebuild(ctx context.Context, user timeline.UserID) (heads []sqlread.AuthorNewest, started bool, err error) {
	token := strconv.FormatInt(redisx.BuildToken(), 10)
	key := []string{"", s.IndexKey(user)}
	res, err := s.fence.Run(ctx, false, begin, []redisx.Call{{Keys: key, Args: []string{"", token, s.ttl}}})
	if err != nil {
		return nil, false, err
	}
	if n, err := res[0].AsInt64(); err != nil || n == 0 {
		return nil, false, err
	}
	// The build has started: a post committed from now on reaches the
	// index, and these reads see every one committed before.
	followees, err := sqlread.Followees(ctx, s.DB(), user)
	if err != nil {
		return nil, true, err
	}
	heads, _, err = sqlread.FolloweesNewest(ctx, s.DB(), timeline.Request{User: user})
	if err != nil {
		return nil, true, err
	}
	newest := make(map[timeline.UserID]uint64, len(heads))
	for _, h := range heads {
		newest[h.Author] = h.Newest
	}
	args := append(make([]string, 0, 2*len(followees)+2), "", token)
	for _, f := range followees {
		args = append(args, strconv.FormatUint(newest[f], 10), strconv.FormatInt(int64(f), 10))
	}
	if res, err := s.fence.Run(ctx, false, complete, []redisx.Call{{Keys: key, Args: args}}); err == nil {
		if n, _ := res[0].AsInt64(); n == 1 {
			s.builds.Add(1)
		}
	}
	slices.SortFunc(heads, sqlread.ByNewest)
	return heads, true, nil
}

// Redis returns the store's Redis client.
func (s *Store) Redis() *redisx.Client { return s.rc }
