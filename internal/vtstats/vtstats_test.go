package vtstats

import "testing"

func TestSum(t *testing.T) {
	h := map[string]struct{ Count int64 }{
		"Execute.ks.-80.primary":         {3},
		"Execute.ks.80-.primary":         {2},
		"Execute.other.-80.primary":      {7},
		"Execute.pushpull_seq.0.primary": {4},
		"malformed":                      {9},
	}
	got := sum(h, []string{"ks", "pushpull_seq"})
	if got[TabletCalls] != 9 {
		t.Fatalf("got %v, want 9 calls", got)
	}
	if got := sum(h, nil); got[TabletCalls] != 0 {
		t.Fatalf("no keyspaces: %v", got)
	}
}
