package load

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	_ "github.com/pushpull/pushpull/registry/all"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Memcached: true, Redis: true}) }

// TestLoadMatchesMemory bulk-loads a small dataset into fresh push and pull
// databases and requires every user's timeline, read through each SQL
// model, to equal the in-memory store fed the same dataset through the
// public API.
func TestLoadMatchesMemory(t *testing.T) {
	ctx := context.Background()
	spec, err := dataset.PaperSpec().Scaled(0.005) // 50 users, 5,000 messages
	if err != nil {
		t.Fatal(err)
	}
	spec.AvgFollowees = 8
	d, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	pushDB, pullDB := testserver.Database(t), testserver.Database(t)
	ps, err := push.Open(ctx, push.Config{DSN: testserver.DSN(t), Database: pushDB})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	pl, err := pull.Open(ctx, pull.Config{DSN: testserver.DSN(t), Database: pullDB})
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()

	load, err := Load(ctx, d, []Target{{Name: "pull", DB: pl.DB(), Schema: schema.Pull}, {Name: "push", DB: ps.DB(), Schema: schema.Push}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := d.Stats()
	want := map[string]int64{
		"pull.follows": st.Edges, "pull.messages": int64(st.Messages),
		"push.follows": st.Edges, "push.messages": int64(st.Messages), "push.mailbox": d.MailboxRows(),
	}
	for _, tl := range load.Tables {
		if tl.Rows != want[tl.Database+"."+tl.Table] {
			t.Fatalf("%s.%s: loaded %d rows, generated %d", tl.Database, tl.Table, tl.Rows, want[tl.Database+"."+tl.Table])
		}
		delete(want, tl.Database+"."+tl.Table)
	}
	if len(want) != 0 {
		t.Fatalf("tables not loaded: %v", want)
	}
	counted := testserver.CountRows(t, pushDB, "follows", "messages", "mailbox")
	if counted["mailbox"] != d.MailboxRows() || counted["messages"] != int64(st.Messages) || counted["follows"] != st.Edges {
		t.Fatalf("push row counts %v, dataset %s", counted, st)
	}
	if d.MailboxRows() == 0 {
		t.Fatal("empty mailbox: the test exercises nothing")
	}

	mem := timeline.NewMemory()
	if err := d.Apply(ctx, mem); err != nil {
		t.Fatal(err)
	}
	readers := map[string]timeline.Store{"push": ps}
	// Every model on the pull schema reads the loaded pull database, the
	// ones that keep less beside it opened first (registry.Bench.WriteRank).
	for _, m := range registry.OpenOrder(registry.Models()) {
		if m.Schema != schema.Pull {
			continue
		}
		db := pullDB
		if m.Needs&registry.Redis != 0 {
			// Its writes go to Redis too, and no store that writes there
			// may keep memcached lists (pull-recent's): a database of its
			// own, loaded alike.
			db = testserver.Database(t)
		}
		s, err := m.Open(ctx, registry.Config{
			DSN: testserver.DSN(t), Database: db,
			Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Namespace: db + "/",
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if db != pullDB {
			if _, err := Load(ctx, d, []Target{{Name: db, DB: s.(timeline.DBHolder).DB(), Schema: schema.Pull}}, Options{}); err != nil {
				t.Fatalf("%s: %v", m.Name, err)
			}
		}
		readers[m.Name] = s
	}
	if len(readers) < 3 {
		t.Fatalf("only %d models read the loaded databases", len(readers))
	}
	for u := timeline.UserID(1); u <= timeline.UserID(spec.Users); u++ {
		want := describe(timelinetest.Walk(t, mem, u, 50))
		for name, s := range readers {
			msgs := timelinetest.Walk(t, s, u, 50)
			if got := describe(msgs); !slices.Equal(got, want) {
				t.Fatalf("user %d: %s differs from memory:\n got %d messages\nwant %d", u, name, len(got), len(want))
			}
			// The memory store stamps posts with the time of Apply; the
			// loaded rows carry the dataset's times.
			for _, m := range msgs {
				if !m.CreatedAt.Equal(d.CreatedAt(uint64(m.ID))) {
					t.Fatalf("%s: message %d created %v, dataset says %v", name, m.ID, m.CreatedAt, d.CreatedAt(uint64(m.ID)))
				}
			}
		}
	}

	// Posting after a bulk load continues the id sequence.
	m, err := ps.Post(ctx, 1, "after the load")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != timeline.MessageID(st.Messages+1) {
		t.Fatalf("first post after load got id %d, want %d", m.ID, st.Messages+1)
	}
}

// shapedSettings are the options under which TestLoadShapedMatchesMemory
// opens the models that keep part of push's mailbox, so that the shape
// cuts a small dataset: a cap below most timelines, a threshold some
// authors reach, a cost ratio H/L of 100 that pulls most edges.
var shapedSettings = map[string]string{"cap": "25", "slack": "5", "threshold": "6", "rebuild": "25", "h": "100", "l": "1"}

// TestLoadShapedMatchesMemory bulk-loads a small dataset into every model
// that keeps part of push's mailbox (registry.PartialMailbox), as the
// benchmark does, and requires every timeline, walked to its end, to
// equal the in-memory store's, and a post afterwards to reach it.
func TestLoadShapedMatchesMemory(t *testing.T) {
	ctx := context.Background()
	spec, err := dataset.PaperSpec().Scaled(0.005) // 50 users, 5,000 messages
	if err != nil {
		t.Fatal(err)
	}
	spec.AvgFollowees = 8
	d, err := dataset.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	mem := timeline.NewMemory()
	if err := d.Apply(ctx, mem); err != nil {
		t.Fatal(err)
	}
	shaped := 0
	for _, m := range registry.Models() {
		if m.OnVitess() || !m.Persistent() { // this package's tests start no Vitess cluster
			continue
		}
		db := testserver.Database(t)
		s, err := m.Open(ctx, registry.Config{DSN: testserver.DSN(t), Database: db, Options: m.OwnOptions(shapedSettings),
			Memcache: []string{testserver.Memcache(t)}, Redis: testserver.Redis(t), Namespace: db + "/"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		pm, ok := s.(registry.PartialMailbox)
		if !ok {
			continue
		}
		shaped++
		shape := pm.MailboxShape()
		target := Target{Name: db, DB: s.(timeline.DBHolder).DB(), Schema: m.Schema, Mailbox: shape}
		if _, err := Load(ctx, d, []Target{target}, Options{}); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if rows := testserver.CountRows(t, db, "mailbox")["mailbox"]; rows >= d.MailboxRows() || rows != shapedMailboxRows(d, shape) {
			t.Fatalf("%s: %d mailbox rows loaded of push's %d, %d expected", m.Name, rows, d.MailboxRows(), shapedMailboxRows(d, shape))
		}
		for u := timeline.UserID(1); u <= timeline.UserID(spec.Users); u++ {
			want := describe(timelinetest.Walk(t, mem, u, 30))
			if got := describe(timelinetest.Walk(t, s, u, 30)); !slices.Equal(got, want) {
				t.Fatalf("user %d: %s differs from memory: got %d messages, want %d", u, m.Name, len(got), len(want))
			}
		}
		for _, author := range []timeline.UserID{1, 2, 3} {
			msg, err := s.Post(ctx, author, "after the load")
			if err != nil {
				t.Fatal(err)
			}
			for _, follower := range d.Followers(uint32(author)) {
				if p := timelinetest.Newest(t, s, timeline.UserID(follower)); len(p.Messages) == 0 || p.Messages[0].ID != msg.ID {
					t.Fatalf("%s: user %d's newest page lacks %d's post after the load", m.Name, follower, author)
				}
			}
		}
	}
	if shaped == 0 {
		t.Fatal("no model keeps part of the mailbox: the test loaded nothing")
	}
}

func describe(ms []timeline.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%d/%d/%q", m.ID, m.Author, m.Body)
	}
	return out
}

// TestChunkedLoad loads the mailbox in many chunks on several connections,
// on a server the load may tune, and checks every table's rows (the
// mailbox's exactly, by checksum), that the indexes are those of a freshly
// created schema, and that the server's settings are put back.
func TestChunkedLoad(t *testing.T) {
	ctx := context.Background()
	d, err := dataset.Generate(dataset.Spec{Users: 200, Messages: 5_000, AvgFollowees: 12, Graph: dataset.GraphPowerLaw, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	loadedDB, freshDB := testserver.Database(t), testserver.Database(t)
	ps, err := push.Open(ctx, push.Config{DSN: testserver.DSN(t), Database: loadedDB})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	fresh, err := push.Open(ctx, push.Config{DSN: testserver.DSN(t), Database: freshDB})
	if err != nil {
		t.Fatal(err)
	}
	fresh.Close()
	admin := testserver.Admin(t)
	defer admin.Close()
	setting := func() (v int64) {
		if err := admin.QueryRow("SELECT @@GLOBAL.innodb_log_file_size").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := setting()

	opts := Options{Workers: 3, ChunkRows: 2000, Server: admin}
	if n := len(mailboxChunks(d, registry.MailboxShape{}, opts.ChunkRows)); n < 20 {
		t.Fatalf("%d chunks: the test loads too little", n)
	}
	load, err := Load(ctx, d, []Target{{Name: "push", DB: ps.DB(), Schema: schema.Push}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if after := setting(); after != before {
		t.Errorf("innodb_log_file_size %d after the load, %d before", after, before)
	}
	st := d.Stats()
	want := map[string]int64{"follows": st.Edges, "messages": int64(st.Messages), "mailbox": st.MailboxRows}
	for _, tl := range load.Tables {
		if tl.Rows != want[tl.Table] || !(tl.Seconds > 0) {
			t.Errorf("%s: recorded %d rows in %v s, want %d", tl.Table, tl.Rows, tl.Seconds, want[tl.Table])
		}
	}
	if got := testserver.CountRows(t, loadedDB, "follows", "messages", "mailbox"); !maps.Equal(got, want) {
		t.Errorf("tables hold %v, want %v", got, want)
	}
	var sum, wantSum uint64
	d.EachMailbox(func(u uint32, id uint64) error {
		wantSum += uint64(u)*1_000_003 + id
		return nil
	})
	if err := admin.QueryRow("SELECT SUM(user_id * 1000003 + message_id) FROM `" + loadedDB + "`.mailbox").Scan(&sum); err != nil || sum != wantSum {
		t.Errorf("mailbox checksum %d, want %d (%v)", sum, wantSum, err)
	}
	indexes := func(db string) string {
		rows, err := admin.Query(`SELECT table_name, index_name, non_unique, GROUP_CONCAT(column_name ORDER BY seq_in_index)
			FROM information_schema.statistics WHERE table_schema = ? GROUP BY table_name, index_name, non_unique
			ORDER BY table_name, index_name`, db)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var table, index, cols string
			var nonUnique int
			if err := rows.Scan(&table, &index, &nonUnique, &cols); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s.%s(%s) non_unique=%d", table, index, cols, nonUnique))
		}
		return strings.Join(out, "\n")
	}
	if got, want := indexes(loadedDB), indexes(freshDB); got != want || !strings.Contains(got, "messages.author_id_id") {
		t.Errorf("indexes after the load:\n%s\nwant those of a fresh schema:\n%s", got, want)
	}
}

// TestLoadLeavesNoDirtyPages loads a push database whose redo fits in the
// server's log (so the log is not resized and its shrinking does not
// flush) and requires the load to end with the buffer pool's dirty pages
// written, the server's flushing settings as they were, and the flush
// recorded: the phases measured after a load must not pay for writing
// its pages (push-compressed compresses each one as it is written).
func TestLoadLeavesNoDirtyPages(t *testing.T) {
	ctx := context.Background()
	d, err := dataset.Generate(dataset.Spec{Users: 400, Messages: 20_000, AvgFollowees: 20, Graph: dataset.GraphUniform, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	db := testserver.Database(t)
	ps, err := push.Open(ctx, push.Config{DSN: testserver.DSN(t), Database: db, Schema: schema.PushCompressed})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	admin := testserver.Admin(t)
	defer admin.Close()
	settings := func() string {
		var s string
		if err := admin.QueryRow(`SELECT CONCAT_WS(' ', @@GLOBAL.innodb_log_file_size, @@GLOBAL.innodb_io_capacity,
			@@GLOBAL.innodb_io_capacity_max, @@GLOBAL.innodb_max_dirty_pages_pct, @@GLOBAL.innodb_max_dirty_pages_pct_lwm)`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := settings()
	var logSize int64
	if err := admin.QueryRow("SELECT @@GLOBAL.innodb_log_file_size").Scan(&logSize); err != nil {
		t.Fatal(err)
	}
	st := d.Stats()
	if rows := st.MailboxRows + st.Edges + int64(st.Messages); rows*redoPerRow > logSize/2 {
		t.Fatalf("%d rows would resize the %d-byte log: the test needs a load that fits", rows, logSize)
	}
	load, err := Load(ctx, d, []Target{{Name: "push", DB: ps.DB(), Schema: schema.PushCompressed}}, Options{Server: admin})
	if err != nil {
		t.Fatal(err)
	}
	dirty, err := dirtyPages(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if after := settings(); after != before {
		t.Errorf("settings after the load %q, before %q", after, before)
	}
	if dirty > maxDirtyAfterLoad {
		t.Errorf("%d dirty pages in the buffer pool after the load, want at most %d", dirty, maxDirtyAfterLoad)
	}
	if f := load.Flush; f == nil || f.LeftPages > maxDirtyAfterLoad {
		t.Fatalf("flush recorded %+v: want the load's pages written", f)
	} else {
		t.Logf("flush: %+v; %d dirty after", *f, dirty)
	}
}

// TestFlushDirty dirties thousands of pages with one statement and
// requires the end of a load (tuneServer's restore, flushDirty) to write
// them at once (the page cleaner left alone writes 200 a second), record
// them, and put the settings it changes back.
func TestFlushDirty(t *testing.T) {
	ctx := context.Background()
	db := testserver.Database(t)
	admin := testserver.Admin(t)
	defer admin.Close()
	for _, q := range []string{
		"CREATE DATABASE `" + db + "`",
		"CREATE TABLE `" + db + "`.t (id INT PRIMARY KEY, v VARCHAR(200)) PAGE_COMPRESSED=1",
		"INSERT INTO `" + db + "`.t SELECT seq, REPEAT(CHAR(65 + seq % 26), 200) FROM `" + db + "`.seq_1_to_200000",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	settings := func() string {
		var s string
		if err := admin.QueryRow(`SELECT CONCAT_WS(' ', @@GLOBAL.innodb_max_dirty_pages_pct, @@GLOBAL.innodb_max_dirty_pages_pct_lwm,
			@@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max)`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := settings()
	restore, err := tuneServer(ctx, admin, 0) // no rows: the log stays, the INSERT's pages are flushed
	if err != nil {
		t.Fatal(err)
	}
	f, err := restore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	left, err := dirtyPages(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if f.DirtyPages < 1000 || f.LeftPages > maxDirtyAfterLoad || left > maxDirtyAfterLoad || !(f.Seconds > 0) {
		t.Errorf("flushed %+v, %d dirty after: want 1,000 pages or more dirty before, at most %d after", *f, left, maxDirtyAfterLoad)
	}
	if after := settings(); after != before {
		t.Errorf("settings %q after the flush, %q before", after, before)
	}
	t.Logf("%+v", *f)
}

// maxDirtyAfterLoad is how many pages may be dirty after a load: the
// server's own background work (purge, statistics) dirties a few.
const maxDirtyAfterLoad = 16
