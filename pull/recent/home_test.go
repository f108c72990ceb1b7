package recent

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/memcached"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull/sqlread"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Memcached: true}) }

// memcacheState returns a State with only a memcached client, whose keys
// start with a fresh prefix (returned too) made from name; the client is
// closed when the test ends.
func memcacheState(t *testing.T, name string) (*State, *memcached.Client, string) {
	t.Helper()
	prefix := fmt.Sprintf("%s%d/", name, time.Now().UnixNano())
	mc, err := memcached.New(t.Context(), memcached.Options{Servers: []string{testserver.Memcache(t)}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.Close() })
	return &State{mc: mc, timeout: time.Second}, mc, prefix
}

// TestStoreHomeTakesLandedHints: a built index whose CAS lost to hints
// appended after its token is stored with those hints; one whose key was
// replaced, or had something other than hints appended, is not stored.
func TestStoreHomeTakesLandedHints(t *testing.T) {
	ctx := context.Background()
	st, mc, prefix := memcacheState(t, "hs")
	base := func(key string) []byte {
		return encodeHome(key, homeIndex{indexBase: indexBase{builtAt: 1, token: "tok", entries: []sqlread.AuthorNewest{{Author: 3, Newest: 10}}}, regUntil: 2})
	}
	token := func(key string) *memcache.Item {
		t.Helper()
		if err := mc.Set(ctx, &memcache.Item{Key: key, Value: placeholder}); err != nil {
			t.Fatal(err)
		}
		it, err := mc.GetOne(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	appendTo := func(key string, v []byte) {
		t.Helper()
		if err := mc.Append(ctx, []*memcache.Item{{Key: key, Value: v}})[0]; err != nil {
			t.Fatal(err)
		}
	}
	get := func(key string) []byte {
		t.Helper()
		it, err := mc.GetOne(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return it.Value
	}

	key := prefix + "landed"
	cur := token(key)
	h1, h2 := EncodeHint(key, 4, 11), EncodeHint(key, 5, 12)
	appendTo(key, h1)
	appendTo(key, h2)
	st.storeHome(ctx, cur, base(key))
	x, ok := decodeHome(key, get(key))
	if !ok || x.nRecords != 2 || len(x.entries) != 3 || x.entries[0].Newest != 12 || x.entries[0].Author != timeline.UserID(5) {
		t.Fatalf("after two hints landed: %+v, %v; want the base and both hints", x, ok)
	}

	key = prefix + "replaced"
	cur = token(key)
	mc.Set(ctx, &memcache.Item{Key: key, Value: []byte("another build")})
	st.storeHome(ctx, cur, base(key))
	if v := get(key); !bytes.Equal(v, []byte("another build")) {
		t.Fatalf("a replaced key was overwritten: %q", v)
	}

	key = prefix + "garbage"
	cur = token(key)
	appendTo(key, []byte("not a hint"))
	st.storeHome(ctx, cur, base(key))
	if v := get(key); !bytes.Equal(v, append(slices.Clone(placeholder), "not a hint"...)) {
		t.Fatalf("a key with garbage appended was overwritten: %q", v)
	}
}

// TestDecodeHomeMergesHints: hints appended out of order, twice, or for
// an id the base holds come out merged into the base, newest first, each
// id once; a base out of order is refused.
func TestDecodeHomeMergesHints(t *testing.T) {
	key := "k"
	base := []sqlread.AuthorNewest{{Author: 2, Newest: 40}, {Author: 3, Newest: 30}, {Author: 2, Newest: 10}}
	v := encodeHome(key, homeIndex{indexBase: indexBase{builtAt: 1, token: "t", entries: base}, regUntil: 2})
	for _, h := range [][2]uint64{{4, 35}, {5, 50}, {4, 35}, {3, 30}, {6, 20}} {
		v = append(v, EncodeHint(key, timeline.UserID(h[0]), h[1])...)
	}
	x, ok := decodeHome(key, v)
	if !ok || x.nRecords != 5 {
		t.Fatalf("decode: %+v, %v", x, ok)
	}
	var got []uint64
	for _, e := range x.entries {
		got = append(got, e.Newest)
	}
	if want := []uint64{50, 40, 35, 30, 20, 10}; !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	bad := encodeHome(key, homeIndex{indexBase: indexBase{token: "t", entries: []sqlread.AuthorNewest{{Author: 2, Newest: 10}, {Author: 3, Newest: 30}}}})
	if _, ok := decodeHome(key, bad); ok {
		t.Fatal("a base out of order decoded")
	}
}

// TestHomeTokenIsItsOwn: a build's token is a placeholder no other build
// writes, put in place over a retired value even when hints landed on it
// after the read that found it, and over nothing.
func TestHomeTokenIsItsOwn(t *testing.T) {
	ctx := context.Background()
	st, mc, prefix := memcacheState(t, "ht")
	key := prefix + "k"
	if err := mc.Set(ctx, &memcache.Item{Key: key, Value: []byte("retired")}); err != nil {
		t.Fatal(err)
	}
	cur, err := mc.GetOne(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	hint := EncodeHint(key, 2, 9)
	mc.Append(ctx, []*memcache.Item{{Key: key, Value: hint}})
	a, replaced := st.homeToken(ctx, key, cur)
	if a == nil || a.Value[0] != 'P' || len(a.Value) < 10 {
		t.Fatalf("token over a retired value with a hint on it: %+v", a)
	}
	if want := append([]byte("retired"), hint...); !bytes.Equal(replaced, want) {
		t.Fatalf("the token replaced %q, want %q (the value with the hint)", replaced, want)
	}
	mc.Delete(ctx, key)
	b, replaced := st.homeToken(ctx, key, nil)
	if b == nil || bytes.Equal(a.Value, b.Value) || replaced != nil {
		t.Fatalf("two builds' tokens: %q and %+v (replacing %q)", a.Value, b, replaced)
	}
}

// TestFollowRereadsCelebrities: a follow through the process that brings
// an author to the threshold, and an unfollow that takes one below it,
// have the celebrities reread at once (long before the refresh interval);
// a follow that crosses nothing does not.
func TestFollowRereadsCelebrities(t *testing.T) {
	ctx := context.Background()
	db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: testserver.DSN(t), Database: testserver.Database(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := schema.Apply(ctx, db, schema.Pull, schema.Options{}); err != nil {
		t.Fatal(err)
	}
	h := &homeState{threshold: 3, refresh: time.Hour}
	if _, err := h.read(ctx, db); err != nil {
		t.Fatal(err)
	}
	follow := func(follower timeline.UserID, yes bool) {
		t.Helper()
		q := `INSERT INTO follows (follower_id, followee_id) VALUES (?, 9)`
		if !yes {
			q = `DELETE FROM follows WHERE follower_id = ? AND followee_id = 9`
		}
		if _, err := db.ExecContext(ctx, q, follower); err != nil {
			t.Fatal(err)
		}
		h.followed(ctx, db, 9, yes)
	}
	// known waits (a reread runs in the background) until whether 9 is
	// a known celebrity is want.
	known := func(want bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			if slices.Contains(h.known(), 9) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("author 9 known as a celebrity: %v, want %v", !want, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	first := h.celebs.Load()
	follow(1, true)
	follow(2, true)
	if h.celebs.Load() != first || h.refreshing.Load() {
		t.Fatal("a follow below the threshold reread the celebrities")
	}
	follow(3, true)
	known(true)
	follow(3, false)
	known(false)
}
