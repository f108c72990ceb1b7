package sqlread

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/timeline"
)

// Client runs the algorithm from the client: steps 1 and 3 are one small
// indexed query per author, sent concurrently so that their round trips
// overlap, and steps 2 and 4 are done in Go.
type Client struct {
	// Concurrency bounds the queries one read runs at once; 0 means
	// DefaultConcurrency.
	Concurrency int
}

// DefaultConcurrency is Client.Concurrency's default.
const DefaultConcurrency = 8

// Name implements Strategy.
func (Client) Name() string { return "client" }

// NewReader implements Strategy.
func (c Client) NewReader(env Env) Reader {
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	return clientReader{env.DB, c.Concurrency}
}

type clientReader struct {
	db          *sql.DB
	concurrency int
}

func (c clientReader) Read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	followees, err := Followees(ctx, c.db, r.User)
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
	g.SetLimit(c.concurrency)
	for i, a := range followees {
		g.Go(func() error {
			err := c.db.QueryRowContext(gctx,
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
	cands := make([]AuthorNewest, 0, len(followees))
	for i, a := range followees {
		if newest[i] > 0 {
			cands = append(cands, AuthorNewest{a, newest[i]})
		}
	}
	slices.SortFunc(cands, ByNewest)
	if len(cands) > r.Fetch() {
		cands = cands[:r.Fetch()]
	}

	// Step 3: their r.Fetch() newest messages each.
	perAuthor := make([][]timeline.Message, len(cands))
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(c.concurrency)
	for i, cand := range cands {
		g.Go(func() error {
			rows, err := c.db.QueryContext(gctx,
				`SELECT id, author_id, body, created_at FROM messages
				 WHERE author_id = ? AND id < ? ORDER BY id DESC LIMIT ?`,
				cand.Author, before, r.Fetch())
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
	return newestN(all, r.Fetch()), nil
}
