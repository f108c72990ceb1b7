package sqlread

import (
	"context"
	"database/sql"
	"slices"
	"strconv"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/timeline"
)

// scans builds a UNION ALL of per-author index range scans of
// (author_id, id), each newest first with its own LIMIT: the one way this
// module asks for several authors' newest ids at once.
type scans struct {
	q []byte
	n int
}

// add appends a scan of cols over "author's ids below below (0: no bound)
// and at or above floor (0: none), at most limit of them", after head if it
// is the first.
func (s *scans) add(head, cols string, author timeline.UserID, below, floor uint64, limit int) {
	if s.n == 0 {
		s.q = append(s.q, head...)
	} else {
		s.q = append(s.q, ` UNION ALL `...)
	}
	s.n++
	s.q = append(s.q, `(SELECT `...)
	s.q = append(s.q, cols...)
	s.q = append(s.q, ` FROM messages WHERE author_id = `...)
	s.q = strconv.AppendInt(s.q, int64(author), 10)
	if below > 0 {
		s.q = append(s.q, ` AND id < `...)
		s.q = strconv.AppendUint(s.q, below, 10)
	}
	if floor > 0 {
		s.q = append(s.q, ` AND id >= `...)
		s.q = strconv.AppendUint(s.q, floor, 10)
	}
	s.q = append(s.q, ` ORDER BY id DESC LIMIT `...)
	s.q = strconv.AppendInt(s.q, int64(limit), 10)
	s.q = append(s.q, ')')
}

// AuthorScans is one statement that reads several authors' newest ids.
// The zero value is empty and ready to use.
type AuthorScans struct{ s scans }

// Grow makes room for n more scans.
func (b *AuthorScans) Grow(n int) { b.s.q = slices.Grow(b.s.q, 100*n) }

// Add asks for author's newest ids below below (0: no bound), at most
// limit of them.
func (b *AuthorScans) Add(author timeline.UserID, below uint64, limit int) {
	b.s.add("", "author_id, id", author, below, 0, limit)
}

// AddAbove asks for author's newest ids above above (0: any), at most
// limit of them.
func (b *AuthorScans) AddAbove(author timeline.UserID, above uint64, limit int) {
	b.s.add("", "author_id, id", author, 0, above+1, limit)
}

// Run runs the statement and returns the ids by author, in no particular
// order. There must be at least one scan.
func (b *AuthorScans) Run(ctx context.Context, db *sql.DB) (map[timeline.UserID][]uint64, error) {
	rows, err := db.QueryContext(ctx, string(b.s.q))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[timeline.UserID][]uint64)
	for rows.Next() {
		var a timeline.UserID
		var id uint64
		if err := rows.Scan(&a, &id); err != nil {
			return nil, err
		}
		out[a] = append(out[a], id)
	}
	return out, rows.Err()
}

// PageQuery builds the one statement that ends a read: per-author scans
// (ids alone, so they read the secondary index without touching the
// table), plus ids already known, cut to the page in a derived table and
// joined to messages for the bodies of the page's rows only. COUNT(*) OVER
// () is evaluated before the derived table's LIMIT, so it tells the client
// how many ids the scans produced, which is what they read. The zero value
// is empty and ready to use. (On Vitess, VitessTables.Page runs the same
// branches as a statement vtgate plans.)
type PageQuery struct {
	branches []pageBranch
	distinct bool
}

// Distinct makes the statement keep each id once, when branches may read
// ids that are among the known ones too (see MergeOver); without it, ids
// are taken to be distinct, which a pull read's are. VitessTables.Page
// ignores it: no model on Vitess merges a second source.
func (b *PageQuery) Distinct() { b.distinct = true }

// pageBranch is one scan of a PageQuery: author's newest ids below below
// (0: no bound) and at or above floor (0: none), at most limit of them.
type pageBranch struct {
	author       timeline.UserID
	below, floor uint64
	limit        int
}

const pageHead = `SELECT m.id, m.author_id, m.body, m.created_at, t.c FROM messages m JOIN (SELECT id, COUNT(*) OVER () AS c FROM (`

// Branch adds "author's newest ids below below (0: no bound) and at or
// above floor (0: none), at most limit of them".
func (b *PageQuery) Branch(author timeline.UserID, below, floor uint64, limit int) {
	b.branches = append(b.branches, pageBranch{author, below, floor, limit})
}

// Branches returns how many branches were added.
func (b *PageQuery) Branches() int { return len(b.branches) }

// scans returns the branches as scans of cols after head.
func (b *PageQuery) scans(head, cols string) scans {
	var s scans
	s.q = make([]byte, 0, len(head)+120*len(b.branches))
	for _, br := range b.branches {
		s.add(head, cols, br.author, br.below, br.floor, br.limit)
	}
	return s
}

// Run adds known (ids the client already has, as a table value
// constructor: no index read) and runs the statement. It returns the page
// and how many ids the branches read. There must be at least one branch:
// the first SELECT names the derived table's column.
func (b *PageQuery) Run(ctx context.Context, db *sql.DB, known []uint64, fetch int) ([]timeline.Message, int64, error) {
	q := b.scans(pageHead, "id").q
	if len(known) > 0 {
		if b.distinct {
			// A UNION DISTINCT drops the duplicates of every
			// branch before it too.
			q = append(q, ` UNION VALUES `...)
		} else {
			q = append(q, ` UNION ALL VALUES `...)
		}
		for i, id := range known {
			if i > 0 {
				q = append(q, ',')
			}
			q = append(q, '(')
			q = strconv.AppendUint(q, id, 10)
			q = append(q, ')')
		}
	}
	q = append(q, `) u ORDER BY id DESC LIMIT `...)
	q = strconv.AppendInt(q, int64(fetch), 10)
	q = append(q, `) t ON m.id = t.id ORDER BY m.id DESC`...)
	out, total, err := scanCounted(db.QueryContext(ctx, string(q)))
	if err != nil || len(out) == 0 {
		return out, 0, err
	}
	return out, total - int64(len(known)), nil
}

// scanCounted reads (id, author_id, body, created_at, c) rows, c being
// the same count on every row; 0 if there are no rows.
func scanCounted(rows *sql.Rows, err error) ([]timeline.Message, int64, error) {
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := make([]timeline.Message, 0, timeline.DefaultLimit+1)
	var count int64
	for rows.Next() {
		var m timeline.Message
		if err := rows.Scan(&m.ID, &m.Author, &m.Body, &m.CreatedAt, &count); err != nil {
			return nil, 0, err
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return out, count, nil
}

// MessagesByID returns the messages with the given ids, newest first: one
// primary-key lookup each.
func MessagesByID(ctx context.Context, db *sql.DB, ids []uint64) ([]timeline.Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q := make([]byte, 0, 96+21*len(ids))
	q = append(q, `SELECT id, author_id, body, created_at FROM messages WHERE id IN (`...)
	q = mysqlx.AppendList(q, ids)
	q = append(q, `) ORDER BY id DESC`...)
	rows, err := db.QueryContext(ctx, string(q))
	if err != nil {
		return nil, err
	}
	return mysqlx.ScanMessages(rows, len(ids))
}
