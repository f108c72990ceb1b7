package selective

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// The views of the edge tables that reconcile reports: an edge in
// neither table or in both ("edges"), and a row of either table without
// its follow.
const (
	EdgesView     = "edges"
	PushEdgesView = "push_edges"
	PullEdgesView = "pull_edges"
)

// Rule is selective's rule for reconcile (push.Rule): every follow is in
// exactly one of push_edges and pull_edges, and neither holds an edge
// without its follow; a mailbox holds every message of its reader's
// pushed authors and none of the pulled ones (a flip to pull removes
// them), and of an edge in neither table or both, either. A repair reads
// the follow and both edge rows under shared locks, as a flip and a post
// lock them, and then removes an edge without a follow, puts a follow in
// neither table in pull_edges and removes its rows from the mailbox, as a
// flip to pull does (its reads pull it at once; the next flush decides it
// by the rates), and takes a follow in both out of pull_edges;
// the rows the edge then governs are repaired by the next pass.
type Rule struct{ push.NoRepairs } // Settle has nothing to do

// Users implements push.Rule: the readers of pulled edges, and the
// authors of pushed ones, whose batch finds their edges without a follow.
func (Rule) Users() []string { return []string{"pull_edges.user_id", "push_edges.author_id"} }

type edge = [2]timeline.UserID // (reader, author)

type state struct {
	pushed, pulled, stray map[edge]bool
}

// Load implements push.Rule.
func (Rule) Load(ctx context.Context, q reconcile.Querier, users []timeline.UserID, lock bool) (push.RuleState, error) {
	st := state{pushed: map[edge]bool{}, pulled: map[edge]bool{}, stray: map[edge]bool{}}
	in := string(mysqlx.AppendList(nil, users))
	suffix := ""
	if lock {
		suffix = ` LOCK IN SHARE MODE`
	}
	reads := []struct {
		query string
		into  map[edge]bool
	}{
		{`SELECT f.follower_id, f.followee_id FROM follows f
			JOIN push_edges e ON e.author_id = f.followee_id AND e.user_id = f.follower_id
			WHERE f.follower_id IN (` + in + `)` + suffix, st.pushed},
		{`SELECT user_id, author_id FROM pull_edges WHERE user_id IN (` + in + `)` + suffix, st.pulled},
		{`SELECT e.user_id, e.author_id FROM push_edges e
			LEFT JOIN follows f ON f.follower_id = e.user_id AND f.followee_id = e.author_id
			WHERE e.author_id IN (` + in + `) AND f.follower_id IS NULL` + suffix, st.stray},
	}
	for _, r := range reads {
		err := reconcile.ScanInts(ctx, q, r.query, 2, func(v []int64) { r.into[edge{timeline.UserID(v[0]), timeline.UserID(v[1])}] = true })
		if err != nil {
			return nil, err
		}
	}
	return st, nil
}

func (s state) Want(user, author timeline.UserID, _ timeline.MessageID) push.Want {
	e := edge{user, author}
	switch {
	case s.pushed[e] == s.pulled[e]:
		return push.May
	case s.pushed[e]:
		return push.Must
	default:
		return push.MustNot
	}
}

func (s state) Drift(rec push.Record) []reconcile.Drift {
	var out []reconcile.Drift
	add := func(k reconcile.Kind, view string, e edge) {
		out = append(out, reconcile.Drift{Kind: k, View: view, User: e[0], Item: int64(e[1])})
	}
	for u, authors := range rec.Follows {
		for a := range authors {
			e := edge{u, a}
			switch {
			case !s.pushed[e] && !s.pulled[e]:
				add(reconcile.Missing, EdgesView, e)
			case s.pushed[e] && s.pulled[e]:
				add(reconcile.Extra, EdgesView, e)
			}
		}
	}
	for e := range s.pulled {
		if !rec.Followed(e[0], e[1]) {
			add(reconcile.Unfollowed, PullEdgesView, e)
		}
	}
	for e := range s.stray {
		add(reconcile.Unfollowed, PushEdgesView, e)
	}
	return out
}

// Repair implements push.Rule: it brings the edge d names to a state the
// rule allows, from its follow and edge rows read under shared locks.
func (Rule) Repair(ctx context.Context, tx *sql.Tx, d reconcile.Drift) (int, error) {
	if d.View != EdgesView && d.View != PushEdgesView && d.View != PullEdgesView {
		return 0, nil
	}
	var has [3]bool // followed, pushed, pulled
	for i, q := range []string{
		`SELECT COUNT(*) FROM follows WHERE follower_id = ? AND followee_id = ? LOCK IN SHARE MODE`,
		`SELECT COUNT(*) FROM push_edges WHERE user_id = ? AND author_id = ? LOCK IN SHARE MODE`,
		`SELECT COUNT(*) FROM pull_edges WHERE user_id = ? AND author_id = ? LOCK IN SHARE MODE`,
	} {
		if err := tx.QueryRowContext(ctx, q, d.User, d.Item).Scan(&has[i]); err != nil {
			return 0, err
		}
	}
	followed, pushed, pulled := has[0], has[1], has[2]
	var fixes []string
	switch {
	case !followed:
		if pushed {
			fixes = append(fixes, `DELETE FROM push_edges WHERE user_id = ? AND author_id = ?`)
		}
		if pulled {
			fixes = append(fixes, `DELETE FROM pull_edges WHERE user_id = ? AND author_id = ?`)
		}
	case !pushed && !pulled:
		fixes = append(fixes, `INSERT INTO pull_edges (user_id, author_id) VALUES (?, ?)`)
	case pushed && pulled:
		fixes = append(fixes, `DELETE FROM pull_edges WHERE user_id = ? AND author_id = ?`)
	}
	n := 0
	for _, q := range fixes {
		if _, err := tx.ExecContext(ctx, q, d.User, d.Item); err != nil {
			return n, err
		}
		n++
	}
	if followed && !pushed && !pulled {
		// Pulled now: its rows go, as in a flip to pull.
		rows, err := push.RemoveAuthor(ctx, tx, d.User, timeline.UserID(d.Item))
		return n + int(rows), err
	}
	return n, nil
}

// Checker is the model's registry.Model.Reconcile: push's mailbox checker
// under Rule.
func Checker(s timeline.Store) (reconcile.Checker, error) {
	ss, ok := s.(*Store)
	if !ok {
		return nil, fmt.Errorf("%s reconcile: %T: %w", ModelName, s, push.ErrNotMine)
	}
	return push.MailboxChecker{DB: ss.DB(), Rule: ss.Drowning().Rule(Rule{})}, nil
}
