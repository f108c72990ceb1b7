package dataset

import (
	"math/bits"
	"math/rand/v2"
)

// Random streams. Every part of the dataset draws from its own PCG stream
// derived from (Spec.Seed, stream, index), so parts can be generated in any
// order or in parallel, and changing how one part is generated leaves the
// others as they were.
const (
	streamDegrees uint64 = iota + 1
	streamRows
	streamPerm
	streamAuthors
	streamBodies
	streamOutPerm
	streamColumns
	streamCelebrity
	streamDrowning
)

// mix64 is the SplitMix64 finalizer: a bijection that spreads every input
// bit over the output, used to turn structured seeds into unrelated ones.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func streamSeed(seed int64, stream uint64) uint64 {
	return mix64(uint64(seed) + stream*0x9e3779b97f4a7c15)
}

// UserCoin is a uniform number in [0, 1) for user u, drawn from the
// dataset's seed on the given stream: the same on every run and machine,
// and unrelated across users and streams. It is for the choices a user of
// the dataset makes per user (the loader's active readers); their streams
// are 64 and up, clear of the dataset's own above.
func (d *Dataset) UserCoin(stream uint64, u uint32) float64 {
	seed := streamSeed(d.Spec.Seed, stream)
	return float64(mix64(seed^mix64(uint64(u)))>>11) / (1 << 53)
}

// rng wraps a PCG. It uses only PCG.Uint64, whose output sequence is fully
// specified, and reduces to a range itself, because the rand.Rand helpers
// (IntN, Shuffle, ...) do not promise the same values across Go releases.
type rng struct{ pcg rand.PCG }

func newRNG(seed int64, stream, index uint64) rng {
	var r rng
	s := streamSeed(seed, stream)
	r.pcg.Seed(s, mix64(s^mix64(index+0x632be59bd9b4e019)))
	return r
}

// below returns a uniform integer in [0, n), n > 0, by Lemire's
// multiply-and-reject method: exact, and usually one multiplication.
func (r *rng) below(n uint64) uint64 {
	hi, lo := bits.Mul64(r.pcg.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.pcg.Uint64(), n)
		}
	}
	return hi
}

// Uint64N is below, for the uniformSource that alias tables draw with.
func (r *rng) Uint64N(n uint64) uint64 { return r.below(n) }
