package recent

import (
	"encoding/binary"
	"hash/crc32"
	"slices"

	"github.com/pushpull/pushpull/pull/sqlread"
)

const (
	listMagic    = 'R'
	recordMagic  = 'a'
	flagComplete = 1
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// authorList is a checked list, its ids not yet decoded.
type authorList struct {
	base     []byte   // the base's id varints
	count    int      // how many ids base holds
	records  []uint64 // appended ids that count (see decodeList), newest first
	nRecords int      // appended records, counted or not
	complete bool     // the author has no message below floor
	// floor is the oldest id of the base: every id of the author at or
	// above it is listed, except posts whose append is still on its way.
	floor   uint64
	builtAt int64
}

// EncodeList encodes the base of an author's list stored under key: ids
// newest first (at least one unless complete), complete if the author has
// no older message, built at builtAt (Unix seconds). Tests forge lists
// with it.
//
//	base:   'R' | flags (bit 0: complete) | uvarint builtAt | uvarint count |
//	        uvarint oldest id | uvarint length in bytes of the ids |
//	        ids: uvarint newest id, then uvarint gap to each older id |
//	        crc32c(key | everything before)            (4 bytes, big endian)
//	record: 'a' | id (8 bytes, big endian) | crc32c(key | 'a' | id)
//
// Posts append records. The ids are decoded lazily (listIter): a newest
// page needs the first few ids of each list, and the header's length lets
// the checksum be checked without decoding them.
func EncodeList(key string, ids []uint64, complete bool, builtAt int64) []byte {
	var idBytes []byte
	for i, id := range ids {
		if i == 0 {
			idBytes = binary.AppendUvarint(idBytes, id)
		} else {
			idBytes = binary.AppendUvarint(idBytes, ids[i-1]-id)
		}
	}
	b := make([]byte, 0, 32+len(idBytes))
	b = append(b, listMagic, 0)
	if complete {
		b[1] = flagComplete
	}
	b = binary.AppendUvarint(b, uint64(builtAt))
	b = binary.AppendUvarint(b, uint64(len(ids)))
	var oldest uint64
	if len(ids) > 0 {
		oldest = ids[len(ids)-1]
	}
	b = binary.AppendUvarint(b, oldest)
	b = binary.AppendUvarint(b, uint64(len(idBytes)))
	b = append(b, idBytes...)
	return sealed(key, b)
}

// encodeRecord encodes the record a post appends.
func encodeRecord(key string, id uint64) []byte { return fixedRecord(key, recordMagic, id) }

// The framing that lists, indexes and hint targets share (see the package
// comment): a base that ends with its checksum, then fixed-size records,
// each a magic byte, 8-byte big-endian fields and its own checksum.

// sealed appends to b its checksum under key.
func sealed(key string, b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Update(keySum(key), crcTable, b))
}

// keySum is the checksum of key, where every value's checksum starts.
func keySum(key string) uint32 { return crc32.Checksum([]byte(key), crcTable) }

// sealOK reports whether v[:end] is followed by its checksum, ks being
// keySum of v's key.
func sealOK(ks uint32, v []byte, end int) bool {
	return len(v)-end >= 4 && crc32.Update(ks, crcTable, v[:end]) == binary.BigEndian.Uint32(v[end:])
}

// fixedRecord encodes a record: magic, the fields, the checksum.
func fixedRecord(key string, magic byte, fields ...uint64) []byte {
	b := make([]byte, 0, 1+8*len(fields)+4)
	b = append(b, magic)
	for _, f := range fields {
		b = binary.BigEndian.AppendUint64(b, f)
	}
	return sealed(key, b)
}

// eachRecord checks rest, a run of records of n fields each with magic
// (ks being keySum of their key), and hands f each record (recField reads
// its fields). It reports false if any record is malformed or f refuses
// one.
func eachRecord(ks uint32, rest []byte, magic byte, n int, f func(rec []byte) bool) bool {
	size := 1 + 8*n + 4
	if len(rest)%size != 0 {
		return false
	}
	for ; len(rest) > 0; rest = rest[size:] {
		r := rest[:size]
		if r[0] != magic || !sealOK(ks, r, size-4) || !f(r) {
			return false
		}
	}
	return true
}

// recField returns field i of a record.
func recField(rec []byte, i int) uint64 { return binary.BigEndian.Uint64(rec[1+8*i:]) }

// decodeList checks v, the value of key, or reports that it is not a valid
// list (a placeholder, garbage, or a list with a bad record).
func decodeList(key string, v []byte) (authorList, bool) {
	var l authorList
	if len(v) < 2+4 || v[0] != listMagic || v[1]&^flagComplete != 0 {
		return l, false
	}
	l.complete = v[1]&flagComplete != 0
	p := 2
	var fields [4]uint64 // builtAt, count, oldest, length of ids
	for i := range fields {
		x, n := binary.Uvarint(v[p:])
		if n <= 0 {
			return l, false
		}
		fields[i], p = x, p+n
	}
	built, count, oldest, idLen := fields[0], fields[1], fields[2], fields[3]
	// Each id takes one to ten bytes.
	if built > 1<<62 || idLen > uint64(len(v)-p) || count > idLen || idLen > 10*count ||
		(count == 0) != (oldest == 0) || (count == 0 && !l.complete) {
		return l, false
	}
	end := p + int(idLen)
	ks := keySum(key)
	if !sealOK(ks, v, end) {
		return l, false
	}
	l.builtAt, l.count, l.floor, l.base = int64(built), int(count), oldest, v[p:end]

	// Records: posts since the base was built. Concurrent posts by one
	// author can append out of order, and one whose id is below the
	// base's floor says nothing about the gap above it, so for an
	// incomplete list such ids are left to the database.
	ok := eachRecord(ks, v[end+4:], recordMagic, 1, func(rec []byte) bool {
		id := recField(rec, 0)
		if id == 0 {
			return false
		}
		l.nRecords++
		if l.complete || id > l.floor {
			l.records = append(l.records, id)
		}
		return true
	})
	if !ok {
		return l, false
	}
	if len(l.records) > 1 {
		slices.SortFunc(l.records, sqlread.NewestFirst)
		l.records = slices.Compact(l.records)
	}
	return l, true
}

// listIter yields a list's ids newest first, base and records merged.
type listIter struct {
	base  []byte
	left  int    // base ids not yet decoded
	prev  uint64 // last base id decoded
	bHead uint64 // next base id, 0 when none
	recs  []uint64
	bad   bool // the base's ids were malformed (never, unless forged)
}

func (l *authorList) iter() listIter {
	it := listIter{base: l.base, left: l.count, recs: l.records}
	it.bHead = it.nextBase()
	return it
}

func (it *listIter) nextBase() uint64 {
	if it.left == 0 {
		return 0
	}
	x, n := binary.Uvarint(it.base)
	if n <= 0 {
		it.bad, it.left = true, 0
		return 0
	}
	it.base, it.left = it.base[n:], it.left-1
	id := x
	if it.prev != 0 {
		if x == 0 || x >= it.prev {
			it.bad, it.left = true, 0
			return 0
		}
		id = it.prev - x
	}
	if id == 0 {
		it.bad, it.left = true, 0
		return 0
	}
	it.prev = id
	return id
}

// peek returns the next id without consuming it; 0 when there is none.
func (it *listIter) peek() uint64 {
	if len(it.recs) > 0 && it.recs[0] > it.bHead {
		return it.recs[0]
	}
	return it.bHead
}

// pop consumes the next id and returns it; 0 when there is none.
func (it *listIter) pop() uint64 {
	id := it.peek()
	if id == 0 {
		return 0
	}
	if len(it.recs) > 0 && it.recs[0] == id {
		it.recs = it.recs[1:]
	}
	if it.bHead == id {
		it.bHead = it.nextBase()
	}
	return id
}

// all decodes every id, newest first.
func (l *authorList) all() ([]uint64, bool) {
	it := l.iter()
	out := make([]uint64, 0, l.count+len(l.records))
	for id := it.pop(); id != 0; id = it.pop() {
		out = append(out, id)
	}
	return out, !it.bad
}
