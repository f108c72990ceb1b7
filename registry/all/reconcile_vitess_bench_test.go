package all_test

import (
	"context"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/load"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/reconcile/reconciletest"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// BenchmarkReconcileVitess measures what reconcile costs on push@vitess,
// on the test cluster's keyspace of two shards (reconciletest.Cost), as
// BenchmarkReconcile in package push does on push: a database of the same
// shape (3,000 users who each follow 20 others at random, 30,000
// messages, about 600,000 mailbox rows), loaded through vtgate by the
// benchmark's loader (load.Vitess), the same traffic and the same
// settings. Run it once, with no other test in the run (the loader
// moves the message sequence past the ids it writes, which holds only
// while no test has drawn ids from it):
// go test ./registry/all -run '^$' -bench ReconcileVitess -benchtime 1x -timeout 30m
func BenchmarkReconcileVitess(b *testing.B) {
	const (
		users   = 3000
		follows = 20 // followees per user
		posts   = 10 // messages per user, on average
	)
	ctx := context.Background()
	m, err := registry.Lookup(push.VitessModelName)
	if err != nil {
		b.Fatal(err)
	}
	keyspace := testserver.Keyspace(b)
	s, err := m.Open(ctx, registry.Config{Vtgate: testserver.Vtgate(b), Database: keyspace, MaxConns: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	d, err := dataset.Generate(dataset.Spec{Users: users, Messages: users * posts, Followees: follows, Graph: dataset.GraphUniform, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	seq, err := mysqlx.Open(ctx, mysqlx.Options{DSN: testserver.Vtgate(b), Database: schema.SequenceKeyspace, MaxConns: 1, Vitess: true})
	if err != nil {
		b.Fatal(err)
	}
	defer seq.Close()
	loaded, err := load.Vitess(ctx, d, []load.Target{{Name: keyspace, DB: s.(timeline.DBHolder).DB(), Schema: m.Schema}}, seq, 4)
	if err != nil {
		b.Fatal(err)
	}
	for _, tl := range loaded.Tables {
		b.Logf("loaded %s: %d rows in %.1f s", tl.Table, tl.Rows, tl.Seconds)
	}
	c, err := m.Checker(s)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		reconciletest.Cost(b, s, c, reconciletest.Traffic{Users: users, Clients: 4, Windows: 6, Window: 10 * time.Second, PostEach: 10},
			reconcile.Options{Rate: reconcile.DefaultRate, Batch: reconcile.DefaultBatch},
			reconcile.Options{Rate: reconcile.DefaultRate, Batch: 10},
			reconcile.Options{Rate: reconcile.DefaultVitessRate, Batch: 10},
		)
	}
}
