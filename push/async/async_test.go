package async

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// childEnv, when set, makes the test binary a fan-out worker process on
// the database it names (see TestKilledWorkerProcess).
const childEnv = "PUSHPULL_ASYNC_TEST_WORKER"

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		runChildWorker(v)
		return
	}
	testserver.Main(m, testserver.Options{})
}

// open opens a store in a fresh database and closes it when t ends.
func open(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	database := testserver.Database(t)
	s, err := Open(context.Background(), push.Config{DSN: testserver.DSN(t), Database: database}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, database
}

func TestConformance(t *testing.T) {
	timelinetest.RunConfigs(t, []timelinetest.Config{
		{Name: "defaults", Open: func(t *testing.T) timeline.Store { s, _ := open(t, Options{}); return s }},
		// Chunks of one follower, many workers: every job is several
		// transactions, applied by workers taking turns.
		{Name: "chunk=1,workers=4", Open: func(t *testing.T) timeline.Store { s, _ := open(t, Options{Chunk: 1, Workers: 4}); return s }},
	})
}

// celebrity makes users 2..n+1 follow user 1, straight into the table.
func celebrity(t *testing.T, s *Store, n int) {
	t.Helper()
	if n == 0 {
		return // seq_2_to_1 would count down
	}
	_, err := s.DB().Exec(fmt.Sprintf(`INSERT INTO follows (follower_id, followee_id) SELECT seq, 1 FROM seq_2_to_%d`, n+1))
	if err != nil {
		t.Fatal(err)
	}
}

// mailboxOf counts the mailbox rows of message.
func mailboxOf(t *testing.T, s *Store, message timeline.MessageID) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM mailbox WHERE message_id = ?`, message).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// drain steps w until the queue is empty and returns the steps that
// applied a chunk.
func drain(t *testing.T, w *Worker) int {
	t.Helper()
	n := 0
	for {
		worked, err := w.Step(timelinetest.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		if !worked {
			return n
		}
		n++
	}
}

// TestCelebrityPostIsChunked: a post to n followers is ceil(n/chunk)
// transactions, together writing each follower's row once.
func TestCelebrityPostIsChunked(t *testing.T) {
	for _, tc := range []struct{ followers, chunk, want int }{
		{2500, 300, 9}, {900, 300, 3}, {1, 300, 1}, {0, 300, 1}, {7, 1, 7},
	} {
		t.Run(fmt.Sprintf("%d/%d", tc.followers, tc.chunk), func(t *testing.T) {
			s, _ := open(t, Options{Workers: -1})
			celebrity(t, s, tc.followers)
			m := timelinetest.Post(t, s, 1, "to everyone")
			st := NewStats()
			if got := drain(t, &Worker{DB: s.DB(), Chunk: tc.chunk, Stats: st}); got != tc.want {
				t.Errorf("%d chunk transactions, want %d", got, tc.want)
			}
			c := st.Counters()
			if c["fanout_chunks"] != int64(tc.want) || c["fanout_rows"] != int64(tc.followers) || c["fanout_jobs"] != 1 {
				t.Errorf("counters %v, want %d chunks, %d rows, 1 job", c, tc.want, tc.followers)
			}
			if n := mailboxOf(t, s, m.ID); n != tc.followers {
				t.Errorf("%d mailbox rows, want %d", n, tc.followers)
			}
			if h := st.TakeLag(); h.TotalCount() != 1 || st.TakeLag().TotalCount() != 0 {
				t.Errorf("lag histogram holds %d lags, want the job's 1, then none", h.TotalCount())
			}
		})
	}
}

// TestSmallJobsShareATransaction: the posts of ordinary authors share a
// chunk's transaction while its budget of followers lasts.
func TestSmallJobsShareATransaction(t *testing.T) {
	for _, tc := range []struct{ chunk, want int }{{100, 1}, {5, 6}, {3, 10}} {
		t.Run(strconv.Itoa(tc.chunk), func(t *testing.T) {
			s, _ := open(t, Options{Workers: -1})
			// Authors 1..10, each followed by three of users 11..13.
			if _, err := s.DB().Exec(`INSERT INTO follows (follower_id, followee_id) SELECT f.seq, a.seq FROM seq_1_to_10 a, seq_11_to_13 f`); err != nil {
				t.Fatal(err)
			}
			for a := timeline.UserID(1); a <= 10; a++ {
				timelinetest.Post(t, s, a, "hello")
			}
			st := NewStats()
			if got := drain(t, &Worker{DB: s.DB(), Chunk: tc.chunk, Stats: st}); got != tc.want {
				t.Errorf("%d transactions, want %d", got, tc.want)
			}
			if c := st.Counters(); c["fanout_rows"] != 30 || c["fanout_jobs"] != 10 {
				t.Errorf("counters %v, want 30 rows and 10 jobs", c)
			}
			if h := st.TakeLag(); h.TotalCount() != 10 {
				t.Errorf("%d lags recorded, want 10", h.TotalCount())
			}
		})
	}
}

// TestWorkerStoppedMidChunk stops a worker inside its fourth chunk's
// transaction, after its writes and before its commit: the three chunks
// committed stay, the fourth is rolled back, and a second worker finishes
// the job writing only the rest. A job applied again from the start
// (restored from a backup, say) writes nothing.
func TestWorkerStoppedMidChunk(t *testing.T) {
	const followers, chunk = 1000, 100
	s, _ := open(t, Options{Workers: -1})
	celebrity(t, s, followers)
	m := timelinetest.Post(t, s, 1, "to everyone")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &Worker{DB: s.DB(), Chunk: chunk, Stats: NewStats()}
	chunks := 0
	first.beforeCommit = func() {
		if chunks++; chunks == 4 {
			cancel()
		}
	}
	done := make(chan struct{})
	go func() { first.Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the stopped worker did not return")
	}
	if n := mailboxOf(t, s, m.ID); n != 3*chunk {
		t.Fatalf("after the stop: %d mailbox rows, want the 3 committed chunks' %d", n, 3*chunk)
	}
	var cursor uint64
	if err := s.DB().QueryRow(`SELECT done_through FROM fanout_jobs WHERE message_id = ?`, m.ID).Scan(&cursor); err != nil {
		t.Fatalf("the job is gone after a stop mid-job: %v", err)
	}
	if cursor != 3*chunk+1 { // followers are users 2..1001
		t.Errorf("job cursor %d, want %d", cursor, 3*chunk+1)
	}

	second := &Worker{DB: s.DB(), Chunk: chunk, Stats: NewStats()}
	if got := drain(t, second); got != 7 {
		t.Errorf("the second worker applied %d chunks, want the 7 left", got)
	}
	if n := mailboxOf(t, s, m.ID); n != followers {
		t.Errorf("after the restart: %d mailbox rows, want %d", n, followers)
	}
	if rows := first.Stats.Counters()["fanout_rows"] + second.Stats.Counters()["fanout_rows"]; rows != followers {
		t.Errorf("the workers wrote %d rows in all, want %d: some written twice or not at all", rows, followers)
	}

	if _, err := s.DB().Exec(`INSERT INTO fanout_jobs (message_id, author_id, posted_at) VALUES (?, 1, NOW(6))`, m.ID); err != nil {
		t.Fatal(err)
	}
	again := &Worker{DB: s.DB(), Chunk: chunk, Stats: NewStats()}
	drain(t, again)
	if rows := again.Stats.Counters()["fanout_rows"]; rows != 0 || mailboxOf(t, s, m.ID) != followers {
		t.Errorf("a job applied twice wrote %d rows again; mailbox %d rows", rows, mailboxOf(t, s, m.ID))
	}
}

// runChildWorker is the worker process of TestKilledWorkerProcess: it
// applies jobs on the database in spec ("dsn|database|chunk"), commits
// three chunks, and stops inside the fourth's transaction, its rows
// written and not committed, until killed.
func runChildWorker(spec string) {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		fmt.Fprintln(os.Stderr, "worker spec: want dsn|database|chunk, got", spec)
		os.Exit(2)
	}
	dsn, database := parts[0], parts[1]
	chunk, err := strconv.Atoi(parts[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker spec:", err)
		os.Exit(2)
	}
	var s *Store
	s, err = Open(context.Background(), push.Config{DSN: dsn, Database: database}, Options{Workers: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	chunks := 0
	w := &Worker{DB: s.DB(), Chunk: chunk, beforeCommit: func() {
		if chunks++; chunks == 4 {
			select {} // until killed
		}
	}}
	w.Run(context.Background())
}

// TestKilledWorkerProcess kills (-9) a worker process in the middle of a
// celebrity's job, then restarts the work in this process: every follower
// ends with the message exactly once. The worker process holds its fourth
// chunk open once its first three have committed, so the kill always
// lands inside a chunk's transaction, however the two processes are
// scheduled.
func TestKilledWorkerProcess(t *testing.T) {
	const followers, chunk = 3000, 50
	s, database := open(t, Options{Workers: -1})
	celebrity(t, s, followers)
	m := timelinetest.Post(t, s, 1, "to everyone")

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+testserver.DSN(t)+"|"+database+"|"+strconv.Itoa(chunk))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	testserver.Poll(t, time.Minute, "the worker process's three chunks", func() bool { return mailboxOf(t, s, m.ID) >= 3*chunk })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	before := mailboxOf(t, s, m.ID)
	if before != 3*chunk {
		t.Fatalf("the worker process committed %d rows before it was killed, want its three chunks' %d", before, 3*chunk)
	}
	t.Logf("killed the worker process after %d of %d followers", before, followers)

	// The server rolls the dead connection's chunk back when it notices
	// the connection closed; until then the job stays locked, and a claim
	// skips it.
	w := &Worker{DB: s.DB(), Chunk: chunk, Stats: NewStats()}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		drain(t, w)
		if n, err := Pending(timelinetest.Context(t), s.DB()); err != nil || n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed worker's job was still locked after 30 s")
		}
	}
	if n := mailboxOf(t, s, m.ID); n != followers {
		t.Errorf("after the restart: %d mailbox rows, want %d", n, followers)
	}
	if rows := w.Stats.Counters()["fanout_rows"]; rows+int64(before) < followers {
		t.Errorf("the restarted worker wrote %d rows after %d: some lost", rows, before)
	}
}

// TestFollowsWithJobInFlight changes the celebrity's followers while a
// job stands after its first chunk: followers on both sides of its cursor
// unfollow, one below it unfollows and follows again, a new one above it
// follows. After the store settles, exactly the followers at the end hold
// the message.
func TestFollowsWithJobInFlight(t *testing.T) {
	const followers, chunk = 10, 4 // users 2..11
	s, _ := open(t, Options{Workers: -1})
	celebrity(t, s, followers)
	m := timelinetest.Post(t, s, 1, "to everyone")
	w := &Worker{DB: s.DB(), Chunk: chunk}
	if worked, err := w.Step(timelinetest.Context(t)); !worked || err != nil {
		t.Fatalf("first chunk: %v, %v", worked, err)
	}
	if n := mailboxOf(t, s, m.ID); n != chunk {
		t.Fatalf("after one chunk: %d rows, want %d", n, chunk) // users 2..5
	}
	timelinetest.Unfollow(t, s, 3, 1) // written already
	timelinetest.Unfollow(t, s, 9, 1) // not yet written
	timelinetest.Unfollow(t, s, 4, 1)
	timelinetest.Follow(t, s, 4, 1)  // below the cursor again
	timelinetest.Follow(t, s, 20, 1) // above it, new
	drain(t, w)
	for u := timeline.UserID(2); u <= 21; u++ {
		want := (u <= 11 && u != 3 && u != 9) || u == 20
		if got := len(timelinetest.Walk(t, s, u, 0)) == 1; got != want {
			t.Errorf("user %d has the message: %v, want %v", u, got, want)
		}
	}
	if n := mailboxOf(t, s, m.ID); n != followers-1 {
		t.Errorf("%d mailbox rows, want %d", n, followers-1)
	}
}

// TestChunkLocksItsFollowRows: while a chunk's transaction is open, the
// follow rows it wrote to stay locked, so an unfollow of its author waits
// for the commit and then removes what the chunk wrote; rows the chunk
// did not reach stay free, but for the index entry right after those it
// read, which InnoDB's scan locks as it stops. A chunk that takes the
// whole job and one that takes a part of it write their rows differently;
// both lock.
func TestChunkLocksItsFollowRows(t *testing.T) {
	for _, tc := range []struct {
		name         string
		chunk        int
		locked, free []timeline.UserID // followers of user 1 (users 2..11)
	}{
		{"part of the job", 4, []timeline.UserID{2, 3, 5}, []timeline.UserID{7, 11}}, // 6 ends the scan
		{"the whole job", 20, []timeline.UserID{2, 7, 11}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := open(t, Options{Workers: -1})
			celebrity(t, s, 10)
			timelinetest.Follow(t, s, 2, 50) // (50, 2) ends the scan of the whole job
			timelinetest.Follow(t, s, 3, 60) // and no post of user 60 is queued
			timelinetest.Post(t, s, 1, "to everyone")
			tryUnfollow := func(follower, followee timeline.UserID) error {
				ctx := timelinetest.Context(t)
				tx, err := s.DB().BeginTx(ctx, nil) // another connection than the chunk's
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				if _, err := tx.ExecContext(ctx, `SET SESSION innodb_lock_wait_timeout = 0`); err != nil {
					t.Fatal(err)
				}
				_, err = tx.ExecContext(ctx, `DELETE FROM follows WHERE follower_id = ? AND followee_id = ?`, follower, followee)
				return err
			}
			w := &Worker{DB: s.DB(), Chunk: tc.chunk}
			w.beforeCommit = func() {
				for _, u := range tc.locked {
					if err := tryUnfollow(u, 1); err == nil || !strings.Contains(err.Error(), "Lock wait timeout") {
						t.Errorf("unfollow by %d, whom the open chunk wrote to: %v, want a lock wait timeout", u, err)
					}
				}
				for _, u := range tc.free {
					if err := tryUnfollow(u, 1); err != nil {
						t.Errorf("unfollow by %d, whom the open chunk did not reach: %v", u, err)
					}
				}
				if err := tryUnfollow(3, 60); err != nil {
					t.Errorf("unfollow of an author with no job: %v", err)
				}
			}
			if worked, err := w.Step(timelinetest.Context(t)); !worked || err != nil {
				t.Fatalf("chunk: %v, %v", worked, err)
			}
		})
	}
}

// TestChunkWaitsForNoOtherJob: a chunk reads only the jobs it claimed, so
// a job that another transaction holds (another worker's claim, a post not
// yet committed) does not hold the chunk up, whatever the server believes
// of the queue's size. Here the queue's statistics are those of an empty
// queue, as they often are in a run, where the queue empties and fills
// many times a second: planned as a scan of the whole queue, a chunk's
// locking read of its jobs waits on every job others hold, one after the
// other. At paper scale with eight workers, one chunk of 215 rows waited
// 15 s that way, until the backlog was gone.
func TestChunkWaitsForNoOtherJob(t *testing.T) {
	s, database := open(t, Options{Workers: -1})
	ctx := timelinetest.Context(t)
	for _, q := range []string{
		`ANALYZE TABLE fanout_jobs`, // while it is empty
		`ALTER TABLE fanout_jobs STATS_AUTO_RECALC = 0`,
		// Authors 1..8, each followed by users 11..13.
		`INSERT INTO follows (follower_id, followee_id) SELECT f.seq, a.seq FROM seq_1_to_8 a, seq_11_to_13 f`,
	} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var posts []timeline.Message
	for a := timeline.UserID(1); a <= 8; a++ {
		posts = append(posts, timelinetest.Post(t, s, a, "hello"))
	}
	held := posts[len(posts)-1].ID
	other, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	if _, err := other.ExecContext(ctx, `SELECT message_id FROM fanout_jobs WHERE message_id = ? FOR UPDATE`, held); err != nil {
		t.Fatal(err)
	}

	// The chunk's connections give up on a lock after a second, where the
	// server's default is 50.
	cfg, err := mysql.ParseDSN(testserver.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["innodb_lock_wait_timeout"] = "1"
	db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: cfg.FormatDSN(), Database: database})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	st := NewStats()
	if _, err := (&Worker{DB: db, Chunk: 100, Stats: st}).Step(ctx); err != nil {
		t.Fatalf("the chunk waited for job %d, which it did not claim: %v", held, err)
	}
	if c := st.Counters(); c["fanout_jobs"] != 7 || c["fanout_rows"] != 21 {
		t.Errorf("the chunk applied %d jobs (%d rows), want the 7 free ones (21 rows)", c["fanout_jobs"], c["fanout_rows"])
	}
}

// TestSettleIsBounded: with no worker anywhere, Settle returns when its
// context ends, saying so, and saying that the store runs no workers.
func TestSettleIsBounded(t *testing.T) {
	s, _ := open(t, Options{Workers: -1})
	timelinetest.Post(t, s, 1, "nobody applies this")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := s.Settle(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Settle with no workers: %v, want a deadline error", err)
	}
	if !strings.Contains(err.Error(), "runs no fan-out workers") || !strings.Contains(err.Error(), "pushpull fanout") {
		t.Fatalf("Settle with no workers: %q does not say why it waited", err)
	}
}

// TestBadOptions: an invalid option, or Options field, is a
// *registry.OptionError matching registry.ErrBadOption and creates no
// database.
func TestBadOptions(t *testing.T) {
	cfg := registry.Config{DSN: testserver.DSN(t), Database: "never_made"}
	for _, opts := range []map[string]string{
		{OptionWorkers: "many"}, {OptionWorkers: "100000"}, {OptionWorkers: "-2"}, {OptionChunk: "-5"}, {OptionChunk: "1e3"}, {OptionChunk: ""},
	} {
		cfg.Options = opts
		s, err := registry.OpenModel(context.Background(), ModelName, cfg)
		if err == nil {
			s.Close()
		}
		var oe *registry.OptionError
		if !errors.As(err, &oe) || !errors.Is(err, registry.ErrBadOption) {
			t.Errorf("options %v: %v, want a *registry.OptionError matching ErrBadOption", opts, err)
		}
	}
	for _, o := range []Options{{Workers: MaxWorkers + 1}, {Chunk: -5}, {Chunk: MaxChunk + 1}} {
		_, err := Open(context.Background(), push.Config{DSN: testserver.DSN(t), Database: "never_made"}, o)
		var oe *registry.OptionError
		if !errors.As(err, &oe) {
			t.Errorf("%+v: %v, want a *registry.OptionError", o, err)
		}
	}
	var n int
	db := testserver.Admin(t)
	defer db.Close()
	if err := db.QueryRow(`SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'never_made'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("a refused Open created its database (%d, %v)", n, err)
	}
}

// TestClaimSize: a worker claims about twice the jobs its average says fit
// a chunk, within the bounds.
func TestClaimSize(t *testing.T) {
	for _, tc := range []struct {
		budget int64
		perJob float64
		want   int
	}{
		{1000, 0, maxJobsPerTransaction}, // no average yet
		{3, 0, 3},                        // a job takes at least one
		{1000, 100, 21},
		{1000, 2000, 2}, // celebrities: one, and the next
		{1000, 1, maxJobsPerTransaction},
		{1000, 0.2, maxJobsPerTransaction}, // jobs with no followers count as one
		{5, 3, 5},
	} {
		if got := claimSize(tc.budget, tc.perJob); got != tc.want {
			t.Errorf("claimSize(%d, %g) = %d, want %d", tc.budget, tc.perJob, got, tc.want)
		}
	}
}
