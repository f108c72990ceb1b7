package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseEdgeList(t *testing.T) {
	const file = `# Directed graph: a follows b
# FromNodeId	ToNodeId
1000	7
7 1000

  42   7  
9000000000000000000	1000
7	1000
1000 7\r
`
	el, err := ParseEdgeList(strings.NewReader(strings.ReplaceAll(file, `\r`, "\r")), "test.txt", SelfFollowsReject)
	if err != nil {
		t.Fatal(err)
	}
	// Ids ascending: 7 -> 1, 42 -> 2, 1000 -> 3, 9e18 -> 4.
	want := &EdgeList{
		Source: "test.txt", Users: 4, Edges: 4,
		Followees:  [][]uint32{{3}, {1}, {1}, {3}},
		IDs:        []uint64{7, 42, 1000, 9000000000000000000},
		Duplicates: 2,
	}
	if !reflect.DeepEqual(el, want) {
		t.Fatalf("got %+v\nwant %+v", el, want)
	}
	if el.AvgFollowees() != 1 {
		t.Errorf("AvgFollowees() = %v", el.AvgFollowees())
	}

	el, err = ParseEdgeList(strings.NewReader("1 2\n3 3\n2 1\n"), "self.txt", SelfFollowsSkip)
	if err != nil || el.SelfFollows != 1 || el.Users != 2 || el.Edges != 2 {
		t.Fatalf("skipping self-follows: %+v, %v", el, err)
	}
}

// TestEdgeListErrors: every bad file is an *EdgeListError naming the file,
// the line at fault and what is wrong.
func TestEdgeListErrors(t *testing.T) {
	for _, c := range []struct {
		name, text string
		line       int
		err        error
		detail     string
	}{
		{"letters", "1 2\n# ok\n3 x\n", 3, ErrEdgeID, `field 2 "x"`},
		{"negative", "-1 2\n", 1, ErrEdgeID, `field 1 "-1"`},
		{"fraction", "1 2.5\n", 1, ErrEdgeID, `field 2 "2.5"`},
		{"too big", "1 18446744073709551616\n", 1, ErrEdgeID, "field 2"},
		{"one field", "1 2\n\n3\n", 3, ErrEdgeFields, "1 fields"},
		{"three fields", "1 2 3\n", 1, ErrEdgeFields, "more than 2 fields"},
		{"comma", "1,2\n", 1, ErrEdgeFields, "1 fields"},
		{"self-follow", "1 2\n2 1\n5 5\n", 3, ErrSelfFollow, "5 follows 5"},
		{"empty", "", 0, ErrEmptyGraph, "0 lines"},
		{"only comments", "# nothing\n\n#\n", 0, ErrEmptyGraph, "3 lines"},
		{"long line", "1 2\n" + strings.Repeat("9", maxEdgeLine+1) + " 1\n", 2, ErrEdgeFields, "longer than"},
	} {
		_, err := ParseEdgeList(strings.NewReader(c.text), c.name+".txt", SelfFollowsReject)
		var ee *EdgeListError
		if !errors.As(err, &ee) || !errors.Is(err, c.err) || ee.File != c.name+".txt" || ee.Line != c.line {
			t.Errorf("%s: %v, want an EdgeListError for %s.txt line %d wrapping %v", c.name, err, c.name, c.line, c.err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.name+".txt") || !strings.Contains(msg, c.detail) ||
			c.line > 0 && !strings.Contains(msg, "line "+strconv.Itoa(c.line)) {
			t.Errorf("%s: message %q does not name the file, line and %q", c.name, msg, c.detail)
		}
	}
	_, err := ReadEdgeList(filepath.Join(t.TempDir(), "missing.txt"), SelfFollowsReject)
	var ee *EdgeListError
	if !errors.As(err, &ee) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("missing file: %v", err)
	}
}

// TestEdgeListDataset: a graph read from a file becomes the dataset's
// graph, users remapped, with skewed activity by default; --scale changes
// only the messages.
func TestEdgeListDataset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.txt")
	text := "# star and a ring\n"
	for u := 11; u <= 60; u++ {
		text += strconv.Itoa(u) + " 10\n" + strconv.Itoa(u) + " " + strconv.Itoa(11+(u-10)%50) + "\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	el, err := ReadEdgeList(path, SelfFollowsReject)
	if err != nil {
		t.Fatal(err)
	}
	s := el.Spec()
	if s.Users != 51 || s.Messages != 5100 || s.Graph != GraphEdges {
		t.Fatalf("spec %+v", s)
	}
	half, err := s.Scaled(0.5)
	if err != nil || half.Users != 51 || half.Messages != 2550 {
		t.Fatalf("Scaled(0.5) = %+v, %v", half, err)
	}
	d := mustGenerate(t, s)
	checkGraph(t, d)
	checkMessages(t, d)
	if got := d.Followers(1); len(got) != 50 { // id 10 is user 1
		t.Errorf("user 1 (id 10) has %d followers, want 50", len(got))
	}
	if d.Spec.Activity.Mode != ActivitySkewed {
		t.Errorf("activity %v, want skewed by default on a real graph", d.Spec.Activity)
	}
	// The star's centre posts most.
	if n := len(d.ByAuthor(1)); n < 3*len(d.ByAuthor(2)) {
		t.Errorf("the centre wrote %d messages, user 2 %d", n, len(d.ByAuthor(2)))
	}
}
