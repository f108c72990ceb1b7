package active

import (
	"context"
	"fmt"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// Rule is push-active's rule for reconcile (push.Rule): the mailbox of an
// active reader holds every message of their followees at or above their
// floor and none below it (below is Extra); an inactive reader's mailbox
// may lack any of them (the next read rebuilds it), but holds no row of an
// author they do not follow or of a deleted message, which unfollows and
// deletes remove either way. A repair locks the reader's state row as a
// rebuild does (FOR UPDATE; a post's fan-out reads it under a shared
// lock), so no post writes to the mailbox and no flag or floor changes
// until the repair commits.
type Rule struct{ push.NoRepairs }

// Users implements push.Rule.
func (Rule) Users() []string { return []string{"reader_state.user_id"} }

type state map[timeline.UserID]readerRow

type readerRow struct {
	active bool
	floor  timeline.MessageID
}

// Load implements push.Rule.
func (Rule) Load(ctx context.Context, q reconcile.Querier, users []timeline.UserID, lock bool) (push.RuleState, error) {
	st := state{}
	query := `SELECT user_id, active, floor_id FROM reader_state WHERE user_id IN (` + string(mysqlx.AppendList(nil, users)) + `)`
	if lock {
		query += ` FOR UPDATE`
	}
	err := reconcile.ScanInts(ctx, q, query, 3, func(v []int64) {
		st[timeline.UserID(v[0])] = readerRow{active: v[1] != 0, floor: timeline.MessageID(v[2])}
	})
	return st, err
}

func (s state) Want(user, _ timeline.UserID, id timeline.MessageID) push.Want {
	switch row := s[user]; {
	case !row.active:
		return push.May
	case id >= row.floor:
		return push.Must
	default:
		return push.MustNot
	}
}

func (state) Drift(push.Record) []reconcile.Drift { return nil }

// The flags and floors are what the rows are judged by; nothing of them
// is repaired (push.NoRepairs).

// Checker is the model's registry.Model.Reconcile: push's mailbox checker
// under Rule.
func Checker(s timeline.Store) (reconcile.Checker, error) {
	as, ok := s.(*Store)
	if !ok {
		return nil, fmt.Errorf("%s reconcile: %T: %w", ModelName, s, push.ErrNotMine)
	}
	return push.MailboxChecker{DB: as.DB(), Rule: as.Drowning().Rule(Rule{})}, nil
}
