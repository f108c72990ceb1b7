package reconcile

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/timeline"
)

// Querier is what SQL checks read through: a pool or a transaction.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// UsersIn is Checker.Users over SQL columns of user ids ("follows.follower_id",
// "mailbox.user_id"), each the first column of an index of its table: the
// next limit distinct ids above after that any of them holds, ascending.
func UsersIn(ctx context.Context, q Querier, after timeline.UserID, limit int, columns ...string) ([]timeline.UserID, error) {
	parts := make([]string, len(columns))
	args := make([]any, 0, 2*len(columns)+1)
	for i, c := range columns {
		table, column, ok := strings.Cut(c, ".")
		if !ok {
			return nil, fmt.Errorf("users: column %q is not table.column", c)
		}
		parts[i] = fmt.Sprintf("(SELECT DISTINCT %s AS u FROM %s WHERE %s > ? ORDER BY %s LIMIT ?)", column, table, column, column)
		args = append(args, after, limit)
	}
	args = append(args, limit)
	rows, err := q.QueryContext(ctx, strings.Join(parts, " UNION ")+" ORDER BY u LIMIT ?", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var us []timeline.UserID
	for rows.Next() {
		var u timeline.UserID
		if err := rows.Scan(&u); err != nil {
			return nil, err
		}
		us = append(us, u)
	}
	return us, rows.Err()
}

// ScanInts runs query, whose rows are n integers, and calls f with each
// row (the slice is reused).
func ScanInts(ctx context.Context, q Querier, query string, n int, f func([]int64), args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	v := make([]int64, n)
	ptrs := make([]any, n)
	for i := range v {
		ptrs[i] = &v[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		f(v)
	}
	return rows.Err()
}

// Record is what ReadRecord read of a batch of users: whom each follows,
// and the items of each one's view that the record gives.
type Record struct {
	Follows map[[2]timeline.UserID]bool // (follower, followee)
	Of      map[timeline.UserID][]int64
	Rows    int64
}

// ReadRecord reads, in one read-only transaction, the follows of users
// and the (user, item) rows of query, whose %s is the list of users: what
// a checker of a view kept outside the database compares it with.
func ReadRecord(ctx context.Context, db *sql.DB, users []timeline.UserID, query string) (Record, error) {
	var rec Record
	err := mysqlx.InTxOptions(ctx, db, &sql.TxOptions{ReadOnly: true}, func(tx *sql.Tx) error {
		rec = Record{Follows: map[[2]timeline.UserID]bool{}, Of: map[timeline.UserID][]int64{}}
		in := string(mysqlx.AppendList(nil, users))
		if err := ScanInts(ctx, tx, `SELECT follower_id, followee_id FROM follows WHERE follower_id IN (`+in+`)`, 2, func(v []int64) {
			rec.Rows++
			rec.Follows[[2]timeline.UserID{timeline.UserID(v[0]), timeline.UserID(v[1])}] = true
		}); err != nil {
			return err
		}
		return ScanInts(ctx, tx, fmt.Sprintf(query, in), 2, func(v []int64) {
			rec.Rows++
			rec.Of[timeline.UserID(v[0])] = append(rec.Of[timeline.UserID(v[0])], v[1])
		})
	})
	return rec, err
}
