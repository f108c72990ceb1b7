package recent

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/timeline"
)

// Home keeps every reader's timeline in memcached, as Twitter's timeline
// cache does, and pulls only the celebrities: a post appends its id to the
// home index of each follower who reads lately (a hint, as for Active),
// unless the reader pulls its author; a newest page is one multi-get of
// the user's index, follow token and followed celebrities' lists, merged,
// with the bodies from the in-process message cache.
//
// Authors with Threshold followers or more are celebrities. Which they
// are, each process learns from the database (one GROUP BY over the
// follows' second index, every few minutes), and a reader fixes it in its
// index when it builds one: it pulls the celebrities it follows then
// (their lists, as Recent reads them) and registers, per edge, as a hint
// target of the others only (home_readers). So a post never has to know
// who counts as a celebrity: it hints whoever registered with its author,
// and an index takes hints from exactly the followees it does not pull. An
// author who becomes a celebrity is pulled by indexes built from then on;
// the older ones keep taking its hints until they expire.
//
// The index is exact as Active's is: a base built from the database (the
// newest Keep messages of the followees it does not pull, by merge with
// early stop) with a floor below which it knows nothing, the follow token
// it was built under, and registration before the token of the build is
// taken. A page is proven when its last message is above the floor (or
// the floor is 0); otherwise, or when the token changed, the read takes
// every followee's list as Recent does. A page deeper than the index
// therefore costs what Recent's does.
//
// A follow or unfollow retires the index (its token), but the index names
// the followees it was built for, so the next read patches it rather than
// rebuilding it: an unfollowed author's entries are dropped, and a newly
// followed author is registered and its newest messages above the floor
// read from the database, one range scan (patchHome).
type Home struct {
	Recent
	// Keep is how many message ids an index holds, 1 to MaxLen; 0 means
	// DefaultHomeLen. Pages deeper than that are read as with Recent.
	Keep int
	// Threshold is the follower count from which an author is pulled; 0
	// means DefaultHomeThreshold.
	Threshold int
	// CelebrityRefresh is how often a process rereads who the
	// celebrities are; 0 means DefaultCelebrityRefresh. A follow or
	// unfollow through the process that moves an author across Threshold
	// has them reread at once.
	CelebrityRefresh time.Duration
}

// DefaultHomeLen is Home.Keep's default: the benchmark's older pages go
// down to page 5 of 20 messages.
const DefaultHomeLen = 128

// DefaultHomeThreshold is Home.Threshold's default, as model hybrid's.
const DefaultHomeThreshold = 1000

// Name implements Strategy.
func (Home) Name() string { return "home" }

// Hints implements Strategy: posts must hint the indexes Home reads.
func (Home) Hints() bool { return true }

// NewReader implements Strategy; st must send hints (Options.Hints).
func (c Home) NewReader(st *State) (sqlread.Reader, error) {
	if c.Keep < 0 || c.Keep > MaxLen {
		return nil, fmt.Errorf("home index length %d is outside 0..%d", c.Keep, MaxLen)
	}
	if c.Threshold < 0 {
		return nil, fmt.Errorf("threshold %d: want at least 1 follower, or 0 for the default", c.Threshold)
	}
	if st.active == nil {
		return nil, errors.New("strategy home needs a State that sends hints (Options.Hints)")
	}
	if c.Keep == 0 {
		c.Keep = DefaultHomeLen
	}
	if c.Threshold == 0 {
		c.Threshold = DefaultHomeThreshold
	}
	if c.CelebrityRefresh < 0 {
		return nil, fmt.Errorf("celebrity refresh %v: want a positive duration, or 0 for the default", c.CelebrityRefresh)
	}
	if c.CelebrityRefresh == 0 {
		c.CelebrityRefresh = DefaultCelebrityRefresh
	}
	st.home = &homeState{keep: c.Keep, threshold: c.Threshold, refresh: c.CelebrityRefresh}
	c.setUp(st)
	return &reader{st: st, read: st.readHome}, nil
}

// homeCompactAt: a home index with this many appended hints is rewritten
// as a base by the next reader.
const homeCompactAt = 32

// DefaultCelebrityRefresh is how often a process rereads who the
// celebrities are unless Home.CelebrityRefresh says otherwise. Being late
// only costs hints: an index built with an old list takes hints from an
// author it could have pulled, or pulls one it could take hints from.
const DefaultCelebrityRefresh = 5 * time.Minute

// homeState is the part of a State that Home reads with.
type homeState struct {
	keep, threshold int
	refresh         time.Duration // Home.CelebrityRefresh

	celebs     atomic.Pointer[celebrities] // nil until the first read
	refreshing atomic.Bool

	building sync.Map // timeline.UserID → true while this process builds the user's index
}

// celebrities are the authors with threshold followers or more, as read
// from the database at one moment.
type celebrities struct {
	authors []timeline.UserID // ascending
	readAt  time.Time
}

// known returns the celebrities as last read, or none before the first
// read: what a read guesses its index pulls.
func (h *homeState) known() []timeline.UserID {
	if c := h.celebs.Load(); c != nil {
		return c.authors
	}
	return nil
}

// celebrities returns the celebrities for a build: the first call reads
// them, and a call that finds them older than the refresh interval has
// them reread in the background.
func (h *homeState) celebrities(ctx context.Context, db *sql.DB) ([]timeline.UserID, error) {
	if c := h.celebs.Load(); c != nil {
		if time.Since(c.readAt) > h.refresh {
			h.reread(db)
		}
		return c.authors, nil
	}
	return h.read(ctx, db)
}

// reread reads the celebrities again in the background, unless a reread
// is under way.
func (h *homeState) reread(db *sql.DB) {
	if !h.refreshing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer h.refreshing.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		h.read(ctx, db)
	}()
}

// followed runs after follower follows (or unfollows) author through this
// process: if that may have moved author across the threshold (an author
// not known as a celebrity gained a follower, or one known lost one), it
// counts author's followers up to the threshold, one short range of the
// followee index, and rereads the celebrities if the count says author
// is on the other side now.
func (h *homeState) followed(ctx context.Context, db *sql.DB, author timeline.UserID, follow bool) {
	c := h.celebs.Load()
	if c == nil {
		return // read at the first build
	}
	_, known := slices.BinarySearch(c.authors, author)
	if known == follow {
		return // a celebrity gaining a follower, or anyone else losing one
	}
	var followers int
	if err := db.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM (SELECT 1 FROM follows WHERE followee_id = ? LIMIT ?) f`, author, h.threshold).Scan(&followers); err != nil {
		return // the timer rereads them
	}
	if (followers >= h.threshold) != known {
		h.reread(db)
	}
}

// read reads the celebrities from db and keeps them.
func (h *homeState) read(ctx context.Context, db *sql.DB) ([]timeline.UserID, error) {
	authors, err := readCelebrities(ctx, db, h.threshold)
	if err != nil {
		return nil, err
	}
	h.celebs.Store(&celebrities{authors: authors, readAt: time.Now()})
	return authors, nil
}

// readCelebrities reads the authors with at least threshold followers,
// ascending: a scan of the follows' (followee_id, follower_id) index. A
// service with a billion follows would keep a follower count per user
// instead.
func readCelebrities(ctx context.Context, db *sql.DB, threshold int) ([]timeline.UserID, error) {
	rows, err := db.QueryContext(ctx,
		`SELECT followee_id FROM follows GROUP BY followee_id HAVING COUNT(*) >= ? ORDER BY followee_id`, threshold)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []timeline.UserID
	for rows.Next() {
		var a timeline.UserID
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// common returns the authors in both a and b (each ascending), in
// ascending order, looking the shorter list up in the longer: which of a
// user's followees are celebrities, say. Usually there are few or none,
// and nothing is allocated for none.
func common(a, b []timeline.UserID) []timeline.UserID {
	short, long := a, b
	if len(short) > len(long) {
		short, long = long, short
	}
	var out []timeline.UserID
	for _, a := range short {
		if _, found := slices.BinarySearch(long, a); found {
			out = append(out, a)
		}
	}
	return out
}

// without returns the authors of all (ascending) that are not in drop
// (ascending), in ascending order.
func without(all, drop []timeline.UserID) []timeline.UserID {
	out := make([]timeline.UserID, 0, len(all)-min(len(all), len(drop)))
	for _, a := range all {
		if _, found := slices.BinarySearch(drop, a); !found {
			out = append(out, a)
		}
	}
	return out
}

// homeRegistration is how long a registration as a hint target lasts
// (registerHome): long enough that the indexes built after a follow or an
// unfollow in the meantime reuse it, and only register what is new.
const homeRegistration = 30 * time.Minute

// registerHome makes user a hint target of each of authors until the given
// time: first in home_readers, then in each author's targets in memcached.
// As Active's register, it comes before the token of the build is taken.
// An edge registered until then or later is only read, not written.
func (st *State) registerHome(ctx context.Context, user timeline.UserID, authors []timeline.UserID, until time.Time) error {
	until = until.UTC()
	for chunk := range slices.Chunk(authors, 500) {
		q := make([]byte, 0, 120+40*len(chunk))
		q = append(q, `INSERT INTO home_readers (author_id, user_id, until) VALUES `...)
		for i, a := range chunk {
			if i > 0 {
				q = append(q, ',')
			}
			q = append(q, '(')
			q = strconv.AppendInt(q, int64(a), 10)
			q = append(q, ',')
			q = strconv.AppendInt(q, int64(user), 10)
			q = append(q, ",?)"...)
		}
		q = append(q, ` ON DUPLICATE KEY UPDATE until = GREATEST(until, VALUES(until))`...)
		args := make([]any, len(chunk))
		for i := range args {
			args[i] = until
		}
		if _, err := st.db.ExecContext(ctx, string(q), args...); err != nil {
			return err
		}
	}
	if err := st.addTarget(ctx, user, until.UnixMilli(), authors); err != nil {
		return fmt.Errorf("%w: %w", errCacheDown, err)
	}
	return nil
}

// buildHome builds user's home index from the database and stores it,
// returning it for the read at hand, and the rows it read. fs is user's
// followees as of fs.token (a follow since retires the index anyway); cur
// is what the key held (a placeholder, garbage or a retired index: its own
// CAS token), or nil; old is the retired index decoded, if it was one.
//
// Every pushed followee is registered until regUntil, which is at least a
// minute past the new index's lifetime: the retired index's, when it
// reaches that far (so a rebuild after a follow writes the new edge only),
// else homeRegistration from now.
func (st *State) buildHome(ctx context.Context, user timeline.UserID, fs *followSet, cur *memcached.Item, old *homeIndex) (homeIndex, int64, error) {
	h := st.home
	celebs, err := h.celebrities(ctx, st.db)
	if err != nil {
		return homeIndex{}, 0, err
	}
	pulled := common(fs.sorted, celebs)
	pushed := without(fs.sorted, pulled)
	now := time.Now()
	regUntil := now.Add(homeRegistration).Truncate(time.Millisecond) // as the index keeps it
	if old != nil && old.registeredPast(now) {
		regUntil = time.UnixMilli(old.regUntil)
	}
	if err := st.registerHome(ctx, user, pushed, regUntil); err != nil {
		return homeIndex{}, 0, err
	}
	key := st.indexKey(user)
	cur, _ = st.homeToken(ctx, key, cur)
	builtAt := time.Now().UnixMilli()
	heads, n, err := sqlread.FolloweesNewest(ctx, st.db, timeline.Request{User: user})
	if err != nil {
		return homeIndex{}, 0, err
	}
	// Only the registered followees: one followed since the followees
	// were read is in no index built now (the token retires it).
	heads = slices.DeleteFunc(heads, func(e sqlread.AuthorNewest) bool {
		_, found := slices.BinarySearch(pushed, e.Author)
		return !found
	})
	msgs, err := sqlread.MergeOver(ctx, st.db, timeline.Request{User: user, Limit: h.keep}, heads, nil)
	if err != nil {
		return homeIndex{}, 0, err
	}
	st.messages.PutAll(msgs)
	var floor uint64
	if len(msgs) > h.keep {
		floor = uint64(msgs[h.keep].ID)
		msgs = msgs[:h.keep]
	}
	entries := make([]sqlread.AuthorNewest, len(msgs))
	for i, m := range msgs {
		entries[i] = sqlread.AuthorNewest{Author: m.Author, Newest: uint64(m.ID)}
	}
	v, idx := encodeChecked(key, homeIndex{indexBase: indexBase{builtAt: builtAt, token: fs.token, floor: floor, entries: entries},
		regUntil: regUntil.UnixMilli(), pulled: pulled, pushed: encodePushed(pushed)})
	st.stats.indexBuilds.Add(1)
	if cur != nil {
		st.storeHome(ctx, cur, v)
	}
	return idx, int64(n + len(msgs)), nil
}

// homeToken puts a placeholder of this build's own (a random value) where
// key holds cur (what a read found: nothing, garbage or a retired index),
// and returns it as the CAS token of the build, with the value it replaced
// (nil for none), or nil when it cannot (the build then serves its read
// without storing). Hints appended in between
// only retire what is being replaced, so it tries again, up to three
// times. A placeholder no other writer ever writes is what lets storeHome
// tell hints appended to it from a value replaced and then rewritten the
// same (a "P" deleted and added again, say).
func (st *State) homeToken(ctx context.Context, key string, cur *memcached.Item) (tok *memcached.Item, replaced []byte) {
	mine := append([]byte{placeholder[0]}, newToken()...)
	if len(mine) != homeTokenLen {
		panic("pull: a home index's token has the wrong length")
	}
	for range 3 {
		var err error
		if cur == nil {
			err = st.mc.Add(ctx, &memcached.Item{Key: key, Value: mine, Expiration: placeholderTTL})
		} else {
			it := *cur
			it.Value, it.Expiration = mine, placeholderTTL
			err = st.mc.CompareAndSwap(ctx, &it)
		}
		if err == nil {
			tok, err := st.mc.GetOne(ctx, key)
			if err != nil || !bytes.HasPrefix(tok.Value, mine) {
				return nil, nil
			}
			if cur != nil {
				replaced = cur.Value
			}
			return tok, replaced
		}
		if !isCASMiss(err) {
			st.cacheFailed(ctx)
			return nil, nil
		}
		switch cur, err = st.mc.GetOne(ctx, key); {
		case errors.Is(err, memcached.ErrCacheMiss):
			cur = nil
		case err != nil:
			st.cacheFailed(ctx)
			return nil, nil
		}
	}
	return nil, nil
}

// homeTokenLen is the length of homeToken's placeholder: "P" and a
// follow token's 16 hex digits.
const homeTokenLen = 1 + 16

// tokenHints returns the hints appended to tok, homeToken's placeholder,
// before homeToken read it back, or reports that something else was.
func tokenHints(key string, tok *memcached.Item) ([]sqlread.AuthorNewest, bool) {
	var out []sqlread.AuthorNewest
	ok := eachRecord(keySum(key), tok.Value[homeTokenLen:], hintMagic, 2, func(rec []byte) bool {
		a, id := recField(rec, 0), recField(rec, 1)
		out = append(out, sqlread.AuthorNewest{Author: timeline.UserID(a), Newest: id})
		return a != 0 && id != 0
	})
	return out, ok
}

// storeHome stores v, a base built from a database read that followed the
// CAS token cur (homeToken's), under cur's key. Hints keep landing on a
// user's key (a post hints every follower), so the CAS often finds the
// value changed; when the change is hints appended to the value of the
// token, and only that, they are appended to v and the CAS tried again
// with the new token, up to three times. That is exact: those hints were
// appended after the token, and every post that committed before the
// database read is in v. Anything else (the value replaced or deleted)
// leaves the key to the next reader.
func (st *State) storeHome(ctx context.Context, cur *memcached.Item, v []byte) {
	ks := keySum(cur.Key)
	for range 3 {
		prev := cur.Value
		if st.storeBuilt(ctx, cur, v, listTTL) {
			return
		}
		now, err := st.mc.GetOne(ctx, cur.Key)
		if err != nil || !bytes.HasPrefix(now.Value, prev) {
			return
		}
		hints := now.Value[len(prev):]
		if !eachRecord(ks, hints, hintMagic, 2, func([]byte) bool { return true }) {
			return
		}
		v, cur = append(v[:len(v):len(v)], hints...), now
	}
}

// compactHome rewrites a home index that has accumulated hints as a base,
// keeping its age, token and followees: hints of authors it does not hold
// (pulled, or unfollowed since a patch) are dropped, and the entries past
// Keep too, which raises the floor to the newest of them. Best effort,
// like list compaction.
func (st *State) compactHome(ctx context.Context, it *memcached.Item, idx homeIndex) {
	pushed, ok := idx.pushedAuthors()
	if !ok {
		return
	}
	entries := slices.DeleteFunc(slices.Clone(idx.entries), func(e sqlread.AuthorNewest) bool {
		_, held := slices.BinarySearch(pushed, e.Author)
		return !held
	})
	floor := idx.floor
	if len(entries) > st.home.keep {
		floor = max(floor, entries[st.home.keep].Newest)
		entries = entries[:st.home.keep]
	}
	idx.floor, idx.entries = floor, entries
	st.storeBuilt(ctx, it, encodeHome(it.Key, idx), listTTL)
}

// readHome is Home's read: from the user's index when it proves the page,
// else from the database (errFromDatabase).
func (st *State) readHome(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	now := time.Now()
	fs, err := st.cachedFollowSet(ctx, r.User, now)
	if err != nil {
		return nil, err
	}
	if fs == nil {
		return st.readLists(ctx, r, nil, now)
	}
	return st.readThroughIndex(ctx, r, fs, now, st.readHomeIndex)
}

// readHomeIndex reads the page from user's home index and the lists of the
// authors it pulls, or returns errFromDatabase.
func (st *State) readHomeIndex(ctx context.Context, r timeline.Request, fs *followSet, now time.Time) (_ []timeline.Message, rows int64, err error) {
	key := st.indexKey(r.User)
	// The lists of the followees that are celebrities now: usually the
	// ones the index pulls, fetched in the same request.
	guess := common(fs.sorted, st.home.known())
	keys := make([]string, 0, 2+len(guess))
	keys = append(keys, key, fs.keys[len(fs.keys)-1])
	for _, a := range guess {
		keys = append(keys, st.key(a))
	}
	items, err := st.mc.Get(ctx, keys)
	if err != nil {
		st.cacheFailed(ctx)
		return nil, 0, errCacheDown
	}
	if tok := items[1]; tok == nil || string(tok.Value) != fs.token {
		// Followed or unfollowed since the followees were cached: reload
		// them; the index, built under the old token, is rebuilt.
		if fs, err = st.loadFollowSet(ctx, r.User, now); err != nil {
			return nil, 0, err
		}
		rows += int64(len(fs.followees))
	} else {
		st.stats.followHits.Add(1)
	}
	var idx homeIndex
	ok := false
	if it := items[0]; it != nil {
		idx, ok = decodeHome(key, it.Value)
		stale := idx.builtAt < st.active.distrustBefore.Load() || now.UnixMilli()-idx.builtAt > recentMaxAge.Milliseconds()
		if ok && (stale || idx.token != fs.token) {
			old := idx
			return st.rebuildHome(ctx, r, fs, items, guess, &old, !stale, rows, now)
		}
	}
	if !ok {
		return st.rebuildHome(ctx, r, fs, items, guess, nil, false, rows, now)
	}
	if idx.nRecords >= homeCompactAt {
		st.compactHome(ctx, items[0], idx)
	}
	return st.pageFromHome(ctx, r, fs, idx, items, guess, rows, now)
}

// rebuildHome builds user's index for readHomeIndex, which found it
// missing, unreadable or retired (old, if decodable), and reads the page
// from it; when old is only retired by a follow or unfollow (patchable),
// it patches old instead if it can. A build of the same user already
// running in this process sends this read to the database instead
// (errFromDatabase): one build per user and follow change is enough.
func (st *State) rebuildHome(ctx context.Context, r timeline.Request, fs *followSet, items []*memcached.Item, guess []timeline.UserID, old *homeIndex, patchable bool, rows int64, now time.Time) ([]timeline.Message, int64, error) {
	if _, busy := st.home.building.LoadOrStore(r.User, true); busy {
		return nil, rows, errFromDatabase
	}
	defer st.home.building.Delete(r.User)
	cur := items[0]
	if patchable {
		idx, n, patched, err := st.patchHome(ctx, r.User, fs, cur, old, now)
		if err != nil {
			return nil, 0, err
		}
		if idx != nil {
			return st.pageFromHome(ctx, r, fs, *idx, items, guess, rows+n, now)
		}
		cur = patched
	}
	idx, n, err := st.buildHome(ctx, r.User, fs, cur, old)
	if err != nil {
		return nil, 0, err
	}
	return st.pageFromHome(ctx, r, fs, idx, items, guess, rows+n, now)
}

// homePatchMax is the most follows and unfollows a patch takes in; more
// since the index was built make the read rebuild it.
const homePatchMax = 16

// patchHome brings old, user's index retired by follows or unfollows,
// up to date with fs, if they are few (homePatchMax) and old's
// registration lasts past its lifetime: an unfollowed author's entries
// are dropped; a followed celebrity is pulled; any other followed author
// is registered first, until old's time, and then its newest messages
// above the floor are read from the database (one range scan each, at
// most Keep+1, whose last raises the floor when it is reached). The base
// patched is the value homeToken replaced (old with the hints that landed
// since), so it is exact as a build is. The index keeps old's age.
//
// It returns the patched index and the rows read, or a nil index when it
// cannot patch, with the CAS token the build should take over (cur, or
// the placeholder patchHome put in its place).
func (st *State) patchHome(ctx context.Context, user timeline.UserID, fs *followSet, cur *memcached.Item, old *homeIndex, now time.Time) (_ *homeIndex, rows int64, _ *memcached.Item, _ error) {
	h := st.home
	if !old.registeredPast(now) {
		return nil, 0, cur, nil
	}
	oldPushed, ok := old.pushedAuthors()
	if !ok {
		return nil, 0, cur, nil
	}
	oldAll := mergeSorted(oldPushed, old.pulled)
	added, removed := without(fs.sorted, oldAll), without(oldAll, fs.sorted)
	if len(added)+len(removed) > homePatchMax {
		return nil, 0, cur, nil
	}
	celebs, err := h.celebrities(ctx, st.db)
	if err != nil {
		return nil, 0, nil, err
	}
	addPulled := common(added, celebs)
	addPushed := without(added, addPulled)
	if len(addPushed) > 0 {
		if err := st.registerHome(ctx, user, addPushed, time.UnixMilli(old.regUntil)); err != nil {
			return nil, 0, nil, err
		}
	}
	key := st.indexKey(user)
	tok, replaced := st.homeToken(ctx, key, cur)
	base := *old
	if tok != nil {
		// Patch old with the hints that landed since it was read
		// (anything else there is left to a build), and with those
		// that landed on the token before homeToken read it back:
		// storeHome takes in only the ones after.
		landed, ok := decodeHome(key, replaced)
		if !ok || landed.token != old.token || landed.builtAt != old.builtAt {
			return nil, 0, tok, nil
		}
		more, ok := tokenHints(key, tok)
		if !ok {
			return nil, 0, tok, nil
		}
		base = landed
		if len(more) > 0 {
			base.entries = mergeHints(base.entries, more)
		}
	}

	floor := base.floor
	var fresh []sqlread.AuthorNewest
	if len(addPushed) > 0 {
		var q sqlread.AuthorScans
		q.Grow(len(addPushed))
		for _, a := range addPushed {
			q.AddAbove(a, floor, h.keep+1)
		}
		byAuthor, err := q.Run(ctx, st.db)
		if err != nil {
			return nil, 0, nil, err
		}
		for a, ids := range byAuthor {
			rows += int64(len(ids))
			slices.SortFunc(ids, sqlread.NewestFirst)
			if len(ids) > h.keep {
				// Below its Keep-th, the author's messages are unknown.
				floor = max(floor, ids[h.keep])
				ids = ids[:h.keep]
			}
			for _, id := range ids {
				fresh = append(fresh, sqlread.AuthorNewest{Author: a, Newest: id})
			}
		}
	}
	pulled := common(mergeSorted(base.pulled, addPulled), fs.sorted) // the unfollowed go
	pushed := without(fs.sorted, pulled)
	entries := slices.DeleteFunc(slices.Clone(base.entries), func(e sqlread.AuthorNewest) bool {
		_, held := slices.BinarySearch(pushed, e.Author)
		return !held || e.Newest <= floor
	})
	entries = mergeHints(entries, slices.DeleteFunc(fresh, func(e sqlread.AuthorNewest) bool { return e.Newest <= floor }))
	if len(entries) > h.keep {
		floor = entries[h.keep].Newest
		entries = entries[:h.keep]
	}
	v, idx := encodeChecked(key, homeIndex{indexBase: indexBase{builtAt: base.builtAt, token: fs.token, floor: floor, entries: entries},
		regUntil: base.regUntil, pulled: pulled, pushed: encodePushed(pushed)})
	st.stats.indexPatches.Add(1)
	if tok != nil {
		st.storeHome(ctx, tok, v)
	}
	return &idx, rows, nil, nil
}

// mergeSorted returns the union of a and b, both ascending and distinct.
func mergeSorted(a, b []timeline.UserID) []timeline.UserID {
	out := make([]timeline.UserID, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out, i = append(out, a[i]), i+1
		case i == len(a) || b[j] < a[i]:
			out, j = append(out, b[j]), j+1
		default:
			out, i, j = append(out, a[i]), i+1, j+1
		}
	}
	return out
}

// pageFromHome reads r's page from idx and the lists of the authors it
// pulls (items[2:] hold guess's), or returns errFromDatabase.
func (st *State) pageFromHome(ctx context.Context, r timeline.Request, fs *followSet, idx homeIndex, items []*memcached.Item, guess []timeline.UserID, rows int64, now time.Time) (_ []timeline.Message, _ int64, err error) {
	key := st.indexKey(r.User)
	before, floor := uint64(r.Before), idx.floor
	if before != 0 && before <= floor+1 {
		// Every message below the cursor is at or below the floor.
		return nil, rows, errFromDatabase
	}

	// The pulled authors' page, from their lists.
	var pulled []timeline.Message
	if len(idx.pulled) > 0 {
		lists := make([]*memcached.Item, len(idx.pulled))
		var missing []int // of idx.pulled, not fetched with the index
		var keys []string
		for i, a := range idx.pulled {
			if j, found := slices.BinarySearch(guess, a); found {
				lists[i] = items[2+j]
			} else {
				missing, keys = append(missing, i), append(keys, st.key(a))
			}
		}
		if len(keys) > 0 {
			got, err := st.mc.Get(ctx, keys)
			if err != nil {
				st.cacheFailed(ctx)
				return nil, 0, errCacheDown
			}
			for k, i := range missing {
				lists[i] = got[k]
			}
		}
		var n int64
		if pulled, n, err = st.mergeLists(ctx, r, idx.pulled, lists, now); err != nil {
			return nil, 0, err
		}
		rows += n
	}

	// The index's entries below the cursor, then the newest Fetch() of
	// both parts: the first k of ids and the first p of pulled.
	fetch := r.Fetch()
	var ids []uint64
	var authors []timeline.UserID
	for _, e := range idx.entries {
		if len(ids) == fetch {
			break
		}
		if (before != 0 && e.Newest >= before) || idx.isPulled(e.Author) {
			continue
		}
		if _, followed := slices.BinarySearch(fs.sorted, e.Author); !followed {
			continue // a hint that landed after an unfollow's rebuild
		}
		ids, authors = append(ids, e.Newest), append(authors, e.Author)
	}
	k, p := 0, 0
	var last uint64 // the page's oldest id
	for k+p < fetch && (k < len(ids) || p < len(pulled)) {
		if p == len(pulled) || (k < len(ids) && ids[k] > uint64(pulled[p].ID)) {
			last, k = ids[k], k+1
		} else {
			last, p = uint64(pulled[p].ID), p+1
		}
	}
	if floor > 0 && (k+p < fetch || last <= floor) {
		// The page reaches where the index may lack messages.
		return nil, rows, errFromDatabase
	}
	ids, authors = ids[:k], authors[:k]

	// The entries' bodies, checked against the index.
	var own []timeline.Message
	if len(ids) > 0 {
		var cached bool
		if own, cached = st.messages.GetAll(ids); cached {
			st.stats.messageHits.Add(1)
		} else {
			own, err = st.tables.Messages(ctx, st.db, ids, authors)
			if err != nil {
				return nil, 0, err
			}
			rows += int64(len(own))
			st.messages.PutAll(own)
		}
		if len(own) != len(ids) {
			return nil, 0, st.suspectHome(ctx, key)
		}
		for i := range own {
			if uint64(own[i].ID) != ids[i] || own[i].Author != authors[i] {
				return nil, 0, st.suspectHome(ctx, key)
			}
		}
	}
	out := make([]timeline.Message, 0, k+p)
	i, j := 0, 0
	for len(out) < k+p {
		if j == p || (i < k && own[i].ID > pulled[j].ID) {
			out, i = append(out, own[i]), i+1
		} else {
			out, j = append(out, pulled[j]), j+1
		}
	}
	return out, rows, nil
}

// suspectHome deletes a home index that named a message the database does
// not have, or not by that author, and returns errSuspect.
func (st *State) suspectHome(ctx context.Context, key string) error {
	st.stats.cacheErrors.Add(1)
	if err := st.mc.Delete(ctx, key); err != nil && !errors.Is(err, memcached.ErrCacheMiss) {
		st.cacheFailed(ctx)
		st.active.distrust()
	}
	return errSuspect
}
