package reconcile

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
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
// Each column is one query, an ordered range of its index of at most limit
// ids, and the lists are merged here: on a keyspace sharded by user, where
// no shard holds the users in order, each is one ordered scatter per batch
// of users (a shard returns at most limit ids), never one per user.
func UsersIn(ctx context.Context, q Querier, after timeline.UserID, limit int, columns ...string) ([]timeline.UserID, error) {
	var us []timeline.UserID
	for _, c := range columns {
		table, column, ok := strings.Cut(c, ".")
		if !ok {
			return nil, fmt.Errorf("users: column %q is not table.column", c)
		}
		err := ScanInts(ctx, q, fmt.Sprintf("SELECT DISTINCT %s FROM %s WHERE %s > ? ORDER BY %s LIMIT ?", column, table, column, column), 1,
			func(v []int64) { us = append(us, timeline.UserID(v[0])) }, after, limit)
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(us)
	us = slices.Compact(us)
	return us[:min(limit, len(us))], nil
}

// Exec runs a repair's statement in tx and returns the rows it changed.
func Exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (int, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
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

// OwnedPage is how many rows ScanOwned asks for at a time: below the
// 10,000 rows a Vitess tablet returns to one query by default.
const OwnedPage = 5000

// OwnedChunk is how many owners one of ScanOwned's queries names.
const OwnedChunk = 500

// ScanOwned reads the rows of owners from table in (owner, key) order,
// columns being "owner, key, ..." (the owner and key columns first, both
// integers), and calls scan on each; scan returns the row's owner and
// key. filter, if not "", is a condition the rows must meet besides. The owners go OwnedChunk to a query and the rows OwnedPage to a
// page, each page starting after the last (owner, key) read, so that no
// query returns more than OwnedPage rows. Each query names its owners in
// an IN list on the owner column: on a keyspace sharded by owner, vtgate
// sends it to the owners' shards alone.
func ScanOwned(ctx context.Context, q Querier, columns, table, filter string, owners []timeline.UserID, scan func(*sql.Rows) (owner, key int64, err error)) (rows int64, err error) {
	owner, rest, _ := strings.Cut(columns, ",")
	key, _, _ := strings.Cut(rest, ",")
	owner, key = strings.TrimSpace(owner), strings.TrimSpace(key)
	owners = slices.Clone(owners)
	slices.Sort(owners)
	owners = slices.Compact(owners)
	if filter != "" {
		filter = " AND " + filter
	}
	query := func(in string) string {
		return fmt.Sprintf("SELECT %s FROM %s WHERE %s IN (%s)%s AND (%s > ? OR (%s = ? AND %s > ?)) ORDER BY %s, %s LIMIT %d",
			columns, table, owner, in, filter, owner, owner, key, owner, key, OwnedPage)
	}
	for chunk := range slices.Chunk(owners, OwnedChunk) {
		in := string(mysqlx.AppendList(nil, chunk))
		var lastOwner, lastKey int64
		for {
			n, err := scanPage(ctx, q, query(in), scan, &lastOwner, &lastKey)
			rows += int64(n)
			if err != nil {
				return rows, err
			}
			if n < OwnedPage {
				break
			}
		}
	}
	return rows, nil
}

// scanPage runs one page of ScanOwned after (*lastOwner, *lastKey), and
// moves them to its last row.
func scanPage(ctx context.Context, q Querier, query string, scan func(*sql.Rows) (int64, int64, error), lastOwner, lastKey *int64) (int, error) {
	rows, err := q.QueryContext(ctx, query, *lastOwner, *lastOwner, *lastKey)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		o, k, err := scan(rows)
		if err != nil {
			return n, err
		}
		n++
		*lastOwner, *lastKey = o, k
	}
	return n, rows.Err()
}
