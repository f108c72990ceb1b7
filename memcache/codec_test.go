package memcache

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pushpull/pushpull/timeline"
)

func sameEntry(a, b entry) bool {
	if a.gen != b.gen || !a.fetchedAt.Equal(b.fetchedAt) || a.page.Next != b.page.Next || a.page.Prev != b.page.Prev || len(a.page.Messages) != len(b.page.Messages) {
		return false
	}
	for i, m := range a.page.Messages {
		n := b.page.Messages[i]
		if m.ID != n.ID || m.Author != n.Author || m.Body != n.Body || !m.CreatedAt.Equal(n.CreatedAt) {
			return false
		}
	}
	return true
}

// words are the vocabulary of benchPage's bodies.
var words = strings.Fields("the a to of and in is it you that for on my this with just was be at have so but not are what all today now new time good day love people work know got one like think really going back home still need morning night week coffee 日本 café 😀 naïve")

// benchPage is a realistic first page: n messages from a 43-followee
// timeline of a million-message data set (ids a few hundred apart, authors
// up to 10,000), bodies of 4..277 characters in the proportions the
// benchmark's data set uses (12% short, 60% typical, 22% long, 6% near the
// limit), a cursor when more remain.
func benchPage(rng *rand.Rand, n int) timeline.Page {
	id := int64(900_000 + rng.IntN(100_000))
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(time.Hour))))
	p := timeline.Page{Messages: make([]timeline.Message, n)}
	for i := range p.Messages {
		var target int
		switch c := rng.IntN(100); {
		case c < 12:
			target = 4 + rng.IntN(26)
		case c < 72:
			target = 30 + rng.IntN(110)
		case c < 94:
			target = 140 + rng.IntN(100)
		default:
			target = 240 + rng.IntN(38)
		}
		var b strings.Builder
		for utf8.RuneCountInString(b.String()) < target {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		body := string([]rune(b.String())[:target])
		p.Messages[i] = timeline.Message{
			ID:        timeline.MessageID(id),
			Author:    timeline.UserID(1 + rng.IntN(10_000)),
			Body:      body,
			CreatedAt: at.Truncate(time.Microsecond),
		}
		id -= 1 + rng.Int64N(460)
		at = at.Add(-time.Duration(rng.Int64N(int64(20 * time.Second))))
	}
	p.Next = "AQAAAAAAAAACpOsEGjBazqbgpwdY"
	p.Prev = "AQAAAAAAAAAZqF0sr1AcxM9gN2Ba"
	return p
}

func TestCodecRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	edge := timeline.Page{Messages: []timeline.Message{
		{ID: math.MaxInt64, Author: math.MaxInt64, Body: strings.Repeat("😀", timeline.MaxBodyChars), CreatedAt: maxTime},
		{ID: math.MaxInt64 - 1, Author: 1, Body: "NUL \x00 byte", CreatedAt: minTime},
		{ID: 2, Author: 7, Body: "x", CreatedAt: time.Unix(0, 0)},
		{ID: 1, Author: 7, Body: "e\u0301 ǅ \u200b", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", 3600))},
	}, Next: "cursor", Prev: "prev"}
	for i, e := range []entry{
		{fetchedAt: time.Now()},
		{gen: math.MaxUint64, fetchedAt: time.Unix(0, 1), page: edge},
		{gen: 12345, fetchedAt: time.Now(), page: benchPage(rng, timeline.DefaultLimit)},
		{gen: 1, fetchedAt: time.Now(), page: benchPage(rng, timeline.MaxLimit)},
		{gen: 1, fetchedAt: time.Now(), page: timeline.Page{Messages: benchPage(rng, 3).Messages}},
	} {
		b, err := appendEntry([]byte("prefix"), &e)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatalf("entry %d: appendEntry lost dst", i)
		}
		got, err := decodeEntry(b[len("prefix"):])
		if err != nil {
			t.Fatalf("entry %d: decode: %v", i, err)
		}
		if !sameEntry(got, e) {
			t.Fatalf("entry %d: round trip changed it:\ngot  %+v\nwant %+v", i, got, e)
		}
		for _, m := range got.page.Messages {
			if m.CreatedAt.Location() != time.UTC {
				t.Fatalf("decoded time %v not in UTC", m.CreatedAt)
			}
		}
	}
}

// TestCodecRefusesWhatItCannotRead: appendEntry refuses pages that would
// not decode (or break the contract), and leaves dst as it was.
func TestCodecRefusesWhatItCannotRead(t *testing.T) {
	ok := timeline.Message{ID: 5, Author: 1, Body: "b", CreatedAt: time.Now()}
	for name, p := range map[string]timeline.Page{
		"ids not decreasing": {Messages: []timeline.Message{ok, ok}},
		"id zero":            {Messages: []timeline.Message{{ID: 0, Author: 1, Body: "b", CreatedAt: time.Now()}}},
		"author zero":        {Messages: []timeline.Message{{ID: 1, Author: 0, Body: "b", CreatedAt: time.Now()}}},
		"empty body":         {Messages: []timeline.Message{{ID: 1, Author: 1, CreatedAt: time.Now()}}},
		"zero time":          {Messages: []timeline.Message{{ID: 1, Author: 1, Body: "b"}}},
		"huge body":          {Messages: []timeline.Message{{ID: 1, Author: 1, Body: strings.Repeat("x", maxBodyBytes+1), CreatedAt: time.Now()}}},
		"cursor, no message": {Next: "x"},
		"prev, no message":   {Prev: "x"},
		"long prev cursor":   {Messages: []timeline.Message{ok}, Prev: timeline.Cursor(strings.Repeat("x", maxCursorLen+1))},
		"long cursor":        {Messages: []timeline.Message{ok}, Next: timeline.Cursor(strings.Repeat("x", maxCursorLen+1))},
		"too many messages":  {Messages: make([]timeline.Message, timeline.MaxLimit+1)},
	} {
		b, err := appendEntry([]byte("dst"), &entry{fetchedAt: time.Now(), page: p})
		if err == nil {
			t.Errorf("%s: encoded", name)
		}
		if string(b) != "dst" {
			t.Errorf("%s: dst changed to %q", name, b)
		}
	}
}

// TestCodecRejectsCorruption: every truncation and extension of a valid
// value is rejected, and no single-byte change panics or yields a page that
// breaks the contract's shape.
func TestCodecRejectsCorruption(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	e := entry{gen: 99, fetchedAt: time.Now(), page: benchPage(rng, 5)}
	valid, err := appendEntry(nil, &e)
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(valid) {
		if _, err := decodeEntry(valid[:n]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: decoded", n, len(valid))
		}
	}
	if _, err := decodeEntry(append(valid[:len(valid):len(valid)], 0)); !errors.Is(err, errCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
	if _, err := decodeEntry(append([]byte{codecVersion + 1}, valid[1:]...)); !errors.Is(err, errVersion) {
		t.Fatalf("other version: %v", err)
	}
	for i := range valid {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(valid)
			b[i] ^= x
			if got, err := decodeEntry(b); err == nil {
				checkShape(t, got)
			}
		}
	}
}

func checkShape(t *testing.T, e entry) {
	t.Helper()
	for i, m := range e.page.Messages {
		if m.ID <= 0 || m.Author <= 0 || m.Body == "" || !utf8.ValidString(m.Body) || (i > 0 && m.ID >= e.page.Messages[i-1].ID) {
			t.Fatalf("decoded a malformed message %d: %+v", i, m)
		}
	}
	if len(e.page.Messages) == 0 && (e.page.Next != "" || e.page.Prev != "") {
		t.Fatal("decoded a cursor on an empty page")
	}
}

func FuzzDecodeEntry(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{0, 1, 5} {
		b, _ := appendEntry(nil, &entry{gen: uint64(n), fetchedAt: time.Now(), page: benchPage(rng, n)})
		f.Add(b)
	}
	f.Add([]byte{codecVersion, 0, 0, 0, 1, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			return
		}
		checkShape(t, e)
		again, err := appendEntry(nil, &e)
		if err != nil {
			t.Fatalf("decoded entry does not encode: %v", err)
		}
		e2, err := decodeEntry(again)
		if err != nil || !sameEntry(e, e2) {
			t.Fatalf("re-encoding changed the entry: %v", err)
		}
	})
}

// The ids-only alternative: the page's ids and cursor, the bodies to be
// read from the database on every hit.
func appendIDs(dst []byte, e *entry) []byte {
	dst = append(dst, codecVersion)
	dst = binary.AppendUvarint(dst, e.gen)
	dst = binary.AppendVarint(dst, e.fetchedAt.UnixNano())
	dst = binary.AppendUvarint(dst, uint64(len(e.page.Next)))
	dst = append(dst, e.page.Next...)
	dst = binary.AppendUvarint(dst, uint64(len(e.page.Messages)))
	var prev timeline.MessageID
	for i, m := range e.page.Messages {
		if i == 0 {
			dst = binary.AppendUvarint(dst, uint64(m.ID))
		} else {
			dst = binary.AppendUvarint(dst, uint64(prev-m.ID))
		}
		prev = m.ID
	}
	return dst
}

func decodeIDs(b []byte) (gen uint64, fetchedAt time.Time, next timeline.Cursor, out []timeline.MessageID, err error) {
	d := &decoder{b: b, s: string(b), off: 1}
	gen = d.uvarint()
	fetchedAt = time.Unix(0, d.varint())
	next = timeline.Cursor(d.str(maxCursorLen))
	n := d.uvarint()
	if d.bad || n > timeline.MaxLimit {
		return 0, time.Time{}, "", nil, errCorrupt
	}
	out = make([]timeline.MessageID, n)
	var id int64
	for i := range out {
		v := d.uvarint()
		if i == 0 {
			id = int64(v)
		} else {
			id -= int64(v)
		}
		out[i] = timeline.MessageID(id)
	}
	if d.bad {
		return 0, time.Time{}, "", nil, errCorrupt
	}
	return gen, fetchedAt, next, out, nil
}

// BenchmarkCodec compares the value formats on a realistic default page:
// the whole page (what the cache stores), ids only, and JSON for
// reference. bytes/value is the stored size.
func BenchmarkCodec(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 4))
	const pages = 64
	entries := make([]entry, pages)
	for i := range entries {
		entries[i] = entry{gen: rng.Uint64() >> 2, fetchedAt: time.Now(), page: benchPage(rng, timeline.DefaultLimit)}
	}
	type format struct {
		name   string
		encode func(dst []byte, e *entry) []byte
		decode func(b []byte) error
	}
	formats := []format{
		{"page", func(dst []byte, e *entry) []byte {
			out, err := appendEntry(dst, e)
			if err != nil {
				b.Fatal(err)
			}
			return out
		}, func(v []byte) error { _, err := decodeEntry(v); return err }},
		{"ids", appendIDs, func(v []byte) error { _, _, _, _, err := decodeIDs(v); return err }},
		{"json", func(dst []byte, e *entry) []byte {
			out, err := json.Marshal(e.page)
			if err != nil {
				b.Fatal(err)
			}
			return append(dst, out...)
		}, func(v []byte) error { var p timeline.Page; return json.Unmarshal(v, &p) }},
	}
	for _, f := range formats {
		values := make([][]byte, pages)
		total := 0
		for i := range entries {
			values[i] = f.encode(nil, &entries[i])
			total += len(values[i])
			if err := f.decode(values[i]); err != nil {
				b.Fatalf("%s: %v", f.name, err)
			}
		}
		size := float64(total) / pages
		b.Run("encode/"+f.name, func(b *testing.B) {
			var buf []byte
			i := 0
			for b.Loop() {
				buf = f.encode(buf[:0], &entries[i%pages])
				i++
			}
			b.ReportMetric(size, "bytes/value")
		})
		b.Run("decode/"+f.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if err := f.decode(values[i%pages]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(size, "bytes/value")
		})
	}
}
