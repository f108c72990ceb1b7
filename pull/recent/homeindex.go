package recent

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/timeline"
)

const homeMagic = 'H'

// homeIndex is a checked home index (Home): an indexBase whose entries are
// (author, message id), the newest ids of a user's timeline from the
// followees it takes hints from, and three fields of its own:
//
//	own fields: uvarint regUntil (Unix milliseconds) | uvarint pulled count |
//	            pulled × uvarint author | uvarint pushed length (bytes) |
//	            pushed: the first author, then each one's distance from the
//	            one before, uvarints
//
// regUntil is when the index's registration as a hint target of its
// pushed followees expires (see registerHome). pulled are the followees
// of the base's moment whose messages the index does not hold: a read
// merges their lists. pushed are the others, the followees the index
// holds messages of: with pulled, the followees as of the token, which is
// what lets a read patch the index after a follow or unfollow (patchHome)
// rather than rebuild it. The floor makes the index exact: every message
// of a pushed followee above it is an entry, or a hint still on its way
// from a post that has not returned.
type homeIndex struct {
	indexBase                   // entries: base and records merged, newest first, each id once
	regUntil  int64             // Unix milliseconds
	pulled    []timeline.UserID // ascending
	pushed    []byte            // encoded as above; decoded by pushedAuthors, when a patch needs it
}

// encodeHome encodes x as a base (its nRecords aside); x.pulled must be
// ascending, x.entries newest first, and x.pushed encoded (encodePushed).
func encodeHome(key string, x homeIndex) []byte {
	b := make([]byte, 0, 48+len(x.token)+5*len(x.pulled)+8*len(x.entries)+len(x.pushed))
	b = appendIndexBase(b, homeMagic, x.indexBase)
	b = binary.AppendUvarint(b, uint64(x.regUntil))
	b = binary.AppendUvarint(b, uint64(len(x.pulled)))
	for _, a := range x.pulled {
		b = binary.AppendUvarint(b, uint64(a))
	}
	b = binary.AppendUvarint(b, uint64(len(x.pushed)))
	b = append(b, x.pushed...)
	return sealed(key, b)
}

// encodeChecked encodes x (see encodeHome) and returns it decoded too, as
// a read would find it; an index that does not decode is a bug.
func encodeChecked(key string, x homeIndex) ([]byte, homeIndex) {
	v := encodeHome(key, x)
	idx, ok := decodeHome(key, v)
	if !ok {
		panic("pull: a home index just encoded does not decode")
	}
	return v, idx
}

// encodePushed encodes authors, ascending and distinct, as homeIndex.pushed.
func encodePushed(authors []timeline.UserID) []byte {
	b := make([]byte, 0, 2*len(authors))
	var prev timeline.UserID
	for _, a := range authors {
		b = binary.AppendUvarint(b, uint64(a-prev))
		prev = a
	}
	return b
}

// pushedAuthors decodes x.pushed, or reports that it is malformed.
func (x *homeIndex) pushedAuthors() ([]timeline.UserID, bool) {
	out := make([]timeline.UserID, 0, len(x.pushed)/2)
	r := varints{v: x.pushed}
	var prev uint64
	for r.p < len(r.v) {
		d, ok := r.next()
		if !ok || d == 0 || prev+d < prev || prev+d > 1<<62 {
			return nil, false
		}
		prev += d
		out = append(out, timeline.UserID(prev))
	}
	return out, true
}

// decodeHome checks v, the value of key, or reports that it is not a
// valid home index (a placeholder, an Active index, garbage, a base out of
// order, or a bad record).
func decodeHome(key string, v []byte) (homeIndex, bool) {
	var x homeIndex
	base, ok := decodeIndexBase(key, v, homeMagic, func(r *varints) bool {
		regUntil, ok1 := r.next()
		n, ok2 := r.next()
		if !ok1 || !ok2 || regUntil > 1<<62 || n > uint64(len(r.v)-r.p) {
			return false
		}
		x.regUntil = int64(regUntil)
		x.pulled = make([]timeline.UserID, 0, int(n))
		for range n {
			a, ok := r.next()
			if !ok || a == 0 {
				return false
			}
			x.pulled = append(x.pulled, timeline.UserID(a))
		}
		n, ok := r.next()
		if !ok || n > uint64(len(r.v)-r.p) {
			return false
		}
		x.pushed = r.v[r.p : r.p+int(n) : r.p+int(n)]
		r.p += int(n)
		return slices.IsSorted(x.pulled)
	})
	x.indexBase = base
	if !ok {
		return x, false
	}
	sorted := x.entries[:len(x.entries)-x.nRecords]
	if !slices.IsSortedFunc(sorted, sqlread.ByNewest) {
		return x, false
	}
	if x.nRecords > 0 {
		x.entries = mergeHints(sorted, slices.Clone(x.entries[len(sorted):]))
	}
	return x, true
}

// mergeHints merges hints, in any order and possibly repeated, into base
// (newest first), each id once.
func mergeHints(base, hints []sqlread.AuthorNewest) []sqlread.AuthorNewest {
	slices.SortFunc(hints, sqlread.ByNewest)
	merged := make([]sqlread.AuthorNewest, 0, len(base)+len(hints))
	i, j := 0, 0
	for i < len(base) || j < len(hints) {
		var e sqlread.AuthorNewest
		if j == len(hints) || (i < len(base) && base[i].Newest >= hints[j].Newest) {
			e, i = base[i], i+1
		} else {
			e, j = hints[j], j+1
		}
		if n := len(merged); n == 0 || merged[n-1].Newest != e.Newest {
			merged = append(merged, e)
		}
	}
	return merged
}

// registeredPast reports whether x's registration lasts at least two
// minutes past the life of an index built now (recentMaxAge), so that a
// rebuild or patch can keep it and register only new edges.
func (x *homeIndex) registeredPast(now time.Time) bool {
	return x.regUntil >= now.Add(recentMaxAge+2*time.Minute).UnixMilli()
}

// isPulled reports whether the index pulls author.
func (x *homeIndex) isPulled(author timeline.UserID) bool {
	_, found := slices.BinarySearch(x.pulled, author)
	return found
}
