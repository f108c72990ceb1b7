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

// indexBase is what the indexes of Active and Home share: a base built
// from a database read, then the hints posts append (records).
//
//	base:   magic | uvarint builtAt (Unix milliseconds) | uvarint token length |
//	        token | uvarint floor | uvarint count |
//	        count × (uvarint author, uvarint id) | the index's own fields |
//	        crc32c(key | everything before)            (4 bytes, big endian)
//	record: 'h' | author (8 bytes) | id (8 bytes) | crc32c(key | 'h' | author | id)
//
// token is the user's follow token when the base was built, so a follow or
// unfollow retires it. floor makes the index exact: below it the index
// knows nothing (0: it knows everything). A record is a post's hint:
// author just posted id.
type indexBase struct {
	builtAt  int64 // Unix milliseconds
	token    string
	floor    uint64
	entries  []sqlread.AuthorNewest // the base's, then the records', in the order read
	nRecords int                    // records appended since the base
}

// appendIndexBase appends x's base up to the index's own fields.
func appendIndexBase(b []byte, magic byte, x indexBase) []byte {
	b = append(b, magic)
	b = binary.AppendUvarint(b, uint64(x.builtAt))
	b = binary.AppendUvarint(b, uint64(len(x.token)))
	b = append(b, x.token...)
	b = binary.AppendUvarint(b, x.floor)
	b = binary.AppendUvarint(b, uint64(len(x.entries)))
	for _, e := range x.entries {
		b = binary.AppendUvarint(b, uint64(e.Author))
		b = binary.AppendUvarint(b, e.Newest)
	}
	return b
}

// varints reads a value's uvarints in order.
type varints struct {
	v []byte
	p int
}

func (r *varints) next() (uint64, bool) {
	n, k := binary.Uvarint(r.v[r.p:])
	if k <= 0 {
		return 0, false
	}
	r.p += k
	return n, true
}

// decodeIndexBase checks v, the value of key: the magic byte, the shared
// base, the index's own fields (read by own, which reports whether they
// were well formed), the checksum and the records, whose hints it adds to
// entries. It reports false for a placeholder, another kind of value,
// garbage, or a bad record.
func decodeIndexBase(key string, v []byte, magic byte, own func(r *varints) bool) (indexBase, bool) {
	var x indexBase
	if len(v) < 1+4 || v[0] != magic {
		return x, false
	}
	r := &varints{v: v, p: 1}
	built, ok1 := r.next()
	tokLen, ok2 := r.next()
	if !ok1 || !ok2 || built > 1<<62 || tokLen > 64 || tokLen > uint64(len(v)-r.p) {
		return x, false
	}
	x.builtAt, x.token = int64(built), string(v[r.p:r.p+int(tokLen)])
	r.p += int(tokLen)
	floor, ok1 := r.next()
	count, ok2 := r.next()
	// Each entry takes at least two bytes.
	if !ok1 || !ok2 || count > uint64(len(v)-r.p)/2 {
		return x, false
	}
	x.floor = floor
	x.entries = make([]sqlread.AuthorNewest, 0, int(count)+8)
	for range count {
		a, ok1 := r.next()
		id, ok2 := r.next()
		if !ok1 || !ok2 || a == 0 || id == 0 {
			return x, false
		}
		x.entries = append(x.entries, sqlread.AuthorNewest{Author: timeline.UserID(a), Newest: id})
	}
	if !own(r) {
		return x, false
	}
	ks := keySum(key)
	if !sealOK(ks, v, r.p) {
		return x, false
	}
	ok := eachRecord(ks, v[r.p+4:], hintMagic, 2, func(rec []byte) bool {
		a, id := recField(rec, 0), recField(rec, 1)
		if a == 0 || id == 0 {
			return false
		}
		x.nRecords++
		x.entries = append(x.entries, sqlread.AuthorNewest{Author: timeline.UserID(a), Newest: id})
		return true
	})
	return x, ok
}

// activeIndex is a checked index (Active) of a user's followees who posted
// last: an indexBase whose entries are (followee, their newest id), one per
// followee, and no fields of its own. Its floor: every followee of the
// base's moment left out of it had no message above the floor.
type activeIndex struct {
	indexBase // entries: base and records merged, one per author, newest first
}

// encodeIndex encodes a base; entries must be newest first.
func encodeIndex(key, token string, builtAt int64, floor uint64, entries []sqlread.AuthorNewest) []byte {
	b := make([]byte, 0, 32+len(token)+8*len(entries))
	return sealed(key, appendIndexBase(b, indexMagic, indexBase{builtAt: builtAt, token: token, floor: floor, entries: entries}))
}

// EncodeHint encodes the record that author's post of id appends to a
// follower's index stored under key. Tests forge hints with it.
func EncodeHint(key string, author timeline.UserID, id uint64) []byte {
	return fixedRecord(key, hintMagic, uint64(author), id)
}

// decodeIndex checks v, the value of key, or reports that it is not a
// valid index (a placeholder, garbage, or a bad record).
func decodeIndex(key string, v []byte) (activeIndex, bool) {
	b, ok := decodeIndexBase(key, v, indexMagic, func(*varints) bool { return true })
	x := activeIndex{b}
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
