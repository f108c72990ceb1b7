package all_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestLoadVitess bulk-loads a small dataset into a push and a pull keyspace
// through vtgate (loadgen.LoadVitess, the benchmark's load) and requires
// every model on Vitess to read every user's whole timeline as the
// in-memory store fed the same dataset does, with the dataset's times.
func TestLoadVitess(t *testing.T) {
	ctx := context.Background()
	spec, err := loadgen.PaperSpec().Scaled(0.003) // 30 users, 3,000 messages
	if err != nil {
		t.Fatal(err)
	}
	spec.AvgFollowees = 6
	d, err := loadgen.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	mem := timeline.NewMemory()
	if err := d.Apply(ctx, mem); err != nil {
		t.Fatal(err)
	}
	keyspaces := map[schema.Model]string{schema.PushVitess: testserver.Keyspace(t), schema.PullVitess: testserver.Keyspace(t)}
	var readers []registry.Model
	var targets []loadgen.Target
	stores := map[string]timeline.Store{}
	for _, m := range registry.Models() {
		if !m.OnVitess() {
			continue
		}
		s, err := m.Open(ctx, config(t, m, keyspaces[m.Schema]))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[m.Name] = s
		readers = append(readers, m)
		if !slices.ContainsFunc(targets, func(x loadgen.Target) bool { return x.Schema == m.Schema }) {
			targets = append(targets, loadgen.Target{Name: keyspaces[m.Schema], DB: s.(registry.DBHolder).DB(), Schema: m.Schema})
		}
	}
	if len(targets) != 2 || len(readers) < 4 {
		t.Fatalf("%d keyspaces, %d models on Vitess", len(targets), len(readers))
	}
	seq, err := mysqlx.Open(ctx, mysqlx.Options{DSN: testserver.Vtgate(t), Database: schema.SequenceKeyspace, MaxConns: 1, Vitess: true})
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Close()
	load, err := loadgen.LoadVitess(ctx, d, targets, seq, 2)
	if err != nil {
		t.Fatal(err)
	}
	st := d.Stats()
	for _, tl := range load.Tables {
		want := map[string]int64{"follows": st.Edges, "followers": st.Edges, "messages": int64(st.Messages), "mailbox": d.MailboxRows()}[tl.Table]
		if tl.Rows != want {
			t.Fatalf("%s.%s: loaded %d rows, generated %d", tl.Database, tl.Table, tl.Rows, want)
		}
	}
	if counted := testserver.CountRowsAt(t, testserver.Vtgate(t), keyspaces[schema.PushVitess], "mailbox", "followers"); counted["mailbox"] != d.MailboxRows() || counted["followers"] != st.Edges || d.MailboxRows() == 0 {
		t.Fatalf("push keyspace holds %v, dataset %s", counted, st)
	}
	for u := timeline.UserID(1); u <= timeline.UserID(spec.Users); u++ {
		want := describeAll(timelinetest.Walk(t, mem, u, 25))
		for _, m := range readers {
			msgs := timelinetest.Walk(t, stores[m.Name], u, 25)
			if got := describeAll(msgs); !slices.Equal(got, want) {
				t.Fatalf("user %d: %s read %d messages, the memory store %d: %s", u, m.Name, len(got), len(want), firstDifference(want, got))
			}
			for _, msg := range msgs {
				if !msg.CreatedAt.Equal(d.CreatedAt(uint64(msg.ID))) {
					t.Fatalf("%s: message %d created %v, dataset says %v", m.Name, msg.ID, msg.CreatedAt, d.CreatedAt(uint64(msg.ID)))
				}
			}
		}
	}
}

func describeAll(ms []timeline.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%d/%d/%q", m.ID, m.Author, m.Body)
	}
	return out
}
