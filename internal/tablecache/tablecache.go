// Package tablecache keeps the files of loaded tables, so that the next
// load of the same rows into the same table definition on the same server
// version can put the files in place instead of inserting the rows again.
//
// The cache only stores and finds files; what they are and how a server
// takes them back is its caller's business (loadgen's bulk load: InnoDB's
// transportable tablespaces). An entry is named by a key its caller derives
// from everything that decides the files' contents. Entries are written to
// a temporary directory and renamed into place, so a reader never sees half
// an entry; the least recently used entries are removed when the cache
// grows past its size, and nothing is stored when the disk is short of
// room.
package tablecache

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"time"
)

// DefaultMaxBytes bounds a cache's size unless told otherwise: room for the
// paper-scale mailbox (about 2 GB) several times over.
const DefaultMaxBytes int64 = 16 << 30

// MinFreeBytes is the free space a store leaves on the cache's disk unless
// told otherwise.
const MinFreeBytes int64 = 4 << 30

// ErrNoRoom means an entry was not stored: it would not fit under the
// cache's size, or would leave its disk short of room.
var ErrNoRoom = errors.New("tablecache: no room")

// Cache is a directory of entries, each a directory of files.
type Cache struct {
	dir      string
	maxBytes int64
	minFree  int64
}

// Dir is the default cache directory: $PUSHPULL_CACHE_DIR, else
// /var/cache/pushpull/tables for root, else pushpull/tables in the user's
// cache directory.
func Dir() (string, error) {
	if d := os.Getenv("PUSHPULL_CACHE_DIR"); d != "" {
		return filepath.Abs(d)
	}
	if os.Geteuid() == 0 {
		return "/var/cache/pushpull/tables", nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("tablecache: no cache directory: %w", err)
	}
	return filepath.Join(c, "pushpull", "tables"), nil
}

// Open returns the cache in dir, which the first Store makes, holding at most
// maxBytes (0 means DefaultMaxBytes) and leaving at least minFree bytes
// free on its disk (0 means MinFreeBytes).
func Open(dir string, maxBytes, minFree int64) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("tablecache: no directory")
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if minFree <= 0 {
		minFree = MinFreeBytes
	}
	return &Cache{dir: dir, maxBytes: maxBytes, minFree: minFree}, nil
}

// Path is the cache's directory.
func (c *Cache) Path() string { return c.dir }

var keyPattern = regexp.MustCompile(`^[0-9a-f]{16,128}$`)

func checkKey(key string) error {
	if !keyPattern.MatchString(key) {
		return fmt.Errorf("tablecache: bad key %q: want 16 to 128 lowercase hex digits", key)
	}
	return nil
}

// Lookup returns the directory of key's entry and marks it used, or ok
// false when there is none.
func (c *Cache) Lookup(key string) (dir string, ok bool) {
	if checkKey(key) != nil {
		return "", false
	}
	dir = filepath.Join(c.dir, key)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", false
	}
	now := time.Now()
	os.Chtimes(dir, now, now) // for eviction; a failure only ages the entry
	return dir, true
}

// Remove deletes key's entry, for a caller that found it unusable.
func (c *Cache) Remove(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(c.dir, key))
}

// Store copies files (each a path; an entry keeps their base names) into
// key's entry, replacing any, after making room by removing the least
// recently used entries. It returns ErrNoRoom, storing nothing, when the
// files would not fit under the cache's size or would leave less than
// MinFreeBytes free on its disk.
func (c *Cache) Store(key string, files []string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	var size int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("tablecache: %w", err)
		}
		size += st.Size()
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("tablecache: %w", err)
	}
	if size > c.maxBytes {
		return fmt.Errorf("%w: %d bytes, the cache holds at most %d", ErrNoRoom, size, c.maxBytes)
	}
	if err := c.evict(c.maxBytes-size, key); err != nil {
		return err
	}
	if free, err := freeBytes(c.dir); err == nil && free-size < c.minFree {
		return fmt.Errorf("%w: %d bytes would leave %d free on the disk, under %d", ErrNoRoom, size, free-size, c.minFree)
	}
	tmp, err := os.MkdirTemp(c.dir, ".new-")
	if err != nil {
		return fmt.Errorf("tablecache: %w", err)
	}
	defer os.RemoveAll(tmp) // after a failure; empty after the rename
	for _, f := range files {
		if err := copyFile(f, filepath.Join(tmp, filepath.Base(f)), true); err != nil {
			return fmt.Errorf("tablecache: %w", err)
		}
	}
	final := filepath.Join(c.dir, key)
	if err := os.RemoveAll(final); err != nil {
		return fmt.Errorf("tablecache: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("tablecache: %w", err)
	}
	return nil
}

// entry is one entry's size and last use.
type entry struct {
	key  string
	size int64
	used time.Time
}

func (c *Cache) entries() ([]entry, error) {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("tablecache: %w", err)
	}
	var out []entry
	for _, de := range des {
		if !de.IsDir() || checkKey(de.Name()) != nil {
			continue
		}
		st, err := de.Info()
		if err != nil {
			continue
		}
		e := entry{key: de.Name(), used: st.ModTime()}
		files, _ := os.ReadDir(filepath.Join(c.dir, de.Name()))
		for _, f := range files {
			if fi, err := f.Info(); err == nil {
				e.size += fi.Size()
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// evict removes the least recently used entries, other than keep, until
// the rest hold at most limit bytes.
func (c *Cache) evict(limit int64, keep string) error {
	es, err := c.entries()
	if err != nil {
		return err
	}
	var total int64
	for _, e := range es {
		if e.key != keep {
			total += e.size
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range es {
		if total <= limit {
			break
		}
		if e.key == keep {
			continue
		}
		if err := os.RemoveAll(filepath.Join(c.dir, e.key)); err != nil {
			return fmt.Errorf("tablecache: %w", err)
		}
		total -= e.size
	}
	return nil
}

func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// copyFile copies src to dst, which must not exist, and with sync syncs
// it: an entry renamed into place holds its whole files after a crash.
func copyFile(src, dst string, sync bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if sync {
		if err := out.Sync(); err != nil {
			out.Close()
			return err
		}
	}
	return out.Close()
}

// CopyOut copies the file name of an entry's directory (from Lookup) to
// dst, which must not exist.
func CopyOut(dir, name, dst string) error {
	if err := copyFile(filepath.Join(dir, name), dst, false); err != nil {
		return fmt.Errorf("tablecache: %w", err)
	}
	return nil
}
