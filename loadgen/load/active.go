package load

import (
	"bufio"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/registry"
)

// The users a store that fans out to active readers only (push-active,
// registry.MailboxShape.ActiveReads) has as active when the benchmark
// starts. A user is active when they read within the store's window. With
// the workload's reads drawn as Dataset.PickReader draws them, user u's
// share of reads is p_u (uniform, or proportional to
// (1+followers(u))^ReadExponent under dataset.ActivitySkewed), and if the
// reads of a window number
// ActiveReads*users, u reads within it about ActiveReads*users*p_u times:
// as a Poisson count, at least once with probability
// 1 - exp(-ActiveReads*users*p_u). The load draws that coin for each user
// from the dataset's seed, so heavy readers are almost all active and the
// long tail mostly not, as on a real service. Active users get push's
// whole mailbox (as if they had read throughout) and their last read at
// the time of the load; the others no mailbox rows at all and no read.

// streamActive is the random stream of the activity coins
// (Dataset.UserCoin); it stays clear of the dataset's own streams.
const streamActive uint64 = 64

// activeSets caches the active users of a dataset per ActiveReads: the
// load asks for them once per user and table.
var activeSets sync.Map // activeKey -> []bool

type activeKey struct {
	d     *dataset.Dataset
	reads float64
}

// activeUsers returns, for shape.ActiveReads > 0, whether each user
// (index u-1) is active; nil otherwise.
func activeUsers(d *dataset.Dataset, shape registry.MailboxShape) []bool {
	if shape.ActiveReads <= 0 {
		return nil
	}
	key := activeKey{d, shape.ActiveReads}
	if v, ok := activeSets.Load(key); ok {
		return v.([]bool)
	}
	n := d.Spec.Users
	weights := make([]float64, n)
	var sum float64
	for i := range weights {
		w := 1.0
		if d.Spec.Activity.Mode == dataset.ActivitySkewed {
			w = math.Pow(1+float64(len(d.Followers(uint32(i+1)))), d.Spec.Activity.ReadExponent)
		}
		weights[i] = w
		sum += w
	}
	active := make([]bool, n)
	for i, w := range weights {
		reads := shape.ActiveReads * float64(n) * w / sum
		active[i] = d.UserCoin(streamActive, uint32(i+1)) < -math.Expm1(-reads)
	}
	v, _ := activeSets.LoadOrStore(key, active)
	return v.([]bool)
}

// ActiveUsers returns how many users of d a store of shape starts with as
// active, and how many users there are.
func ActiveUsers(d *dataset.Dataset, shape registry.MailboxShape) (active, users int) {
	set := activeUsers(d, shape)
	if set == nil {
		return d.Spec.Users, d.Spec.Users
	}
	for _, a := range set {
		if a {
			active++
		}
	}
	return active, d.Spec.Users
}

// inactive reports whether shape leaves user u's mailbox out.
func inactive(d *dataset.Dataset, shape registry.MailboxShape, u uint32) bool {
	set := activeUsers(d, shape)
	return set != nil && !set[u-1]
}

// readerStateTable is schema.ReaderState under shape: every user's flag,
// last read (the load's time, in microseconds since 1970, for the active
// ones; 0 for the others) and floor (0: active users hold the whole
// timeline).
func readerStateTable(d *dataset.Dataset, shape registry.MailboxShape) table {
	return table{
		fields: 4, rows: int64(d.Spec.Users), numeric: true,
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			now := time.Now().UnixMicro()
			var buf []byte
			for u := uint32(1); u <= uint32(d.Spec.Users); u++ {
				active, readAt := 1, now
				if inactive(d, shape, u) {
					active, readAt = 0, 0
				}
				buf = strconv.AppendUint(buf[:0], uint64(u), 10)
				buf = append(buf, '\t')
				buf = strconv.AppendInt(buf, int64(active), 10)
				buf = append(buf, '\t')
				buf = strconv.AppendInt(buf, readAt, 10)
				buf = append(buf, "\t0\n"...)
				n.Add(1)
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
