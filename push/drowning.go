package push

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"sync"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// How a push store treats drowning readers (Drowning.Mode).
const (
	// DrowningPull writes no mailbox row for a drowning reader and reads
	// their pages by pull from the follows and messages
	// (Store.readDrowning): every page is complete, and a post to them
	// costs nothing.
	DrowningPull = "pull"
	// DrowningLossy writes a post to a drowning reader who follows F
	// authors with probability min(Follows/F, 1), Bluesky's loss factor
	// for its "lossy timelines", and reads their pages from the mailbox
	// as it is: they receive about Follows authors' worth of posts,
	// whatever F, and their pages lack the rest.
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

// DrowningRefresh is how old a process's copy of drowning_readers may
// get before a fan-out reads it again (DrowningReaders).
const DrowningRefresh = time.Second

// DrowningReaders is a process's copy of the drowning_readers table, by
// which fan-outs leave drowning readers out (or write to them lossily)
// without reading the table under the locks that every fan-out's
// INSERT ... SELECT takes on what it reads: with few rows, those shared
// locks on the same records and gaps of a small table, taken by every
// post, cut push's post rate by two thirds in a first trial. The copy
// is read again when older than DrowningRefresh, or when this process
// made a reader drowning. A copy that lags is harmless: a reader it does
// not list yet is written to in full (rows a DrowningPull reader's pages,
// read by pull, never look at), and one it does list stays drowning,
// since readers are never removed. The zero value, or nil, is the option
// off.
type DrowningReaders struct {
	Drowning
	db *sql.DB

	mu     sync.Mutex
	loaded time.Time
	ids    []timeline.UserID // ascending
	keeps  []int
}

// NewDrowningReaders returns the copy of db's drowning_readers under d
// (nil when d is off), not read yet.
func NewDrowningReaders(db *sql.DB, d Drowning) *DrowningReaders {
	if !d.On() {
		return nil
	}
	return &DrowningReaders{Drowning: d.resolved(), db: db}
}

// invalidate makes the next Filter read the table again.
func (r *DrowningReaders) invalidate() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.loaded = time.Time{}
	r.mu.Unlock()
}

// Filter returns the condition a fan-out statement adds to its WHERE
// clause so that follower (a column of the follower's id) is written
// message (a column, or an id written out) only as the option says: ""
// when it is off or no reader is drowning. Under DrowningPull the
// drowning readers are left out (NOT IN); under DrowningLossy each is
// written when CRC32 of "message:follower" modulo 65,536 is below their
// keep (LossyKeeps is the same test in Go).
func (r *DrowningReaders) Filter(ctx context.Context, follower, message string) (string, error) {
	if r == nil || !r.On() {
		return "", nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.loaded) > DrowningRefresh {
		var ids []timeline.UserID
		var keeps []int
		rows, err := r.db.QueryContext(ctx, `SELECT user_id, keep FROM drowning_readers ORDER BY user_id`)
		if err != nil {
			return "", fmt.Errorf("read drowning readers: %w", err)
		}
		for rows.Next() {
			var u timeline.UserID
			var k int
			if err := rows.Scan(&u, &k); err != nil {
				rows.Close()
				return "", fmt.Errorf("read drowning readers: %w", err)
			}
			ids, keeps = append(ids, u), append(keeps, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", fmt.Errorf("read drowning readers: %w", err)
		}
		r.ids, r.keeps, r.loaded = ids, keeps, time.Now()
	}
	if len(r.ids) == 0 {
		return "", nil
	}
	list := string(mysqlx.AppendList(nil, r.ids))
	if r.Mode != DrowningLossy {
		return ` AND ` + follower + ` NOT IN (` + list + `)`, nil
	}
	var keeps []byte
	for i, k := range r.keeps {
		if i > 0 {
			keeps = append(keeps, ',')
		}
		keeps = strconv.AppendInt(keeps, int64(k), 10)
	}
	return ` AND (` + follower + ` NOT IN (` + list + `) OR CRC32(CONCAT(` + message + `, ':', ` + follower + `)) % ` +
		strconv.Itoa(keepScale) + ` < ELT(FIELD(` + follower + `, ` + list + `), ` + string(keeps) + `))`, nil
}

// markDrowning adds every reader who follows more than Follows authors to
// drowning_readers, or sets their keep again; only user's follows when
// user is not 0.
func (d Drowning) markDrowning(ctx context.Context, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, user timeline.UserID) (bool, error) {
	if !d.On() {
		return false, nil
	}
	where := ""
	args := []any{}
	if user != 0 {
		where, args = ` WHERE follower_id = ?`, append(args, user)
	}
	args = append(args, d.Follows)
	res, err := q.ExecContext(ctx, `INSERT INTO drowning_readers (user_id, keep)
		SELECT follower_id, `+d.keepSQL("COUNT(*)")+` FROM follows`+where+`
		GROUP BY follower_id HAVING COUNT(*) > ?
		ON DUPLICATE KEY UPDATE keep = VALUES(keep)`, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// readMailboxOrPull reads a page of a DrowningPull store: the mailbox's,
// in one statement that returns no row for a drowning reader; only a page
// that comes back short (the end of a timeline, or a drowning reader's)
// asks whether the reader is drowning, and if so reads by pull
// (readDrowning). A reader is never removed from drowning_readers, so a
// full page read before they drowned is a page of their whole mailbox.
// Asking first, in a statement of its own, cost every page a quarter more
// CPU in a trial.
func (s *Store) readMailboxOrPull(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	q := `SELECT m.id, m.author_id, m.body, m.created_at
		 FROM mailbox b JOIN messages m ON m.id = b.message_id
		 WHERE b.user_id = ? AND NOT EXISTS (SELECT 1 FROM drowning_readers d WHERE d.user_id = ?)`
	args := []any{r.User, r.User}
	if r.Before != 0 {
		q += ` AND b.message_id < ?`
		args = append(args, r.Before)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY b.message_id DESC LIMIT ?`, append(args, r.Fetch())...)
	if err != nil {
		return nil, err
	}
	msgs, err := mysqlx.ScanMessages(rows, r.Fetch())
	if err != nil || len(msgs) == r.Fetch() {
		return msgs, err
	}
	var one int
	switch err := s.db.QueryRowContext(ctx, `SELECT 1 FROM drowning_readers WHERE user_id = ?`, r.User).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return msgs, nil
	case err != nil:
		return nil, err
	}
	return s.readDrowning(ctx, r)
}

// Drowning returns what the store does for drowning readers.
func (s *Store) Drowning() Drowning { return s.drowning }

// Prime implements timeline.Primer when the option is on: every reader
// who follows more than Drowning.Follows authors becomes a drowning
// reader, as after a bulk load of the follows, which Open saw empty.
func (s *Store) Prime(ctx context.Context, _ []timeline.UserID) error {
	if _, err := s.drowning.markDrowning(ctx, s.db, 0); err != nil {
		return fmt.Errorf("push: mark drowning readers: %w", err)
	}
	s.drowningSet.invalidate()
	return nil
}

// DrowningReaders returns the store's copy of its drowning readers, for
// fan-out workers of its database (nil with the option off).
func (s *Store) DrowningReaders() *DrowningReaders { return s.drowningSet }

// PulledPages returns how many pages of drowning readers were read by
// pull (DrowningPull).
func (s *Store) PulledPages() int64 { return s.pulled.Pages() }

// newDrowningPull is the fallback reader of a DrowningPull store's
// drowning readers: the pull merge over push's follows and messages.
func newDrowningPull(db *sql.DB, pages *sqlread.PageCount) sqlread.Reader {
	return sqlread.Merge{}.NewReader(sqlread.Env{DB: db, Pages: pages})
}

// DrowningScan is how many message ids per entry of a page a drowning
// reader's read scans, newest first, before it falls back to the merge
// (Store.readDrowning).
const DrowningScan = 64

// readDrowning reads a page of a DrowningPull reader by pull. A reader
// who follows a large share of the authors finds their page among the
// newest messages of everyone: it scans the messages' primary key down
// from the cursor and keeps those whose author the reader follows (one
// probe of the follows' primary key each), in one statement, over a
// window of DrowningScan ids per entry of the page. That reads about
// Fetch()/share rows for a reader following that share of the posts,
// where the merge reads one head per followee first (1,999 for a reader
// of everyone at scale 0.2, 4,105 rows a page in all). When the window
// holds fewer than a page of theirs (and does not reach the first
// message), the page is the merge's.
func (s *Store) readDrowning(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	upper := uint64(r.Before)
	if upper == 0 {
		var newest sql.NullInt64
		if err := s.db.QueryRowContext(ctx, `SELECT MAX(id) FROM messages`).Scan(&newest); err != nil {
			return nil, err
		}
		upper = uint64(newest.Int64) + 1
	}
	window := uint64(s.scanPerEntry * r.Fetch())
	lower := uint64(0)
	if upper > window {
		lower = upper - window
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT STRAIGHT_JOIN m.id, m.author_id, m.body, m.created_at
		 FROM messages m JOIN follows f ON f.follower_id = ? AND f.followee_id = m.author_id
		 WHERE m.id < ? AND m.id >= ? ORDER BY m.id DESC LIMIT ?`, r.User, upper, lower, r.Fetch())
	if err != nil {
		return nil, err
	}
	msgs, err := mysqlx.ScanMessages(rows, r.Fetch())
	if err != nil || len(msgs) == r.Fetch() || lower == 0 {
		s.scanned.Add(1)
		return msgs, err
	}
	return s.pull.Read(ctx, r)
}

// ScannedPages returns how many pages of drowning readers the scan of
// the newest messages served (Store.readDrowning); PulledPages those the
// merge did.
func (s *Store) ScannedPages() int64 { return s.scanned.Load() }

// LossyKeep is the keep of a DrowningLossy reader who follows followees
// authors: min(Follows/followees, 1) in 65,536ths, as the store computes
// it.
func (d Drowning) LossyKeep(followees int) int {
	return min(keepScale, keepScale*d.Follows/max(followees, 1))
}

// LossyKeeps reports whether a DrowningLossy fan-out writes message id to
// reader, whose keep is keep: the Go twin of DrowningReaders.Filter's
// hash.
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
