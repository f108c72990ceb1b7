package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Operation types of a Mix, as --mix names them.
const (
	OpNewest   = "newest"   // the newest page of a random user's timeline
	OpOlder    = "older"    // a page 2 to 5 deep, through its keyset cursor
	OpPost     = "post"     // a message by a random author
	OpFollow   = "follow"   // a follow (see Churn)
	OpUnfollow = "unfollow" // an unfollow (see Churn)
	OpDelete   = "delete"   // a delete, by its author, of a message the traffic posted (see PostBook)
)

// MixOps are the operation types in the order a Mix lists them; an
// operation's kind, in the drivers' per-kind figures, is its index here.
var MixOps = []string{OpNewest, OpOlder, OpPost, OpFollow, OpUnfollow, OpDelete}

// Mix is the proportions of the operation types in mixed traffic. Weights
// are relative: newest=8,post=2 is 80% reads.
type Mix struct {
	weights [6]float64 // by MixOps index
}

// DefaultMixSpec is the mix of --mix default: read-heavy, as production
// feeds are. Twitter served about 300,000 timeline reads a second against
// about 6,000 tweets a second in 2012 (Krikorian, "Timelines at Scale",
// QCon SF 2012), 50 reads a post, and Instagram's feed is read about 100
// times as often as it is written to (Branson, PyCon 2013): so 96% reads
// and 2% posts here. LinkBench, from Facebook's social graph, pages into
// history on 30% of its list reads; timelines are read mostly from the
// top, so a fifth of the reads here are older pages. Follows and unfollows
// have no published share; they take 1% each, enough to exercise push's
// backfill and delete and pull's follow tokens, and equal, so that the
// graph stays as generated (see Churn). Deletes are left out: a mix takes
// them by name (delete=0.2 is a tenth of posts undone, as about a tenth of
// Instagram's feed writes are undos).
const DefaultMixSpec = "newest=76,older=20,post=2,follow=1,unfollow=1"

// DefaultMix is DefaultMixSpec parsed.
func DefaultMix() Mix {
	m, err := ParseMix(DefaultMixSpec)
	if err != nil {
		panic(err)
	}
	return m
}

// MixError reports a --mix that cannot be read.
type MixError struct {
	Spec   string
	Reason string
}

func (e *MixError) Error() string { return fmt.Sprintf("mix %q: %s", e.Spec, e.Reason) }

// ParseMix reads a mix such as "newest=80,older=10,post=8,follow=1,unfollow=1":
// comma-separated operation=weight pairs, weights non-negative numbers of
// which at least one is positive, each operation at most once; operations
// left out get 0. "default" is DefaultMixSpec. A delete needs posts to
// delete (see PostBook): a mix with delete has post too. Errors are
// *MixError.
func ParseMix(spec string) (Mix, error) {
	var m Mix
	bad := func(format string, args ...any) (Mix, error) {
		return Mix{}, &MixError{Spec: spec, Reason: fmt.Sprintf(format, args...)}
	}
	s := strings.TrimSpace(spec)
	if s == "default" {
		s = DefaultMixSpec
	}
	if s == "" {
		return bad("empty: want operation=weight pairs such as %s", DefaultMixSpec)
	}
	seen := [len(m.weights)]bool{}
	for part := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return bad("%q is not operation=weight", part)
		}
		i := mixIndex(strings.TrimSpace(name))
		if i < 0 {
			return bad("unknown operation %q (want %s)", name, strings.Join(MixOps, ", "))
		}
		if seen[i] {
			return bad("%s given twice", MixOps[i])
		}
		seen[i] = true
		w, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || w < 0 || math.IsInf(w, 0) || math.IsNaN(w) {
			return bad("weight of %s %q: want a number of 0 or more", MixOps[i], value)
		}
		m.weights[i] = w
	}
	if m.total() <= 0 {
		return bad("every weight is 0")
	}
	if m.weights[mixIndex(OpDelete)] > 0 && m.weights[mixIndex(OpPost)] <= 0 {
		return bad("delete without post: the traffic deletes only messages it posted")
	}
	return m, nil
}

func mixIndex(name string) int {
	for i, op := range MixOps {
		if op == name {
			return i
		}
	}
	return -1
}

func (m Mix) total() float64 {
	var t float64
	for _, w := range m.weights {
		t += w
	}
	return t
}

// Empty reports whether no operation has a positive weight: the zero Mix,
// or one whose every operation was taken out (Without). Traffic needs a
// Mix that is not empty.
func (m Mix) Empty() bool { return m.total() <= 0 }

// String writes m as ParseMix reads it, operations of weight 0 left out.
func (m Mix) String() string {
	var parts []string
	for i, w := range m.weights {
		if w > 0 {
			parts = append(parts, MixOps[i]+"="+strconv.FormatFloat(w, 'g', -1, 64))
		}
	}
	return strings.Join(parts, ",")
}

// Share is op's share of all operations, 0 to 1.
func (m Mix) Share(op string) float64 {
	i := mixIndex(op)
	if i < 0 || m.total() <= 0 {
		return 0
	}
	return m.weights[i] / m.total()
}

// Without is m with op's weight set to 0.
func (m Mix) Without(op string) Mix {
	if i := mixIndex(op); i >= 0 {
		m.weights[i] = 0
	}
	return m
}

// pick maps u, uniform in [0, 1), to an operation's index in MixOps.
func (m Mix) pick(u float64) int {
	x := u * m.total()
	last := 0
	for i, w := range m.weights {
		if w <= 0 {
			continue
		}
		if x < w {
			return i
		}
		x -= w
		last = i
	}
	return last // rounding at the top end
}
