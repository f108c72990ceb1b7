package hostcpu

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	got, err := parse([]byte("cpu  4690019 11 1029458 2770462 52264 0 123256 178760 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	ms := func(ticks int64) time.Duration { return time.Duration(ticks) * 10 * time.Millisecond }
	want := Times{Busy: ms(4690019 + 11 + 1029458 + 0 + 123256), Idle: ms(2770462 + 52264), Steal: ms(178760)}
	if got != want {
		t.Fatalf("parse = %+v, want %+v", got, want)
	}
	// A kernel without the steal field counts none.
	got, err = parse([]byte("cpu 10 0 5 100 1 0 2\n"))
	if err != nil || got.Steal != 0 || got.Busy != ms(17) || got.Idle != ms(101) {
		t.Fatalf("parse of 7 times = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "intr 5\n", "cpu 1 2 3\n", "cpu 1 2 3 4 5 6 x 8\n", "cpu 1 2 3 4 5 6 -7 8\n"} {
		if _, err := parse([]byte(bad)); err == nil {
			t.Errorf("parse(%q) gave no error", bad)
		}
	}
}

func TestShare(t *testing.T) {
	before := Times{Busy: 10 * time.Second, Idle: 5 * time.Second, Steal: time.Second}
	after := Times{Busy: 16 * time.Second, Idle: 8 * time.Second, Steal: 2 * time.Second}
	if s, ok := Share(before, after); !ok || s != 0.1 {
		t.Fatalf("Share = %v, %v, want 0.1", s, ok)
	}
	if _, ok := Share(after, before); ok {
		t.Fatal("a window that went backward gave a share")
	}
	if _, ok := Share(before, before); ok {
		t.Fatal("an empty window gave a share")
	}
}

func TestRead(t *testing.T) {
	if _, err := os.Stat(statFile); err != nil {
		t.Skipf("no %s here: %v", statFile, err)
	}
	a, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(100 * time.Millisecond)
	for time.Now().Before(deadline) { // keep a CPU busy for a few ticks
	}
	b, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if b.Busy <= a.Busy || b.All() <= a.All() {
		t.Fatalf("100 ms of busy work did not move the machine's busy time: %+v then %+v", a, b)
	}
	if s, ok := Share(a, b); !ok || s < 0 || s > 1 {
		t.Fatalf("Share = %v, %v", s, ok)
	}
	old := statFile
	statFile = filepath.Join(t.TempDir(), "missing")
	defer func() { statFile = old }()
	if _, err := Read(); err == nil {
		t.Fatal("a missing file gave no error")
	}
}
