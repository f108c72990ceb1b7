package tablecache

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func file(t *testing.T, dir, name string, size int) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, bytes.Repeat([]byte{byte(len(name))}, size), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func key(c byte) string { return strings.Repeat(string(c), 32) }

func TestStoreLookupCopyOut(t *testing.T) {
	src := t.TempDir()
	c, err := Open(filepath.Join(t.TempDir(), "cache"), 1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Lookup(key('a')); ok {
		t.Fatal("Lookup found an entry in an empty cache")
	}
	files := []string{file(t, src, "t.ibd", 1000), file(t, src, "t.cfg", 10)}
	if err := c.Store(key('a'), files); err != nil {
		t.Fatal(err)
	}
	dir, ok := c.Lookup(key('a'))
	if !ok {
		t.Fatal("Lookup missed a stored entry")
	}
	dst := filepath.Join(t.TempDir(), "copy.ibd")
	if err := CopyOut(dir, "t.ibd", dst); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	want, _ := os.ReadFile(files[0])
	if !bytes.Equal(got, want) {
		t.Fatalf("copied out %d bytes, stored %d", len(got), len(want))
	}
	if err := CopyOut(dir, "t.ibd", dst); err == nil {
		t.Fatal("CopyOut overwrote an existing file")
	}
	// Storing again replaces the entry.
	if err := c.Store(key('a'), []string{file(t, src, "t.ibd", 7)}); err != nil {
		t.Fatal(err)
	}
	if des, _ := os.ReadDir(dir); len(des) != 1 {
		t.Fatalf("entry after a second store holds %d files, want 1", len(des))
	}
	if err := c.Remove(key('a')); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Lookup(key('a')); ok {
		t.Fatal("Lookup found a removed entry")
	}
	if des, _ := os.ReadDir(c.Path()); len(des) != 0 {
		t.Fatalf("cache holds %d leftovers, want none", len(des))
	}
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	src := t.TempDir()
	c, err := Open(t.TempDir(), 3000, 1)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for i, k := range []byte{'a', 'b', 'c'} {
		if err := c.Store(key(k), []string{file(t, src, "t.ibd", 1000)}); err != nil {
			t.Fatal(err)
		}
		at := old.Add(time.Duration(i) * time.Minute)
		os.Chtimes(filepath.Join(c.Path(), key(k)), at, at)
	}
	c.Lookup(key('a')) // used now: b is the oldest
	if err := c.Store(key('d'), []string{file(t, src, "t.ibd", 1000)}); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[byte]bool{'a': true, 'b': false, 'c': true, 'd': true} {
		if _, ok := c.Lookup(key(k)); ok != want {
			t.Errorf("entry %c present %v, want %v", k, ok, want)
		}
	}
}

func TestNoRoom(t *testing.T) {
	src := t.TempDir()
	c, err := Open(t.TempDir(), 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Store(key('a'), []string{file(t, src, "t.ibd", 101)}); !errors.Is(err, ErrNoRoom) {
		t.Fatalf("storing more than the cache holds: %v, want ErrNoRoom", err)
	}
	c, _ = Open(t.TempDir(), 1<<20, 1<<62) // more free space than any disk has
	if err := c.Store(key('a'), []string{file(t, src, "t.ibd", 10)}); !errors.Is(err, ErrNoRoom) {
		t.Fatalf("storing on a full disk: %v, want ErrNoRoom", err)
	}
	if des, _ := os.ReadDir(c.Path()); len(des) != 0 {
		t.Fatalf("a refused store left %d entries", len(des))
	}
}

func TestBadKey(t *testing.T) {
	c, _ := Open(t.TempDir(), 0, 0)
	for _, k := range []string{"", "../x", "ABCDEF0123456789", "0123"} {
		if err := c.Store(k, nil); err == nil {
			t.Errorf("Store(%q) accepted a bad key", k)
		}
		if _, ok := c.Lookup(k); ok {
			t.Errorf("Lookup(%q) found a bad key", k)
		}
	}
}
