package dataset

import (
	"errors"
	"slices"
	"testing"
)

// TestDrowningReaders: the share of users, each following exactly the
// count of others, sorted, without themselves; the rest of the graph and
// the followers index agree; the same on a second generation.
func TestDrowningReaders(t *testing.T) {
	for _, graph := range []string{GraphUniform, GraphPowerLaw} {
		spec := Spec{Users: 2000, Messages: 5000, AvgFollowees: 20, Graph: graph, Seed: 3,
			Drowning: Drowning{Share: 0.01, Followees: 1500}}
		d, err := Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		readers := d.DrowningReaders()
		if len(readers) != 20 {
			t.Fatalf("%s: %d drowning readers, want 20", graph, len(readers))
		}
		maxOther := 0
		for u := uint32(1); u <= 2000; u++ {
			row := d.Followees[u-1]
			if !d.IsDrowning(u) {
				maxOther = max(maxOther, len(row))
				continue
			}
			if len(row) != 1500 || !slices.IsSorted(row) || slices.Contains(row, u) || len(slices.Compact(slices.Clone(row))) != 1500 {
				t.Fatalf("%s: drowning reader %d follows %d, sorted %v, self %v", graph, u, len(row), slices.IsSorted(row), slices.Contains(row, u))
			}
		}
		if maxOther >= 1500 {
			t.Errorf("%s: a reader who is not drowning follows %d", graph, maxOther)
		}
		edges := 0
		for u := uint32(1); u <= 2000; u++ {
			edges += len(d.Followers(u))
			for _, f := range d.Followers(u) {
				if _, ok := slices.BinarySearch(d.Followees[f-1], u); !ok {
					t.Fatalf("%s: follower index has %d -> %d, the graph does not", graph, f, u)
				}
			}
		}
		if got := d.Stats().Edges; int(got) != edges {
			t.Errorf("%s: %d edges, followers index %d", graph, got, edges)
		}
		again, _ := Generate(spec)
		if !slices.Equal(again.DrowningReaders(), readers) || !slices.Equal(again.Followees[readers[0]-1], d.Followees[readers[0]-1]) {
			t.Errorf("%s: a second generation differs", graph)
		}
	}
}

// TestDrowningScaledAndRefused: Scaled scales the count with the users
// and caps it; bad values are *SpecErrors of Drowning.
func TestDrowningScaledAndRefused(t *testing.T) {
	s := PaperSpec()
	s.Drowning = Drowning{Share: 0.01, Followees: 10_000}
	got, err := s.Scaled(0.2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Drowning != (Drowning{Share: 0.01, Followees: 1999}) {
		t.Errorf("scaled to 0.2: %+v, want 1999 followees (capped at users-1)", got.Drowning)
	}
	s.Drowning.Followees = 5000
	if got, _ := s.Scaled(0.2); got.Drowning.Followees != 1000 {
		t.Errorf("5000 at 0.2: %d, want 1000", got.Drowning.Followees)
	}
	for _, v := range []string{"", "1%", "x:10", "1%:y", "0.9:10", "-1%:10", "1%:0", "0:10"} {
		var se *SpecError
		d, err := ParseDrowning(v)
		if err == nil {
			s := PaperSpec()
			s.Drowning = d
			err = s.Validate()
		}
		if !errors.As(err, &se) || se.Field != "Drowning" {
			t.Errorf("%q: got %v, want a SpecError of Drowning", v, err)
		}
	}
	for v, want := range map[string]Drowning{"1%:5000": {0.01, 5000}, "0.02:300": {0.02, 300}, "1%:20000": {0.01, 20000}} {
		if got, err := ParseDrowning(v); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", v, got, err, want)
		}
	}
	e := PaperSpec()
	e.Graph, e.Drowning = GraphEdges, Drowning{0.01, 10}
	if e.Validate() == nil {
		t.Error("drowning readers on an edge list: no error")
	}
}

// TestDrowningCappedAtEveryone: a count above Users-1 follows everyone
// else.
func TestDrowningCappedAtEveryone(t *testing.T) {
	d, err := Generate(Spec{Users: 50, Messages: 10, AvgFollowees: 3, Seed: 1, Drowning: Drowning{Share: 0.1, Followees: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range d.DrowningReaders() {
		if n := len(d.Followees[u-1]); n != 49 {
			t.Errorf("reader %d follows %d, want all 49 others", u, n)
		}
	}
	if len(d.DrowningReaders()) != 5 {
		t.Errorf("%d drowning readers, want 5", len(d.DrowningReaders()))
	}
}
