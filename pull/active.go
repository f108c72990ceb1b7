package pull

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/timeline"
)

// StrategyActive is StrategyRecent with a recently-active-followees index
// (after Flickr's, reference 000) for users who follow many authors. A
// StrategyRecent read fetches every followee's list; for a user following
// 1,000 authors that is a 1,000-key multi-get of which a page uses a few
// dozen. The index keeps, per such user, the ActiveLen followees who
// posted most recently, so a newest page fetches only the Fetch() lists
// the index names.
//
// Unlike Flickr's, the index is exact, which the conformance suite
// demands:
//
//   - It is a base built from the database (each followee's newest id,
//     the ActiveLen newest kept) and a floor: no followee left out had a
//     message above it. A page merged from the indexed authors alone is
//     the true page when its last message is above the floor (or the
//     floor is 0); otherwise the read falls back to every list.
//   - A post appends a hint (author, id) to the index of each follower
//     who may have one, after its commit: a pipelined append per server,
//     sent to the author's hint targets, which the append to the author's
//     list fetches in the same request (hinttargets.go). A read makes its
//     user a target of every followee, until a minute past the lifetime
//     of the index (recentMaxAge), before it builds one. A post by an
//     author whom no heavy follower has read lately costs what a
//     StrategyRecent post does; the price of the index is one write per
//     active heavy follower.
//   - Rebuilds use the placeholder and CAS of the lists (see rebuild), so
//     a hint racing a rebuild is never lost.
//   - The index carries the follow token it was built under; a follow or
//     unfollow replaces the token, so the next read rebuilds it. Reads
//     also drop entries for authors the user no longer follows (a hint
//     sent just before an unfollow can land after the rebuild), so a late
//     hint never shows an unfollowed author, and an index left with fewer
//     than half its entries is rebuilt from the follow graph.
//   - A hint memcached refused is followed by a delete of that index
//     (append cannot tell a missing key from a value grown too large, so
//     every refusal is treated as the latter). When even the delete, the
//     rebuild of the author's hint targets or the INSERT fails, this
//     process stops trusting every index built before the failure; other
//     processes' indexes age out within recentMaxAge, the same bound as
//     for lists.
//
// Every post to a database that StrategyActive reads must go through a
// store with the same Memcache and Namespace and Config.ActiveHints (which
// StrategyActive sets).

// DefaultActiveLen is how many followees an index keeps unless
// Config.ActiveLen says otherwise.
const DefaultActiveLen = 64

// indexCompactAt: an index with this many appended hints is rewritten as a
// base by the next reader.
const indexCompactAt = 64

// activeIndexes is the StrategyActive state of a recentLists.
type activeIndexes struct {
	keep int // ActiveLen

	// distrustBefore: indexes built before this (Unix milliseconds) are not
	// used by this process, which failed to deliver a hint.
	distrustBefore atomic.Int64
}

func newActiveIndexes(keep int) *activeIndexes {
	if keep <= 0 {
		keep = DefaultActiveLen
	}
	return &activeIndexes{keep: keep}
}

// heavy reports whether a user who follows n authors gets an index: one
// that would hold half of them or more saves too little.
func (a *activeIndexes) heavy(n int) bool { return n > 2*a.keep }

// indexKey is the memcached key of user's index.
func (r *recentLists) indexKey(user timeline.UserID) string {
	return r.prefix + "i" + strconv.FormatInt(int64(user), 10)
}

// distrust makes this process rebuild every index before using it again.
func (a *activeIndexes) distrust() {
	a.distrustBefore.Store(time.Now().UnixMilli() + 1)
}

// published appends a committed post's record to its author's list and
// learns, in the same request, whom to hint: the author's hint targets
// (hinttargets.go), rebuilt from the database if memcached lost them. It
// then appends the hint to each target's index, pipelined. Whatever
// memcached did not store is deleted: a missing key needs nothing, but
// append answers a value grown too large as it answers a missing key, and
// a failed append leaves the value unknown.
func (r *recentLists) published(ctx context.Context, s *Store, author timeline.UserID, id timeline.MessageID) {
	listKey := r.key(author)
	appErr, tgt, err := r.get.AppendGet(&memcache.Item{Key: listKey, Value: encodeRecord(listKey, uint64(id))}, r.targetsKey(author))
	if err != nil {
		// memcached failed: the list may lack the post, and whom to hint
		// is unknown.
		s.stats.cacheErrors.Add(1)
		r.invalidate(s, author)
		r.forgetHinted(ctx, s, author)
		return
	}
	var drop []string
	if appErr != nil {
		if !errors.Is(appErr, memcache.ErrNotStored) {
			s.stats.cacheErrors.Add(1)
		}
		drop = append(drop, listKey)
	}
	targets, err := r.hintTargets(ctx, s, author, tgt)
	if err != nil {
		r.drop(s, author, drop)
		s.stats.hintErrors.Add(1)
		r.active.distrust()
		return
	}
	if len(targets) > 0 {
		items := make([]memcache.Item, len(targets))
		ptrs := make([]*memcache.Item, len(targets))
		for i, u := range targets {
			k := r.indexKey(u)
			items[i] = memcache.Item{Key: k, Value: encodeHint(k, author, uint64(id))}
			ptrs[i] = &items[i]
		}
		s.stats.hints.Add(int64(len(targets)))
		for i, err := range r.get.Append(ptrs) {
			if err != nil {
				drop = append(drop, items[i].Key)
			}
		}
	}
	r.drop(s, author, drop)
}

// drop deletes keys (author's list and indexes that may lack a post), and
// distrusts what it cannot delete.
func (r *recentLists) drop(s *Store, author timeline.UserID, keys []string) {
	if len(keys) == 0 {
		return
	}
	listKey := r.key(author)
	hintLost := false
	for i, err := range r.get.Delete(keys) {
		if err == nil || errors.Is(err, memcache.ErrCacheMiss) {
			continue
		}
		s.stats.cacheErrors.Add(1)
		if keys[i] == listKey {
			r.markDirty(author)
		} else {
			hintLost = true
		}
	}
	if hintLost {
		s.stats.hintErrors.Add(1)
		r.active.distrust()
	}
}

// forgetHinted deletes the indexes of author's followers who may be
// reading one, after a post whose hints could not be sent, or distrusts
// them all if those followers cannot be read.
func (r *recentLists) forgetHinted(ctx context.Context, s *Store, author timeline.UserID) {
	targets, err := s.readTargets(ctx, []timeline.UserID{author})
	if err != nil {
		s.stats.hintErrors.Add(1)
		r.active.distrust()
		return
	}
	var keys []string
	for _, t := range targets[author] {
		keys = append(keys, r.indexKey(t.user))
	}
	r.drop(s, author, keys)
}

// register makes user a hint target of each of followees until a minute
// past the lifetime of an index built now (the minute covers clocks of
// different hosts that disagree a little): first in index_readers, the
// record, then in each followee's targets in memcached (see
// hinttargets.go). It must be done before the token of the build is taken
// (see rebuild), and every build renews it, so that no index is ever read
// after its user stopped being a target.
func (r *recentLists) register(ctx context.Context, s *Store, user timeline.UserID, followees []timeline.UserID) error {
	until := time.Now().UTC().Add(recentMaxAge + time.Minute)
	if _, err := s.db.ExecContext(ctx,
		`INSERT INTO index_readers (user_id, until) VALUES (?, ?) ON DUPLICATE KEY UPDATE until = GREATEST(until, VALUES(until))`, user, until); err != nil {
		return err
	}
	return r.addTarget(s, user, until.UnixMilli(), followees)
}

// buildIndex reads user's followees' newest ids from the database and
// stores the index, returning it for the read at hand. followees are the
// user's as of token: a follow since then retires the index anyway. cur is what the key
// held (a placeholder, garbage or a retired index: its own CAS token), or
// nil.
func (r *recentLists) buildIndex(ctx context.Context, s *Store, user timeline.UserID, followees []timeline.UserID, token string, cur *memcache.Item) (activeIndex, int64, error) {
	a := r.active
	if err := r.register(ctx, s, user, followees); err != nil {
		return activeIndex{}, 0, err
	}
	key := r.indexKey(user)
	if cur == nil {
		// As for lists: a token taken before the database read, so that
		// a hint that lands after it makes the CAS fail.
		tokens := map[timeline.UserID]*memcache.Item{}
		r.takeTokens(s, []timeline.UserID{user}, r.indexKey, tokens)
		cur = tokens[user]
	}
	builtAt := time.Now().UnixMilli()
	newest, nFollowees, err := s.followeesNewest(ctx, timeline.Request{User: user})
	if err != nil {
		return activeIndex{}, 0, err
	}
	entries := make([]activeEntry, len(newest))
	for i, n := range newest {
		entries[i] = activeEntry{n.author, n.newest}
	}
	slices.SortFunc(entries, byNewest)
	var floor uint64
	if len(entries) > a.keep {
		floor = entries[a.keep].newest
		entries = entries[:a.keep]
	}
	v := encodeIndex(key, token, builtAt, floor, entries)
	idx, ok := decodeIndex(key, v)
	if !ok {
		panic("pull: an index just encoded does not decode")
	}
	s.stats.indexBuilds.Add(1)
	if cur != nil {
		r.storeBuilt(s, cur, v, listTTL)
	}
	return idx, int64(nFollowees), nil
}

// compactIndex rewrites an index that has accumulated hints as a base,
// keeping its age and token. The entries past ActiveLen are dropped and
// raise the floor to the newest of them. Best effort, like list
// compaction.
func (r *recentLists) compactIndex(s *Store, it *memcache.Item, idx activeIndex) {
	entries, floor := idx.entries, idx.floor
	if len(entries) > r.active.keep {
		floor = max(floor, entries[r.active.keep].newest)
		entries = entries[:r.active.keep]
	}
	r.storeBuilt(s, it, encodeIndex(it.Key, idx.token, idx.builtAt, floor, entries), listTTL)
}

// readActive implements StrategyActive; see the comment at the top.
func (s *Store) readActive(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	msgs, err := s.readActiveIndex(ctx, r)
	if errors.Is(err, errSuspect) || errors.Is(err, errCacheDown) {
		return s.readMerge(ctx, r)
	}
	return msgs, err
}

// errNotProven means the indexed authors could not prove the page: the
// read takes every followee's list instead.
var errNotProven = errors.New("the index cannot prove this page")

func (s *Store) readActiveIndex(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	rl, a := s.recent, s.recent.active
	now := time.Now()
	fs := rl.follows.get(r.User, now)
	if fs == nil && rl.follows != nil {
		var err error
		if fs, err = rl.loadFollowSet(ctx, s, r.User, now); err != nil {
			return nil, err
		}
	}
	if fs == nil || !a.heavy(len(fs.followees)) {
		// Few followees (or no followee cache): StrategyRecent's read.
		return s.readRecentLists(ctx, r, fs, now)
	}
	msgs, rows, err := s.readIndexed(ctx, r, fs, now)
	if errors.Is(err, errNotProven) {
		s.stats.indexFallbacks.Add(1)
		return s.readRecentLists(ctx, r, fs, now)
	}
	if err != nil {
		return nil, err
	}
	s.stats.indexReads.Add(1)
	s.countPage(rows)
	return msgs, nil
}

// readIndexed reads the page from the lists of the authors that user's
// index names, or returns errNotProven.
func (s *Store) readIndexed(ctx context.Context, r timeline.Request, fs *followSet, now time.Time) (_ []timeline.Message, rows int64, err error) {
	rl, a := s.recent, s.recent.active
	key := rl.indexKey(r.User)
	items, err := rl.get.Get([]string{key, fs.keys[len(fs.keys)-1]}) // the index, the follow token
	if err != nil {
		s.stats.cacheErrors.Add(1)
		return nil, 0, errCacheDown
	}
	if tok := items[1]; tok == nil || string(tok.Value) != fs.token {
		// Followed or unfollowed since the followees were cached: the
		// full read reloads them.
		return nil, 0, errNotProven
	}
	s.stats.followHits.Add(1)
	var idx activeIndex
	ok := false
	if it := items[0]; it != nil {
		idx, ok = decodeIndex(key, it.Value)
		ok = ok && idx.token == fs.token && idx.builtAt >= a.distrustBefore.Load() &&
			now.UnixMilli()-idx.builtAt <= recentMaxAge.Milliseconds()
	}
	valid := func() []activeEntry {
		out := make([]activeEntry, 0, len(idx.entries))
		for _, e := range idx.entries {
			if _, found := slices.BinarySearch(fs.sorted, e.author); found {
				out = append(out, e)
			}
		}
		return out
	}
	var cands []activeEntry
	if ok {
		cands = valid()
		if len(cands) < len(idx.entries) && len(cands) < a.keep/2 && idx.floor > 0 {
			ok = false // shrunk below the minimum: refill from the graph
		}
	}
	if !ok {
		var n int64
		if idx, n, err = rl.buildIndex(ctx, s, r.User, fs.followees, fs.token, items[0]); err != nil {
			return nil, 0, err
		}
		rows += n
		cands = valid()
	} else if idx.nRecords >= indexCompactAt {
		rl.compactIndex(s, items[0], idx)
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
		floor = max(floor, cands[fetch].newest)
		cands = cands[:fetch]
	}
	authors := make([]timeline.UserID, len(cands))
	for i, e := range cands {
		authors[i] = e.author
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	lists, err := rl.get.Get(rl.listKeys(authors, 0))
	if err != nil {
		s.stats.cacheErrors.Add(1)
		return nil, 0, errCacheDown
	}
	msgs, n, err := s.mergeLists(ctx, r, authors, lists, now)
	rows += n
	if err != nil {
		return nil, 0, err
	}
	if floor > 0 && (len(msgs) < r.Fetch() || uint64(msgs[len(msgs)-1].ID) <= floor) {
		return nil, 0, errNotProven
	}
	return msgs, rows, nil
}
