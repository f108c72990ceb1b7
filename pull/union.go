package pull

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strconv"

	"github.com/pushpull/pushpull/timeline"
)

// The statements of StrategyUnion and StrategyMerge are built as text with
// the ids written in as decimal literals. Every value is an integer the
// store produced itself (user ids, message ids, limits), so there is
// nothing to escape, and a statement without parameters goes out as one
// COM_QUERY: no prepare round trip, and no interpolation pass in the driver
// over a hundred placeholders.

// authorNewest is one followee and its newest message id below the cursor.
type authorNewest struct {
	author timeline.UserID
	newest uint64
}

// followeesNewest is step 1 in one statement: every followee of r.User
// with the id of their newest message below the cursor (one backward dive
// into (author_id, id) each, as a correlated subquery), newest first.
// Followees with no such message are left out. It also returns how many
// followees it looked at, the step's cost in index dives.
func (s *Store) followeesNewest(ctx context.Context, r timeline.Request) ([]authorNewest, int, error) {
	q := make([]byte, 0, 256)
	q = append(q, `SELECT f.followee_id, (SELECT m.id FROM messages m WHERE m.author_id = f.followee_id`...)
	if r.Before > 0 {
		q = append(q, ` AND m.id < `...)
		q = strconv.AppendInt(q, int64(r.Before), 10)
	}
	q = append(q, ` ORDER BY m.id DESC LIMIT 1) FROM follows f WHERE f.follower_id = `...)
	q = strconv.AppendInt(q, int64(r.User), 10)
	rows, err := s.db.QueryContext(ctx, string(q))
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []authorNewest
	followees := 0
	for rows.Next() {
		var a authorNewest
		var newest sql.Null[uint64]
		if err := rows.Scan(&a.author, &newest); err != nil {
			return nil, 0, err
		}
		followees++
		if newest.Valid {
			a.newest = newest.V
			out = append(out, a)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	slices.SortFunc(out, func(x, y authorNewest) int { return cmp.Compare(y.newest, x.newest) })
	return out, followees, nil
}

// readUnion is steps 2 to 4 of the paper's algorithm as one statement:
// after step 1, one UNION ALL with a branch per author among the r.Fetch()
// with the newest messages, each an index range scan with its own LIMIT,
// merged and cut to the page by the server. Two round trips a page, however
// many followees.
//
// The k-th of those authors (by newest message) needs only Fetch()-k+1
// messages, not Fetch(): the k-1 authors ranked above it each have a
// message newer than all of its, so at least k-1 places on the page are
// taken by others. That halves the paper's N² index entries to N²/2.
func (s *Store) readUnion(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	cands, followees, err := s.followeesNewest(ctx, r)
	if err != nil {
		return nil, err
	}
	fetch := r.Fetch()
	if len(cands) > fetch {
		cands = cands[:fetch]
	}
	if len(cands) == 0 {
		s.countPage(int64(followees))
		return nil, nil
	}
	var b pageQuery
	b.start()
	for k, c := range cands {
		b.branch(c.author, uint64(r.Before), 0, fetch-k)
	}
	msgs, branchRows, err := b.run(ctx, s.db, nil, fetch)
	if err != nil {
		return nil, err
	}
	s.countPage(int64(followees) + branchRows + int64(len(msgs)))
	return msgs, nil
}

// pageQuery builds the one statement that ends a read: a UNION ALL of
// per-author index range scans over (author_id, id), plus ids already
// known, cut to the page in a derived table and joined to messages for the
// bodies of the page's rows only. The branches select ids alone, so they
// read the secondary index without touching the table. COUNT(*) OVER ()
// is evaluated before the derived table's LIMIT, so it tells the client how
// many ids the branches produced, which is what they read.
type pageQuery struct {
	q        []byte
	branches int
}

func (b *pageQuery) start() {
	b.q = append(b.q[:0], `SELECT m.id, m.author_id, m.body, m.created_at, t.c FROM messages m JOIN (SELECT id, COUNT(*) OVER () AS c FROM (`...)
}

// branch adds "author's newest ids below below (0: no bound) and at or
// above floor, at most limit of them".
func (b *pageQuery) branch(author timeline.UserID, below, floor uint64, limit int) {
	if b.branches > 0 {
		b.q = append(b.q, ` UNION ALL `...)
	}
	b.branches++
	b.q = append(b.q, `(SELECT id FROM messages WHERE author_id = `...)
	b.q = strconv.AppendInt(b.q, int64(author), 10)
	if below > 0 {
		b.q = append(b.q, ` AND id < `...)
		b.q = strconv.AppendUint(b.q, below, 10)
	}
	if floor > 0 {
		b.q = append(b.q, ` AND id >= `...)
		b.q = strconv.AppendUint(b.q, floor, 10)
	}
	b.q = append(b.q, ` ORDER BY id DESC LIMIT `...)
	b.q = strconv.AppendInt(b.q, int64(limit), 10)
	b.q = append(b.q, ')')
}

// run adds known (ids the client already has, as a table value
// constructor: no index read) and runs the statement. It returns the page
// and how many ids the branches read. There must be at least one branch:
// the first SELECT names the derived table's column.
func (b *pageQuery) run(ctx context.Context, db *sql.DB, known []uint64, fetch int) ([]timeline.Message, int64, error) {
	if len(known) > 0 {
		b.q = append(b.q, ` UNION ALL VALUES `...)
		for i, id := range known {
			if i > 0 {
				b.q = append(b.q, ',')
			}
			b.q = append(b.q, '(')
			b.q = strconv.AppendUint(b.q, id, 10)
			b.q = append(b.q, ')')
		}
	}
	b.q = append(b.q, `) u ORDER BY id DESC LIMIT `...)
	b.q = strconv.AppendInt(b.q, int64(fetch), 10)
	b.q = append(b.q, `) t ON m.id = t.id ORDER BY m.id DESC`...)
	out, total, err := scanCounted(db.QueryContext(ctx, string(b.q)))
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
