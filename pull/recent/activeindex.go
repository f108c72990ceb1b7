package recent

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/timeline"
)

const (
	indexMagic = 'I'
	hintMagic  = 'h'
)

// activeIndex is a checked index (Active) of a user's followees who posted
// last:
//
//	base:   'I' | uvarint builtAt (Unix milliseconds) | uvarint token length |
//	        token | uvarint floor | uvarint count |
//	        count × (uvarint author, uvarint newest id) |
//	        crc32c(key | everything before)            (4 bytes, big endian)
//	record: 'h' | author (8 bytes) | id (8 bytes) | crc32c(key | 'h' | author | id)
//
// token is the user's follow token when the base was built, so a follow or
// unfollow retires it. floor makes the index exact: every followee of that
// moment left out of the base had no message above it (0: the base holds
// every followee who had posted). A record is a post's hint: author just
// posted id.
type activeIndex struct {
	builtAt  int64 // Unix milliseconds
	token    string
	floor    uint64
	entries  []sqlread.AuthorNewest // base and records merged, one per author, newest first
	nRecords int                    // records appended since the base
}

// encodeIndex encodes a base; entries must be newest first.
func encodeIndex(key, token string, builtAt int64, floor uint64, entries []sqlread.AuthorNewest) []byte {
	b := make([]byte, 0, 32+len(token)+8*len(entries))
	b = append(b, indexMagic)
	b = binary.AppendUvarint(b, uint64(builtAt))
	b = binary.AppendUvarint(b, uint64(len(token)))
	b = append(b, token...)
	b = binary.AppendUvarint(b, floor)
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(e.Author))
		b = binary.AppendUvarint(b, e.Newest)
	}
	return sealed(key, b)
}

// EncodeHint encodes the record that author's post of id appends to a
// follower's index stored under key. Tests forge hints with it.
func EncodeHint(key string, author timeline.UserID, id uint64) []byte {
	return fixedRecord(key, hintMagic, uint64(author), id)
}

// decodeIndex checks v, the value of key, or reports that it is not a
// valid index (a placeholder, garbage, or a bad record).
func decodeIndex(key string, v []byte) (activeIndex, bool) {
	var x activeIndex
	if len(v) < 1+4 || v[0] != indexMagic {
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
	tokLen, ok2 := uvarint()
	if !ok1 || !ok2 || built > 1<<62 || tokLen > 64 || tokLen > uint64(len(v)-p) {
		return x, false
	}
	x.builtAt, x.token = int64(built), string(v[p:p+int(tokLen)])
	p += int(tokLen)
	floor, ok1 := uvarint()
	count, ok2 := uvarint()
	// Each entry takes at least two bytes.
	if !ok1 || !ok2 || count > uint64(len(v)-p)/2 {
		return x, false
	}
	x.floor = floor
	x.entries = make([]sqlread.AuthorNewest, 0, int(count)+4)
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
	ok := eachRecord(ks, v[p+4:], hintMagic, 2, func(rec []byte) bool {
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
	// One entry per author, with the newest id any of them gave: sort by
	// author, newest first within one, keep the first of each.
	if x.nRecords > 0 || !slices.IsSortedFunc(x.entries, sqlread.ByNewest) {
		slices.SortFunc(x.entries, func(e, f sqlread.AuthorNewest) int {
			if c := cmp.Compare(e.Author, f.Author); c != 0 {
				return c
			}
			return sqlread.ByNewest(e, f)
		})
		x.entries = slices.CompactFunc(x.entries, func(e, f sqlread.AuthorNewest) bool { return e.Author == f.Author })
		slices.SortFunc(x.entries, sqlread.ByNewest)
	}
	return x, true
}
