package timeline

import (
	"errors"
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	c, err := NewCursorCodec(NewCursorKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []MessageID{1, 2, 1 << 40, 1<<63 - 1} {
		cur := c.Encode(7, id)
		got, err := c.Decode(7, cur)
		if err != nil || got != id {
			t.Fatalf("Decode(Encode(%d)) = %d, %v", id, got, err)
		}
		if _, err := c.Decode(8, cur); !errors.Is(err, ErrInvalidCursor) {
			t.Fatalf("cursor of user 7 accepted for user 8: %v", err)
		}
	}
	other, _ := NewCursorCodec(NewCursorKey())
	if _, err := other.Decode(7, c.Encode(7, 5)); !errors.Is(err, ErrInvalidCursor) {
		t.Fatalf("cursor accepted by a store with another key: %v", err)
	}
	if _, err := NewCursorCodec([]byte("short")); err == nil {
		t.Fatal("short key accepted")
	}
}

// FuzzCursorDecode: no string other than a genuine cursor decodes, and
// nothing panics.
func FuzzCursorDecode(f *testing.F) {
	c, _ := NewCursorCodec(make([]byte, CursorKeyLen))
	genuine := c.Encode(1, 42)
	f.Add(string(genuine))
	f.Add("")
	f.Add("AQAAAAAAAAAqAAAAAAAAAAAAAAAA")
	f.Add(string(genuine) + "=")
	f.Add("id.42")
	f.Add("id.042")
	f.Add("id.-1")
	f.Add("id.+7")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := c.Decode(1, Cursor(s))
		if byID, ok := IDOf(Cursor(s)); ok != (err == nil && IDCursor(id) == Cursor(s)) || ok && byID != id {
			t.Fatalf("%q: IDOf says %d, %v; Decode says %d, %v", s, byID, ok, id, err)
		}
		if err == nil {
			if c.Encode(1, id) != Cursor(s) && IDCursor(id) != Cursor(s) {
				t.Fatalf("%q decoded to %d but is not its cursor", s, id)
			}
			return
		}
		if !errors.Is(err, ErrInvalidCursor) || !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("%q: error %v is not an invalid cursor", s, err)
		}
	})
}

// TestIDOf: IDOf gives back the id of an IDCursor and refuses signed
// and malformed cursors.
func TestIDOf(t *testing.T) {
	for _, id := range []MessageID{1, 42, 1<<63 - 1} {
		if got, ok := IDOf(IDCursor(id)); !ok || got != id {
			t.Fatalf("IDOf(IDCursor(%d)) = %d, %v", id, got, ok)
		}
	}
	c, _ := NewCursorCodec(NewCursorKey())
	for _, cur := range []Cursor{c.Encode(1, 42), "", "id.", "id.0", "id.-1", "id.+7", "id.042", "id.9223372036854775808", "42"} {
		if id, ok := IDOf(cur); ok {
			t.Fatalf("IDOf(%q) = %d, true", cur, id)
		}
	}
}

func TestPageLimit(t *testing.T) {
	for in, want := range map[int]int{0: DefaultLimit, 1: 1, MaxLimit: MaxLimit} {
		if got, err := PageLimit(in); err != nil || got != want {
			t.Fatalf("PageLimit(%d) = %d, %v", in, got, err)
		}
	}
	for _, in := range []int{-1, MaxLimit + 1} {
		if _, err := PageLimit(in); !errors.Is(err, ErrInvalidLimit) {
			t.Fatalf("PageLimit(%d): %v", in, err)
		}
	}
}
