package recent

import (
	"encoding/binary"
	"slices"

	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/timeline"
)

const homeMagic = 'H'

// homeIndex is a checked home index (Home): the newest ids of a user's
// timeline from the followees it takes hints from, and the followees it
// pulls instead:
//
//	base:   'H' | uvarint builtAt (Unix milliseconds) |
//	        uvarint regUntil (Unix milliseconds) | uvarint token length |
//	        token | uvarint floor | uvarint pulled count | pulled × uvarint author |
//	        uvarint count | count × (uvarint author, uvarint id) |
//	        crc32c(key | everything before)            (4 bytes, big endian)
//	record: a hint, as Active's: 'h' | author (8 bytes) | id (8 bytes) | crc
//
// regUntil is when the index's registration as a hint target of its
// pushed followees expires (see registerHome). token is the user's follow
// token when the base was built. pulled are the
// followees of that moment whose messages the index does not hold: a read
// merges their lists. floor makes the rest exact: every message of the
// other followees above it is an entry (0: all of them are), or a hint
// still on its way from a post that has not returned.
type homeIndex struct {
	builtAt  int64 // Unix milliseconds
	regUntil int64 // Unix milliseconds
	token    string
	floor    uint64
	pulled   []timeline.UserID      // ascending
	entries  []sqlread.AuthorNewest // Newest is a message id; newest first, each id once
	nRecords int                    // hints appended since the base
}

// encodeHome encodes x as a base (its nRecords aside); x.pulled must be
// ascending and x.entries newest first.
func encodeHome(key string, x homeIndex) []byte {
	token, pulled, entries := x.token, x.pulled, x.entries
	b := make([]byte, 0, 48+len(token)+5*len(pulled)+8*len(entries))
	b = append(b, homeMagic)
	b = binary.AppendUvarint(b, uint64(x.builtAt))
	b = binary.AppendUvarint(b, uint64(x.regUntil))
	b = binary.AppendUvarint(b, uint64(len(token)))
	b = append(b, token...)
	b = binary.AppendUvarint(b, x.floor)
	b = binary.AppendUvarint(b, uint64(len(pulled)))
	for _, a := range pulled {
		b = binary.AppendUvarint(b, uint64(a))
	}
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(e.Author))
		b = binary.AppendUvarint(b, e.Newest)
	}
	return sealed(key, b)
}

// decodeHome checks v, the value of key, or reports that it is not a
// valid home index (a placeholder, an Active index, garbage, or a bad
// record).
func decodeHome(key string, v []byte) (homeIndex, bool) {
	var x homeIndex
	if len(v) < 1+4 || v[0] != homeMagic {
		return x, false
	}
	p := 1
	uvarint := func() (uint64, bool) {
		n, k := binary.Uvarint(v[p:])
		if k <= 0 {
			return 0, false
		}
		p += k
		return n, true
	}
	built, ok1 := uvarint()
	regUntil, ok2 := uvarint()
	tokLen, ok3 := uvarint()
	if !ok1 || !ok2 || !ok3 || built > 1<<62 || regUntil > 1<<62 || tokLen > 64 || tokLen > uint64(len(v)-p) {
		return x, false
	}
	x.builtAt, x.regUntil, x.token = int64(built), int64(regUntil), string(v[p:p+int(tokLen)])
	p += int(tokLen)
	floor, ok1 := uvarint()
	nPulled, ok2 := uvarint()
	if !ok1 || !ok2 || nPulled > uint64(len(v)-p) {
		return x, false
	}
	x.floor = floor
	x.pulled = make([]timeline.UserID, 0, int(nPulled))
	for range nPulled {
		a, ok := uvarint()
		if !ok || a == 0 {
			return x, false
		}
		x.pulled = append(x.pulled, timeline.UserID(a))
	}
	count, ok := uvarint()
	// Each entry takes at least two bytes.
	if !ok || count > uint64(len(v)-p)/2 || !slices.IsSorted(x.pulled) {
		return x, false
	}
	x.entries = make([]sqlread.AuthorNewest, 0, int(count)+8)
	for range count {
		a, ok1 := uvarint()
		id, ok2 := uvarint()
		if !ok1 || !ok2 || a == 0 || id == 0 {
			return x, false
		}
		x.entries = append(x.entries, sqlread.AuthorNewest{Author: timeline.UserID(a), Newest: id})
	}
	ks := keySum(key)
	if !sealOK(ks, v, p) {
		return x, false
	}
	ok = eachRecord(ks, v[p+4:], hintMagic, 2, func(rec []byte) bool {
		a, id := recField(rec, 0), recField(rec, 1)
		if a == 0 || id == 0 {
			return false
		}
		x.nRecords++
		x.entries = append(x.entries, sqlread.AuthorNewest{Author: timeline.UserID(a), Newest: id})
		return true
	})
	if !ok {
		return x, false
	}
	base := x.entries[:len(x.entries)-x.nRecords]
	if !slices.IsSortedFunc(base, sqlread.ByNewest) {
		return x, false
	}
	if x.nRecords > 0 {
		// Hints arrive in any order, and a post may hint twice: sort the
		// few hints and merge them into the sorted base, each id once.
		hints := slices.Clone(x.entries[len(base):])
		slices.SortFunc(hints, sqlread.ByNewest)
		merged := make([]sqlread.AuthorNewest, 0, len(x.entries))
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
		x.entries = merged
	}
	return x, true
}

// isPulled reports whether the index pulls author.
func (x *homeIndex) isPulled(author timeline.UserID) bool {
	_, found := slices.BinarySearch(x.pulled, author)
	return found
}
