package pull

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/timeline"
)

// readClient runs the algorithm from the client. Steps 1 and 3 are one
// small indexed query per author, sent concurrently (at most s.concurrency
// at a time) so that their round trips overlap.
func (s *Store) readClient(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	followees, err := s.followees(ctx, r.User)
	if err != nil || len(followees) == 0 {
		return nil, err
	}
	before := uint64(r.Before)
	if before == 0 {
		before = ^uint64(0)
	}

	// Step 1: each followee's newest id below the cursor. ORDER BY id
	// DESC LIMIT 1 is a single backward dive into (author_id, id); MAX()
	// with a range condition is not always planned that way.
	newest := make([]uint64, len(followees)) // 0: no message below the cursor
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	for i, a := range followees {
		g.Go(func() error {
			err := s.db.QueryRowContext(gctx,
				`SELECT id FROM messages WHERE author_id = ? AND id < ? ORDER BY id DESC LIMIT 1`,
				a, before).Scan(&newest[i])
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	// Step 2: the r.Fetch() followees with the newest messages.
	type cand struct {
		author timeline.UserID
		newest uint64
	}
	cands := make([]cand, 0, len(followees))
	for i, a := range followees {
		if newest[i] > 0 {
			cands = append(cands, cand{a, newest[i]})
		}
	}
	slices.SortFunc(cands, func(x, y cand) int { return cmp.Compare(y.newest, x.newest) })
	if len(cands) > r.Fetch() {
		cands = cands[:r.Fetch()]
	}

	// Step 3: their r.Fetch() newest messages each.
	perAuthor := make([][]timeline.Message, len(cands))
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	for i, c := range cands {
		g.Go(func() error {
			rows, err := s.db.QueryContext(gctx,
				`SELECT id, author_id, body, created_at FROM messages
				 WHERE author_id = ? AND id < ? ORDER BY id DESC LIMIT ?`,
				c.author, before, r.Fetch())
			if err != nil {
				return err
			}
			perAuthor[i], err = mysqlx.ScanMessages(rows, r.Fetch())
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	// Step 4: merge and keep the newest r.Fetch().
	var all []timeline.Message
	for _, ms := range perAuthor {
		all = append(all, ms...)
	}
	slices.SortFunc(all, func(x, y timeline.Message) int { return cmp.Compare(y.ID, x.ID) })
	if len(all) > r.Fetch() {
		all = all[:r.Fetch()]
	}
	return all, nil
}

func (s *Store) followees(ctx context.Context, user timeline.UserID) ([]timeline.UserID, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT followee_id FROM follows WHERE follower_id = ?`, user)
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
