package recent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/timeline"
)

// Active is Recent with, for users who follow many authors, an index of
// the followees who posted most recently (after Flickr's): a Recent read
// of a user following 1,000 authors is a 1,000-key multi-get of which a
// page uses a few dozen; an indexed read fetches only the Fetch() lists the
// index names.
//
// Unlike Flickr's, the index is exact, as the conformance suite demands:
//
//   - It is a base built from the database (each followee's newest id, the
//     ActiveLen newest kept) and a floor: no followee left out had a
//     message above it. A page merged from the indexed authors alone is
//     the true page when its last message is above the floor (or the floor
//     is 0); otherwise the read falls back to every list.
//   - A post appends a hint (author, id) to the index of each of the
//     author's hint targets, after its commit, pipelined. The targets are
//     the followers who built an index lately; index_readers is their
//     record and memcached keeps a copy per author, which the post fetches
//     in the request that appends to the author's list. A reader registers
//     as a target of every followee (database first, then memcached) before
//     it builds an index, until a minute past the index's lifetime, so a
//     post either sees the registration or commits before the build reads
//     the database. A post by an author no heavy follower reads lately
//     costs what a Recent post does.
//   - The index carries the follow token it was built under, so a follow
//     or unfollow retires it; reads drop entries for authors no longer
//     followed (a hint can land after the rebuild that followed an
//     unfollow), and an index left with under half its entries is rebuilt.
//   - A hint memcached refused is followed by a delete of that index. When
//     even the delete, the rebuild of the author's hint targets or the
//     INSERT fails, this process stops trusting every index built before
//     the failure; other processes' indexes age out as lists do.
type Active struct {
	Recent
	// ActiveLen is how many followees an index keeps, 0 to MaxLen; 0
	// means DefaultActiveLen. Users who follow more than twice as many
	// authors get an index; the others read as with Recent.
	ActiveLen int
}

// DefaultActiveLen is how many followees an index keeps unless
// Active.ActiveLen says otherwise.
const DefaultActiveLen = 64

// Name implements Strategy.
func (Active) Name() string { return "active" }

// Hints implements Strategy: posts must hint the indexes Active reads.
func (Active) Hints() bool { return true }

// NewReader implements Strategy; st must send hints (Options.Hints).
func (c Active) NewReader(st *State) (sqlread.Reader, error) {
	if c.ActiveLen < 0 || c.ActiveLen > MaxLen {
		return nil, fmt.Errorf("ActiveLen %d is outside 0..%d", c.ActiveLen, MaxLen)
	}
	if st.active == nil {
		return nil, errors.New("strategy active needs a State that sends hints (Options.Hints)")
	}
	if c.ActiveLen > 0 {
		st.active.keep = c.ActiveLen
	}
	c.setUp(st)
	return &reader{st: st, read: st.readActive}, nil
}

// indexCompactAt: an index with this many appended hints is rewritten as a
// base by the next reader.
const indexCompactAt = 64

// activeIndexes is the part of a State that hints and reads indexes.
type activeIndexes struct {
	keep int // ActiveLen

	// distrustBefore: indexes built before this (Unix milliseconds) are not
	// used by this process, which failed to deliver a hint.
	distrustBefore atomic.Int64
}

// heavy reports whether a user who follows n authors gets an index: one
// that would hold half of them or more saves too little.
func (a *activeIndexes) heavy(n int) bool { return n > 2*a.keep }

// indexKey is the memcached key of user's index.
func (st *State) indexKey(user timeline.UserID) string {
	return st.prefix + "i" + strconv.FormatInt(int64(user), 10)
}

// distrust makes this process rebuild every index before using it again.
func (a *activeIndexes) distrust() {
	a.distrustBefore.Store(time.Now().UnixMilli() + 1)
}

// published appends a committed post's record to its author's list and
// learns, in the same request, whom to hint: the author's hint targets
// (hintTarget), rebuilt from the database if memcached lost them. It
// then appends the hint to each target's index, pipelined. Whatever
// memcached did not store is deleted: a missing key needs nothing, but
// append answers a value grown too large as it answers a missing key, and
// a failed append leaves the value unknown.
func (st *State) published(ctx context.Context, author timeline.UserID, id timeline.MessageID) {
	listKey := st.key(author)
	appErr, tgt, err := st.mc.AppendGet(ctx, &memcached.Item{Key: listKey, Value: encodeRecord(listKey, uint64(id))}, st.targetsKey(author))
	if err != nil {
		// memcached failed: the list may lack the post, and whom to hint
		// is unknown.
		st.cacheFailed(ctx)
		st.invalidate(ctx, author)
		st.forgetHinted(ctx, author)
		return
	}
	var drop []string
	if appErr != nil {
		if !errors.Is(appErr, memcached.ErrNotStored) {
			st.cacheFailed(ctx)
		}
		drop = append(drop, listKey)
	}
	targets, err := st.hintTargets(ctx, author, tgt)
	if err != nil {
		st.drop(ctx, author, drop)
		st.stats.hintErrors.Add(1)
		st.active.distrust()
		return
	}
	if len(targets) > 0 {
		items := make([]memcached.Item, len(targets))
		ptrs := make([]*memcached.Item, len(targets))
		for i, u := range targets {
			k := st.indexKey(u)
			items[i] = memcached.Item{Key: k, Value: EncodeHint(k, author, uint64(id))}
			ptrs[i] = &items[i]
		}
		st.stats.hints.Add(int64(len(targets)))
		for i, err := range st.mc.Append(ctx, ptrs) {
			if err != nil {
				drop = append(drop, items[i].Key)
			}
		}
	}
	st.drop(ctx, author, drop)
}

// drop deletes keys (author's list and indexes that may lack a post), and
// distrusts what it cannot delete.
func (st *State) drop(ctx context.Context, author timeline.UserID, keys []string) {
	if len(keys) == 0 {
		return
	}
	listKey := st.key(author)
	hintLost := false
	for i, err := range st.mc.DeleteMulti(ctx, keys) {
		if err == nil || errors.Is(err, memcached.ErrCacheMiss) {
			continue
		}
		st.cacheFailed(ctx)
		if keys[i] == listKey {
			st.markDirty(author)
		} else {
			hintLost = true
		}
	}
	if hintLost {
		st.stats.hintErrors.Add(1)
		st.active.distrust()
	}
}

// forgetHinted deletes the indexes of author's followers who may be
// reading one, after a post whose hints could not be sent, or distrusts
// them all if those followers cannot be read.
func (st *State) forgetHinted(ctx context.Context, author timeline.UserID) {
	targets, err := st.readTargets(ctx, []timeline.UserID{author})
	if err != nil {
		st.stats.hintErrors.Add(1)
		st.active.distrust()
		return
	}
	var keys []string
	for _, t := range targets[author] {
		keys = append(keys, st.indexKey(t.user))
	}
	st.drop(ctx, author, keys)
}

// register makes user a hint target of each of followees until a minute
// past the lifetime of an index built now (the minute covers clocks of
// different hosts that disagree a little): first in index_readers, the
// record, then in each followee's targets in memcached (see
// hintTarget). It must be done before the token of the build is taken
// (see rebuild), and every build renews it, so that no index is ever read
// after its user stopped being a target.
func (st *State) register(ctx context.Context, user timeline.UserID, followees []timeline.UserID) error {
	until := time.Now().UTC().Add(recentMaxAge + time.Minute)
	if _, err := st.db.ExecContext(ctx,
		`INSERT INTO index_readers (user_id, until) VALUES (?, ?) ON DUPLICATE KEY UPDATE until = GREATEST(until, VALUES(until))`, user, until); err != nil {
		return err
	}
	if err := st.addTarget(ctx, user, until.UnixMilli(), followees); err != nil {
		return fmt.Errorf("%w: %w", errCacheDown, err)
	}
	return nil
}

// buildIndex reads user's followees' newest ids from the database and
// stores the index, returning it for the read at hand. followees are the
// user's as of token: a follow since then retires the index anyway. cur is what the key
// held (a placeholder, garbage or a retired index: its own CAS token), or
// nil.
func (st *State) buildIndex(ctx context.Context, user timeline.UserID, followees []timeline.UserID, token string, cur *memcached.Item) (activeIndex, int64, error) {
	a := st.active
	if err := st.register(ctx, user, followees); err != nil {
		return activeIndex{}, 0, err
	}
	key := st.indexKey(user)
	if cur == nil {
		// As for lists: a token taken before the database read, so that
		// a hint that lands after it makes the CAS fail.
		tokens := map[timeline.UserID]*memcached.Item{}
		st.takeTokens(ctx, []timeline.UserID{user}, st.indexKey, tokens)
		cur = tokens[user]
	}
	builtAt := time.Now().UnixMilli()
	newest, nFollowees, err := sqlread.FolloweesNewest(ctx, st.db, timeline.Request{User: user})
	if err != nil {
		return activeIndex{}, 0, err
	}
	entries := newest // newest first
	var floor uint64
	if len(entries) > a.keep {
		floor = entries[a.keep].Newest
		entries = entries[:a.keep]
	}
	v := encodeIndex(key, token, builtAt, floor, entries)
	idx, ok := decodeIndex(key, v)
	if !ok {
		panic("pull: an index just encoded does not decode")
	}
	st.stats.indexBuilds.Add(1)
	if cur != nil {
		st.storeBuilt(ctx, cur, v, listTTL)
	}
	return idx, int64(nFollowees), nil
}

// compactIndex rewrites an index that has accumulated hints as a base,
// keeping its age and token. The entries past ActiveLen are dropped and
// raise the floor to the newest of them. Best effort, like list
// compaction.
func (st *State) compactIndex(ctx context.Context, it *memcached.Item, idx activeIndex) {
	entries, floor := idx.entries, idx.floor
	if len(entries) > st.active.keep {
		floor = max(floor, entries[st.active.keep].Newest)
		entries = entries[:st.active.keep]
	}
	st.storeBuilt(ctx, it, encodeIndex(it.Key, idx.token, idx.builtAt, floor, entries), listTTL)
}

// errNotProven means the indexed authors could not prove the page: the
// read takes every followee's list instead.
var errNotProven = errors.New("the index cannot prove this page")

// errFromDatabase means Home's index cannot prove a page: the page
// reaches below the index's floor, where it may lack messages, or a build
// or patch of the index is under way in this process. The read takes the
// page from the database (State.fallback, the keyset merge), with the
// caller's whole deadline. Every followee's list, Active's answer, would
// be cold here: Home's pages read no list of an author below its
// threshold, so such a page rebuilt them all
// (TestHomeDeepPagesReadTheDatabase, TestHomeBuildUnderWayReadsTheDatabase),
// some 1,800 rows at 3,000 users where the merge reads about 200.
var errFromDatabase = fmt.Errorf("%w: Home reads it from the database", errNotProven)

func (st *State) readActive(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	now := time.Now()
	fs, err := st.cachedFollowSet(ctx, r.User, now)
	if err != nil {
		return nil, err
	}
	if fs == nil || !st.active.heavy(len(fs.followees)) {
		// Few followees (or no followee cache): Recent's read.
		return st.readLists(ctx, r, fs, now)
	}
	return st.readThroughIndex(ctx, r, fs, now, st.readIndexed)
}

// cachedFollowSet returns user's followees from this process's cache,
// loaded from the database if missing, or nil without a followee cache.
func (st *State) cachedFollowSet(ctx context.Context, user timeline.UserID, now time.Time) (*followSet, error) {
	if fs := st.follows.get(user, now); fs != nil || st.follows == nil {
		return fs, nil
	}
	return st.loadFollowSet(ctx, user, now)
}

// readThroughIndex runs read, a read through an index (Active's or
// Home's), and counts it; a page the index cannot prove (errNotProven)
// is read from every followee's list, one of Home's (errFromDatabase)
// from the database by the caller (reader.Read).
func (st *State) readThroughIndex(ctx context.Context, r timeline.Request, fs *followSet, now time.Time,
	read func(context.Context, timeline.Request, *followSet, time.Time) ([]timeline.Message, int64, error)) ([]timeline.Message, error) {
	msgs, rows, err := read(ctx, r, fs, now)
	if errors.Is(err, errNotProven) {
		st.stats.indexFallbacks.Add(1)
		if errors.Is(err, errFromDatabase) {
			return nil, err
		}
		return st.readLists(ctx, r, fs, now)
	}
	if err != nil {
		return nil, err
	}
	st.stats.indexReads.Add(1)
	st.pages.Add(rows)
	return msgs, nil
}

// readIndexed reads the page from the lists of the authors that user's
// index names, or returns errNotProven.
func (st *State) readIndexed(ctx context.Context, r timeline.Request, fs *followSet, now time.Time) (_ []timeline.Message, rows int64, err error) {
	a := st.active
	key := st.indexKey(r.User)
	items, err := st.mc.Get(ctx, []string{key, fs.keys[len(fs.keys)-1]}) // the index, the follow token
	if err != nil {
		st.cacheFailed(ctx)
		return nil, 0, errCacheDown
	}
	if tok := items[1]; tok == nil || string(tok.Value) != fs.token {
		// Followed or unfollowed since the followees were cached: the
		// full read reloads them.
		return nil, 0, errNotProven
	}
	st.stats.followHits.Add(1)
	var idx activeIndex
	ok := false
	if it := items[0]; it != nil {
		idx, ok = decodeIndex(key, it.Value)
		ok = ok && idx.token == fs.token && idx.builtAt >= a.distrustBefore.Load() &&
			now.UnixMilli()-idx.builtAt <= recentMaxAge.Milliseconds()
	}
	valid := func() []sqlread.AuthorNewest {
		out := make([]sqlread.AuthorNewest, 0, len(idx.entries))
		for _, e := range idx.entries {
			if _, found := slices.BinarySearch(fs.sorted, e.Author); found {
				out = append(out, e)
			}
		}
		return out
	}
	var cands []sqlread.AuthorNewest
	if ok {
		cands = valid()
		if len(cands) < len(idx.entries) && len(cands) < a.keep/2 && idx.floor > 0 {
			ok = false // shrunk below the minimum: refill from the graph
		}
	}
	if !ok {
		var n int64
		if idx, n, err = st.buildIndex(ctx, r.User, fs.followees, fs.token, items[0]); err != nil {
			return nil, 0, err
		}
		rows += n
		cands = valid()
	} else if idx.nRecords >= indexCompactAt {
		st.compactIndex(ctx, items[0], idx)
	}

	// A newest page comes from the Fetch() authors with the newest
	// posts: each of them has a message at least as new as the last of
	// them, which is newer than anything of the authors left out.
	floor := idx.floor
	if r.Before != 0 && uint64(r.Before) <= floor+1 {
		// Every message below the cursor is at or below the floor: no
		// page from the indexed authors alone could be proven.
		return nil, rows, errNotProven
	}
	if fetch := r.Fetch(); r.Before == 0 && len(cands) > fetch {
		floor = max(floor, cands[fetch].Newest)
		cands = cands[:fetch]
	}
	authors := make([]timeline.UserID, len(cands))
	for i, e := range cands {
		authors[i] = e.Author
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	lists, err := st.mc.Get(ctx, st.listKeys(authors, 0))
	if err != nil {
		st.cacheFailed(ctx)
		return nil, 0, errCacheDown
	}
	msgs, n, err := st.mergeLists(ctx, r, authors, lists, now)
	rows += n
	if err != nil {
		return nil, 0, err
	}
	if floor > 0 && (len(msgs) < r.Fetch() || uint64(msgs[len(msgs)-1].ID) <= floor) {
		return nil, 0, errNotProven
	}
	return msgs, rows, nil
}
