package pull

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

	"github.com/bradfitz/gomemcache/memcache"
	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/internal/multiget"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// StrategyRecent keeps, for every author, the ids of their newest messages
// in memcached: a capped list, updated when they post (one append, not one
// write per follower). A read takes the followees (cached in process,
// checked by a follow token fetched along with the lists: followsets.go),
// all their lists in one multi-get, merges them, and takes the page's
// bodies from the in-process message cache or by primary key; the database
// stays the system of record:
//
//   - A missing, expired or unreadable list is rebuilt from the database
//     (newest RecentLen ids), through a CAS token taken before the database
//     read, so that a post racing the rebuild can never be lost: see
//     rebuild.
//   - A list covers only the author's newest ids. When a page reaches below
//     an incomplete list, that author's part comes from the database, in
//     the same statement that fetches the bodies, and only if it can still
//     reach the page (the floor of readMerge).
//   - The bodies' rows are checked against the lists: an id that is not in
//     the database, or not by that author, means a corrupt list; it is
//     deleted and the page is read from the database alone.
//   - A memcached that fails or times out costs only speed: the read falls
//     back to readMerge, the failure is counted.
//
// Every post, follow and unfollow on the database must go through a store
// with the same Memcache and Namespace (any strategy: Config.Memcache makes
// Post keep the lists and Follow and Unfollow the tokens), or the lists
// miss those posts and the followee caches those follows. A post whose append fails deletes
// the author's list; if that fails too, this store reads that author from
// the database until any list built before the failure has aged out
// (recentMaxAge), and lists older than that are rebuilt everywhere.
//
// Keys are Namespace + "pr:" + a digest of the database's cursor secret +
// ":" + author id: a re-created database (as the benchmark does before
// loading) gets fresh keys and never sees lists of the old one.

// DefaultRecentLen is how many ids an author's list holds unless
// Config.RecentLen says otherwise.
const DefaultRecentLen = 64

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

type recentLists struct {
	mc     *memcache.Client
	get    *multiget.Client // the read path's multi-gets, on mc's servers
	prefix string
	maxIDs int // RecentLen

	follows *followSets    // nil unless StrategyRecent or StrategyActive
	active  *activeIndexes // nil unless Config.ActiveHints (StrategyActive sets it)

	mu     sync.Mutex
	dirty  map[timeline.UserID]time.Time // authors whose list may have missed a post, until when
	nDirty atomic.Int32
	closed atomic.Bool
}

// checkNamespace keeps keys valid for memcached: at most 250 bytes (the
// rest of a key takes under 40), no spaces or control characters.
func checkNamespace(ns string) error {
	if len(ns) > 64 {
		return fmt.Errorf("memcached namespace %q: longer than 64 bytes", ns)
	}
	for _, c := range []byte(ns) {
		if c <= ' ' || c == 0x7f {
			return fmt.Errorf("memcached namespace %q: spaces and control characters are not allowed in memcached keys", ns)
		}
	}
	return nil
}

func newRecentLists(ctx context.Context, db *sql.DB, cfg Config) (*recentLists, error) {
	id, err := schema.Identity(ctx, db, "pushpull recent lists")
	if err != nil {
		return nil, err
	}
	servers := new(memcache.ServerList)
	if err := servers.SetServers(cfg.Memcache...); err != nil {
		return nil, fmt.Errorf("memcached at %v: %w", cfg.Memcache, err)
	}
	r := &recentLists{
		mc:     memcache.NewFromSelector(servers),
		prefix: cfg.Namespace + "pr:" + id + ":",
		maxIDs: cfg.RecentLen,
		dirty:  make(map[timeline.UserID]time.Time),
	}
	if r.maxIDs <= 0 {
		r.maxIDs = DefaultRecentLen
	}
	if cfg.ActiveHints {
		r.active = newActiveIndexes(cfg.ActiveLen)
	}
	if cfg.Strategy == StrategyRecent || cfg.Strategy == StrategyActive {
		if cfg.FolloweeCache == 0 {
			cfg.FolloweeCache = DefaultFolloweeCache
		}
		r.follows = newFollowSets(cfg.FolloweeCache)
	}
	// One idle connection per database connection: a read holds one of
	// each at a time, so the two pools see the same concurrency.
	r.mc.MaxIdleConns = cfg.MaxConns
	if r.mc.MaxIdleConns <= 0 {
		r.mc.MaxIdleConns = 64
	}
	r.mc.Timeout = 500 * time.Millisecond
	r.get = multiget.New(servers, r.mc.Timeout, r.mc.MaxIdleConns)
	// Later, a memcached that stops answering only costs speed (reads
	// fall back to the database). At Open it is most likely a wrong
	// address, better refused now, like an unreachable database, than
	// found out through a slow benchmark.
	if err := r.mc.Ping(); err != nil {
		return nil, fmt.Errorf("memcached at %v: %w: %w", cfg.Memcache, timeline.ErrUnavailable, err)
	}
	return r, nil
}

func (r *recentLists) close() {
	if r.closed.CompareAndSwap(false, true) {
		r.mc.Close()
		r.get.Close()
	}
}

func (r *recentLists) key(author timeline.UserID) string {
	return r.prefix + strconv.FormatInt(int64(author), 10)
}

// isDirty reports whether this store must not trust author's list.
func (r *recentLists) isDirty(author timeline.UserID, now time.Time) bool {
	if r.nDirty.Load() == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.dirty[author]
	if ok && now.After(until) {
		delete(r.dirty, author)
		r.nDirty.Add(-1)
		return false
	}
	return ok
}

func (r *recentLists) clearDirty(author timeline.UserID) {
	if r.nDirty.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.dirty[author]; ok {
		delete(r.dirty, author)
		r.nDirty.Add(-1)
	}
}

func (r *recentLists) markDirty(author timeline.UserID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.dirty[author]; !ok {
		r.nDirty.Add(1)
	}
	r.dirty[author] = time.Now().Add(recentMaxAge + time.Minute)
}

// added appends a committed post's id to its author's list. A missing list
// may stay missing: whoever rebuilds it reads the database after this
// commit (see rebuild). But memcached answers an append to a value that
// would outgrow its item size limit as it answers one to a missing key
// (NOT_STORED), and such a list now lacks an acknowledged post, so both
// are deleted, as is a list whose append failed otherwise; if even that
// fails, this store stops trusting it (isDirty), and every store stops
// trusting it once it is older than recentMaxAge.
func (r *recentLists) added(s *Store, author timeline.UserID, id timeline.MessageID) {
	key := r.key(author)
	err := r.mc.Append(&memcache.Item{Key: key, Value: encodeRecord(key, uint64(id))})
	if err == nil {
		return
	}
	if !errors.Is(err, memcache.ErrNotStored) {
		s.stats.cacheErrors.Add(1)
	}
	r.invalidate(s, author)
}

// invalidate deletes author's list, which may lack a post that the
// database has; if memcached cannot be told, this store stops trusting
// the list instead.
func (r *recentLists) invalidate(s *Store, author timeline.UserID) {
	if err := r.mc.Delete(r.key(author)); err == nil || errors.Is(err, memcache.ErrCacheMiss) {
		return
	}
	s.stats.cacheErrors.Add(1)
	r.markDirty(author)
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
func (r *recentLists) rebuild(ctx context.Context, s *Store, authors []timeline.UserID, tokens map[timeline.UserID]*memcache.Item) (map[timeline.UserID]authorList, int64, error) {
	r.takeTokens(s, authors, r.key, tokens)

	// One statement for all of them: RecentLen+1 ids each, the one extra
	// telling whether the list is complete.
	q := make([]byte, 0, 100*len(authors))
	for i, a := range authors {
		if i > 0 {
			q = append(q, ` UNION ALL `...)
		}
		q = append(q, `(SELECT author_id, id FROM messages WHERE author_id = `...)
		q = strconv.AppendInt(q, int64(a), 10)
		q = append(q, ` ORDER BY id DESC LIMIT `...)
		q = strconv.AppendInt(q, int64(r.maxIDs+1), 10)
		q = append(q, ')')
	}
	builtAt := time.Now().Unix()
	got, err := s.authorIDs(ctx, string(q))
	if err != nil {
		return nil, 0, err
	}
	var rows int64
	lists := make(map[timeline.UserID]authorList, len(authors))
	values := make(map[timeline.UserID][]byte, len(authors))
	for _, a := range authors {
		ids := got[a]
		rows += int64(len(ids))
		slices.SortFunc(ids, newestFirst)
		complete := len(ids) <= r.maxIDs
		if !complete {
			ids = ids[:r.maxIDs]
		}
		// The read uses the encoded list like one from memcached: one
		// code path for both.
		key := r.key(a)
		v := encodeList(key, ids, complete, builtAt)
		l, ok := decodeList(key, v)
		if !ok {
			panic("pull: a list just encoded does not decode")
		}
		lists[a], values[a] = l, v
	}

	r.storeAll(s, tokens, values, listTTL, func(a timeline.UserID) {
		s.stats.rebuilds.Add(1)
		// Built from a database read after the token: whatever post
		// this store failed to append is in it.
		r.clearDirty(a)
	})
	if r.active != nil {
		r.primeTargets(ctx, s, authors)
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
func (r *recentLists) takeTokens(s *Store, authors []timeline.UserID, key func(timeline.UserID) string, tokens map[timeline.UserID]*memcache.Item) {
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
			err := r.mc.Add(&memcache.Item{Key: k, Value: placeholder, Expiration: placeholderTTL})
			if err != nil && !errors.Is(err, memcache.ErrNotStored) {
				s.stats.cacheErrors.Add(1)
				failed.Store(true)
			}
			return nil
		})
	}
	g.Wait()
	if failed.Load() {
		return
	}
	got, err := r.get.Get(keys)
	if err != nil {
		s.stats.cacheErrors.Add(1)
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
func (r *recentLists) storeBuilt(s *Store, it *memcache.Item, v []byte, exp int32) bool {
	it.Value, it.Expiration = v, exp
	err := r.mc.CompareAndSwap(it)
	if err != nil && !isCASMiss(err) {
		s.stats.cacheErrors.Add(1)
	}
	return err == nil
}

// storeAll runs storeBuilt for every author with a token and a value,
// eight at a time (independent keys, and a cold page can have dozens),
// calling stored (if not nil) for each one stored.
func (r *recentLists) storeAll(s *Store, tokens map[timeline.UserID]*memcache.Item, values map[timeline.UserID][]byte, exp int32, stored func(timeline.UserID)) {
	g := new(errgroup.Group)
	g.SetLimit(8)
	for a, tok := range tokens {
		v, ok := values[a]
		if !ok {
			continue
		}
		g.Go(func() error {
			if r.storeBuilt(s, tok, v, exp) && stored != nil {
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
	return errors.Is(err, memcache.ErrCASConflict) || errors.Is(err, memcache.ErrNotStored) || errors.Is(err, memcache.ErrCacheMiss)
}

// compact rewrites a list that has accumulated appended records as a base,
// keeping its age: compacting must not make a list live longer than its
// last database read allows. Best effort: a post in between makes the CAS
// fail, and the next reader tries again.
func (r *recentLists) compact(s *Store, it *memcache.Item, l authorList) {
	ids, ok := l.all()
	if !ok {
		return
	}
	complete := l.complete
	if len(ids) > r.maxIDs {
		ids, complete = ids[:r.maxIDs], false
	}
	r.storeBuilt(s, it, encodeList(it.Key, ids, complete, l.builtAt), listTTL)
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
func (rl *recentLists) fetchLists(ctx context.Context, s *Store, user timeline.UserID, fs *followSet, now time.Time) (followees []timeline.UserID, lists []*memcache.Item, rows int64, err error) {
	var earlier map[string]*memcache.Item // lists fetched for followees that changed
	var keys []string                     // of followees' lists
	if rl.follows == nil {
		if followees, err = s.followees(ctx, user); err != nil {
			return nil, nil, 0, err
		}
	} else {
		if fs == nil {
			fs = rl.follows.get(user, now)
		}
		if fs != nil {
			n := len(fs.followees)
			items, err := rl.get.Get(fs.keys) // the lists, then the token
			if err != nil {
				s.stats.cacheErrors.Add(1)
				return nil, nil, 0, errCacheDown
			}
			if tok := items[n]; tok != nil && string(tok.Value) == fs.token {
				s.stats.followHits.Add(1)
				return fs.followees, items[:n], 0, nil
			}
			// Followed or unfollowed since: the lists fetched stay good
			// for the authors still followed.
			earlier = make(map[string]*memcache.Item, n)
			for i, it := range items[:n] {
				if it != nil {
					earlier[fs.keys[i]] = it
				}
			}
		}
		fs, err := rl.loadFollowSet(ctx, s, user, now)
		if err != nil {
			return nil, nil, 0, err
		}
		followees, keys = fs.followees, fs.keys[:len(fs.followees)]
	}
	rows = int64(len(followees))
	if len(followees) == 0 {
		return nil, nil, rows, nil
	}
	// memcached calls take no context: check it between round trips.
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, err
	}
	if keys == nil {
		keys = rl.listKeys(followees, 0)
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
	got, err := rl.get.Get(need)
	if err != nil {
		s.stats.cacheErrors.Add(1)
		return nil, nil, 0, errCacheDown
	}
	if len(need) == len(keys) {
		return followees, got, rows, nil
	}
	lists = make([]*memcache.Item, len(keys))
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
func (rl *recentLists) loadFollowSet(ctx context.Context, s *Store, user timeline.UserID, now time.Time) (*followSet, error) {
	s.stats.followMisses.Add(1)
	token, err := rl.followToken(user)
	if err != nil {
		s.stats.cacheErrors.Add(1)
		return nil, errCacheDown
	}
	followees, err := s.followees(ctx, user)
	if err != nil {
		return nil, err
	}
	sorted := slices.Clone(followees)
	slices.Sort(sorted)
	fs := &followSet{user: user, token: token, followees: followees, sorted: sorted, keys: append(rl.listKeys(followees, 1), rl.followKey(user)), loadedAt: now}
	rl.follows.put(fs)
	return fs, nil
}

// listKeys returns the keys of authors' lists, with room for spare more.
func (rl *recentLists) listKeys(authors []timeline.UserID, spare int) []string {
	keys := make([]string, len(authors), len(authors)+spare)
	for i, a := range authors {
		keys[i] = rl.key(a)
	}
	return keys
}

// errSuspect means a list contradicted the database.
var errSuspect = errors.New("an author's recent list disagrees with the database")

// errCacheDown means memcached did not answer the multi-get.
var errCacheDown = errors.New("memcached failed")

// suspect deletes the lists of authors, which contradicted the database,
// and returns errSuspect: the read starts over from the database alone.
func (s *Store) suspect(authors []timeline.UserID) error {
	rl := s.recent
	for _, a := range authors {
		s.stats.cacheErrors.Add(1)
		rl.invalidate(s, a)
	}
	return errSuspect
}

// readRecent implements StrategyRecent; see the comment at the top. When
// memcached fails, or a list contradicts the database, the page comes
// from readMerge instead.
func (s *Store) readRecent(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	msgs, err := s.readRecentLists(ctx, r, nil, time.Now())
	if errors.Is(err, errSuspect) || errors.Is(err, errCacheDown) {
		return s.readMerge(ctx, r)
	}
	return msgs, err
}

// readRecentLists reads the page from every followee's list; fs is as for
// fetchLists.
func (s *Store) readRecentLists(ctx context.Context, r timeline.Request, fs *followSet, now time.Time) ([]timeline.Message, error) {
	followees, items, rows, err := s.recent.fetchLists(ctx, s, r.User, fs, now)
	if err != nil {
		return nil, err
	}
	msgs, n, err := s.mergeLists(ctx, r, followees, items, now)
	if err != nil {
		return nil, err
	}
	s.countPage(rows + n)
	return msgs, nil
}

// mergeLists computes the page of r from the authors' lists as memcached
// returned them (items[i] is authors[i]'s, or nil): it rebuilds the
// missing ones, merges, reads from the database what the lists do not
// cover, and checks the lists against the rows it fetched. rows is how
// many rows the database examined.
func (s *Store) mergeLists(ctx context.Context, r timeline.Request, followees []timeline.UserID, items []*memcache.Item, now time.Time) (_ []timeline.Message, rows int64, err error) {
	if len(followees) == 0 {
		return nil, 0, nil
	}
	rl := s.recent
	fetch := r.Fetch()
	sc := getScratch(len(followees), fetch)
	defer sc.release()
	lists := sc.lists
	var stale []timeline.UserID
	var tokens map[timeline.UserID]*memcache.Item
	for i, a := range followees {
		it := items[i]
		if it == nil || rl.isDirty(a, now) {
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
				tokens = make(map[timeline.UserID]*memcache.Item)
			}
			tokens[a] = it
			continue
		}
		lists[i] = l
		if l.nRecords >= compactAt {
			rl.compact(s, it, l)
		}
	}
	s.stats.cacheHits.Add(int64(len(followees) - len(stale)))
	if len(stale) > 0 {
		s.stats.cacheMisses.Add(int64(len(stale)))
		if tokens == nil {
			tokens = make(map[timeline.UserID]*memcache.Item)
		}
		built, n, err := rl.rebuild(ctx, s, stale, tokens)
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
			return nil, 0, s.suspect([]timeline.UserID{followees[i]})
		}
	}
	var floor uint64 // no id below it can be on the page
	if len(taken) == fetch {
		floor = taken[fetch-1]
	}

	// Authors whose unlisted ids could still reach the page are read from
	// the database, in the statement that fetches the bodies: those whose
	// list is incomplete and ran out above the floor.
	var b pageQuery
	b.start()
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
			b.branch(a, more, floor, fetch-perAuthor[i])
		}
	}
	var msgs []timeline.Message
	if b.branches == 0 {
		var cached bool
		if msgs, cached = s.messages.getAll(taken); cached {
			s.stats.messageHits.Add(1)
		} else {
			msgs, err = s.messagesByID(ctx, taken)
			rows += int64(len(msgs))
			s.messages.putAll(msgs)
		}
	} else {
		s.stats.fallbacks.Add(int64(b.branches))
		var branchRows int64
		msgs, branchRows, err = b.run(ctx, s.db, taken, fetch)
		rows += branchRows + int64(len(msgs))
		s.messages.putAll(msgs)
	}
	if err != nil {
		return nil, 0, err
	}

	// Every listed id that the page should hold must be there, by its
	// author; the page's order is the database's. taken and msgs are both
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
		return nil, 0, s.suspect(bad)
	}
	return msgs, rows, nil
}
