package capped

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// The views of mailbox_state that reconcile reports.
const (
	EntriesView = "mailbox_state.entries"
	DueView     = "mailbox_state.due"
)

// Rule is push-capped's rule for reconcile (push.Rule): a mailbox holds
// every message of its reader's followees at or above the reader's floor
// and none below it (below is Extra); mailbox_state.entries is the count
// of the reader's rows; a mailbox of more than Cap+Slack rows is flagged
// due (a flag left set on fewer is allowed: a delete lowers the count
// without clearing it, and the next trim does). A repair locks the state
// row first, as a post's count and a trim do, so no row lands or is cut
// meanwhile; it recounts the rows and sets the count and the flag from
// them, and leaves the trim to the next write.
type Rule struct {
	push.NoRepairs // the count and the flag are Settle's
	Cap, Slack     int
}

// Users implements push.Rule.
func (Rule) Users() []string { return []string{"mailbox_state.user_id"} }

type state struct {
	r     Rule
	users []timeline.UserID
	rows  map[timeline.UserID]stateRow
}

type stateRow struct {
	floor      timeline.MessageID
	entries    int64
	due, found bool
}

// Load implements push.Rule.
func (r Rule) Load(ctx context.Context, q reconcile.Querier, users []timeline.UserID, lock bool) (push.RuleState, error) {
	st := state{r: r, users: users, rows: map[timeline.UserID]stateRow{}}
	query := `SELECT user_id, floor_id, entries, due FROM mailbox_state WHERE user_id IN (` + string(mysqlx.AppendList(nil, users)) + `)`
	if lock {
		query += ` FOR UPDATE`
	}
	err := reconcile.ScanInts(ctx, q, query, 4, func(v []int64) {
		st.rows[timeline.UserID(v[0])] = stateRow{floor: timeline.MessageID(v[1]), entries: v[2], due: v[3] != 0, found: true}
	})
	return st, err
}

func (s state) Want(user, _ timeline.UserID, id timeline.MessageID) push.Want {
	if id >= s.rows[user].floor {
		return push.Must
	}
	return push.MustNot
}

func (s state) Drift(rec push.Record) []reconcile.Drift {
	var out []reconcile.Drift
	for _, u := range s.users {
		row, n := s.rows[u], rec.Rows[u]
		if row.entries != n {
			out = append(out, reconcile.Drift{Kind: reconcile.WrongState, View: EntriesView, User: u, Have: row.entries, Want: n})
		}
		if !row.due && n > int64(s.r.Cap+s.r.Slack) {
			out = append(out, reconcile.Drift{Kind: reconcile.WrongState, View: DueView, User: u, Have: 0, Want: 1})
		}
	}
	return out
}

// Settle implements push.Rule: it sets user's count to their rows, counted
// under lock, and flags the mailbox due when they pass Cap+Slack.
func (r Rule) Settle(ctx context.Context, tx *sql.Tx, user timeline.UserID) (int, error) {
	var entries int64
	var due, found bool
	err := tx.QueryRowContext(ctx, `SELECT entries, due FROM mailbox_state WHERE user_id = ? FOR UPDATE`, user).Scan(&entries, &due)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return 0, err
	default:
		found = true
	}
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM mailbox WHERE user_id = ? LOCK IN SHARE MODE`, user).Scan(&n); err != nil {
		return 0, err
	}
	over := n > int64(r.Cap+r.Slack)
	changed := 0
	if entries != n {
		changed++
	}
	if over && !due {
		changed++
	}
	if changed == 0 || (!found && n == 0) {
		return 0, nil
	}
	_, err = tx.ExecContext(ctx,
		`INSERT INTO mailbox_state (user_id, entries, due) VALUES (?, ?, ?)
		 ON DUPLICATE KEY UPDATE entries = VALUES(entries), due = due OR VALUES(due)`, user, n, over)
	return changed, err
}

// Checker is the model's registry.Model.Reconcile: push's mailbox checker
// under Rule, with the drowning readers' mailboxes as push.Drowning.Rule
// says.
func Checker(s timeline.Store) (reconcile.Checker, error) {
	cs, ok := s.(*Store)
	if !ok {
		return nil, fmt.Errorf("%s reconcile: %T: %w", ModelName, s, push.ErrNotMine)
	}
	return push.MailboxChecker{DB: cs.DB(), Rule: cs.Drowning().Rule(Rule{Cap: cs.cap, Slack: cs.slack})}, nil
}
