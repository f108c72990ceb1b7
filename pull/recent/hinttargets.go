package recent

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/timeline"
)

const (
	targetsMagic   = 'T'
	targetRecMagic = 'u'
	// targetsCompactAt: targets with this many appended records are
	// rewritten by the next post, without the expired ones.
	targetsCompactAt = 32
)

// hintTarget is one of an author's hint targets: a follower whose index
// (Active) the author's posts must hint, until the time after which that
// index is no longer read. index_readers is the record; memcached keeps a
// copy per author, so that a post learns its targets in the request that
// appends to the author's list:
//
//	base:   'T' | uvarint count | count × (uvarint user, uvarint until) |
//	        crc32c(key | everything before)
//	record: 'u' | user (8 bytes) | until (8 bytes) | crc32c(key | 'u' | user | until)
//
// A copy memcached lost is rebuilt from index_readers by the post that
// misses it, through a placeholder and CAS as for lists: a registration
// appending after the placeholder makes the CAS fail, and one appending
// before it committed to index_readers before the rebuild read it. Copies
// have no expiry (each entry carries its own).
type hintTarget struct {
	user  timeline.UserID
	until int64 // Unix milliseconds
}

func (st *State) targetsKey(author timeline.UserID) string {
	return st.prefix + "t" + strconv.FormatInt(int64(author), 10)
}

func encodeTargets(key string, ts []hintTarget) []byte {
	b := make([]byte, 0, 8+12*len(ts))
	b = append(b, targetsMagic)
	b = binary.AppendUvarint(b, uint64(len(ts)))
	for _, t := range ts {
		b = binary.AppendUvarint(b, uint64(t.user))
		b = binary.AppendUvarint(b, uint64(t.until))
	}
	return sealed(key, b)
}

func encodeTargetRecord(key string, user timeline.UserID, until int64) []byte {
	return fixedRecord(key, targetRecMagic, uint64(user), uint64(until))
}

// decodeTargets checks v, the value of key: the targets, one per user
// with the latest until, and how many records were appended.
func decodeTargets(key string, v []byte) (ts []hintTarget, records int, ok bool) {
	if len(v) < 1+4 || v[0] != targetsMagic {
		return nil, 0, false
	}
	p := 1
	n, k := binary.Uvarint(v[p:])
	if k <= 0 || n > uint64(len(v)-p)/2 {
		return nil, 0, false
	}
	p += k
	ts = make([]hintTarget, 0, int(n)+4)
	for range n {
		u, k1 := binary.Uvarint(v[p:])
		if k1 <= 0 {
			return nil, 0, false
		}
		until, k2 := binary.Uvarint(v[p+k1:])
		if k2 <= 0 || u == 0 || until > 1<<62 {
			return nil, 0, false
		}
		p += k1 + k2
		ts = append(ts, hintTarget{timeline.UserID(u), int64(until)})
	}
	ks := keySum(key)
	if !sealOK(ks, v, p) {
		return nil, 0, false
	}
	ok = eachRecord(ks, v[p+4:], targetRecMagic, 2, func(rec []byte) bool {
		u, until := recField(rec, 0), recField(rec, 1)
		if u == 0 || until > 1<<62 {
			return false
		}
		records++
		ts = append(ts, hintTarget{timeline.UserID(u), int64(until)})
		return true
	})
	if !ok {
		return nil, 0, false
	}
	if records > 0 {
		ts = uniqueTargets(ts)
	}
	return ts, records, true
}

// uniqueTargets sorts ts by user and keeps one per user, with the latest
// until.
func uniqueTargets(ts []hintTarget) []hintTarget {
	slices.SortFunc(ts, func(a, b hintTarget) int {
		return cmp.Or(cmp.Compare(a.user, b.user), cmp.Compare(b.until, a.until))
	})
	return slices.CompactFunc(ts, func(a, b hintTarget) bool { return a.user == b.user })
}

// addTarget appends user, until the given time, to the targets of each of
// authors, pipelined; a copy that did not take the record is deleted (the
// next post rebuilds it from index_readers). It fails only if one could
// neither take the record nor be deleted.
func (st *State) addTarget(ctx context.Context, user timeline.UserID, until int64, authors []timeline.UserID) error {
	if len(authors) == 0 {
		return nil
	}
	items := make([]memcached.Item, len(authors))
	ptrs := make([]*memcached.Item, len(authors))
	for i, a := range authors {
		k := st.targetsKey(a)
		items[i] = memcached.Item{Key: k, Value: encodeTargetRecord(k, user, until)}
		ptrs[i] = &items[i]
	}
	var drop []string
	for i, err := range st.mc.Append(ctx, ptrs) {
		if err != nil {
			drop = append(drop, items[i].Key)
		}
	}
	if len(drop) == 0 {
		return nil
	}
	for _, err := range st.mc.DeleteMulti(ctx, drop) {
		if err != nil && !errors.Is(err, memcached.ErrCacheMiss) {
			st.cacheFailed(ctx)
			return err
		}
	}
	return nil
}

// hintTargets returns the users whose index a post by author must hint,
// from it, the value of author's targets (nil if memcached has none).
func (st *State) hintTargets(ctx context.Context, author timeline.UserID, it *memcached.Item) ([]timeline.UserID, error) {
	key := st.targetsKey(author)
	now := time.Now().UnixMilli()
	if it != nil {
		if ts, records, ok := decodeTargets(key, it.Value); ok {
			live := ts[:0]
			for _, t := range ts {
				if t.until > now {
					live = append(live, t)
				}
			}
			if records >= targetsCompactAt || len(live) < len(ts) {
				st.storeBuilt(ctx, it, encodeTargets(key, live), 0)
			}
			users := make([]timeline.UserID, len(live))
			for i, t := range live {
				users[i] = t.user
			}
			return users, nil
		}
	}
	var tokens map[timeline.UserID]*memcached.Item
	if it != nil {
		tokens = map[timeline.UserID]*memcached.Item{author: it}
	}
	built, err := st.buildTargets(ctx, []timeline.UserID{author}, tokens)
	return built[author], err
}

// buildTargets reads the hint targets of authors from index_readers and
// stores them in memcached, returning them. tokens holds, for some of the
// authors, the value their key held (a placeholder or garbage) with its
// CAS id; the others get one before the database read (takeTokens; see
// the top for why).
func (st *State) buildTargets(ctx context.Context, authors []timeline.UserID, tokens map[timeline.UserID]*memcached.Item) (map[timeline.UserID][]timeline.UserID, error) {
	if tokens == nil {
		tokens = make(map[timeline.UserID]*memcached.Item)
	}
	st.takeTokens(ctx, authors, st.targetsKey, tokens)
	targets, err := st.readTargets(ctx, authors)
	if err != nil {
		return nil, err
	}
	values := make(map[timeline.UserID][]byte, len(authors))
	out := make(map[timeline.UserID][]timeline.UserID, len(authors))
	for _, a := range authors {
		ts := uniqueTargets(targets[a])
		values[a] = encodeTargets(st.targetsKey(a), ts)
		for _, t := range ts {
			out[a] = append(out[a], t.user)
		}
	}
	st.storeAll(ctx, tokens, values, 0, nil)
	return out, nil
}

// readTargets reads the hint targets of authors from the database: their
// followers in index_readers (Active) and the readers in home_readers
// (Home) whose entry has not expired. A user in both is listed twice;
// decodeTargets keeps one.
func (st *State) readTargets(ctx context.Context, authors []timeline.UserID) (map[timeline.UserID][]hintTarget, error) {
	in := make([]byte, 0, 12*len(authors))
	for i, a := range authors {
		if i > 0 {
			in = append(in, ',')
		}
		in = strconv.AppendInt(in, int64(a), 10)
	}
	q := make([]byte, 0, 300+2*len(in))
	q = append(q, `SELECT f.followee_id, f.follower_id, r.until FROM follows f JOIN index_readers r ON r.user_id = f.follower_id WHERE r.until > ? AND f.followee_id IN (`...)
	q = append(q, in...)
	q = append(q, `) UNION ALL SELECT author_id, user_id, until FROM home_readers WHERE until > ? AND author_id IN (`...)
	q = append(q, in...)
	q = append(q, ')')
	now := time.Now().UTC()
	rows, err := st.db.QueryContext(ctx, string(q), now, now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	targets := make(map[timeline.UserID][]hintTarget, len(authors))
	for rows.Next() {
		var a, u timeline.UserID
		var until time.Time
		if err := rows.Scan(&a, &u, &until); err != nil {
			return nil, err
		}
		targets[a] = append(targets[a], hintTarget{u, until.UnixMilli()})
	}
	return targets, rows.Err()
}

// primeTargets builds the hint targets of those of authors that memcached
// lacks, as rebuilding their lists does for the lists: otherwise the first
// post of each author after memcached lost them would read the database.
// Best effort: a post rebuilds whatever this leaves out.
func (st *State) primeTargets(ctx context.Context, authors []timeline.UserID) {
	keys := make([]string, len(authors))
	for i, a := range authors {
		keys[i] = st.targetsKey(a)
	}
	got, err := st.mc.Get(ctx, keys)
	if err != nil {
		st.cacheFailed(ctx)
		return
	}
	var missing []timeline.UserID
	var tokens map[timeline.UserID]*memcached.Item
	for i, a := range authors {
		if it := got[i]; it == nil {
			missing = append(missing, a)
		} else if _, _, ok := decodeTargets(keys[i], it.Value); !ok {
			if tokens == nil {
				tokens = make(map[timeline.UserID]*memcached.Item)
			}
			missing, tokens[a] = append(missing, a), it
		}
	}
	if len(missing) > 0 {
		st.buildTargets(ctx, missing, tokens)
	}
}

// PrimeHintTargets builds the hint targets that memcached lacks for
// authors, in batches, as the posts of a running service keep them: a
// benchmark calls it after warming the lists, so that its submission phase
// measures posts, not the first post of every author since memcached
// started. It does nothing for a store that sends no hints.
func (st *State) PrimeHintTargets(ctx context.Context, authors []timeline.UserID) error {
	if st == nil || st.active == nil {
		return nil
	}
	for len(authors) > 0 {
		n := min(len(authors), 500)
		st.primeTargets(ctx, authors[:n])
		authors = authors[n:]
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}
