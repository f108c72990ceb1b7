package loadgen

import (
	"bufio"
	"strconv"
	"sync/atomic"

	"github.com/pushpull/pushpull/registry"
)

// The mailboxes of models that keep part of push's (registry.MailboxShape)
// and the tables that say which part.

// pulled reports whether shape leaves author's messages out of every
// mailbox.
func (d *Dataset) pulled(shape registry.MailboxShape, author uint32) bool {
	return shape.PullFrom > 0 && d.followers.count(int(author)) >= shape.PullFrom
}

// shapedMailbox returns the ids of u's mailbox under shape, ascending, in
// mb's buffer, and how many ids the whole timeline holds (the kept ones
// and the ones cut off by shape.Cap).
func (mb *mailboxer) shapedMailbox(d *Dataset, u uint32, shape registry.MailboxShape) (kept []uint32, total int) {
	var ids []uint32
	if d.inactive(shape, u) {
		return nil, 0
	}
	if shape.PullFrom == 0 {
		ids = mb.mailbox(d, u)
	} else {
		ids = mb.mailboxOf(d, u, func(f uint32) bool { return !d.pulled(shape, f) })
	}
	total = len(ids)
	if shape.Cap > 0 && len(ids) > shape.Cap {
		ids = ids[len(ids)-shape.Cap:]
	}
	return ids, total
}

// shapedRows is how many mailbox rows user u keeps under shape, without
// building them.
func (d *Dataset) shapedRows(u uint32, shape registry.MailboxShape) int64 {
	var n int64
	if d.inactive(shape, u) {
		return 0
	}
	for _, f := range d.Followees[u-1] {
		if !d.pulled(shape, f) {
			n += int64(d.byAuthor.count(int(f)))
		}
	}
	if shape.Cap > 0 {
		n = min(n, int64(shape.Cap))
	}
	return n
}

// shapedMailboxRows is the mailbox rows of every user under shape.
func (d *Dataset) shapedMailboxRows(shape registry.MailboxShape) int64 {
	if shape == (registry.MailboxShape{}) {
		return d.MailboxRows()
	}
	var n int64
	for u := 1; u <= d.Spec.Users; u++ {
		n += d.shapedRows(uint32(u), shape)
	}
	return n
}

// mailboxStateTable is schema.MailboxState under shape: every user's floor
// (the oldest id kept if the cap cut any off, else 0) and entries.
func mailboxStateTable(d *Dataset, shape registry.MailboxShape) table {
	return table{
		fields: 3, rows: int64(d.Spec.Users), numeric: true,
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			var mb mailboxer
			var buf []byte
			for u := uint32(1); u <= uint32(d.Spec.Users); u++ {
				ids, total := mb.shapedMailbox(d, u, shape)
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
func pullAuthorsTable(d *Dataset, shape registry.MailboxShape) table {
	var rows int64
	for a := uint32(1); a <= uint32(d.Spec.Users); a++ {
		if d.pulled(shape, a) {
			rows++
		}
	}
	return table{
		fields: 1, rows: rows, numeric: true,
		write: func(w *bufio.Writer, n *atomic.Int64) error {
			var buf []byte
			for a := uint32(1); a <= uint32(d.Spec.Users); a++ {
				if !d.pulled(shape, a) {
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
func pullFollowsTable(d *Dataset, shape registry.MailboxShape) table {
	return followsWhere(d, func(followee uint32) bool { return d.pulled(shape, followee) })
}
