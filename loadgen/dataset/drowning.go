package dataset

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Drowning describes readers who follow far more authors than anyone
// else: bots and power users following 10,000 accounts and more, the
// readers Bluesky's "lossy timelines" write to only in part. Share of the
// users, drawn at random from the seed, each follow exactly Followees
// others (at most everyone else: Users-1) drawn uniformly, in place of
// the followees the graph gave them. The zero Drowning adds none.
type Drowning struct {
	Share     float64 // of the users, in [0, MaxDrowningShare]
	Followees int     // each drowning reader's followees, > 0 when Share is
}

// MaxDrowningShare bounds Drowning.Share: drowning readers are the few.
const MaxDrowningShare = 0.5

// ParseDrowning parses "SHARE:FOLLOWEES", the share a fraction or a
// percentage ("0.01:10000", "1%:10000"), as the command line gives it.
// A malformed value is a *SpecError of Field "Drowning".
func ParseDrowning(v string) (Drowning, error) {
	bad := func(reason string) (Drowning, error) {
		return Drowning{}, &SpecError{Field: "Drowning", Value: strconv.Quote(v), Reason: reason}
	}
	share, followees, ok := strings.Cut(v, ":")
	if !ok {
		return bad("want SHARE:FOLLOWEES, e.g. 1%:10000")
	}
	div := 1.0
	if s, pct := strings.CutSuffix(share, "%"); pct {
		share, div = s, 100
	}
	f, err := strconv.ParseFloat(share, 64)
	if err != nil {
		return bad("the share is not a number")
	}
	n, err := strconv.Atoi(followees)
	if err != nil {
		return bad("the followee count is not an integer")
	}
	d := Drowning{Share: f / div, Followees: n}
	return d, d.validate()
}

// String is the form ParseDrowning reads ("1%:10000"), "" for none.
func (d Drowning) String() string {
	if d.Share == 0 {
		return ""
	}
	return strconv.FormatFloat(100*d.Share, 'g', -1, 64) + "%:" + strconv.Itoa(d.Followees)
}

func (d Drowning) validate() error {
	bad := func(v any, format string, args ...any) error {
		return &SpecError{Field: "Drowning", Value: fmt.Sprint(v), Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case !(d.Share >= 0 && d.Share <= MaxDrowningShare):
		return bad(d.Share, "the share must be in [0, %g]", MaxDrowningShare)
	case d.Share == 0 && d.Followees != 0:
		return bad(d.Followees, "followees without a share")
	case d.Share > 0 && (d.Followees < 1 || d.Followees > MaxUsers):
		return bad(d.Followees, "each drowning reader follows 1..%d others (at most Users-1 of them)", MaxUsers)
	}
	return nil
}

// scaled is d at scale factor f of a spec whose users became users: the
// followee count scaled as the users are, so that a drowning reader still
// follows the same share of everyone, and capped at users-1.
func (d Drowning) scaled(f float64, users int) Drowning {
	if d.Share == 0 {
		return d
	}
	d.Followees = max(1, min(int(math.Round(float64(d.Followees)*f)), users-1))
	return d
}

// drowningCount is how many users a valid d makes drowning readers: the
// share rounded, at least one when the share is not 0.
func (d Drowning) count(users int) int {
	if d.Share == 0 {
		return 0
	}
	return max(1, int(math.Round(d.Share*float64(users))))
}

// setDrowning gives s.Drowning's readers, drawn from the seed's stream,
// s.Drowning.Followees followees each, drawn uniformly, and returns the
// readers ascending.
func setDrowning(s Spec, rows [][]uint32) []uint32 {
	n := len(rows)
	k := s.Drowning.count(n)
	if k == 0 {
		return nil
	}
	r := newRNG(s.Seed, streamDrowning, 0)
	perm := make([]uint32, n)
	for i := range perm {
		perm[i] = uint32(i + 1)
	}
	for i := range k { // a partial Fisher-Yates shuffle
		j := i + int(r.below(uint64(n-i)))
		perm[i], perm[j] = perm[j], perm[i]
	}
	readers := slices.Clone(perm[:k])
	slices.Sort(readers)
	w := rowWorker{n: n, seed: s.Seed ^ int64(streamDrowning), stamp: make([]uint32, n+1)}
	for _, u := range readers {
		rows[u-1] = make([]uint32, min(s.Drowning.Followees, n-1))
		w.fill(u, rows[u-1])
	}
	return readers
}

// DrowningReaders returns the drowning readers (Spec.Drowning), ascending.
// The slice is shared: do not modify it.
func (d *Dataset) DrowningReaders() []uint32 { return d.drowning }

// IsDrowning reports whether u is one of the drowning readers.
func (d *Dataset) IsDrowning(u uint32) bool {
	_, ok := slices.BinarySearch(d.drowning, u)
	return ok
}
