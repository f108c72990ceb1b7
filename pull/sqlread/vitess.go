package sqlread

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strconv"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/timeline"
)

// VitessStrategy is a Strategy whose statements vtgate routes on a
// keyspace sharded by user (schema.PullVitess: follows by follower_id,
// messages by author_id): Client, VitessUnion and VitessMerge. SP cannot
// run there (vtgate runs CALL only on an unsharded keyspace or one named
// shard, and a procedure on one shard sees only that shard's rows), and
// the single statements of Union and Merge join messages to a derived
// table across shards, which vtgate does not plan. (Package recent reads
// a keyspace through VitessTables.)
type VitessStrategy interface {
	Strategy
	runsOnVitess()
}

func (Client) runsOnVitess()      {}
func (VitessUnion) runsOnVitess() {}
func (VitessMerge) runsOnVitess() {}

// VitessUnion is Union on Vitess, in two statements after the reader's
// followees (one shard): step 1 is one GROUP BY over the followees'
// messages, which vtgate sends only to the shards holding some followee
// (FolloweesNewestIn); steps 2 to 4 are one UNION ALL of per-author
// branches with Union's limits, each routed to its author's shard, cut to
// the page in the client.
type VitessUnion struct{}

// Name implements Strategy.
func (VitessUnion) Name() string { return "union" }

// NewReader implements Strategy.
func (VitessUnion) NewReader(env Env) Reader { return unionReader{Env: env, vitess: true} }

// vitessBranches is VitessUnion's second statement: a branch per
// candidate author with Union's limits, each routed to its author's shard,
// cut to the page here. It returns the page and the rows the branches read.
func vitessBranches(ctx context.Context, db *sql.DB, r timeline.Request, cands []AuthorNewest) ([]timeline.Message, int64, error) {
	fetch := r.Fetch()
	var s scans
	for k, c := range cands {
		s.add("", "id, author_id, body, created_at", c.Author, uint64(r.Before), 0, fetch-k)
	}
	rows, err := db.QueryContext(ctx, string(s.q))
	if err != nil {
		return nil, 0, err
	}
	msgs, err := mysqlx.ScanMessages(rows, fetch*2)
	if err != nil {
		return nil, 0, err
	}
	read := int64(len(msgs))
	return newestN(msgs, fetch), read, nil
}

// VitessMerge is Merge on Vitess, in two statements after the reader's
// followees: step 1 as in VitessUnion, then, from the Fetch()-th newest
// head as the floor (see Merge), one statement for the messages of the
// authors at or above it between the floor and the cursor, ORDER BY id
// DESC LIMIT Fetch(). vtgate sends it only to those authors' shards, each
// returns its newest Fetch(), and vtgate merges them. With fewer than
// Fetch() followees who posted there is no floor: the statement reads
// every message of theirs below the cursor.
type VitessMerge struct{}

// Name implements Strategy.
func (VitessMerge) Name() string { return "merge" }

// NewReader implements Strategy.
func (VitessMerge) NewReader(env Env) Reader { return vitessMergeReader(env) }

type vitessMergeReader Env

func (m vitessMergeReader) Read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	cands, followees, err := FolloweesNewestIn(ctx, m.DB, r)
	if err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		m.Pages.Add(int64(followees))
		return nil, nil
	}
	fetch := r.Fetch()
	var floor uint64
	if len(cands) >= fetch {
		cands = cands[:fetch]
		floor = cands[fetch-1].Newest
	}
	q := make([]byte, 0, 160+21*len(cands))
	q = append(q, `SELECT id, author_id, body, created_at FROM messages WHERE author_id IN (`...)
	q = appendAuthors(q, cands)
	q = append(q, ')')
	if floor > 0 {
		q = append(q, ` AND id >= `...)
		q = strconv.AppendUint(q, floor, 10)
	}
	if r.Before > 0 {
		q = append(q, ` AND id < `...)
		q = strconv.AppendInt(q, int64(r.Before), 10)
	}
	q = append(q, ` ORDER BY id DESC LIMIT `...)
	q = strconv.AppendInt(q, int64(fetch), 10)
	rows, err := m.DB.QueryContext(ctx, string(q))
	if err != nil {
		return nil, err
	}
	msgs, err := mysqlx.ScanMessages(rows, fetch)
	if err != nil {
		return nil, err
	}
	m.Pages.Add(int64(followees + len(msgs)))
	return msgs, nil
}

// VitessTables are the pull model's tables on a Vitess keyspace sharded by
// user (schema.PullVitess), where messages lie on their authors' shards:
// a message is looked up by author and id, so that vtgate sends the
// statement to the authors' shards alone, and PageQuery's join to a
// derived table, which vtgate does not plan across shards, becomes a
// UNION ALL of per-author branches cut to the page here.
type VitessTables struct{}

// Messages implements Tables. Message ids are unique, so the two IN lists
// select exactly the messages asked for that are by one of authors.
func (VitessTables) Messages(ctx context.Context, db *sql.DB, ids []uint64, authors []timeline.UserID) ([]timeline.Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q := make([]byte, 0, 128+21*(len(authors)+len(ids)))
	q = append(q, `SELECT id, author_id, body, created_at FROM messages WHERE author_id IN (`...)
	q = mysqlx.AppendList(q, distinct(authors))
	q = append(q, `) AND id IN (`...)
	q = mysqlx.AppendList(q, ids)
	q = append(q, `) ORDER BY id DESC`...)
	rows, err := db.QueryContext(ctx, string(q))
	if err != nil {
		return nil, err
	}
	return mysqlx.ScanMessages(rows, len(ids))
}

// Page implements Tables in one statement: b's branches, each routed to
// its author's shard, and a last branch for the known ids as Messages
// reads them, all with their bodies, cut to the page here. The rows that
// are not known ones are what the branches read.
func (VitessTables) Page(ctx context.Context, db *sql.DB, b *PageQuery, known []uint64, authors []timeline.UserID, fetch int) ([]timeline.Message, int64, error) {
	const cols = "id, author_id, body, created_at"
	s := b.scans("", cols)
	if len(known) > 0 {
		s.q = append(s.q, ` UNION ALL (SELECT `+cols+` FROM messages WHERE author_id IN (`...)
		s.q = mysqlx.AppendList(s.q, distinct(authors))
		s.q = append(s.q, `) AND id IN (`...)
		s.q = mysqlx.AppendList(s.q, known)
		s.q = append(s.q, `))`...)
	}
	rows, err := db.QueryContext(ctx, string(s.q))
	if err != nil {
		return nil, 0, err
	}
	msgs, err := mysqlx.ScanMessages(rows, fetch+len(known))
	if err != nil {
		return nil, 0, err
	}
	read := int64(len(msgs))
	for _, m := range msgs {
		if _, ok := slices.BinarySearchFunc(known, uint64(m.ID), NewestFirst); ok {
			read--
		}
	}
	return newestN(msgs, fetch), read, nil
}

// Merge implements Tables.
func (VitessTables) Merge() Strategy { return VitessMerge{} }

// distinct returns a copy of ids, sorted, each once.
func distinct(ids []timeline.UserID) []timeline.UserID {
	return slices.Compact(slices.Sorted(slices.Values(ids)))
}

// FolloweesNewestIn is FolloweesNewest for Vitess, where follows and
// messages are sharded by different users: the followees from the
// reader's shard, then one GROUP BY author_id over their messages below
// the cursor, which vtgate sends to the shards holding them and each
// answers whole (the group key is the shard key).
func FolloweesNewestIn(ctx context.Context, db *sql.DB, r timeline.Request) ([]AuthorNewest, int, error) {
	followees, err := Followees(ctx, db, r.User)
	if err != nil || len(followees) == 0 {
		return nil, 0, err
	}
	q := make([]byte, 0, 128+21*len(followees))
	q = append(q, `SELECT author_id, MAX(id) FROM messages WHERE author_id IN (`...)
	q = mysqlx.AppendList(q, followees)
	q = append(q, ')')
	if r.Before > 0 {
		q = append(q, ` AND id < `...)
		q = strconv.AppendInt(q, int64(r.Before), 10)
	}
	q = append(q, ` GROUP BY author_id`...)
	rows, err := db.QueryContext(ctx, string(q))
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []AuthorNewest
	for rows.Next() {
		var a AuthorNewest
		if err := rows.Scan(&a.Author, &a.Newest); err != nil {
			return nil, 0, err
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	slices.SortFunc(out, ByNewest)
	return out, len(followees), nil
}

func appendAuthors(q []byte, cands []AuthorNewest) []byte {
	authors := make([]timeline.UserID, len(cands))
	for i, c := range cands {
		authors[i] = c.Author
	}
	return mysqlx.AppendList(q, authors)
}

// newestN sorts msgs newest first and keeps n of them.
func newestN(msgs []timeline.Message, n int) []timeline.Message {
	slices.SortFunc(msgs, func(x, y timeline.Message) int { return cmp.Compare(y.ID, x.ID) })
	if len(msgs) > n {
		msgs = msgs[:n]
	}
	return msgs
}
