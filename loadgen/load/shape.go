package load

import (
	"bufio"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/registry"
)

// The mailboxes of models that keep part of push's (registry.MailboxShape)
// and the tables that say which part.

// pulled reports whether shape leaves author's messages out of every
// mailbox, by the model's rule (MailboxShape.PullAuthor).
func pulled(d *dataset.Dataset, shape registry.MailboxShape, author uint32) bool {
	return shape.PullAuthor != nil && shape.PullAuthor(len(d.Followers(author)))
}

// pulledEdge reports whether shape leaves author's messages out of
// follower's mailbox: the author is pulled, or the model's edge rule
// (MailboxShape.PushEdge) does not push the edge.
func pulledEdge(d *dataset.Dataset, shape registry.MailboxShape, follower, author uint32) bool {
	if pulled(d, shape, author) {
		return true
	}
	return shape.PushEdge != nil && !shape.PushEdge(startReads(d, shape, follower), startPosts(d, author))
}

// startPosts is the post count a store that decides edges
// (MailboxShape.PushEdge) starts from for user u: the messages u wrote in
// the dataset, as if just posted.
func startPosts(d *dataset.Dataset, u uint32) float64 { return float64(len(d.ByAuthor(u))) }

// startReads is the read count a store that decides edges starts from
// for user u: ReadsPerPost times the messages per user, spread over the
// users by their shares of the reads (Dataset.ReadShare: uniform, or
// growing with the follower count as the workload's PickReader draws
// them, in the fixed-point weights of its table, so that the decisions
// are the same on every machine).
func startReads(d *dataset.Dataset, shape registry.MailboxShape, u uint32) float64 {
	perUser := float64(len(d.Authors)) / float64(d.Spec.Users)
	return shape.ReadsPerPost * perUser * d.ReadShare(u)
}

// shapedMailbox returns the ids of u's mailbox under shape, ascending, in
// mb's buffer, and how many ids the whole timeline holds (the kept ones
// and the ones cut off by shape.Cap).
func shapedMailbox(mb *dataset.Mailboxer, d *dataset.Dataset, u uint32, shape registry.MailboxShape) (kept []uint32, total int) {
	var ids []uint32
	if inactive(d, shape, u) {
		return nil, 0
	}
	if shape.PullAuthor == nil && shape.PushEdge == nil {
		ids = mb.Mailbox(d, u)
	} else {
		ids = mb.MailboxOf(d, u, func(f uint32) bool { return !pulledEdge(d, shape, u, f) })
	}
	total = len(ids)
	if shape.Cap > 0 && len(ids) > shape.Cap {
		ids = ids[len(ids)-shape.Cap:]
	}
	return ids, total
}

// shapedRows is how many mailbox rows user u keeps under shape, without
// building them.
func shapedRows(d *dataset.Dataset, u uint32, shape registry.MailboxShape) int64 {
	var n int64
	if inactive(d, shape, u) {
		return 0
	}
	for _, f := range d.Followees[u-1] {
		if !pulledEdge(d, shape, u, f) {
			n += int64(len(d.ByAuthor(f)))
		}
	}
	if shape.Cap > 0 {
		n = min(n, int64(shape.Cap))
	}
	return n
}

// shapedMailboxRows is the mailbox rows of every user under shape.
func shapedMailboxRows(d *dataset.Dataset, shape registry.MailboxShape) int64 {
	if shape.Whole() {
		return d.MailboxRows()
	}
	var n int64
	for u := 1; u <= d.Spec.Users; u++ {
		n += shapedRows(d, uint32(u), shape)
	}
	return n
}

// mailboxStateTable is schema.MailboxState under shape: every user's floor
// (the oldest id kept if the cap cut any off, else 0) and entries.
func mailboxStateTable(d *dataset.Dataset, shape registry.MailboxShape) table {
	return table{
		fields: 3, rows: int64(d.Spec.Users), numeric: true,
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			var mb dataset.Mailboxer
			var buf []byte
			for u := uint32(1); u <= uint32(d.Spec.Users); u++ {
				ids, total := shapedMailbox(&mb, d, u, shape)
				var floor uint32
				if len(ids) < total {
					floor = ids[0]
				}
				buf = strconv.AppendUint(buf[:0], uint64(u), 10)
				buf = append(buf, '\t')
				buf = strconv.AppendUint(buf, uint64(floor), 10)
				buf = append(buf, '\t')
				buf = strconv.AppendInt(buf, int64(len(ids)), 10)
				buf = append(buf, '\n')
				n.Add(1)
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// pullAuthorsTable is schema.PullAuthors under shape: the authors whose
// messages no mailbox holds.
func pullAuthorsTable(d *dataset.Dataset, shape registry.MailboxShape) table {
	var rows int64
	for a := uint32(1); a <= uint32(d.Spec.Users); a++ {
		if pulled(d, shape, a) {
			rows++
		}
	}
	return table{
		fields: 1, rows: rows, numeric: true,
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			var buf []byte
			for a := uint32(1); a <= uint32(d.Spec.Users); a++ {
				if !pulled(d, shape, a) {
					continue
				}
				buf = strconv.AppendUint(buf[:0], uint64(a), 10)
				buf = append(buf, '\n')
				n.Add(1)
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// pullFollowsTable is schema.PullFollows under shape: the follows of the
// pulled authors, in (user, author) order.
func pullFollowsTable(d *dataset.Dataset, shape registry.MailboxShape) table {
	return followsWhere(d, func(followee uint32) bool { return pulled(d, shape, followee) })
}

// edgesTable is the follows under shape that pull (true: schema.PullEdges,
// in (user, author) order) or push (false: schema.PushEdges, in (author,
// user) order, the table's primary key) reach.
func edgesTable(d *dataset.Dataset, shape registry.MailboxShape, pull bool) table {
	var rows int64
	d.EachFollow(func(follower, followee uint32) error {
		if pulledEdge(d, shape, follower, followee) == pull {
			rows++
		}
		return nil
	})
	return table{
		fields: 2, rows: rows, numeric: true,
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			var buf []byte
			row := func(a, b uint32) error {
				buf = strconv.AppendUint(buf[:0], uint64(a), 10)
				buf = append(buf, '\t')
				buf = strconv.AppendUint(buf, uint64(b), 10)
				buf = append(buf, '\n')
				n.Add(1)
				_, err := w.Write(buf)
				return err
			}
			if pull {
				return d.EachFollow(func(follower, followee uint32) error {
					if !pulledEdge(d, shape, follower, followee) {
						return nil
					}
					return row(follower, followee)
				})
			}
			for a := uint32(1); a <= uint32(d.Spec.Users); a++ {
				for _, u := range d.Followers(a) {
					if pulledEdge(d, shape, u, a) {
						continue
					}
					if err := row(a, u); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
}

// userRatesTable is schema.UserRates under shape: every user's start
// counts (startReads, startPosts), as of now.
func userRatesTable(d *dataset.Dataset, shape registry.MailboxShape) table {
	return table{
		fields: 4, rows: int64(d.Spec.Users), numeric: true,
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			var buf []byte
			at := strconv.FormatInt(time.Now().Unix(), 10)
			for u := uint32(1); u <= uint32(d.Spec.Users); u++ {
				buf = strconv.AppendUint(buf[:0], uint64(u), 10)
				buf = append(buf, '\t')
				buf = strconv.AppendFloat(buf, startReads(d, shape, u), 'g', -1, 64)
				buf = append(buf, '\t')
				buf = strconv.AppendFloat(buf, startPosts(d, u), 'g', -1, 64)
				buf = append(buf, '\t')
				buf = append(buf, at...)
				buf = append(buf, '\n')
				n.Add(1)
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
