package dataset

import (
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// Message bodies are not stored: AppendBody derives each one from the seed
// and the message id with a cheap PRNG, so a million bodies cost no memory
// and any one can be regenerated (by the loader, by a test comparing stores)
// without the others. They imitate short posts: words from a fixed
// vocabulary, lengths spread like real posts, sometimes a reply mention, a
// link, a hashtag or a sentence break, and now and then a non-ASCII word (é,
// 日本, emoji) so the stores' utf8mb4 path is exercised.

// bodyPRNG is wyrand: one addition and one 64x64->128 multiplication per
// value, several times cheaper than PCG, and plenty for picking words.
type bodyPRNG uint64

func (s *bodyPRNG) next() uint64 {
	*s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(uint64(*s), uint64(*s)^0xe7037ed1a0b428db)
	return hi ^ lo
}

// pick returns x reduced to [0, n) by multiply-shift on its top 32 bits
// (bias below 2^-24 for our small n, and deterministic, which is what
// matters).
func pick(x uint64, n int) int { return int((x >> 32) * uint64(n) >> 32) }

type word struct {
	s     string
	runes int
}

func words(ss ...string) []word {
	ws := make([]word, len(ss))
	for i, s := range ss {
		ws[i] = word{s, utf8.RuneCountInString(s)}
	}
	return ws
}

// Common words repeat so frequent words are frequent, roughly as in real
// text.
var vocab = words(
	"the", "the", "the", "the", "a", "a", "a", "to", "to", "to", "I", "I", "I",
	"and", "and", "of", "of", "is", "is", "in", "in", "it", "it", "you", "you",
	"that", "that", "for", "for", "on", "on", "my", "my", "this", "this",
	"with", "just", "be", "at", "so", "not", "are", "was", "have", "me", "but",
	"we", "all", "what", "do", "can", "out", "up", "now", "get", "like", "if",
	"your", "about", "new", "one", "good", "time", "day", "today", "no",
	"from", "going", "lol", "love", "know", "will", "think", "there", "back",
	"some", "really", "how", "see", "night", "work", "still", "great", "too",
	"got", "go", "u", "more", "want", "when", "they", "people", "need", "by",
	"an", "only", "home", "last", "much", "been", "thanks", "off", "right",
	"here", "then", "morning", "who", "make", "tonight", "why", "well", "never",
	"had", "oh", "come", "why", "first", "best", "after", "has", "next", "our",
	"would", "let", "did", "should", "coffee", "tomorrow", "week", "happy",
	"yes", "long", "weekend", "little", "again", "always", "life", "watching",
	"reading", "blog", "post", "server", "database", "query", "index", "cache",
	"timeline", "follow", "followers", "tweet", "benchmark", "MySQL", "latency",
	"throughput", "memory", "disk", "replication", "shard", "table", "row",
	"code", "bug", "fix", "deploy", "release", "meeting", "lunch", "dinner",
	"train", "station", "office", "weather", "rain", "sunny", "cold", "hot",
	"music", "movie", "book", "game", "phone", "laptop", "internet", "email",
	"friends", "family", "city", "trip", "photo", "video", "link", "article",
	"interesting", "awesome", "funny", "tired", "busy", "finally", "maybe",
	"probably", "actually", "seriously", "anyone", "everyone", "something",
	"nothing", "everything", "somebody", "hours", "minutes", "years", "ago",
	"later", "soon", "early", "late", "fast", "slow", "big", "small", "old",
	"better", "worse", "same", "different", "free", "open", "closed", "start",
	"stop", "try", "trying", "working", "looking", "thinking", "waiting",
	"#fail", "#win", "#mysql", "#scaling", "#ff", "#nowplaying", "#tokyo",
	"http://bit.ly/xYz12", "http://tinyurl.com/5abc9q", ":)", ":(", ":D", ";)",
)

// Non-ASCII words: 2-, 3- and 4-byte UTF-8, including a combining accent
// and a flag, so byte length and character count differ in every way
// utf8mb4 cares about.
var vocabIntl = words(
	"café", "naïve", "résumé", "über", "señor", "Zürich", "crème brûlée",
	"日本", "東京", "ありがとう", "ラーメン", "北京", "서울", "Москва", "Ελλάδα",
	"😀", "🎉", "👍", "☕", "🍣", "❤️", "🇯🇵", "e\u0301", "naïve 🙂",
)

// Body length targets in characters: 12% short replies, 60% typical posts,
// 22% long ones, 6% near the limit.
func bodyTarget(x uint64) int {
	c := pick(x, 100)
	y := x & 0xffffffff // low bits, independent of c's top bits
	switch {
	case c < 12:
		return 4 + pick(y<<32, 26) // 4..29
	case c < 72:
		return 30 + pick(y<<32, 110) // 30..139
	case c < 94:
		return 140 + pick(y<<32, 100) // 140..239
	default:
		return 240 + pick(y<<32, 38) // 240..277, room for final punctuation
	}
}

var endings = []string{"", "", "", ".", ".", "!", "?", "!!", "..."}

// AppendBody appends message id's body to dst and returns the extended
// slice. Bodies are valid UTF-8 of 1..timeline.MaxBodyChars characters and
// depend only on the seed and id, so ids beyond Spec.Messages give fresh
// bodies too (for posts made by the workload driver). It allocates only if
// dst lacks capacity.
func (d *Dataset) AppendBody(dst []byte, id uint64) []byte {
	r := bodyPRNG(mix64(d.bodySeed ^ mix64(id)))
	x := r.next()
	target := bodyTarget(x)
	runes := 0
	start := len(dst)
	if r.next()&7 == 0 { // 1 in 8 is a reply
		dst = append(dst, "@u"...)
		dst = strconv.AppendUint(dst, uint64(pick(r.next(), d.Spec.Users)+1), 10)
		runes = len(dst) - start
	}
	capNext := runes == 0
	for {
		x := r.next()
		var w word
		if x&0x3f == 0 { // 1 in 64 words is non-ASCII
			w = vocabIntl[pick(x, len(vocabIntl))]
		} else {
			w = vocab[pick(x, len(vocab))]
		}
		sep := ""
		if runes > 0 {
			sep = " "
			if (x>>6)&0xf == 0 { // 1 in 16 gaps is a sentence break
				sep = ". "
			}
			if runes+len(sep)+w.runes > target {
				break
			}
		}
		dst = append(dst, sep...)
		runes += len(sep)
		if len(sep) == 2 {
			capNext = true
		}
		at := len(dst)
		dst = append(dst, w.s...)
		runes += w.runes
		if capNext {
			if c := dst[at]; 'a' <= c && c <= 'z' {
				dst[at] = c - 'a' + 'A'
			}
			capNext = false
		}
	}
	return append(dst, endings[pick(r.next(), len(endings))]...)
}

// Body returns message id's body (see AppendBody).
func (d *Dataset) Body(id uint64) string {
	var buf [512]byte
	return string(d.AppendBody(buf[:0], id))
}
