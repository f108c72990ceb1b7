package push

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
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
// that fan out on write: push, push-compressed, push-async, and
// (WithDrowning) push-capped, push-active, hybrid, selective and
// push-redis.
var DrowningOptions = []registry.Option{
	registry.Int(OptionDrowningFollows, 0, 0, MaxDrowningFollows,
		"readers following more authors than this are drowning readers, written to by option drowning; 0: none"),
	registry.Choice(OptionDrowning, DrowningPull, []string{DrowningPull, DrowningLossy},
		"drowning readers: pull (posts written to no mailbox or feed of theirs, pages read by pull) or lossy (Bluesky's: a post written with probability min(drowning_follows/follows, 1), pages from the mailbox or feed as it is)"),
}

// DrowningFrom is the Drowning of a model opened through the registry
// with DrowningOptions.
func DrowningFrom(cfg registry.Config) Drowning {
	return Drowning{Follows: cfg.Int(OptionDrowningFollows), Mode: cfg.Choice(OptionDrowning)}
}

// Check reports a Drowning its options do not take, as a
// *registry.OptionError naming model.
func (d Drowning) Check(model string) error {
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

// Pulls reports whether the option is on under DrowningPull.
func (d Drowning) Pulls() bool { return d.On() && d.resolved().Mode == DrowningPull }

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
	list   *DrowningList
}

// NewDrowningReaders returns the copy of db's drowning_readers under d
// (nil when d is off), not read yet.
func NewDrowningReaders(db *sql.DB, d Drowning) *DrowningReaders {
	if !d.On() {
		return nil
	}
	return &DrowningReaders{Drowning: d.resolved(), db: db}
}

// Invalidate makes the next Read read the table again: after a write
// of this process marked a reader (Drowning.Mark).
func (r *DrowningReaders) Invalidate() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.loaded = time.Time{}
	r.mu.Unlock()
}

// Read returns the drowning readers as the copy has them, read again
// from the table when older than DrowningRefresh: nil when the option is
// off (r is nil). One fan-out reads the list once, so that its
// statements agree on who is drowning.
func (r *DrowningReaders) Read(ctx context.Context) (*DrowningList, error) {
	if r == nil || !r.On() {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.loaded) > DrowningRefresh {
		var ids []timeline.UserID
		var keeps []int
		err := reconcile.ScanInts(ctx, r.db, `SELECT user_id, keep FROM drowning_readers ORDER BY user_id`, 2, func(v []int64) {
			ids, keeps = append(ids, timeline.UserID(v[0])), append(keeps, int(v[1]))
		})
		if err != nil {
			return nil, fmt.Errorf("read drowning readers: %w", err)
		}
		r.list = &DrowningList{mode: r.Mode, ids: ids, keeps: keeps, sql: string(mysqlx.AppendList(nil, ids))}
		r.loaded = time.Now()
	}
	return r.list, nil
}

// Filter is Read's list's Filter.
func (r *DrowningReaders) Filter(ctx context.Context, follower, message string) (string, error) {
	l, err := r.Read(ctx)
	return l.Filter(follower, message), err
}

// DrowningList is one reading of the drowning readers
// (DrowningReaders.Read), immutable. Its methods take a nil list as none.
type DrowningList struct {
	mode  string
	ids   []timeline.UserID // ascending
	keeps []int
	sql   string // ids, comma-separated
}

// Writes reports whether a fan-out under the list writes message id to
// reader: whether DrowningList.Filter keeps them, in Go.
func (l *DrowningList) Writes(id timeline.MessageID, reader timeline.UserID) bool {
	if l == nil {
		return true
	}
	i, ok := slices.BinarySearch(l.ids, reader)
	switch {
	case !ok:
		return true
	case l.mode != DrowningLossy:
		return false
	}
	return LossyKeeps(id, reader, l.keeps[i])
}

// Has reports whether user is listed.
func (l *DrowningList) Has(user timeline.UserID) bool {
	if l == nil {
		return false
	}
	_, ok := slices.BinarySearch(l.ids, user)
	return ok
}

// Len returns how many readers are listed.
func (l *DrowningList) Len() int {
	if l == nil {
		return 0
	}
	return len(l.ids)
}

// In returns the SQL condition that column (a reader's id) is listed:
// FALSE when no one is.
func (l *DrowningList) In(column string) string {
	if l == nil || len(l.ids) == 0 {
		return `FALSE`
	}
	return column + ` IN (` + l.sql + `)`
}

// Filter returns the condition a fan-out statement adds to its WHERE
// clause so that follower (a column of the follower's id) is written
// message (a column, or an id written out) only as the option says: ""
// when no reader is drowning. Under DrowningPull the drowning readers are
// left out (NOT IN); under DrowningLossy each is written when CRC32 of
// "message:follower" modulo 65,536 is below their keep (LossyKeeps is the
// same test in Go).
func (l *DrowningList) Filter(follower, message string) string {
	if l == nil || len(l.ids) == 0 {
		return ""
	}
	if l.mode != DrowningLossy {
		return ` AND ` + follower + ` NOT IN (` + l.sql + `)`
	}
	var keeps []byte
	for i, k := range l.keeps {
		if i > 0 {
			keeps = append(keeps, ',')
		}
		keeps = strconv.AppendInt(keeps, int64(k), 10)
	}
	return ` AND (` + follower + ` NOT IN (` + l.sql + `) OR CRC32(CONCAT(` + message + `, ':', ` + follower + `)) % ` +
		strconv.Itoa(keepScale) + ` < ELT(FIELD(` + follower + `, ` + l.sql + `), ` + string(keeps) + `))`
}

// Mark adds every reader who follows more than Follows authors to
// drowning_readers, or sets their keep again; only user's follows when
// user is not 0. It reports whether it changed a row. A follow marks its
// follower in its own transaction; a store marks everyone when it opens,
// and when it is primed after a bulk load.
func (d Drowning) Mark(ctx context.Context, q interface {
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
	if _, err := s.drowning.Mark(ctx, s.db, 0); err != nil {
		return fmt.Errorf("push: mark drowning readers: %w", err)
	}
	s.drowningSet.Invalidate()
	return nil
}

// PullDrowning returns read, for a model built on the store that reads
// its own view: under DrowningPull, the page of a reader PullsDrowning
// reports is read by pull (readDrowning), and read's otherwise.
func (s *Store) PullDrowning(read timeline.Reader) timeline.Reader {
	if !s.drowning.Pulls() {
		return read
	}
	return func(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
		pulled, err := s.PullsDrowning(ctx, r.User)
		if err != nil {
			return nil, err
		}
		if pulled {
			return s.readDrowning(ctx, r)
		}
		return read(ctx, r)
	}
}

// PullsDrowning reports whether PullDrowning reads user's pages by pull:
// the option is DrowningPull and the store's copy of drowning_readers
// lists them. The copy is read again every DrowningRefresh, so a reader
// whom another process made drowning has their pages read from the view,
// short of that process's posts to them, for at most that long.
func (s *Store) PullsDrowning(ctx context.Context, user timeline.UserID) (bool, error) {
	if !s.drowning.Pulls() {
		return false, nil
	}
	list, err := s.drowningSet.Read(ctx)
	return list.Has(user), err
}

// DrowningReaders returns the store's copy of its drowning readers, for
// fan-out workers of its database (nil with the option off).
func (s *Store) DrowningReaders() *DrowningReaders { return s.drowningSet }

// PulledPages returns how many pages of drowning readers the merge read
// (DrowningPuller).
func (s *Store) PulledPages() int64 { return s.puller.MergedPages() }

// ScannedPages returns how many pages of drowning readers the scan of
// the newest messages served (DrowningPuller).
func (s *Store) ScannedPages() int64 { return s.puller.ScannedPages() }

// readDrowning reads a page of a DrowningPull reader by pull.
func (s *Store) readDrowning(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	return s.puller.Read(ctx, r)
}

// DrowningScan is how many message ids per entry of a page a drowning
// reader's read scans, newest first, before it falls back to the merge
// (DrowningPuller).
const DrowningScan = 64

// DrowningPuller reads the pages of DrowningPull readers by pull, from
// the follows and messages tables of push's and pull's schemas. A reader
// who follows a large share of the authors finds their page among the
// newest messages of everyone: Read scans the messages' primary key down
// from the cursor and keeps those whose author the reader follows (one
// probe of the follows' primary key each), in one statement, over a
// window of DrowningScan ids per entry of the page. That reads about
// Fetch()/share rows for a reader following that share of the posts,
// where the merge reads one head per followee first (1,999 for a reader
// of everyone at scale 0.2, 4,105 rows a page in all). When the window
// holds fewer than a page of theirs (and does not reach the first
// message), the page is the merge's (sqlread.Merge).
type DrowningPuller struct {
	db     *sql.DB
	merge  sqlread.Reader
	merged *sqlread.PageCount
	// scanPerEntry is DrowningScan (tests set less).
	scanPerEntry int
	scanned      atomic.Int64
}

// NewDrowningPuller returns the reader by pull of db's drowning readers.
func NewDrowningPuller(db *sql.DB) *DrowningPuller {
	merged := &sqlread.PageCount{}
	return &DrowningPuller{db: db, merged: merged, scanPerEntry: DrowningScan,
		merge: sqlread.Merge{}.NewReader(sqlread.Env{DB: db, Pages: merged})}
}

// Read reads r's page by pull.
func (p *DrowningPuller) Read(ctx context.Context, r timeline.Request) ([]timeline.Message, error) {
	upper := uint64(r.Before)
	if upper == 0 {
		var newest sql.NullInt64
		if err := p.db.QueryRowContext(ctx, `SELECT MAX(id) FROM messages`).Scan(&newest); err != nil {
			return nil, err
		}
		upper = uint64(newest.Int64) + 1
	}
	window := uint64(p.scanPerEntry * r.Fetch())
	lower := uint64(0)
	if upper > window {
		lower = upper - window
	}
	rows, err := p.db.QueryContext(ctx,
		`SELECT STRAIGHT_JOIN m.id, m.author_id, m.body, m.created_at
		 FROM messages m JOIN follows f ON f.follower_id = ? AND f.followee_id = m.author_id
		 WHERE m.id < ? AND m.id >= ? ORDER BY m.id DESC LIMIT ?`, r.User, upper, lower, r.Fetch())
	if err != nil {
		return nil, err
	}
	msgs, err := mysqlx.ScanMessages(rows, r.Fetch())
	if err != nil || len(msgs) == r.Fetch() || lower == 0 {
		p.scanned.Add(1)
		return msgs, err
	}
	return p.merge.Read(ctx, r)
}

// ScannedPages returns how many pages the scan of the newest messages
// served; MergedPages those the merge did.
func (p *DrowningPuller) ScannedPages() int64 { return p.scanned.Load() }

// MergedPages returns how many pages the merge read.
func (p *DrowningPuller) MergedPages() int64 { return p.merged.Pages() }

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

// Rule returns inner, for reconcile, with the drowning readers'
// mailboxes as the option leaves them: under DrowningPull a drowning
// reader's mailbox may lack any message (their pages are read by pull);
// under DrowningLossy it must hold each message inner requires whose hash
// LossyKeeps keeps at the reader's keep now, and may lack the others.
// What inner forbids stays forbidden. With the option off it is inner.
//
// A keep only falls while a reader is drowning (a follow sets it again
// from more followees), so a message kept at today's keep was kept when
// it was posted; a reader who unfollowed many authors and then followed
// one more has a higher keep than their older posts had, and reconcile
// reports those posts missing, which a repair writes.
func (d Drowning) Rule(inner Rule) Rule {
	if !d.On() {
		return inner
	}
	return drowningRule{Rule: inner, d: d.resolved()}
}

type drowningRule struct {
	Rule
	d Drowning
}

// Load implements Rule: inner's state, and which of users are drowning,
// with their keeps.
func (r drowningRule) Load(ctx context.Context, q reconcile.Querier, users []timeline.UserID, lock bool) (RuleState, error) {
	inner, err := r.Rule.Load(ctx, q, users, lock)
	if err != nil {
		return nil, err
	}
	keeps, err := DrowningKeeps(ctx, q, users, lock)
	return drowningState{RuleState: inner, d: r.d, keeps: keeps}, err
}

// DrowningKeeps returns the drowning readers among users, with their
// keeps, read under a shared lock if lock.
func DrowningKeeps(ctx context.Context, q reconcile.Querier, users []timeline.UserID, lock bool) (map[timeline.UserID]int, error) {
	keeps := map[timeline.UserID]int{}
	if len(users) == 0 {
		return keeps, nil
	}
	query := `SELECT user_id, keep FROM drowning_readers WHERE user_id IN (` + string(mysqlx.AppendList(nil, users)) + `)`
	if lock {
		query += ` LOCK IN SHARE MODE`
	}
	err := reconcile.ScanInts(ctx, q, query, 2, func(v []int64) { keeps[timeline.UserID(v[0])] = int(v[1]) })
	return keeps, err
}

// Requires reports whether the view of user must hold message id that the
// design's own rule requires, given the drowning readers' keeps
// (DrowningKeeps): always for a reader who is not drowning; under
// DrowningLossy when LossyKeeps keeps it at their keep; never under
// DrowningPull.
func (d Drowning) Requires(keeps map[timeline.UserID]int, user timeline.UserID, id timeline.MessageID) bool {
	keep, drowning := keeps[user]
	return !drowning || (d.resolved().Mode == DrowningLossy && LossyKeeps(id, user, keep))
}

type drowningState struct {
	RuleState
	d     Drowning
	keeps map[timeline.UserID]int // the drowning readers among the users
}

func (s drowningState) Want(user, author timeline.UserID, id timeline.MessageID) Want {
	want := s.RuleState.Want(user, author, id)
	if want != Must || s.d.Requires(s.keeps, user, id) {
		return want
	}
	return May
}
