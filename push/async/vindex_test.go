package async

import (
	"testing"
)

// TestHashShards: users fall on the shard whose key range holds their
// keyspace id, every user on exactly one of a set of ranges that covers
// them all, and a name that is not a key range is an error. (That the
// keyspace ids are vtgate's is checked against a cluster in package
// registry/all, TestVitessHashShards.)
func TestHashShards(t *testing.T) {
	users := make([]uint64, 1000)
	for i := range users {
		users[i] = uint64(i + 1)
	}
	for _, names := range [][]string{{"-"}, {"0"}, {"-80", "80-"}, {"-40", "40-80", "80-c0", "c0-"}} {
		groups, err := HashShards(names, users)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for name, us := range groups {
			r, err := parseKeyRange(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range us {
				if k := keyspaceID(u); !r.holds(k[:]) {
					t.Errorf("%v: user %d (keyspace id %x) on shard %s", names, u, k, name)
				}
			}
			total += len(us)
		}
		if total != len(users) || len(groups) != len(names) {
			t.Errorf("%v: %d users on %d shards, want %d on %d", names, total, len(groups), len(users), len(names))
		}
	}
	if _, err := HashShards([]string{"-80", "80"}, users); err == nil {
		t.Error("shard 80: no error")
	}
	if _, err := HashShards([]string{"-80"}, users); err == nil {
		t.Error("ranges that miss half the keyspace ids: no error")
	}
}
