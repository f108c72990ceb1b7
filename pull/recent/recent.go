// Package recent is the memcached-derived state of the pull model and the
// three read strategies that read it: Recent (pull-recent), Active
// (pull-active) and Home (hybrid-memcached, registered in package pull).
//
// The state is kept in memcached, derived from the database, which stays
// the system of record: per author, the ids of their newest messages (a
// list); per user, a follow token; for users who follow many authors, an
// index of the followees who posted last; per author, the hint targets (the
// followers whose index a post must reach). Unlike the strategies of
// package sqlread, which read the tables alone, this state is only as
// current as the writes that keep it: every post, follow and unfollow on a
// database that these strategies read must go through a State with the same
// memcached servers and namespace (the pull store records which write hooks
// a database needs and refuses to write without them).
//
// # Keys and values
//
// Keys are Namespace + "pr:" + a digest of the database's cursor secret +
// ":" and then the author id (a list), "f" and a user id (a follow token),
// "i" and a user id (an index) or "t" and an author id (hint targets): a
// re-created database (as the benchmark does before loading) gets fresh
// keys and never sees the state of the old one.
//
// Lists, indexes and hint targets share one framing: a base written whole
// from a database read, then fixed-size records that writes append (one
// memcached append per write: no read, no CAS loop, no conflict between two
// writers). The base and every record end with a crc32c keyed by the
// memcached key, so a value that is truncated, garbled or copied from
// another key is rejected and rebuilt, never used. A base is rebuilt
// through a placeholder and CAS whose token is taken before the database
// read, so a write racing the rebuild is never lost.
package recent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/internal/mckey"
	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/pull/sqlread"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// Recent reads a page from each followee's list of newest ids, kept in
// memcached and appended to by every post (one append, not one write per
// follower). A read takes the followees (cached in process, checked by the
// user's follow token fetched along with the lists), all their lists in
// one multi-get, merges them, and takes the page's bodies from the
// in-process message cache or by primary key:
//
//   - A missing, expired or unreadable list is rebuilt from the database
//     (newest RecentLen ids).
//   - A list covers only the author's newest ids. When a page reaches below
//     an incomplete list, that author's part comes from the database, in
//     the statement that fetches the bodies, and only if it can still
//     reach the page.
//   - The bodies' rows are checked against the lists: an id that is not in
//     the database, or not by that author, means a corrupt list; it is
//     deleted and the page is read from the database alone (sqlread.Merge).
//   - A memcached that fails or times out costs only speed: the read falls
//     back to sqlread.Merge, and the failure is counted.
//
// On a Vitess keyspace sharded by user (Options.Tables
// sqlread.VitessTables{}) the same reads go through vtgate: the followees
// from the reader's shard, rebuilt lists and bodies from the authors'
// shards, and sqlread.VitessMerge in place of sqlread.Merge.
//
// A post whose append fails deletes the author's list; if that fails too,
// this process reads that author from the database until any list built
// before the failure has aged out (10 minutes), and lists older than that
// are rebuilt everywhere.
type Recent struct {
	// RecentLen caps how many of an author's newest ids a list keeps; 0
	// means DefaultRecentLen. Deeper pages read the database for the
	// authors whose lists do not reach that far.
	RecentLen int
	// MessageCache is how many messages are kept in process, so that a
	// page whose ids all come from memcached needs no database read for
	// its bodies (messages never change once written); 0 means
	// DefaultMessageCache, a negative number none.
	MessageCache int
	// FolloweeCache is how many users' followee lists are kept in
	// process, checked at every read against the user's follow token in
	// memcached, which follows and unfollows replace; 0 means
	// DefaultFolloweeCache, a negative number none. Each costs 8 bytes per
	// followee.
	FolloweeCache int
}

// Strategy is a read strategy of this package: Recent or Active.
type Strategy interface {
	// Name is the strategy's name ("recent", "active").
	Name() string
	// Hints reports whether the strategy reads indexes that posts must
	// hint (State's Options.Hints).
	Hints() bool
	// NewReader returns the strategy's reader of st. A State serves one
	// reader.
	NewReader(st *State) (sqlread.Reader, error)
}

// Name implements Strategy.
func (Recent) Name() string { return "recent" }

// Hints implements Strategy: Recent reads no index.
func (Recent) Hints() bool { return false }

// NewReader implements Strategy.
func (c Recent) NewReader(st *State) (sqlread.Reader, error) {
	c.setUp(st)
	return &reader{st: st, read: func(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
		return st.readLists(ctx, r, nil, time.Now())
	}}, nil
}

// setUp gives st what reading its lists takes.
func (c Recent) setUp(st *State) {
	if c.RecentLen > 0 {
		st.maxIDs = c.RecentLen
	}
	if c.MessageCache == 0 {
		c.MessageCache = DefaultMessageCache
	}
	st.messages = newMessageCache(c.MessageCache)
	if c.FolloweeCache == 0 {
		c.FolloweeCache = DefaultFolloweeCache
	}
	st.follows = newFollowSets(c.FolloweeCache)
}

// reader is the reader of Recent, Active and Home: read is the strategy's
// read through memcached.
type reader struct {
	st   *State
	read func(context.Context, timeline.Request) ([]timeline.Message, error)
}

// Read implements sqlread.Reader. When memcached fails, or a list
// contradicts the database, the page comes from sqlread.Merge (the
// Tables' Merge) instead. The
// read through memcached gets half of what ctx has left when that is under
// the Timeout (memcached.ReadContext); if it runs out, Merge gets the rest. Any
// other failure of the read through memcached is answered by Merge too: a
// read must never fail because of memcached while the database is up, and
// if the database is what failed, Merge reports it.
func (rd *reader) Read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	if err := ctx.Err(); err != nil {
		// Even a page this process could serve from memory.
		return nil, err
	}
	mctx, cancel := memcached.ReadContext(ctx, rd.st.timeout)
	defer cancel()
	msgs, err := rd.read(mctx, r)
	if err != nil && ctx.Err() == nil {
		if !errors.Is(err, errSuspect) && !errors.Is(err, errCacheDown) && !errors.Is(err, errFromDatabase) && mctx.Err() == nil {
			rd.st.stats.cacheErrors.Add(1) // counted nowhere else
		}
		return rd.st.fallback.Read(ctx, r)
	}
	if err != nil {
		return nil, ctx.Err() // the caller's, not memcached's
	}
	return msgs, nil
}

// DefaultRecentLen is how many ids an author's list holds unless
// Recent.RecentLen says otherwise.
const DefaultRecentLen = 64

// MaxLen bounds the lengths of indexes (Active.ActiveLen, Home.Keep), and
// the registry's options bound lists (Recent.RecentLen) by it too: 10,000
// entries keep a value well within a memcached item (1 MB by default).
const MaxLen = 10_000

const (
	// recentMaxAge bounds how long a list may serve reads after it was
	// built from the database. It only matters when a post could neither
	// append to a list nor delete it (memcached unreachable from that
	// process but not from others).
	recentMaxAge = 10 * time.Minute
	// placeholderTTL: a rebuild that dies between its placeholder and its
	// CAS leaves the key blocked only this long (readers go on rebuilding
	// from the database meanwhile).
	placeholderTTL = 30
	// compactAt: a list with this many appended records is rewritten as a
	// base by the next reader, so values stay small.
	compactAt = 16
)

var placeholder = []byte("P")

// State is a store's connection to the memcached-derived state: the write
// hooks that keep it current (Posted, PostFailed, FollowsChanged) and, once
// a Strategy's reader is made, what that reader keeps in process.
type State struct {
	db       *sql.DB
	pages    *sqlread.PageCount
	tables   sqlread.Tables // Options.Tables
	fallback sqlread.Reader // tables.Merge()
	stats    counters

	mc      *memcached.Client
	timeout time.Duration // memcached's share of a call (memcached.ReadContext, WriteContext)
	prefix  string
	maxIDs  int // Recent.RecentLen

	follows  *followSets    // nil unless a reader keeps followees
	messages *messageCache  // nil unless a reader keeps messages
	active   *activeIndexes // nil unless Options.Hints
	home     *homeState     // nil unless a Home reader is made

	mu     sync.Mutex
	dirty  map[timeline.UserID]time.Time // authors whose list may have missed a post, until when
	nDirty atomic.Int32
	closed atomic.Bool
}

// Options configure Open.
type Options struct {
	// Servers are memcached addresses ("host:port").
	Servers []string
	// Namespace prefixes the keys (mckey's rule), so that stores on
	// different databases, or tests, can share a memcached.
	Namespace string
	// MaxConns is how many idle connections are kept per server, sized
	// like the database pool; 0 means 64.
	MaxConns int
	// Timeout bounds each memcached request when the caller's context
	// allows longer; 0 means DefaultTimeout. See memcached.ReadContext
	// and WriteContext for how a call's deadline is shared.
	Timeout time.Duration
	// Hints makes Posted send hints to the indexes Active reads.
	Hints bool
	// Tables is how the database's tables lie; nil means
	// sqlread.MariaDBTables{}. Recent reads a Vitess keyspace sharded by
	// user through sqlread.VitessTables{}; Active's statements (its
	// indexes and hint targets) need one database.
	Tables sqlread.Tables
}

// DefaultTimeout is Options.Timeout's default.
const DefaultTimeout = 200 * time.Millisecond

// Open connects to memcached for the database env reads. It asks every
// server for its fence (package internal/memcached): servers that do not
// answer are left out until they come back (DownServers), as after a later
// failure, so an application restarting during a partial memcached outage
// comes up; when none answers, it is most likely a wrong address, refused
// with an error matching timeline.ErrUnavailable. Its requests end with ctx
// (then Open fails with ctx's error).
func Open(ctx context.Context, env sqlread.Env, opts Options) (*State, error) {
	if err := mckey.CheckNamespace(opts.Namespace); err != nil {
		return nil, err
	}
	id, err := schema.Identity(ctx, env.DB, "pushpull recent lists")
	if err != nil {
		return nil, err
	}
	if opts.Tables == nil {
		opts.Tables = sqlread.MariaDBTables{}
	}
	st := &State{
		db:       env.DB,
		pages:    env.Pages,
		tables:   opts.Tables,
		fallback: opts.Tables.Merge().NewReader(env),
		prefix:   opts.Namespace + "pr:" + id + ":",
		timeout:  opts.Timeout,
		maxIDs:   DefaultRecentLen,
		dirty:    make(map[timeline.UserID]time.Time),
	}
	if st.timeout <= 0 {
		st.timeout = DefaultTimeout
	}
	if opts.Hints {
		st.active = &activeIndexes{keep: DefaultActiveLen}
	}
	// One idle connection per database connection: a read holds one of
	// each at a time, so the two pools see the same concurrency.
	idle := opts.MaxConns
	if idle <= 0 {
		idle = 64
	}
	st.mc, err = memcached.New(ctx, memcached.Options{Servers: opts.Servers, Prefix: st.prefix, Timeout: st.timeout, MaxIdle: idle})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("memcached at %v: %w", opts.Servers, err)
		}
		return nil, fmt.Errorf("memcached at %v: %w: %w", opts.Servers, timeline.ErrUnavailable, err)
	}
	return st, nil
}

// DownServers returns the memcached servers failing now: their keys are
// read from the database until they answer again.
func (st *State) DownServers() []string { return st.mc.Down() }

// SendsHints reports whether Posted hints indexes (Options.Hints).
func (st *State) SendsHints() bool { return st.active != nil }

// Posted runs the hooks of a committed post: the message goes to the
// message cache, its id to the author's list, and its hint (with
// Options.Hints) to the indexes of the author's hint targets. After the
// commit, never before: a list may only ever hold ids that the database
// has (see added).
func (st *State) Posted(ctx context.Context, msg timeline.Message) {
	st.messages.Put(msg)
	ctx, cancel := memcached.WriteContext(ctx, st.timeout)
	defer cancel()
	if st.active != nil {
		st.published(ctx, msg.Author, msg.ID)
	} else {
		st.added(ctx, msg.Author, msg.ID)
	}
}

// PostFailed runs after a post whose INSERT failed: it may have committed
// all the same (a connection lost after the commit), so the author's list
// must not go on without it, nor an index.
func (st *State) PostFailed(ctx context.Context, author timeline.UserID) {
	ctx, cancel := memcached.WriteContext(ctx, st.timeout)
	defer cancel()
	st.invalidate(ctx, author)
	if st.active != nil {
		st.forgetHinted(ctx, author)
	}
}

// Deleted runs after a delete of author's message id (committed, or
// failed after it may have committed): the message leaves this process's
// message cache, and the author's list and the indexes that may hold its
// id are deleted, as after a failed post, to be rebuilt from the
// database, where it is gone. A rebuild that read the database before the
// delete committed cannot store its list: its CAS token is older than the
// deletion of the key (see rebuild).
func (st *State) Deleted(ctx context.Context, author timeline.UserID, id timeline.MessageID) {
	st.messages.Forget(id)
	st.PostFailed(ctx, author)
}

// FollowsChanged tells every store that user's followees changed: it
// replaces the user's follow token. It runs after the database write, and
// also after a failed one, which may have committed all the same.
func (st *State) FollowsChanged(ctx context.Context, user timeline.UserID) {
	ctx, cancel := memcached.WriteContext(ctx, st.timeout)
	defer cancel()
	st.followsChanged(ctx, user)
}

// FollowChanged runs after follower followed (follow) or unfollowed
// author: with Home, an author that crossed the threshold has this
// process reread who the celebrities are.
func (st *State) FollowChanged(ctx context.Context, follower, author timeline.UserID, follow bool) {
	if st.home != nil {
		st.home.followed(ctx, st.db, author, follow)
	}
}

// Close closes the connections to memcached.
func (st *State) Close() {
	if st.closed.CompareAndSwap(false, true) {
		st.mc.Close()
	}
}

// KeyPrefix returns what every key of this state starts with, which also
// names its fences (internal/memcached's Options.Prefix): a client with
// the same servers and prefix reads and writes the state's keys as the
// state does, for tests that damage them.
func (st *State) KeyPrefix() string { return st.prefix }

// ListKey returns the memcached key of author's list.
func (st *State) ListKey(author timeline.UserID) string { return st.key(author) }

// FollowKey returns the memcached key of user's follow token.
func (st *State) FollowKey(user timeline.UserID) string { return st.followKey(user) }

// IndexKey returns the memcached key of user's index (Active).
func (st *State) IndexKey(user timeline.UserID) string { return st.indexKey(user) }

// TargetsKey returns the memcached key of author's hint targets (Active).
func (st *State) TargetsKey(author timeline.UserID) string { return st.targetsKey(author) }

func (st *State) key(author timeline.UserID) string {
	return st.prefix + strconv.FormatInt(int64(author), 10)
}

// isDirty reports whether this store must not trust author's list.
func (st *State) isDirty(author timeline.UserID, now time.Time) bool {
	if st.nDirty.Load() == 0 {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	until, ok := st.dirty[author]
	if ok && now.After(until) {
		delete(st.dirty, author)
		st.nDirty.Add(-1)
		return false
	}
	return ok
}

func (st *State) clearDirty(author timeline.UserID) {
	if st.nDirty.Load() == 0 {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.dirty[author]; ok {
		delete(st.dirty, author)
		st.nDirty.Add(-1)
	}
}

func (st *State) markDirty(author timeline.UserID) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.dirty[author]; !ok {
		st.nDirty.Add(1)
	}
	st.dirty[author] = time.Now().Add(recentMaxAge + time.Minute)
}

// added appends a committed post's id to its author's list. A missing list
// may stay missing: whoever rebuilds it reads the database after this
// commit (see rebuild). But memcached answers an append to a value that
// would outgrow its item size limit as it answers one to a missing key
// (NOT_STORED), and such a list now lacks an acknowledged post, so both
// are deleted, as is a list whose append failed otherwise; if even that
// fails, this store stops trusting it (isDirty), and every store stops
// trusting it once it is older than recentMaxAge.
func (st *State) added(ctx context.Context, author timeline.UserID, id timeline.MessageID) {
	key := st.key(author)
	err := st.mc.Append(ctx, []*memcached.Item{{Key: key, Value: encodeRecord(key, uint64(id))}})[0]
	if err == nil {
		return
	}
	if !errors.Is(err, memcached.ErrNotStored) {
		st.cacheFailed(ctx)
	}
	st.invalidate(ctx, author)
}

// invalidate deletes author's list, which may lack a post that the
// database has. If memcached cannot be told, this store stops trusting the
// list, and so does every other once the list's server has a new fence:
// a server that failed gets one before this process uses it again, and one
// that merely ran out of the write's time is distrusted (see package
// internal/memcached).
func (st *State) invalidate(ctx context.Context, author timeline.UserID) {
	key := st.key(author)
	err := st.mc.Delete(ctx, key)
	if err == nil || errors.Is(err, memcached.ErrCacheMiss) {
		return
	}
	st.cacheFailed(ctx)
	st.markDirty(author)
	st.mc.Distrust(key)
}

// rebuild reads the lists of authors from the database and stores them,
// returning them for the read at hand. tokens holds, for some of the
// authors, the value their key held when it was read (placeholder or
// garbage) with its CAS id; for the others it first adds a placeholder and
// reads it back for one.
//
// Why a token taken before the database read: a post commits, then
// appends. If its append comes after the token, the value changed and the
// CAS fails, so a list that may lack the post is never stored. If it came
// before, the commit came before the database read, which therefore holds
// the post. And if the post found no key at all, the placeholder that
// gave the token was added later still. The same holds for two rebuilds
// racing each other: only one CAS can succeed, and both read the database
// after their token. A failed CAS is not retried: this read already has
// correct lists from the database, and the next reader rebuilds.
func (st *State) rebuild(ctx context.Context, authors []timeline.UserID, tokens map[timeline.UserID]*memcached.Item) (map[timeline.UserID]authorList, int64, error) {
	st.takeTokens(ctx, authors, st.key, tokens)

	// One statement for all of them: RecentLen+1 ids each, the one extra
	// telling whether the list is complete.
	var scans sqlread.AuthorScans
	scans.Grow(len(authors))
	for _, a := range authors {
		scans.Add(a, 0, st.maxIDs+1)
	}
	builtAt := time.Now().Unix()
	got, err := scans.Run(ctx, st.db)
	if err != nil {
		return nil, 0, err
	}
	var rows int64
	lists := make(map[timeline.UserID]authorList, len(authors))
	values := make(map[timeline.UserID][]byte, len(authors))
	for _, a := range authors {
		ids := got[a]
		rows += int64(len(ids))
		slices.SortFunc(ids, sqlread.NewestFirst)
		complete := len(ids) <= st.maxIDs
		if !complete {
			ids = ids[:st.maxIDs]
		}
		// The read uses the encoded list like one from memcached: one
		// code path for both.
		key := st.key(a)
		v := EncodeList(key, ids, complete, builtAt)
		l, ok := decodeList(key, v)
		if !ok {
			panic("pull: a list just encoded does not decode")
		}
		lists[a], values[a] = l, v
	}

	st.storeAll(ctx, tokens, values, listTTL, func(a timeline.UserID) {
		st.stats.rebuilds.Add(1)
		// Built from a database read after the token: whatever post
		// this store failed to append is in it.
		st.clearDirty(a)
	})
	if st.active != nil {
		st.primeTargets(ctx, authors)
	}
	return lists, rows, nil
}

// listTTL is memcached's expiration for lists: a little over recentMaxAge,
// after which readers rebuild them anyway.
const listTTL = int32((recentMaxAge + time.Minute) / time.Second)

// takeTokens gives each of authors that has no token in tokens one for
// its key: the value memcached holds once a placeholder has been added
// where there was none. It must come before the database read whose result
// will be stored with it (see rebuild). An author memcached gives none
// keeps none: its value is built, used, and not stored.
func (st *State) takeTokens(ctx context.Context, authors []timeline.UserID, key func(timeline.UserID) string, tokens map[timeline.UserID]*memcached.Item) {
	var need []timeline.UserID
	var keys []string
	for _, a := range authors {
		if tokens[a] == nil {
			need, keys = append(need, a), append(keys, key(a))
		}
	}
	if len(keys) == 0 {
		return
	}
	g := new(errgroup.Group)
	g.SetLimit(8)
	var failed atomic.Bool
	for _, k := range keys {
		g.Go(func() error {
			err := st.mc.Add(ctx, &memcached.Item{Key: k, Value: placeholder, Expiration: placeholderTTL})
			if err != nil && !errors.Is(err, memcached.ErrNotStored) {
				st.cacheFailed(ctx)
				failed.Store(true)
			}
			return nil
		})
	}
	g.Wait()
	if failed.Load() {
		return
	}
	got, err := st.mc.Get(ctx, keys)
	if err != nil {
		st.cacheFailed(ctx)
		return
	}
	for i, it := range got {
		if it != nil {
			tokens[need[i]] = it
		}
	}
}

// storeBuilt stores v under it, a token or a value read earlier, unless
// the key changed since (a post or another rebuild got there first: not
// an error, the next reader tries again). It reports whether v was stored.
func (st *State) storeBuilt(ctx context.Context, it *memcached.Item, v []byte, exp int32) bool {
	it.Value, it.Expiration = v, exp
	err := st.mc.CompareAndSwap(ctx, it)
	if err != nil && !isCASMiss(err) {
		st.cacheFailed(ctx)
	}
	return err == nil
}

// storeAll runs storeBuilt for every author with a token and a value,
// eight at a time (independent keys, and a cold page can have dozens),
// calling stored (if not nil) for each one stored.
func (st *State) storeAll(ctx context.Context, tokens map[timeline.UserID]*memcached.Item, values map[timeline.UserID][]byte, exp int32, stored func(timeline.UserID)) {
	g := new(errgroup.Group)
	g.SetLimit(8)
	for a, tok := range tokens {
		v, ok := values[a]
		if !ok {
			continue
		}
		g.Go(func() error {
			if st.storeBuilt(ctx, tok, v, exp) && stored != nil {
				stored(a)
			}
			return nil
		})
	}
	g.Wait()
}

// isCASMiss reports whether a CompareAndSwap failed because the value
// changed or vanished since it was read: the expected outcome of a race.
func isCASMiss(err error) bool {
	return errors.Is(err, memcached.ErrCASConflict) || errors.Is(err, memcached.ErrNotStored) || errors.Is(err, memcached.ErrCacheMiss)
}

// compact rewrites a list that has accumulated appended records as a base,
// keeping its age: compacting must not make a list live longer than its
// last database read allows. Best effort: a post in between makes the CAS
// fail, and the next reader tries again.
func (st *State) compact(ctx context.Context, it *memcached.Item, l authorList) {
	ids, ok := l.all()
	if !ok {
		return
	}
	complete := l.complete
	if len(ids) > st.maxIDs {
		ids, complete = ids[:st.maxIDs], false
	}
	st.storeBuilt(ctx, it, EncodeList(it.Key, ids, complete, l.builtAt), listTTL)
}

// readScratch holds one read's working slices, reused through a pool: a
// read of 43 followees would otherwise allocate about 10 KB for them, and
// on a page served from memory the garbage collector reclaiming that is a
// noticeable share of the work.
type readScratch struct {
	lists     []authorList
	iters     []listIter
	heap      []int // empty, with room for n
	perAuthor []int
	taken     []uint64 // empty, with room for fetch
	owner     []int    // empty, with room for fetch
}

var scratchPool = sync.Pool{New: func() any { return new(readScratch) }}

// getScratch returns zeroed slices for n followees and a page of fetch.
func getScratch(n, fetch int) *readScratch {
	sc := scratchPool.Get().(*readScratch)
	sc.lists = zeroed(sc.lists, n)
	sc.iters = zeroed(sc.iters, n)
	sc.perAuthor = zeroed(sc.perAuthor, n)
	sc.heap = zeroed(sc.heap, n)[:0]
	sc.taken = zeroed(sc.taken, fetch)[:0]
	sc.owner = zeroed(sc.owner, fetch)[:0]
	return sc
}

// release returns sc to the pool, dropping its references to memcached's
// values; a read of thousands of followees keeps its slices to itself.
func (sc *readScratch) release() {
	if cap(sc.lists) > 4096 {
		return
	}
	clear(sc.lists)
	clear(sc.iters)
	scratchPool.Put(sc)
}

// zeroed returns s resized to n zero values, reusing its array if it can.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// fetchLists returns user's followees and what memcached holds for
// their lists: lists[i] is followees[i]'s, or nil. With the followees
// cached in process (followSets) that is one multi-get, the user's follow
// token included; otherwise the followees come from the database first
// (rows is how many rows that read). fs is user's cached followees if the
// caller has looked them up already, else nil.
func (st *State) fetchLists(ctx context.Context, user timeline.UserID, fs *followSet, now time.Time) (followees []timeline.UserID, lists []*memcached.Item, rows int64, err error) {
	var earlier map[string]*memcached.Item // lists fetched for followees that changed
	var keys []string                      // of followees' lists
	if st.follows == nil {
		if followees, err = sqlread.Followees(ctx, st.db, user); err != nil {
			return nil, nil, 0, err
		}
	} else {
		if fs == nil {
			fs = st.follows.get(user, now)
		}
		if fs != nil {
			n := len(fs.followees)
			items, err := st.mc.Get(ctx, fs.keys) // the lists, then the token
			if err != nil {
				st.cacheFailed(ctx)
				return nil, nil, 0, errCacheDown
			}
			if tok := items[n]; tok != nil && string(tok.Value) == fs.token {
				st.stats.followHits.Add(1)
				return fs.followees, items[:n], 0, nil
			}
			// Followed or unfollowed since: the lists fetched stay good
			// for the authors still followed.
			earlier = make(map[string]*memcached.Item, n)
			for i, it := range items[:n] {
				if it != nil {
					earlier[fs.keys[i]] = it
				}
			}
		}
		fs, err := st.loadFollowSet(ctx, user, now)
		if err != nil {
			return nil, nil, 0, err
		}
		followees, keys = fs.followees, fs.keys[:len(fs.followees)]
	}
	rows = int64(len(followees))
	if len(followees) == 0 {
		return nil, nil, rows, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, err
	}
	if keys == nil {
		keys = st.listKeys(followees, 0)
	}
	need := keys
	if earlier != nil {
		need = nil
		for _, k := range keys {
			if earlier[k] == nil {
				need = append(need, k)
			}
		}
	}
	got, err := st.mc.Get(ctx, need)
	if err != nil {
		st.cacheFailed(ctx)
		return nil, nil, 0, errCacheDown
	}
	if len(need) == len(keys) {
		return followees, got, rows, nil
	}
	lists = make([]*memcached.Item, len(keys))
	j := 0
	for i, k := range keys {
		if lists[i] = earlier[k]; lists[i] == nil {
			lists[i] = got[j]
			j++
		}
	}
	return followees, lists, rows, nil
}

// loadFollowSet reads user's followees from the database, under the
// follow token read first (see followSets), and caches them.
func (st *State) loadFollowSet(ctx context.Context, user timeline.UserID, now time.Time) (*followSet, error) {
	st.stats.followMisses.Add(1)
	token, err := st.followToken(ctx, user)
	if err != nil {
		st.cacheFailed(ctx)
		return nil, errCacheDown
	}
	followees, err := sqlread.Followees(ctx, st.db, user)
	if err != nil {
		return nil, err
	}
	sorted := slices.Clone(followees)
	slices.Sort(sorted)
	fs := &followSet{user: user, token: token, followees: followees, sorted: sorted, keys: append(st.listKeys(followees, 1), st.followKey(user)), loadedAt: now}
	st.follows.put(fs)
	return fs, nil
}

// listKeys returns the keys of authors' lists, with room for spare more.
func (st *State) listKeys(authors []timeline.UserID, spare int) []string {
	keys := make([]string, len(authors), len(authors)+spare)
	for i, a := range authors {
		keys[i] = st.key(a)
	}
	return keys
}

// errSuspect means a list contradicted the database.
var errSuspect = errors.New("an author's recent list disagrees with the database")

// errCacheDown means memcached did not answer the multi-get.
var errCacheDown = errors.New("memcached failed")

// suspect deletes the lists of authors, which contradicted the database,
// and returns errSuspect: the read starts over from the database alone.
func (st *State) suspect(ctx context.Context, authors []timeline.UserID) error {
	for _, a := range authors {
		st.stats.cacheErrors.Add(1)
		st.invalidate(ctx, a)
	}
	return errSuspect
}

// readLists reads the page from every followee's list; fs is as for
// fetchLists.
func (st *State) readLists(ctx context.Context, r timeline.Request, fs *followSet, now time.Time) ([]timeline.Message, error) {
	followees, items, rows, err := st.fetchLists(ctx, r.User, fs, now)
	if err != nil {
		return nil, err
	}
	msgs, n, err := st.mergeLists(ctx, r, followees, items, now)
	if err != nil {
		return nil, err
	}
	st.pages.Add(rows + n)
	return msgs, nil
}

// mergeLists computes the page of r from the authors' lists as memcached
// returned them (items[i] is authors[i]'s, or nil): it rebuilds the
// missing ones, merges, reads from the database what the lists do not
// cover, and checks the lists against the rows it fetched. rows is how
// many rows the database examined.
func (st *State) mergeLists(ctx context.Context, r timeline.Request, followees []timeline.UserID, items []*memcached.Item, now time.Time) (_ []timeline.Message, rows int64, err error) {
	if len(followees) == 0 {
		return nil, 0, nil
	}
	fetch := r.Fetch()
	sc := getScratch(len(followees), fetch)
	defer sc.release()
	lists := sc.lists
	var stale []timeline.UserID
	var tokens map[timeline.UserID]*memcached.Item
	for i, a := range followees {
		it := items[i]
		if it == nil || st.isDirty(a, now) {
			// Missing, or this store failed to append to it: rebuild
			// (the rebuild takes a fresh token, so storing it is safe).
			stale = append(stale, a)
			continue
		}
		l, ok := decodeList(it.Key, it.Value)
		if !ok || now.Unix()-l.builtAt > int64(recentMaxAge/time.Second) {
			// A placeholder, garbage, or too old: it is its own token.
			stale = append(stale, a)
			if tokens == nil {
				tokens = make(map[timeline.UserID]*memcached.Item)
			}
			tokens[a] = it
			continue
		}
		lists[i] = l
		if l.nRecords >= compactAt {
			st.compact(ctx, it, l)
		}
	}
	st.stats.cacheHits.Add(int64(len(followees) - len(stale)))
	if len(stale) > 0 {
		st.stats.cacheMisses.Add(int64(len(stale)))
		if tokens == nil {
			tokens = make(map[timeline.UserID]*memcached.Item)
		}
		built, n, err := st.rebuild(ctx, stale, tokens)
		if err != nil {
			return nil, 0, err
		}
		rows += n
		for i, a := range followees {
			if l, ok := built[a]; ok {
				lists[i] = l
			}
		}
	}

	// Merge the lists, newest first, until Fetch() ids are taken: a k-way
	// merge on a heap of the lists' next ids below the cursor.
	before := uint64(r.Before)
	iters := sc.iters
	heap := sc.heap // indexes into iters, largest peek() first
	for i := range followees {
		iters[i] = lists[i].iter()
		it := &iters[i]
		for before > 0 && it.peek() >= before {
			it.pop()
		}
		if it.peek() != 0 {
			heap = append(heap, i)
		}
	}
	above := func(i, j int) bool { return iters[heap[i]].peek() > iters[heap[j]].peek() }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(heap) {
				return
			}
			if c+1 < len(heap) && above(c+1, c) {
				c++
			}
			if !above(c, i) {
				return
			}
			heap[i], heap[c] = heap[c], heap[i]
			i = c
		}
	}
	for i := len(heap)/2 - 1; i >= 0; i-- {
		down(i)
	}
	taken := sc.taken
	owner := sc.owner // the followee of each taken id, by index
	perAuthor := sc.perAuthor
	for len(taken) < fetch && len(heap) > 0 {
		i := heap[0]
		taken = append(taken, iters[i].pop())
		owner = append(owner, i)
		perAuthor[i]++
		if iters[i].peek() == 0 {
			heap[0] = heap[len(heap)-1]
			heap = heap[:len(heap)-1]
		}
		down(0)
	}
	for i := range iters {
		if iters[i].bad {
			return nil, 0, st.suspect(ctx, []timeline.UserID{followees[i]})
		}
	}
	var floor uint64 // no id below it can be on the page
	if len(taken) == fetch {
		floor = taken[fetch-1]
	}

	// Authors whose unlisted ids could still reach the page are read from
	// the database, in the statement that fetches the bodies: those whose
	// list is incomplete and ran out above the floor.
	var b sqlread.PageQuery
	for i, a := range followees {
		l := &lists[i]
		if l.complete || iters[i].peek() != 0 {
			continue
		}
		more := l.floor // every id of the author above it is listed
		if before > 0 && before < more {
			more = before
		}
		if more > floor+1 {
			b.Branch(a, more, floor, fetch-perAuthor[i])
		}
	}
	var msgs []timeline.Message
	if b.Branches() == 0 {
		var cached bool
		if msgs, cached = st.messages.GetAll(taken); cached {
			st.stats.messageHits.Add(1)
		} else {
			msgs, err = st.tables.Messages(ctx, st.db, taken, authorsOf(followees, owner))
			rows += int64(len(msgs))
			st.messages.PutAll(msgs)
		}
	} else {
		st.stats.fallbacks.Add(int64(b.Branches()))
		var branchRows int64
		msgs, branchRows, err = st.tables.Page(ctx, st.db, &b, taken, authorsOf(followees, owner), fetch)
		rows += branchRows + int64(len(msgs))
		st.messages.PutAll(msgs)
	}
	if err != nil {
		return nil, 0, err
	}

	// Every listed id that the page should hold must be there, by its
	// author; the page's order is the database'st. taken and msgs are both
	// newest first.
	var bad []timeline.UserID
	j := 0
	for k, id := range taken {
		for j < len(msgs) && uint64(msgs[j].ID) > id {
			j++
		}
		author := followees[owner[k]]
		switch {
		case j < len(msgs) && uint64(msgs[j].ID) == id:
			if msgs[j].Author != author {
				bad = append(bad, author)
			}
		case j < len(msgs) || len(msgs) < fetch:
			// Missing, yet newer than the page's last message (or the
			// page is not full).
			bad = append(bad, author)
		}
	}
	if len(bad) > 0 {
		return nil, 0, st.suspect(ctx, bad)
	}
	return msgs, rows, nil
}

// authorsOf returns the author of each taken id: followees[owner[k]].
func authorsOf(followees []timeline.UserID, owner []int) []timeline.UserID {
	out := make([]timeline.UserID, len(owner))
	for k, i := range owner {
		out[k] = followees[i]
	}
	return out
}
