package sqlread

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strconv"

	"github.com/pushpull/pushpull/timeline"
)

// Merge is a k-way merge over the followees' (author_id, id) indexes,
// newest first, that stops reading an author as soon as nothing more of
// theirs can reach the page: about N + followees index entries per page
// where the paper's algorithm reads N² + followees, in two round trips in
// the common case.
//
// Step 1 (FolloweesNewest) gives the heads of the merge. If at least
// Fetch() followees have one, the Fetch()-th largest head is a floor: those
// Fetch() authors have a message at or above it each, so the page lies at
// or above the floor, and only the authors whose head is at or above it can
// be on it. One statement then reads the ids of those authors between the
// floor and the cursor in one multi-range scan (one query block: a UNION of
// per-author branches costs the server about 20µs of parsing and planning
// per branch, more than the scans themselves), keeps the newest Fetch() and
// joins their bodies.
//
// That scan has no per-author LIMIT, so it is capped (LIMIT without ORDER
// BY stops reading there). A page that hits the cap, or a reader with fewer
// than Fetch() followees who have messages, is read in small batches
// instead (mergeRounds), which bound every author by its rank.
//
// Package recent falls back to Merge when memcached fails.
type Merge struct{}

// Name implements Strategy.
func (Merge) Name() string { return "merge" }

// NewReader implements Strategy.
func (Merge) NewReader(env Env) Reader { return mergeReader(env) }

type mergeReader Env

// mergeScanCap times Fetch() is the most ids the range scan reads before
// it gives the page to mergeRounds. About 2 N is typical.
const mergeScanCap = 4

func (m mergeReader) Read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	cands, followees, err := FolloweesNewest(ctx, m.DB, r)
	if err != nil {
		return nil, err
	}
	rows := int64(followees)
	fetch := r.Fetch()
	if len(cands) < fetch {
		return m.mergeRounds(ctx, r, cands, nil, rows)
	}
	floor := cands[fetch-1].Newest
	limit := mergeScanCap * fetch
	q := make([]byte, 0, 320+21*fetch)
	q = append(q, `SELECT m.id, m.author_id, m.body, m.created_at, t.c FROM messages m JOIN (SELECT id, COUNT(*) OVER () AS c FROM (SELECT id FROM messages WHERE author_id IN (`...)
	for i, c := range cands[:fetch] {
		if i > 0 {
			q = append(q, ',')
		}
		q = strconv.AppendInt(q, int64(c.Author), 10)
	}
	q = append(q, `) AND id >= `...)
	q = strconv.AppendUint(q, floor, 10)
	if r.Before > 0 {
		q = append(q, ` AND id < `...)
		q = strconv.AppendInt(q, int64(r.Before), 10)
	}
	q = append(q, ` LIMIT `...)
	q = strconv.AppendInt(q, int64(limit), 10)
	q = append(q, `) u ORDER BY id DESC LIMIT `...)
	q = strconv.AppendInt(q, int64(fetch), 10)
	q = append(q, `) t ON m.id = t.id ORDER BY m.id DESC`...)
	msgs, scanned, err := scanCounted(m.DB.QueryContext(ctx, string(q)))
	if err != nil {
		return nil, err
	}
	rows += scanned + int64(len(msgs))
	if scanned >= int64(limit) {
		// Capped: the newest Fetch() of what was read need not be the
		// newest Fetch() in the range.
		return m.mergeRounds(ctx, r, cands, nil, rows)
	}
	m.Pages.Add(rows)
	return msgs, nil
}

// NewestFirst orders ids from the largest down.
func NewestFirst(x, y uint64) int { return cmp.Compare(y, x) }

// MergeOver is Merge's read of a page over heads, the authors to pull with
// their newest id below r.Before (as FolloweesNewest returns them: sorted
// ByNewest, none without a message), and given, ids read already from
// another source that holds every one of its own that can make the page
// (a mailbox's newest Fetch() below the cursor, say), distinct and newest
// first. The page is the newest Fetch() of both, each id once, read with
// mergeRounds' early stop: when given ids are many and new, an author
// whose head is below the Fetch()-th is not read at all, and when they are
// few, the authors are read by rank. Model hybrid reads its pulled
// authors this way.
func MergeOver(ctx context.Context, db *sql.DB, r timeline.Request, heads []AuthorNewest, given []uint64) ([]timeline.Message, error) {
	return mergeReader{DB: db}.mergeRounds(ctx, r, heads, given, int64(len(heads)))
}

// mergeRounds is the merge for the pages Read's single scan cannot serve,
// with cands from step 1, given ids known from elsewhere (see MergeOver;
// nil for a pull read) and rows the rows read so far:
//
//  1. While fewer than Fetch() ids are known, one batch round (a UNION ALL
//     of per-author LIMIT scans, ids only) takes the next few ids of every
//     author that may have more: an equal share of what is missing.
//  2. T, the Fetch()-th largest known id, is a floor as in Read: an
//     author whose lowest known id is at or below it is finished. One last
//     statement reads each unfinished author's ids between T and its
//     lowest known id, adds the known ids as literals, keeps the newest
//     Fetch(), and joins their bodies.
//
// Every scan is limited by the author's rank: the author with the k-th
// newest head (from 0) can place at most Fetch()-k messages on the page,
// since the k authors above it each have a message newer than all of its.
// So no author costs more than N, however much it posted.
func (m mergeReader) mergeRounds(ctx context.Context, r timeline.Request, cands []AuthorNewest, given []uint64, rows int64) ([]timeline.Message, error) {
	fetch := r.Fetch()
	if len(cands) == 0 {
		m.Pages.Add(rows)
		if len(given) == 0 {
			return nil, nil
		}
		return MessagesByID(ctx, m.DB, given[:min(fetch, len(given))])
	}
	// An author's id may be among the given ones too (a mailbox holds
	// the posts fanned out before the author was pulled): such an id
	// is known once.
	var isGiven map[uint64]bool
	if len(given) > 0 {
		isGiven = make(map[uint64]bool, len(given))
		for _, id := range given {
			isGiven[id] = true
		}
	}
	fresh := func(ids []uint64) (n int) {
		for _, id := range ids {
			if !isGiven[id] {
				n++
			}
		}
		return n
	}

	// Merge state per author, in rank order (newest message first).
	type head struct {
		author timeline.UserID
		known  []uint64 // ids read so far, newest first
		done   bool     // nothing below known[len-1] can reach the page
	}
	heads := make([]head, len(cands))
	known := len(given)
	for k, c := range cands {
		heads[k] = head{author: c.Author, known: []uint64{c.Newest}, done: fetch-k <= 1}
		known += fresh(heads[k].known)
	}

	// 1. Batch rounds until Fetch() ids are known. Each asks every
	// live author for an equal share of what is missing.
	for known < fetch {
		live := 0
		for _, h := range heads {
			if !h.done {
				live++
			}
		}
		if live == 0 {
			break
		}
		share := (fetch - known + live - 1) / live
		var scans AuthorScans
		scans.Grow(live)
		limits := make(map[timeline.UserID]int, live)
		for k := range heads {
			h := &heads[k]
			if h.done {
				continue
			}
			limit := min(share, fetch-k-len(h.known))
			limits[h.author] = limit
			scans.Add(h.author, h.known[len(h.known)-1], limit)
		}
		got, err := scans.Run(ctx, m.DB)
		if err != nil {
			return nil, err
		}
		for k := range heads {
			h := &heads[k]
			if h.done {
				continue
			}
			ids := got[h.author]
			slices.SortFunc(ids, NewestFirst)
			h.known = append(h.known, ids...)
			known += fresh(ids)
			rows += int64(len(ids))
			// Fewer than asked: the author has nothing older. As many as
			// the rank allows: nothing older can be on the page.
			if len(ids) < limits[h.author] || len(h.known) >= fetch-k {
				h.done = true
			}
		}
	}

	// 2. The floor, and the last statement.
	all := make([]uint64, 0, known+len(given))
	all = append(all, given...)
	for _, h := range heads {
		all = append(all, h.known...)
	}
	slices.SortFunc(all, NewestFirst)
	all = slices.Compact(all)
	var floor uint64
	if len(all) >= fetch {
		floor = all[fetch-1]
		all = all[:fetch]
	}
	var b PageQuery
	if len(given) > 0 {
		b.Distinct()
	}
	for k, h := range heads {
		low := h.known[len(h.known)-1]
		if h.done || low <= floor || floor == 0 {
			// floor == 0: fewer than Fetch() ids exist, and the
			// batch rounds stopped because every author is done.
			continue
		}
		if limit := fetch - k - len(h.known); limit > 0 {
			b.Branch(h.author, low, floor, limit)
		}
	}
	var msgs []timeline.Message
	var err error
	if b.Branches() == 0 {
		msgs, err = MessagesByID(ctx, m.DB, all)
		rows += int64(len(msgs))
	} else {
		var branchRows int64
		msgs, branchRows, err = b.Run(ctx, m.DB, all, fetch)
		rows += branchRows + int64(len(msgs))
	}
	if err != nil {
		return nil, err
	}
	m.Pages.Add(rows)
	return msgs, nil
}
