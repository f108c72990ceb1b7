package all_test

import (
	"context"
	"testing"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	schema "github.com/pushpull/pushpull/sql"
)

// BenchmarkVitessSequence sets the message sequence's call, which every
// post in the cluster makes to the one unsharded tablet that holds
// message_seq, beside an ordinary single-shard call (a point read of a
// user's follows) through the same vtgate, 8 sessions at once. The
// sequence's rate is the ceiling of the cluster's post rate: it does not
// grow with the shards of the user keyspaces.
//
//	go test ./registry/all -run '^$' -bench VitessSequence -benchtime 3s
func BenchmarkVitessSequence(b *testing.B) {
	ctx := context.Background()
	keyspace := testserver.Keyspace(b)
	cfg := push.Config{DSN: testserver.Vtgate(b), Database: keyspace}
	s, err := push.OpenVitess(ctx, cfg) // makes the sequence if it is not there yet
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, bc := range []struct {
		name, database, query string
	}{
		{"sequence", schema.SequenceKeyspace, "SELECT NEXT 1 VALUES FROM message_seq"},
		{"shard", keyspace, "SELECT followee_id FROM follows WHERE follower_id = 1"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			db, err := mysqlx.Open(ctx, mysqlx.Options{DSN: testserver.Vtgate(b), Database: bc.database, MaxConns: 8, Vitess: true})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			b.SetParallelism(4) // 8 sessions on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					rows, err := db.QueryContext(ctx, bc.query)
					if err != nil {
						b.Error(err)
						return
					}
					for rows.Next() {
					}
					if err := rows.Close(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
