package workload

import "sync/atomic"

// tally counts events and sums a figure over them, so that the mean of
// the figure over the events since a mark can be read (Audience's
// followers a post, Churn's messages a followee). Safe for concurrent
// use; the zero value is ready.
type tally struct{ n, sum atomic.Int64 }

// tallyMark is a tally's counts at one moment.
type tallyMark struct{ n, sum int64 }

func (t *tally) add(v int64) {
	t.sum.Add(v)
	t.n.Add(1)
}

func (t *tally) mark() tallyMark { return tallyMark{n: t.n.Load(), sum: t.sum.Load()} }

// since returns the mean figure of the events since m, and how many those
// were (0 and 0 when none).
func (t *tally) since(m tallyMark) (mean float64, n int64) {
	now := t.mark()
	n = now.n - m.n
	if n <= 0 {
		return 0, 0
	}
	return float64(now.sum-m.sum) / float64(n), n
}
