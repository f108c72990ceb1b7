package push

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// How a push store treats drowning readers (Drowning.Mode).
const (
	// DrowningPull writes no mailbox row for a drowning reader and reads
	// their pages by pull (sqlread.Merge over the follows and messages):
	// every page is complete, and a post to them costs nothing.
	DrowningPull = "pull"
	// DrowningLossy writes a post to a drowning reader who follows F
	// authors with probability min(Follows/F, 1), Bluesky's loss factor
	// for its "lossy timelines", and reads their pages from the mailbox
	// as it is: a post writes Follows rows to them in all, whatever F,
	// and their pages lack the rest.
	DrowningLossy = "lossy"
)

// The registry options of the drowning readers (DrowningOptions).
const (
	// OptionDrowningFollows is Drowning.Follows.
	OptionDrowningFollows = "drowning_follows"
	// OptionDrowning is Drowning.Mode.
	OptionDrowning = "drowning"
	// MaxDrowningFollows bounds Drowning.Follows.
	MaxDrowningFollows = 1 << 30
)

// keepScale is the fixed point of a drowning reader's keep: a post is
// written to them when a hash of (message, reader) below 65,536 is below
// their keep, so 0 writes none and keepScale every one.
const keepScale = 1 << 16

// Drowning is what a push store does for drowning readers: the readers
// who follow more than Follows authors, far more than anyone else (bots,
// power users following 10,000 accounts and more). Push writes every post
// of all of their followees into their mailbox, rows that the reader may
// never read; Bluesky writes to them lossily. The zero Drowning treats
// them as everyone else.
//
// The drowning_readers table says who they are, with their keep (the
// share of posts written to them, in 65,536ths): a follow that takes a
// reader past Follows adds them (and sets their keep again), and Open
// and Prime add every reader past Follows in the follow table. A reader
// is never removed, nor their mailbox rebuilt, so a reader once drowning
// reads by DrowningPull as long as the option holds. Turning the option
// off on a database with drowning readers leaves their mailboxes short
// of what was posted meanwhile; `pushpull reconcile --repair` with the
// option off writes it.
type Drowning struct {
	// Follows is the followee count above which a reader is drowning;
	// 0 turns the option off.
	Follows int
	// Mode is DrowningPull or DrowningLossy; "" means DrowningPull.
	Mode string
}

// DrowningOptions are the registry options of Drowning, for the models
// that post through push's fan-out (push, push-async).
var DrowningOptions = []registry.Option{
	registry.Int(OptionDrowningFollows, 0, 0, MaxDrowningFollows,
		"readers following more authors than this are drowning readers, written to by option drowning; 0: none"),
	registry.Choice(OptionDrowning, DrowningPull, []string{DrowningPull, DrowningLossy},
		"drowning readers: pull (no mailbox rows, pages read by pull) or lossy (Bluesky's: a post written with probability min(drowning_follows/follows, 1), pages from the mailbox as it is)"),
}

// DrowningFrom is the Drowning of a model opened through the registry
// with DrowningOptions.
func DrowningFrom(cfg registry.Config) Drowning {
	return Drowning{Follows: cfg.Int(OptionDrowningFollows), Mode: cfg.Choice(OptionDrowning)}
}

// check reports a Drowning its options do not take, as a
// *registry.OptionError.
func (d Drowning) check(model string) error {
	if err := DrowningOptions[0].Check(model, d.Follows); err != nil {
		return err
	}
	return DrowningOptions[1].Check(model, d.resolved().Mode)
}

func (d Drowning) resolved() Drowning {
	if d.Mode == "" {
		d.Mode = DrowningPull
	}
	return d
}

// On reports whether the option is on.
func (d Drowning) On() bool { return d.Follows > 0 }

// keepSQL is the SQL expression of a reader's keep, given their followee
// count: 0 under DrowningPull, else min(Follows/count, 1) in 65,536ths.
func (d Drowning) keepSQL(count string) string {
	if d.Mode != DrowningLossy {
		return "0"
	}
	return fmt.Sprintf("LEAST(%d, FLOOR(%d * %d / %s))", keepScale, keepScale, d.Follows, count)
}

// FanOutFilter is the condition a fan-out statement adds to its WHERE
// clause so that follower (a column of the follower's id) is written
// message (a column or placeholder-free expression of the message id)
// only as the option says: "" when it is off. The hash is CRC-32 of
// "message:follower", the same in every process and in Go
// (LossyKeeps).
func (d Drowning) FanOutFilter(follower, message string) string {
	if !d.On() {
		return ""
	}
	if d.Mode != DrowningLossy {
		return ` AND NOT EXISTS (SELECT 1 FROM drowning_readers d WHERE d.user_id = ` + follower + `)`
	}
	return ` AND NOT EXISTS (SELECT 1 FROM drowning_readers d WHERE d.user_id = ` + follower +
		` AND d.keep <= CRC32(CONCAT(` + message + `, ':', ` + follower + `)) % ` + strconv.Itoa(keepScale) + `)`
}

// markDrowning adds every reader who follows more than Follows authors to
// drowning_readers, or sets their keep again; only user's follows when
// user is not 0.
func (d Drowning) markDrowning(ctx context.Context, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, user timeline.UserID) error {
	if !d.On() {
		return nil
	}
	where := ""
	args := []any{}
	if user != 0 {
		where, args = ` WHERE follower_id = ?`, append(args, user)
	}
	args = append(args, d.Follows)
	_, err := q.ExecContext(ctx, `INSERT INTO drowning_readers (user_id, keep)
		SELECT follower_id, `+d.keepSQL("COUNT(*)")+` FROM follows`+where+`
		GROUP BY follower_id HAVING COUNT(*) > ?
		ON DUPLICATE KEY UPDATE keep = VALUES(keep)`, args...)
	return err
}

// readsByPull reports whether user reads by pull: a drowning reader under
// DrowningPull.
func (s *Store) readsByPull(ctx context.Context, user timeline.UserID) (bool, error) {
	if !s.drowning.On() || s.drowning.Mode != DrowningPull {
		return false, nil
	}
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM drowning_readers WHERE user_id = ?`, user).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Drowning returns what the store does for drowning readers.
func (s *Store) Drowning() Drowning { return s.drowning }

// Prime implements timeline.Primer when the option is on: every reader
// who follows more than Drowning.Follows authors becomes a drowning
// reader, as after a bulk load of the follows, which Open saw empty.
func (s *Store) Prime(ctx context.Context, _ []timeline.UserID) error {
	if err := s.drowning.markDrowning(ctx, s.db, 0); err != nil {
		return fmt.Errorf("push: mark drowning readers: %w", err)
	}
	return nil
}

// PulledPages returns how many pages of drowning readers were read by
// pull (DrowningPull).
func (s *Store) PulledPages() int64 { return s.pulled.Pages() }

// newDrowningPull is the reader of a DrowningPull store's drowning
// readers: the pull merge over push's follows and messages.
func newDrowningPull(db *sql.DB, pages *sqlread.PageCount) sqlread.Reader {
	return sqlread.Merge{}.NewReader(sqlread.Env{DB: db, Pages: pages})
}

// LossyKeep is the keep of a DrowningLossy reader who follows followees
// authors: min(Follows/followees, 1) in 65,536ths, as the store computes
// it.
func (d Drowning) LossyKeep(followees int) int {
	return min(keepScale, keepScale*d.Follows/max(followees, 1))
}

// LossyKeeps reports whether a DrowningLossy fan-out writes message id to
// reader, whose keep is keep: the Go twin of FanOutFilter's hash.
func LossyKeeps(id timeline.MessageID, reader timeline.UserID, keep int) bool {
	h := crc32.ChecksumIEEE([]byte(strconv.FormatUint(uint64(id), 10) + ":" + strconv.FormatUint(uint64(reader), 10)))
	return int(h%keepScale) < keep
}

// Rule returns inner, for reconcile, with the drowning readers' mailboxes
// allowed to lack any message (May): under DrowningPull they are not
// read, under DrowningLossy they hold what the loss factor kept. With the
// option off it is inner.
func (d Drowning) Rule(inner Rule) Rule {
	if !d.On() {
		return inner
	}
	return drowningRule{inner}
}

type drowningRule struct{ Rule }

// Load implements Rule: inner's state, and which of users are drowning.
func (r drowningRule) Load(ctx context.Context, q reconcile.Querier, users []timeline.UserID, lock bool) (RuleState, error) {
	inner, err := r.Rule.Load(ctx, q, users, lock)
	if err != nil {
		return nil, err
	}
	st := drowningState{RuleState: inner, members: map[timeline.UserID]bool{}}
	query := `SELECT user_id FROM drowning_readers WHERE user_id IN (` + string(mysqlx.AppendList(nil, users)) + `)`
	if lock {
		query += ` LOCK IN SHARE MODE`
	}
	err = reconcile.ScanInts(ctx, q, query, 1, func(v []int64) { st.members[timeline.UserID(v[0])] = true })
	return st, err
}

type drowningState struct {
	RuleState
	members map[timeline.UserID]bool
}

func (s drowningState) Want(user, author timeline.UserID, id timeline.MessageID) Want {
	if s.members[user] {
		return May
	}
	return s.RuleState.Want(user, author, id)
}
