package async

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// Rule is push-async's rule for reconcile (push.Rule): push's, except
// that a message whose fan-out job is still queued may be missing from
// the mailboxes of its author's followers above the job's cursor
// (done_through); below it, the job's chunks have written it. A job
// lost half applied, or a cursor moved past rows never written, is drift:
// the rows it leaves out are Missing, and a repair writes them (INSERT
// IGNORE, as a chunk does, so a worker applying the job meanwhile writes
// nothing twice). A job of a deleted message writes rows of that message
// when a worker applies it: they are reported as Deleted and repaired as
// such.
type Rule struct{ push.NoRepairs }

// Users implements push.Rule.
func (Rule) Users() []string { return nil }

// pending holds, per reader, the messages still queued for them.
type pending map[timeline.UserID]map[timeline.MessageID]bool

// Load implements push.Rule: the queued messages of the readers'
// followees that have not reached them. The jobs are read without locks:
// the rule never says a row must not be there, and a row of a followed
// author's message is always allowed.
func (Rule) Load(ctx context.Context, q reconcile.Querier, users []timeline.UserID, _ bool) (push.RuleState, error) {
	p := pending{}
	err := reconcile.ScanInts(ctx, q, `SELECT f.follower_id, j.message_id FROM follows f
		JOIN fanout_jobs j ON j.author_id = f.followee_id AND j.done_through < f.follower_id
		WHERE f.follower_id IN (`+string(mysqlx.AppendList(nil, users))+`)`, 2, func(v []int64) {
		u := timeline.UserID(v[0])
		if p[u] == nil {
			p[u] = map[timeline.MessageID]bool{}
		}
		p[u][timeline.MessageID(v[1])] = true
	})
	return p, err
}

func (p pending) Want(user, _ timeline.UserID, id timeline.MessageID) push.Want {
	if p[user][id] {
		return push.May
	}
	return push.Must
}

func (pending) Drift(push.Record) []reconcile.Drift { return nil }

// The queue has no drift of its own (push.NoRepairs).

// Checker is the model's registry.Model.Reconcile: push's mailbox checker
// under Rule.
func Checker(s timeline.Store) (reconcile.Checker, error) {
	as, ok := s.(*Store)
	if !ok {
		return nil, fmt.Errorf("%s reconcile: %T: %w", ModelName, s, push.ErrNotMine)
	}
	return push.MailboxChecker{DB: as.DB(), Rule: as.Drowning().Rule(Rule{})}, nil
}

// VitessChecker is push-async@vitess's registry.Model.Reconcile:
// push@vitess's checker (push.VitessChecker), except that a message whose
// fan-out job is still queued may be missing from the mailboxes of its
// author's followers above the job's cursor, as under Rule. The jobs of a
// look's followees are read from the authors' shards (fanout_jobs is
// sharded by author_id), after their messages and before the mailboxes:
// a job gone by then had written its rows. A job lost half applied, or a
// cursor moved past rows never written, is drift once its job is gone or
// below its cursor: the rows it left out are Missing, and a repair writes
// them (INSERT IGNORE, so a worker applying the job meanwhile writes
// nothing twice).
func VitessChecker(s timeline.Store) (reconcile.Checker, error) {
	vs, ok := s.(*VitessStore)
	if !ok {
		return nil, fmt.Errorf("%s reconcile: %T: %w", VitessModelName, s, push.ErrNotMine)
	}
	return vs.Checker(push.VitessRule{Model: VitessModelName, Load: queuedOnVitess}), nil
}

// queuedOnVitess is push-async@vitess's push.VitessLoad: the jobs of the
// followees' messages, each from its author's shard.
func queuedOnVitess(ctx context.Context, db *sql.DB, _, authors []timeline.UserID, _ func(user, author timeline.UserID) bool) (push.VitessState, int64, error) {
	cursor := map[timeline.MessageID]uint64{}
	rows, err := reconcile.ScanOwned(ctx, db, "author_id, message_id, done_through", "fanout_jobs", "", authors, func(r *sql.Rows) (int64, int64, error) {
		var a, id int64
		var done uint64
		err := r.Scan(&a, &id, &done)
		cursor[timeline.MessageID(id)] = done
		return a, id, err
	})
	may := func(user, _ timeline.UserID, id timeline.MessageID) bool {
		done, ok := cursor[id]
		return ok && uint64(user) > done
	}
	return push.VitessState{May: may}, rows, err
}
