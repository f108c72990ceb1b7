// Package mckey holds the one rule for the namespaces that prefix
// pushpull's memcached keys, shared by the pull store and the cache
// decorator.
package mckey

import "fmt"

// MaxNamespaceLen is the longest namespace: the rest of any pushpull key
// (a user or message id, a database digest, a few separators) takes under
// 50 bytes, so every key stays within memcached's 250.
const MaxNamespaceLen = 200

// CheckNamespace reports whether ns may prefix memcached keys: at most
// MaxNamespaceLen bytes of printable ASCII, no spaces (memcached's text
// protocol ends a key at a space or control character). The empty
// namespace passes; a caller that needs one checks that itself.
func CheckNamespace(ns string) error {
	if len(ns) > MaxNamespaceLen {
		return fmt.Errorf("memcached namespace %q: longer than %d bytes", ns, MaxNamespaceLen)
	}
	for i := 0; i < len(ns); i++ {
		if c := ns[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("memcached namespace %q: byte %d (%#x) is not printable ASCII; memcached keys allow no spaces or control characters", ns, i, c)
		}
	}
	return nil
}
