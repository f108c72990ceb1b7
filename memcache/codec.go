package memcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/pushpull/pushpull/timeline"
)

// An entry is what a page key holds: the first page of a home timeline as
// the wrapped store returned it, the generation it was filled under (0 under
// the ttl policy), and when the read that produced it began.
type entry struct {
	gen       uint64
	fetchedAt time.Time
	page      timeline.Page
}

// Value layout, all integers varints (encoding/binary):
//
//	version      byte (codecVersion)
//	gen          uvarint
//	fetchedAt    varint, Unix nanoseconds
//	next         uvarint length, then the cursor's bytes
//	prev         uvarint length, then the cursor's bytes
//	count        uvarint, number of messages
//	per message, newest first:
//	  id         uvarint: the id for the first message, then the (positive)
//	             distance below the previous one
//	  author     uvarint
//	  created_at varint: Unix nanoseconds for the first message, then the
//	             previous message's minus this one's (zigzag, so it may be
//	             negative; computed and undone modulo 2^64)
//	  body       uvarint length, then the UTF-8 bytes
//
// The largest page the codec accepts (MaxLimit messages of MaxBodyChars
// four-byte characters) is about 225 KB, under memcached's 1 MB item limit.
const codecVersion = 2

const (
	maxCursorLen = 256                       // cursors are 28 bytes; anything much longer is corrupt
	maxBodyBytes = 4 * timeline.MaxBodyChars // UTF-8 needs at most 4 bytes a character
	// maxValueLen keeps values under memcached's default item size limit
	// (1 MB including the key and item header).
	maxValueLen = 1<<20 - 4096
)

var (
	errCorrupt = errors.New("corrupt cache value")
	// errVersion means the value was written by another version of the
	// codec: a miss, not an error.
	errVersion = errors.New("cache value of another codec version")

	// Times whose Unix nanoseconds fit in an int64.
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

func inRange(t time.Time) bool { return !t.Before(minTime) && !t.After(maxTime) }

// appendEntry appends e's encoding to dst. It refuses pages that decodeEntry
// would reject, so that whatever is stored can be read back.
func appendEntry(dst []byte, e *entry) ([]byte, error) {
	msgs := e.page.Messages
	if len(msgs) > timeline.MaxLimit || len(e.page.Next) > maxCursorLen || len(e.page.Prev) > maxCursorLen || !inRange(e.fetchedAt) ||
		(len(msgs) == 0 && (e.page.Next != "" || e.page.Prev != "")) {
		return dst, fmt.Errorf("encode page: %d messages, cursors of %d and %d bytes, fetched at %v",
			len(msgs), len(e.page.Next), len(e.page.Prev), e.fetchedAt)
	}
	start := len(dst)
	dst = append(dst, codecVersion)
	dst = binary.AppendUvarint(dst, e.gen)
	dst = binary.AppendVarint(dst, e.fetchedAt.UnixNano())
	dst = binary.AppendUvarint(dst, uint64(len(e.page.Next)))
	dst = append(dst, e.page.Next...)
	dst = binary.AppendUvarint(dst, uint64(len(e.page.Prev)))
	dst = append(dst, e.page.Prev...)
	dst = binary.AppendUvarint(dst, uint64(len(msgs)))
	var prevID timeline.MessageID
	var prevAt int64
	for i, m := range msgs {
		if m.ID <= 0 || (i > 0 && m.ID >= prevID) || m.Author <= 0 || !inRange(m.CreatedAt) ||
			len(m.Body) == 0 || len(m.Body) > maxBodyBytes {
			return dst[:start], fmt.Errorf("encode page: message %d of %d (id %d, author %d, %d-byte body, at %v) out of range",
				i, len(msgs), m.ID, m.Author, len(m.Body), m.CreatedAt)
		}
		at := m.CreatedAt.UnixNano()
		if i == 0 {
			dst = binary.AppendUvarint(dst, uint64(m.ID))
			dst = binary.AppendUvarint(dst, uint64(m.Author))
			dst = binary.AppendVarint(dst, at)
		} else {
			dst = binary.AppendUvarint(dst, uint64(prevID-m.ID))
			dst = binary.AppendUvarint(dst, uint64(m.Author))
			dst = binary.AppendVarint(dst, prevAt-at)
		}
		dst = binary.AppendUvarint(dst, uint64(len(m.Body)))
		dst = append(dst, m.Body...)
		prevID, prevAt = m.ID, at
	}
	if len(dst)-start > maxValueLen {
		return dst[:start], fmt.Errorf("encode page: %d bytes, more than memcached takes", len(dst)-start)
	}
	return dst, nil
}

// decoder reads a value front to back; the first failure sticks.
type decoder struct {
	b   []byte
	s   string // b as one string, so that bodies and the cursor share one allocation
	off int
	bad bool
}

func (d *decoder) uvarint() uint64 { return next(d, binary.Uvarint) }

func (d *decoder) varint() int64 { return next(d, binary.Varint) }

// next decodes one value with decode (binary.Uvarint or binary.Varint).
func next[T any](d *decoder, decode func([]byte) (T, int)) T {
	var zero T
	if d.bad {
		return zero
	}
	v, n := decode(d.b[d.off:])
	if n <= 0 {
		d.bad = true
		return zero
	}
	d.off += n
	return v
}

// str reads a length-prefixed string of at most max bytes.
func (d *decoder) str(max int) string {
	n := d.uvarint()
	if d.bad || n > uint64(max) || n > uint64(len(d.b)-d.off) {
		d.bad = true
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

// decodeEntry decodes and validates a value written by appendEntry. Any
// malformed value gives errCorrupt; one of another codec version gives
// errVersion.
func decodeEntry(b []byte) (entry, error) {
	if len(b) == 0 {
		return entry{}, errCorrupt
	}
	if b[0] != codecVersion {
		return entry{}, errVersion
	}
	d := &decoder{b: b, s: string(b), off: 1}
	var e entry
	e.gen = d.uvarint()
	e.fetchedAt = time.Unix(0, d.varint()).UTC()
	e.page.Next = timeline.Cursor(d.str(maxCursorLen))
	e.page.Prev = timeline.Cursor(d.str(maxCursorLen))
	n := d.uvarint()
	if d.bad || n > timeline.MaxLimit || (n == 0 && (e.page.Next != "" || e.page.Prev != "")) {
		return entry{}, errCorrupt
	}
	if n > 0 {
		e.page.Messages = make([]timeline.Message, n)
	}
	var id, at int64
	for i := range e.page.Messages {
		m := &e.page.Messages[i]
		v := d.uvarint()
		author := d.uvarint()
		dt := d.varint()
		if i == 0 {
			if v > math.MaxInt64 {
				return entry{}, errCorrupt
			}
			id, at = int64(v), dt
		} else {
			if v == 0 || v >= uint64(id) {
				return entry{}, errCorrupt // ids must decrease and stay positive
			}
			id -= int64(v)
			at -= dt // wraps exactly as the encoder's subtraction did
		}
		m.Body = d.str(maxBodyBytes)
		if d.bad || id <= 0 || author == 0 || author > math.MaxInt64 || m.Body == "" || !utf8.ValidString(m.Body) {
			return entry{}, errCorrupt
		}
		m.ID = timeline.MessageID(id)
		m.Author = timeline.UserID(author)
		m.CreatedAt = time.Unix(0, at).UTC()
	}
	if d.off != len(b) {
		return entry{}, errCorrupt // trailing bytes
	}
	return e, nil
}
