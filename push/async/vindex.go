package async

import (
	"bytes"
	"crypto/cipher"
	"crypto/des"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// hashBlock is the cipher of Vitess's hash vindex: DES with a key of
// zeros.
var hashBlock = func() cipher.Block {
	b, err := des.NewCipher(make([]byte, 8))
	if err != nil {
		panic(err)
	}
	return b
}()

// keyspaceID is the keyspace id Vitess's hash vindex gives user id u: the
// DES encryption, under a key of zeros, of u's 8 big-endian bytes.
func keyspaceID(u uint64) [8]byte {
	var in, out [8]byte
	binary.BigEndian.PutUint64(in[:], u)
	hashBlock.Encrypt(out[:], in[:])
	return out
}

// keyRange is the keyspace ids a shard holds, from start (inclusive; nil:
// the lowest) to end (exclusive; nil: past the highest).
type keyRange struct {
	name       string
	start, end []byte
}

// parseKeyRange reads a shard's name as Vitess writes its key range:
// "-80", "80-c0", "c0-", or "-" and "0" for an unsharded keyspace's one
// shard.
func parseKeyRange(name string) (keyRange, error) {
	if name == "0" || name == "-" {
		return keyRange{name: name}, nil
	}
	lo, hi, ok := strings.Cut(name, "-")
	if !ok {
		return keyRange{}, fmt.Errorf("shard %q is not a key range", name)
	}
	r := keyRange{name: name}
	var err error
	if r.start, err = hex.DecodeString(lo); err != nil {
		return keyRange{}, fmt.Errorf("shard %q: %w", name, err)
	}
	if r.end, err = hex.DecodeString(hi); err != nil {
		return keyRange{}, fmt.Errorf("shard %q: %w", name, err)
	}
	return r, nil
}

// holds reports whether keyspace id k is in r.
func (r keyRange) holds(k []byte) bool {
	return (len(r.start) == 0 || bytes.Compare(k, r.start) >= 0) && (len(r.end) == 0 || bytes.Compare(k, r.end) < 0)
}

// HashShards groups users by the shard of names (key ranges covering
// every keyspace id) that a keyspace sharded by the hash vindex places
// them on, computed in the process, as vtgate computes it.
func HashShards(names []string, users []uint64) (map[string][]uint64, error) {
	ranges := make([]keyRange, len(names))
	for i, name := range names {
		r, err := parseKeyRange(name)
		if err != nil {
			return nil, err
		}
		ranges[i] = r
	}
	out := map[string][]uint64{}
	for _, u := range users {
		k := keyspaceID(u)
		i := slices.IndexFunc(ranges, func(r keyRange) bool { return r.holds(k[:]) })
		if i < 0 {
			return nil, fmt.Errorf("no shard of %v holds user %d", names, u)
		}
		out[ranges[i].name] = append(out[ranges[i].name], u)
	}
	return out, nil
}

// sameGroups reports whether a and b put the same users on the same
// shards.
func sameGroups(a, b map[string][]uint64) bool {
	return maps.EqualFunc(a, b, func(x, y []uint64) bool {
		return slices.Equal(slices.Sorted(slices.Values(x)), slices.Sorted(slices.Values(y)))
	})
}
