// Package sqlread holds the pull model's stateless read strategies: each
// computes a page from the follows and messages tables alone, so any number
// of them can read one database and none needs anything from its writers.
//
// The algorithm they share (Oku, 2008) reads a home timeline from the
// follow graph:
//
//  1. find each followee's newest message id below the cursor;
//  2. keep the N followees whose newest ids are largest;
//  3. take the N newest messages of each of them;
//  4. merge, and keep the newest N.
//
// The global N newest messages come from at most N authors, and each of
// those authors' newest message is at least as new as the ones on the page,
// so steps 2 and 3 lose nothing, and a read touches at most followees + N²
// index entries however large the tables grow. The strategies differ in
// where it runs: SP, Client, Naive, Union and Merge.
//
// The same pieces (Merge, MergeOver, MessagesByID, the Vitess tables) are
// how the designs between push and pull pull the part of a page their
// mailboxes leave out: push-capped and push-active below a mailbox's floor,
// hybrid for celebrities, selective for the edges it pulls; push@vitess
// fetches its page's bodies with them.
//
// Statements that carry many ids are built as text with the ids written in
// as decimal literals. Every value is an integer the store produced itself
// (user ids, message ids, limits), so there is nothing to escape, and a
// statement without parameters goes out as one COM_QUERY: no prepare round
// trip, and no interpolation pass in the driver over a hundred placeholders.
package sqlread

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/timeline"
)

// Reader reads the messages of one page: Fetch() of them at most, newest
// first. It is the interface between the pull store and a read strategy;
// the strategies of package recent implement it too.
type Reader interface {
	Read(ctx context.Context, r timeline.Request) ([]timeline.Message, error)
}

// Env is what a strategy reads through.
type Env struct {
	DB *sql.DB
	// Pages counts the pages of the strategies that count the rows they
	// read (Union, Merge, and package recent's).
	Pages *PageCount
}

// Strategy is a stateless read strategy with its own settings.
type Strategy interface {
	// Name is the strategy's name ("sp", "client", ...).
	Name() string
	// NewReader returns the strategy's reader on env.
	NewReader(env Env) Reader
}

// PageCount counts the pages a strategy served and the index entries and
// rows they made the database examine, as far as the strategy can tell: one
// per followee for step 1, each row a batch or branch returned or skipped
// over, and each message row fetched for its body. Its methods are safe for
// concurrent use.
type PageCount struct {
	pages, rows atomic.Int64
}

// Add records one page that read rows rows. A nil PageCount counts
// nothing.
func (c *PageCount) Add(rows int64) {
	if c == nil {
		return
	}
	c.pages.Add(1)
	c.rows.Add(rows)
}

// Pages returns the number of pages counted.
func (c *PageCount) Pages() int64 { return c.pages.Load() }

// RowsRead returns the rows those pages read.
func (c *PageCount) RowsRead() int64 { return c.rows.Load() }

// SP runs the whole algorithm in the server, as the paper does: stored
// procedures, one CALL and one round trip per page.
type SP struct{}

// Name implements Strategy.
func (SP) Name() string { return "sp" }

// NewReader implements Strategy.
func (SP) NewReader(env Env) Reader {
	return statement{env.DB, `CALL pull_timeline_newest(?, ?)`, `CALL pull_timeline_before(?, ?, ?)`}
}

// Naive is one JOIN ... ORDER BY id DESC LIMIT n: the obvious query, which
// has to look at every message of every followee below the cursor before
// it can sort them, so its cost grows with everything the followees ever
// posted. It is the baseline that shows why the others exist.
type Naive struct{}

// Name implements Strategy.
func (Naive) Name() string { return "naive" }

// NewReader implements Strategy.
func (Naive) NewReader(env Env) Reader {
	return statement{env.DB,
		`SELECT m.id, m.author_id, m.body, m.created_at
		 FROM follows f JOIN messages m ON m.author_id = f.followee_id
		 WHERE f.follower_id = ?
		 ORDER BY m.id DESC LIMIT ?`,
		`SELECT m.id, m.author_id, m.body, m.created_at
		 FROM follows f JOIN messages m ON m.author_id = f.followee_id
		 WHERE f.follower_id = ? AND m.id < ?
		 ORDER BY m.id DESC LIMIT ?`}
}

// statement reads a page with one statement returning its messages: newest
// for a first page, with the arguments (user, fetch), and before for a
// page below a cursor, with (user, before, fetch).
type statement struct {
	db             *sql.DB
	newest, before string
}

func (st statement) Read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	var rows *sql.Rows
	var err error
	if r.Before == 0 {
		rows, err = st.db.QueryContext(ctx, st.newest, r.User, r.Fetch())
	} else {
		rows, err = st.db.QueryContext(ctx, st.before, r.User, r.Before, r.Fetch())
	}
	if err != nil {
		return nil, err
	}
	return mysqlx.ScanMessages(rows, r.Fetch())
}

// AuthorNewest is an author and the id of their newest message (below a
// cursor, or known to an index).
type AuthorNewest struct {
	Author timeline.UserID
	Newest uint64
}

// ByNewest orders pairs newest first.
func ByNewest(x, y AuthorNewest) int { return cmp.Compare(y.Newest, x.Newest) }

// Followees returns the users user follows.
func Followees(ctx context.Context, db *sql.DB, user timeline.UserID) ([]timeline.UserID, error) {
	rows, err := db.QueryContext(ctx, `SELECT followee_id FROM follows WHERE follower_id = ?`, user)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []timeline.UserID
	for rows.Next() {
		var id timeline.UserID
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// FolloweesNewest is step 1 in one statement: every followee of r.User
// with the id of their newest message below the cursor (one backward dive
// into (author_id, id) each, as a correlated subquery), newest first.
// Followees with no such message are left out. It also returns how many
// followees it looked at, the step's cost in index dives.
func FolloweesNewest(ctx context.Context, db *sql.DB, r timeline.Request) ([]AuthorNewest, int, error) {
	q := make([]byte, 0, 256)
	q = append(q, `SELECT f.followee_id, (SELECT m.id FROM messages m WHERE m.author_id = f.followee_id`...)
	if r.Before > 0 {
		q = append(q, ` AND m.id < `...)
		q = strconv.AppendInt(q, int64(r.Before), 10)
	}
	q = append(q, ` ORDER BY m.id DESC LIMIT 1) FROM follows f WHERE f.follower_id = `...)
	q = strconv.AppendInt(q, int64(r.User), 10)
	rows, err := db.QueryContext(ctx, string(q))
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []AuthorNewest
	followees := 0
	for rows.Next() {
		var a AuthorNewest
		var newest sql.Null[uint64]
		if err := rows.Scan(&a.Author, &newest); err != nil {
			return nil, 0, err
		}
		followees++
		if newest.Valid {
			a.Newest = newest.V
			out = append(out, a)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	slices.SortFunc(out, ByNewest)
	return out, followees, nil
}

// Tables is how a reader that has a page's ids in hand (package recent's)
// reads the rest from the pull model's tables, which lie differently on
// one database (MariaDBTables) and on a Vitess keyspace sharded by user
// (VitessTables).
type Tables interface {
	// Messages returns the messages with the given ids, newest first;
	// authors[i] is the author of ids[i] as the caller believes. A
	// message by none of authors may be left out.
	Messages(ctx context.Context, db *sql.DB, ids []uint64, authors []timeline.UserID) ([]timeline.Message, error)
	// Page runs b with known ids (newest first, by authors as for
	// Messages) and returns the newest fetch messages of both, newest
	// first, and how many rows b's branches read.
	Page(ctx context.Context, db *sql.DB, b *PageQuery, known []uint64, authors []timeline.UserID, fetch int) ([]timeline.Message, int64, error)
	// Merge is the stateless strategy that reads a page from these
	// tables alone: Merge or VitessMerge.
	Merge() Strategy
}

// MariaDBTables are the pull model's tables in one database
// (schema.Pull): a message is found by its primary key alone.
type MariaDBTables struct{}

// Messages implements Tables: MessagesByID.
func (MariaDBTables) Messages(ctx context.Context, db *sql.DB, ids []uint64, _ []timeline.UserID) ([]timeline.Message, error) {
	return MessagesByID(ctx, db, ids)
}

// Page implements Tables: PageQuery.Run.
func (MariaDBTables) Page(ctx context.Context, db *sql.DB, b *PageQuery, known []uint64, _ []timeline.UserID, fetch int) ([]timeline.Message, int64, error) {
	return b.Run(ctx, db, known, fetch)
}

// Merge implements Tables.
func (MariaDBTables) Merge() Strategy { return Merge{} }
