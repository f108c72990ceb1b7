package load

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	schema "github.com/pushpull/pushpull/sql"
)

// vitessBatch is how many rows one INSERT of Vitess writes: vtgate
// splits it by shard, and a statement stays far below its row limit.
const vitessBatch = 1000

// Vitess writes d into targets on Vitess (a keyspace sharded by user,
// schema.PushVitess, schema.PullVitess or schema.HybridVitess) through
// vtgate, which does not take LOAD DATA: multi-row INSERTs of vitessBatch
// rows, workers at once, that vtgate splits by shard. A target's mailbox
// holds the part its Mailbox shape keeps (hybrid@vitess: no pulled
// author's messages), and its pull_authors and pull_follows say which. Messages keep the dataset's ids, which the
// sequence did not hand out; seq, connected to schema.SequenceKeyspace,
// then moves the sequence past them. That holds only while nothing has
// drawn ids from the sequence yet (a vttablet hands out a block it has
// cached before it reads the table again), as in a fresh sandbox.
func Vitess(ctx context.Context, d *dataset.Dataset, targets []Target, seq *sql.DB, workers int) (*results.DataLoad, error) {
	start := time.Now()
	if workers <= 0 {
		workers = DefaultWorkers
	}
	out := &results.DataLoad{}
	for _, t := range targets {
		for _, st := range schema.DataTables(t.Schema) {
			t0 := time.Now()
			rows, err := loadVitessTable(ctx, d, t.DB, st, t.Mailbox, workers)
			if err != nil {
				return nil, fmt.Errorf("load %s.%s: %w", t.Name, st.Name, err)
			}
			secs := time.Since(t0).Seconds()
			out.Tables = append(out.Tables, results.TableLoad{
				Database: t.Name, Table: st.Name, Rows: rows, Seconds: secs, RowsPerSec: float64(rows) / max(secs, 1e-9),
			})
		}
	}
	if _, err := seq.ExecContext(ctx, `UPDATE message_seq SET next_id = GREATEST(next_id, ?) WHERE id = 0`, len(d.Authors)+1); err != nil {
		return nil, fmt.Errorf("move the message sequence past the loaded ids: %w", err)
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// loadVitessTable inserts the rows of st, batch by batch, as shape keeps
// them.
func loadVitessTable(ctx context.Context, d *dataset.Dataset, db *sql.DB, st schema.Table, shape registry.MailboxShape, workers int) (int64, error) {
	g, gctx := errgroup.WithContext(ctx)
	batches := make(chan []byte)
	for range workers {
		g.Go(func() error {
			for q := range batches {
				if _, err := db.ExecContext(gctx, string(q)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	var rows int64
	g.Go(func() error {
		defer close(batches)
		head := "INSERT INTO " + st.Name + " " + st.ColumnList() + " VALUES "
		var q []byte
		n := 0
		add := func(row func([]byte) []byte) error {
			if n == 0 {
				q = append(q[:0], head...)
			} else {
				q = append(q, ',')
			}
			q = append(q, '(')
			q = row(q)
			q = append(q, ')')
			rows++
			if n++; n < vitessBatch {
				return nil
			}
			n = 0
			select {
			case batches <- append([]byte(nil), q...):
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		var err error
		switch st.Name {
		case schema.Follows.Name, schema.Followers.Name:
			byFollowee := st.Name == schema.Followers.Name
			err = d.EachFollow(func(follower, followee uint32) error {
				if byFollowee {
					follower, followee = followee, follower
				}
				return add(func(q []byte) []byte { return appendPair(q, uint64(follower), uint64(followee)) })
			})
		case schema.Messages.Name:
			var body []byte
			err = d.EachMessage(func(id uint64, author uint32) error {
				return add(func(q []byte) []byte {
					q = appendPair(q, id, uint64(author))
					q = append(q, ',')
					return appendBodyAndTime(q, &body, d, id)
				})
			})
		case schema.VitessMailbox.Name:
			var body []byte
			err = eachShapedMailbox(d, shape, func(user uint32, id uint64) error {
				return add(func(q []byte) []byte {
					q = appendPair(q, uint64(user), id)
					q = append(q, ',')
					q = strconv.AppendUint(q, uint64(d.Authors[id-1]), 10)
					q = append(q, ',')
					return appendBodyAndTime(q, &body, d, id)
				})
			})
		case schema.PullAuthors.Name:
			for a := uint32(1); a <= uint32(d.Spec.Users) && err == nil; a++ {
				if pulled(d, shape, a) {
					err = add(func(q []byte) []byte { return strconv.AppendUint(q, uint64(a), 10) })
				}
			}
		case schema.PullFollows.Name:
			err = d.EachFollow(func(follower, followee uint32) error {
				if !pulled(d, shape, followee) {
					return nil
				}
				return add(func(q []byte) []byte { return appendPair(q, uint64(follower), uint64(followee)) })
			})
		default:
			err = fmt.Errorf("no generator for table %s", st.Name)
		}
		if err == nil && n > 0 {
			select {
			case batches <- q:
			case <-gctx.Done():
				err = gctx.Err()
			}
		}
		return err
	})
	return rows, g.Wait()
}

// eachShapedMailbox calls fn with each mailbox row shape keeps, user by
// user.
func eachShapedMailbox(d *dataset.Dataset, shape registry.MailboxShape, fn func(user uint32, id uint64) error) error {
	if shape.Whole() {
		return d.EachMailbox(fn)
	}
	var mb dataset.Mailboxer
	for u := uint32(1); u <= uint32(d.Spec.Users); u++ {
		ids, _ := shapedMailbox(&mb, d, u, shape)
		for _, id := range ids {
			if err := fn(u, uint64(id)); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendBodyAndTime appends message id's body and time as SQL literals,
// separated by a comma, using *buf for the body.
func appendBodyAndTime(q []byte, buf *[]byte, d *dataset.Dataset, id uint64) []byte {
	*buf = d.AppendBody((*buf)[:0], id)
	q = appendQuoted(q, *buf)
	q = append(q, ",'"...)
	q = d.CreatedAt(id).AppendFormat(q, "2006-01-02 15:04:05")
	return append(q, '\'')
}

// appendQuoted appends s as a single-quoted SQL string literal.
func appendQuoted(q, s []byte) []byte {
	q = append(q, '\'')
	for _, c := range s {
		switch c {
		case '\'', '\\':
			q = append(q, '\\', c)
		case 0:
			q = append(q, '\\', '0')
		case '\n':
			q = append(q, '\\', 'n')
		case '\r':
			q = append(q, '\\', 'r')
		default:
			q = append(q, c)
		}
	}
	return append(q, '\'')
}

func appendPair(q []byte, a, b uint64) []byte {
	q = strconv.AppendUint(q, a, 10)
	q = append(q, ',')
	return strconv.AppendUint(q, b, 10)
}
