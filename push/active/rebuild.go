package active

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/pushpull/pushpull/registry"
)

// mergeRows is what a rebuild's pull merge (package pull/sqlread's Merge,
// with fetch = rebuild + 1) reads and writes besides its probes of the
// followees and the bodies it joins: scanned, the ids its batch rounds and
// its last statement read from the (author_id, id) index, and scratch, the
// rows of its last statement's derived table (each written there and
// updated by COUNT(*) OVER ()): the known ids it passes as literals, at
// most fetch, and the ids its branches read between the floor and each
// unfinished author's lowest known id.
type mergeRows struct{ scanned, scratch float64 }

// mergeReaders is how many readers rebuildMerge draws per reader class at
// most, and mergeHeads how many followees in all: a class of readers who
// follow very many authors draws fewer of them (at least one), whose
// rows vary little from one to the next.
const (
	mergeReaders = 16
	mergeHeads   = 1 << 15
)

// mergeFollowees bounds, in fetches, the followees of a replayed reader:
// with more than fetch followees the merge is Read's one range scan over
// the authors of the fetch newest heads down to the fetch-th, and more
// followees only raise that head; a reader of more is replayed with that
// many (their probes of the followees are counted in full by
// RebuildWork).
const mergeFollowees = 16

// rebuildMerge is the expected mergeRows of a rebuild of at most rebuild
// entries, over the classes' readers weighted by their reads (the mean
// over the classes, not the merge of a mean reader): a reader of class c
// follows c.Followees authors, each of a class drawn by its followers and
// holding a Poisson number of messages of mean MessagesOf, whose ids are
// spread uniformly among all messages, each author's independently of the
// others' (the dataset draws each message's author at random). The merge
// is replayed on mergeReaders such readers per class (fewer, and of
// at most mergeFollowees fetches' followees, for those who follow very
// many), drawn from a fixed
// seed, so the same Demand always gives the same rows.
//
// Its batch rounds give every author an equal share of the entries, so
// when the followees post at very different rates (the power-law graph,
// whose users post by their follower counts) the rare posters' shares
// reach far back, the floor (the fetch-th newest id known) falls deep, and
// the branches of the prolific authors read their ids down to it, up to
// their rank's bound: many more scratch rows an entry than when the
// followees post alike (about 1.2).
func rebuildMerge(d registry.Demand, rebuild int) mergeRows {
	var users, followers, means []float64
	h := fnv.New64a()
	fIndex, gIndex := map[float64]int{}, map[float64]int{}
	var fs, fu, gs, gu []float64
	for _, c := range d.Classes {
		users = append(users, c.Users)
		followers = append(followers, c.Followers)
		means = append(means, d.MessagesOf(c))
		binary.Write(h, binary.LittleEndian, [4]float64{c.Users, c.Followers, c.Followees, d.MessagesOf(c)})
		if _, ok := fIndex[c.Followers]; !ok {
			fIndex[c.Followers] = len(fs)
			fs, fu = append(fs, c.Followers), append(fu, 0)
		}
		fu[fIndex[c.Followers]] += c.Users
		if _, ok := gIndex[c.Followees]; !ok {
			gIndex[c.Followees] = len(gs)
			gs, gu = append(gs, c.Followees), append(gu, 0)
		}
		gu[gIndex[c.Followees]] += c.Users
	}
	dist := h.Sum64()
	var chance, weight []float64
	fitted := false
	// A reader's merge depends on their class by its followee count
	// alone, and a plan asks for the same followees' messages many times.
	of := func(c registry.UserClass) mergeRows {
		key := mergeKey{dist: dist, followees: c.Followees, rebuild: rebuild}
		if x, ok := mergeCache.Load(key); ok {
			return x.(mergeRows)
		}
		if !fitted {
			chance, weight = followChances(fs, fu, gs, gu)
			fitted = true
		}
		cum := make([]float64, len(users))
		var total float64
		wg := weight[gIndex[c.Followees]]
		for i, u := range users {
			total += u * -math.Expm1(-chance[fIndex[followers[i]]]*wg)
			cum[i] = total
		}
		r := rand.New(rand.NewPCG(dist, math.Float64bits(c.Followees)))
		var x mergeRows
		followees := min(c.Followees, float64(mergeFollowees*(rebuild+1)))
		readers := int(min(mergeReaders, max(1, mergeHeads/max(1, followees))))
		for range readers {
			g := int(followees)
			if r.Float64() < followees-float64(g) {
				g++
			}
			counts := make([]int, 0, g)
			for range g {
				if total == 0 {
					break
				}
				k := sort.SearchFloat64s(cum, r.Float64()*total)
				if m := poisson(r, means[min(k, len(means)-1)]); m > 0 {
					counts = append(counts, m)
				}
			}
			y := replayMerge(counts, rebuild+1, r)
			x.scanned += y.scanned / float64(readers)
			x.scratch += y.scratch / float64(readers)
		}
		if mergeCached.Add(1) > maxMergeCache {
			mergeCache.Clear()
			mergeCached.Store(0)
		}
		mergeCache.Store(key, x)
		return x
	}
	return mergeRows{
		scanned: d.MeanOverReads(func(c registry.UserClass) float64 { return of(c).scanned }),
		scratch: d.MeanOverReads(func(c registry.UserClass) float64 { return of(c).scratch }),
	}
}

// mergeKey keys mergeCache: the followees' messages (a hash of their
// classes' weights and message counts), a reader's followee count and
// the rebuild's entries.
type mergeKey struct {
	dist      uint64
	followees float64
	rebuild   int
}

// mergeCache holds rebuildMerge's replays by mergeKey, at most
// maxMergeCache of them (then it starts again).
var (
	mergeCache  sync.Map
	mergeCached atomic.Int64
)

const maxMergeCache = 1 << 14

// followChances fits the chance that a reader of followee class g
// follows an author of follower class f, 1 − exp(−c[f]·w[g]), to the
// classes' counts: an author of f followers is followed by f readers
// (Σ over readers of the chances) and a reader of g followees follows g
// authors. It is how the power-law graph draws a column of followers
// without replacement from readers of weights w: a reader who follows
// few authors is in almost every column of the most followed authors and
// in few of the rest, so such a reader's followees hold the most followed
// authors far above their share of the follows (on the power-law graph at
// 1,000 users, 7.8 of 24 followees among the 16 users of over 300
// followers). fs and gs are the distinct follower and followee counts,
// fu and gu the users of each.
func followChances(fs, fu, gs, gu []float64) (c, w []float64) {
	c, w = slices.Clone(fs), slices.Clone(gs)
	solve := func(target float64, over func(x float64) float64) float64 {
		return registry.SolveIncreasing(over, target, 1e-9, 1e12, 50)
	}
	for range 20 {
		for i, f := range fs {
			c[i] = solve(f, func(x float64) float64 {
				var n float64
				for j, u := range gu {
					n += u * -math.Expm1(-x*w[j])
				}
				return n
			})
		}
		for j, g := range gs {
			w[j] = solve(g, func(x float64) float64 {
				var n float64
				for i, u := range fu {
					n += u * -math.Expm1(-c[i]*x)
				}
				return n
			})
		}
	}
	return c, w
}

// poisson draws a Poisson count of mean mean (a rounded normal above 30).
func poisson(r *rand.Rand, mean float64) int {
	if mean <= 0 {
		return 0
	}
	if mean > 30 {
		return max(0, int(math.Round(mean+math.Sqrt(mean)*r.NormFloat64())))
	}
	limit, p, k := math.Exp(-mean), r.Float64(), 0
	for p > limit {
		p *= r.Float64()
		k++
	}
	return k
}

// author is one followee in replayMerge: their ids as positions in (0, 1),
// newest first, given by draw as they are needed, and those known.
type author struct {
	draw  func() (float64, bool) // the next id below the last, if any
	back  []float64              // ids drawn but not read, newest first
	known []float64
}

// next reads the author's next id below the last read, if any.
func (a *author) next() (float64, bool) {
	if len(a.back) > 0 {
		id := a.back[0]
		a.back = a.back[1:]
		return id, true
	}
	return a.draw()
}

// drawUniform draws the positions of m ids spread uniformly, newest first
// (the order statistics of m uniform values, from the top).
func drawUniform(m int, r *rand.Rand) func() (float64, bool) {
	at := 1.0
	return func() (float64, bool) {
		if m == 0 {
			return 0, false
		}
		at *= math.Pow(r.Float64(), 1/float64(m))
		m--
		return at, true
	}
}

// replayMerge replays sqlread's Merge for fetch entries over authors who
// hold counts messages each (none 0), with ids drawn by r, and returns
// what it scans and the rows of its last statement's derived table (see
// mergeRows).
func replayMerge(counts []int, fetch int, r *rand.Rand) mergeRows {
	as := make([]author, len(counts))
	for i, m := range counts {
		as[i].draw = drawUniform(m, r)
	}
	return replayAuthors(as, fetch)
}

// replayAuthors is replayMerge over authors whose ids draw gives. It
// follows Merge.Read (one capped range scan when at least fetch authors
// have messages) and mergeRounds statement by statement.
func replayAuthors(as []author, fetch int) mergeRows {
	for i := range as {
		h, _ := as[i].next()
		as[i].known = []float64{h}
	}
	slices.SortFunc(as, func(x, y author) int { return -cmpFloat(x.known[0], y.known[0]) })
	if len(as) >= fetch {
		// Read's range scan: the ids of the fetch newest heads' authors
		// at or above the fetch-th head, capped at 4·fetch. Past the
		// cap, mergeRounds reads the ids again.
		floor, limit := as[fetch-1].known[0], 4*fetch
		var n int
		for i := range as[:fetch] {
			n++
			for n < limit {
				id, ok := as[i].next()
				if !ok {
					break
				}
				if id < floor {
					as[i].back = append(as[i].back, id)
					break
				}
				as[i].known = append(as[i].known, id)
				n++
			}
		}
		if n < limit {
			return mergeRows{scanned: float64(n), scratch: float64(n)}
		}
		scanned := replayRounds(as, fetch, true)
		scanned.scanned += float64(n)
		return scanned
	}
	return replayRounds(as, fetch, false)
}

// replayRounds is mergeRounds over as, sorted by their heads; when
// again, the ids known beyond the heads are read again by its rounds
// before any new one is drawn.
func replayRounds(as []author, fetch int, again bool) mergeRows {
	if again {
		for i := range as {
			as[i].back = append(slices.Clone(as[i].known[1:]), as[i].back...)
			as[i].known = as[i].known[:1]
		}
	}
	var scanned int
	done := make([]bool, len(as))
	for k := range as {
		done[k] = fetch-k <= 1
	}
	known := len(as)
	for known < fetch {
		live := 0
		for k := range as {
			if !done[k] {
				live++
			}
		}
		if live == 0 {
			break
		}
		share := (fetch - known + live - 1) / live
		for k := range as {
			if done[k] {
				continue
			}
			limit := min(share, fetch-k-len(as[k].known))
			got := 0
			for got < limit {
				id, ok := as[k].next()
				if !ok {
					break
				}
				as[k].known = append(as[k].known, id)
				got++
			}
			known += got
			scanned += got
			if got < limit || len(as[k].known) >= fetch-k {
				done[k] = true
			}
		}
	}
	all := make([]float64, 0, known)
	for _, a := range as {
		all = append(all, a.known...)
	}
	slices.SortFunc(all, func(x, y float64) int { return -cmpFloat(x, y) })
	var floor float64
	literals := len(all)
	if len(all) >= fetch {
		floor, literals = all[fetch-1], fetch
	}
	branch := 0
	for k := range as {
		low := as[k].known[len(as[k].known)-1]
		if done[k] || low <= floor || floor == 0 {
			continue
		}
		for limit := fetch - k - len(as[k].known); limit > 0; limit-- {
			id, ok := as[k].next()
			if !ok || id < floor {
				break
			}
			branch++
		}
	}
	return mergeRows{scanned: float64(scanned + branch), scratch: float64(literals + branch)}
}

func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
