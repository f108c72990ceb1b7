package mckey

import (
	"strings"
	"testing"
)

func TestCheckNamespace(t *testing.T) {
	for _, tc := range []struct {
		ns string
		ok bool
	}{
		{"", true},
		{"pull-recent/run1:", true},
		{strings.Repeat("n", MaxNamespaceLen), true},
		{strings.Repeat("n", MaxNamespaceLen+1), false},
		{"a b", false},
		{"a\nb", false},
		{"a\x7fb", false},
		{"caf\xc3\xa9", false},
	} {
		if err := CheckNamespace(tc.ns); (err == nil) != tc.ok {
			t.Errorf("CheckNamespace(%q) = %v, want ok %v", tc.ns, err, tc.ok)
		}
	}
}
