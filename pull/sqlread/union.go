package sqlread

import (
	"context"

	"github.com/pushpull/pushpull/timeline"
)

// Union runs step 1 as one statement (FolloweesNewest), then steps 2 to 4
// as one more: a UNION ALL with a branch per author among the Fetch() with
// the newest messages, each an index range scan with its own LIMIT, merged
// and cut to the page by the server. Two round trips a page, however many
// followees.
//
// The k-th of those authors (by newest message) needs only Fetch()-k+1
// messages, not Fetch(): the k-1 authors ranked above it each have a
// message newer than all of its, so at least k-1 places on the page are
// taken by others. That halves the paper's N² index entries to N²/2.
type Union struct{}

// Name implements Strategy.
func (Union) Name() string { return "union" }

// NewReader implements Strategy.
func (Union) NewReader(env Env) Reader { return unionReader{Env: env} }

type unionReader struct {
	Env
	vitess bool // VitessUnion
}

func (u unionReader) Read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	step1 := FolloweesNewest
	if u.vitess {
		step1 = FolloweesNewestIn
	}
	cands, followees, err := step1(ctx, u.DB, r)
	if err != nil {
		return nil, err
	}
	fetch := r.Fetch()
	if len(cands) > fetch {
		cands = cands[:fetch]
	}
	if len(cands) == 0 {
		u.Pages.Add(int64(followees))
		return nil, nil
	}
	var msgs []timeline.Message
	var read int64
	if u.vitess {
		msgs, read, err = vitessBranches(ctx, u.DB, r, cands)
	} else {
		var b PageQuery
		for k, c := range cands {
			b.Branch(c.Author, uint64(r.Before), 0, fetch-k)
		}
		var branchRows int64
		msgs, branchRows, err = b.Run(ctx, u.DB, nil, fetch)
		read = branchRows + int64(len(msgs))
	}
	if err != nil {
		return nil, err
	}
	u.Pages.Add(int64(followees) + read)
	return msgs, nil
}
