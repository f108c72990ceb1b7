package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
)

// EdgeList is a real follow graph read from a file (ReadEdgeList), for
// GraphEdges. The file's ids, any non-negative integers, become users
// 1..Users in ascending order of id; only ids that take part in a follow
// are users.
type EdgeList struct {
	Source string // the file's name, as given
	Users  int
	Edges  int64 // follows, after duplicates and skipped self-follows
	// Followees[u-1] lists whom user u follows, ascending, as
	// Dataset.Followees.
	Followees [][]uint32
	// IDs[u-1] is user u's id in the file.
	IDs []uint64
	// Duplicates counts lines that repeated a follow (dropped);
	// SelfFollows the self-follows skipped under SelfFollowsSkip.
	Duplicates, SelfFollows int64
}

// AvgFollowees is the graph's mean followee count, the Spec's
// AvgFollowees.
func (el *EdgeList) AvgFollowees() float64 { return float64(el.Edges) / float64(el.Users) }

// Spec is the paper's benchmark on this graph: its users and follows, and
// the paper's 100 messages per user.
func (el *EdgeList) Spec() Spec {
	p := PaperSpec()
	return Spec{
		Users: el.Users, Messages: el.Users * (p.Messages / p.Users), AvgFollowees: el.AvgFollowees(),
		Graph: GraphEdges, EdgeList: el, Seed: p.Seed,
	}
}

// SelfFollows says what ReadEdgeList does with a line "a a".
type SelfFollows int

const (
	// SelfFollowsReject makes a self-follow an error (ErrSelfFollow): no
	// model lets a user follow themselves, so a file holding one may not
	// be the graph it seems.
	SelfFollowsReject SelfFollows = iota
	// SelfFollowsSkip drops self-follows and counts them.
	SelfFollowsSkip
)

// Errors an EdgeListError wraps.
var (
	ErrEdgeFields  = errors.New("want two ids separated by spaces or tabs")
	ErrEdgeID      = errors.New("not a non-negative integer id")
	ErrSelfFollow  = errors.New("a user follows themselves")
	ErrEmptyGraph  = errors.New("no follows in the file")
	ErrGraphTooBig = errors.New("too many users")
)

// EdgeListError is a bad edge list: the file, the line (0 when the error
// is about the whole file) and what is wrong.
type EdgeListError struct {
	File   string
	Line   int
	Err    error  // ErrEdgeFields, ErrEdgeID, ErrSelfFollow, ErrEmptyGraph, ErrGraphTooBig, or the read error
	Detail string // e.g. the offending field
}

func (e *EdgeListError) Error() string {
	where := "edge list " + e.File
	if e.Line > 0 {
		where += ", line " + strconv.Itoa(e.Line)
	}
	if e.Detail != "" {
		return fmt.Sprintf("%s: %s: %v", where, e.Detail, e.Err)
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e *EdgeListError) Unwrap() error { return e.Err }

// maxEdgeLine is the longest line ReadEdgeList accepts.
const maxEdgeLine = 64 << 10

// ReadEdgeList reads a follow graph from path: one follow per line, "a b"
// meaning a follows b, the two ids separated by spaces or tabs (SNAP's
// format). Blank lines and lines starting with '#' are skipped, and so are
// repeated follows (counted in Duplicates). Every error is an
// *EdgeListError naming the file and, where one is at fault, the line.
func ReadEdgeList(path string, self SelfFollows) (*EdgeList, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &EdgeListError{File: path, Err: err}
	}
	defer f.Close()
	return ParseEdgeList(f, path, self)
}

// ParseEdgeList is ReadEdgeList on a reader; name is the file's name for
// errors and Source.
func ParseEdgeList(r io.Reader, name string, self SelfFollows) (*EdgeList, error) {
	el := &EdgeList{Source: name}
	fail := func(line int, err error, detail string) (*EdgeList, error) {
		return nil, &EdgeListError{File: name, Line: line, Err: err, Detail: detail}
	}
	var pairs []uint64 // follower, followee: the file's ids
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEdgeLine)
	line := 0
	var fields [3][]byte
	for sc.Scan() {
		line++
		n := splitFields(sc.Bytes(), fields[:])
		if n == 0 || fields[0][0] == '#' {
			continue
		}
		if n != 2 {
			detail := fmt.Sprintf("%d fields", n)
			if n > 2 {
				detail = "more than 2 fields"
			}
			return fail(line, ErrEdgeFields, detail)
		}
		var ids [2]uint64
		for i, f := range fields[:2] {
			id, err := strconv.ParseUint(string(f), 10, 64)
			if err != nil {
				return fail(line, ErrEdgeID, fmt.Sprintf("field %d %q", i+1, truncate(f, 40)))
			}
			ids[i] = id
		}
		if ids[0] == ids[1] {
			if self == SelfFollowsSkip {
				el.SelfFollows++
				continue
			}
			return fail(line, ErrSelfFollow, fmt.Sprintf("%d follows %d", ids[0], ids[1]))
		}
		pairs = append(pairs, ids[0], ids[1])
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fail(line+1, ErrEdgeFields, fmt.Sprintf("line longer than %d bytes", maxEdgeLine))
		}
		return fail(0, err, "")
	}
	if len(pairs) == 0 {
		return fail(0, ErrEmptyGraph, fmt.Sprintf("%d lines", line))
	}

	// Users are the ids in ascending order.
	ids := slices.Clone(pairs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > MaxUsers {
		return fail(0, ErrGraphTooBig, fmt.Sprintf("%d users, at most %d", len(ids), MaxUsers))
	}
	el.IDs, el.Users = slices.Clip(ids), len(ids)
	user := func(id uint64) uint64 {
		i, _ := slices.BinarySearch(ids, id)
		return uint64(i + 1)
	}
	follows := make([]uint64, len(pairs)/2)
	for i := range follows {
		follows[i] = user(pairs[2*i])<<32 | user(pairs[2*i+1])
	}
	pairs = nil
	slices.Sort(follows)
	before := len(follows)
	follows = slices.Compact(follows)
	el.Duplicates = int64(before - len(follows))
	el.Edges = int64(len(follows))

	flat := make([]uint32, len(follows))
	el.Followees = make([][]uint32, el.Users)
	start := 0
	for i, f := range follows {
		flat[i] = uint32(f)
		if i+1 == len(follows) || follows[i+1]>>32 != f>>32 {
			el.Followees[f>>32-1] = flat[start : i+1 : i+1]
			start = i + 1
		}
	}
	return el, nil
}

// splitFields puts the space- or tab-separated fields of line into out and
// returns how many there are (counting past len(out)). A trailing '\r' is
// a separator, for files written on Windows.
func splitFields(line []byte, out [][]byte) int {
	n := 0
	for i := 0; i < len(line); {
		for i < len(line) && isEdgeSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && !isEdgeSpace(line[j]) {
			j++
		}
		if n < len(out) {
			out[n] = line[i:j]
		}
		n++
		i = j
	}
	return n
}

func isEdgeSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
