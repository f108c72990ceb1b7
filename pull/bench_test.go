package pull_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/timeline"
)

// BenchmarkRead measures every strategy's reads on an existing, loaded pull
// database, such as the one `pushpull bench --dsn DSN --models pull-sp`
// leaves behind:
//
//	PUSHPULL_BENCH_DSN='root@unix(/path/mariadb.sock)/' \
//	PUSHPULL_BENCH_MEMCACHE=127.0.0.1:11211 PUSHPULL_BENCH_USERS=10000 \
//	go test ./pull -run '^$' -bench Read -benchtime 3s
//
// It only reads (StrategyRecent also fills memcached), with 8 goroutines
// as the benchmark's 8 workers, and reports rows read per page for the
// strategies that count them. PUSHPULL_BENCH_DATABASE names the database
// (default pushpull_pull), PUSHPULL_BENCH_STRATEGIES limits the
// strategies (comma-separated) and PUSHPULL_BENCH_RECENT_LEN sets
// recent.Recent.RecentLen. Skipped unless PUSHPULL_BENCH_DSN is set.
func BenchmarkRead(b *testing.B) {
	dsn := os.Getenv("PUSHPULL_BENCH_DSN")
	if dsn == "" {
		b.Skip("PUSHPULL_BENCH_DSN not set")
	}
	database, users, recentLen := benchEnv()
	strategies := pull.Strategies
	if list := os.Getenv("PUSHPULL_BENCH_STRATEGIES"); list != "" {
		strategies = nil
		for _, name := range strings.Split(list, ",") {
			strategies = append(strategies, pull.Strategy(name))
		}
	}
	ctx := context.Background()
	for _, strategy := range strategies {
		cfg, ok := benchConfig(dsn, database, strategy, recentLen)
		if !ok {
			continue
		}
		s, err := pull.Open(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		// Older pages: cursors 1 to 4 pages deep, found once.
		rng := rand.New(rand.NewPCG(1, 2))
		var cursors []struct {
			user timeline.UserID
			q    timeline.Query
		}
		for len(cursors) < 400 {
			u := timeline.UserID(1 + rng.IntN(users))
			q := timeline.Query{}
			for depth := 1 + rng.IntN(4); depth > 0; depth-- {
				p, err := s.Timeline(ctx, u, q)
				if err != nil {
					b.Fatal(err)
				}
				if p.Next == "" {
					break
				}
				q.Before = p.Next
			}
			if q.Before != "" {
				cursors = append(cursors, struct {
					user timeline.UserID
					q    timeline.Query
				}{u, q})
			}
		}
		for _, phase := range []string{"newest", "older"} {
			b.Run(string(strategy)+"/"+phase, func(b *testing.B) {
				before := s.Stats()
				var seed atomic.Uint64
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					rng := rand.New(rand.NewPCG(seed.Add(1), 3))
					for pb.Next() {
						u, q := timeline.UserID(1+rng.IntN(users)), timeline.Query{}
						if phase == "older" {
							c := cursors[rng.IntN(len(cursors))]
							u, q = c.user, c.q
						}
						if _, err := s.Timeline(ctx, u, q); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				after := s.Stats()
				if pages := after.Pages - before.Pages; pages > 0 {
					b.ReportMetric(float64(after.RowsRead-before.RowsRead)/float64(pages), "rows/page")
				}
				if n := after.CacheHits - before.CacheHits + after.CacheMisses - before.CacheMisses; n > 0 {
					b.ReportMetric(float64(after.CacheMisses-before.CacheMisses)/float64(n), "miss-ratio")
				}
			})
		}
		s.Close()
	}
}

// BenchmarkPost measures Post with and without the lists StrategyRecent
// keeps and the hints StrategyActive sends (StrategySP's Post is the plain
// INSERT every other strategy shares). It writes to the database named as for BenchmarkRead, so it
// also needs PUSHPULL_BENCH_WRITE=1.
func BenchmarkPost(b *testing.B) {
	dsn := os.Getenv("PUSHPULL_BENCH_DSN")
	if dsn == "" || os.Getenv("PUSHPULL_BENCH_WRITE") != "1" {
		b.Skip("PUSHPULL_BENCH_DSN and PUSHPULL_BENCH_WRITE=1 not set")
	}
	database, users, recentLen := benchEnv()
	ctx := context.Background()
	for _, strategy := range []pull.Strategy{pull.StrategySP, pull.StrategyRecent, pull.StrategyActive} {
		cfg, ok := benchConfig(dsn, database, strategy, recentLen)
		if !ok {
			continue
		}
		s, err := pull.Open(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(strategy), func(b *testing.B) {
			var seed atomic.Uint64
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(seed.Add(1), 5))
				for pb.Next() {
					if _, err := s.Post(ctx, timeline.UserID(1+rng.IntN(users)), "benchmark post"); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		s.Close()
	}
}

// benchEnv reads the settings both benchmarks share: the database, the
// number of users in it, and recent.Recent.RecentLen.
func benchEnv() (database string, users, recentLen int) {
	database = os.Getenv("PUSHPULL_BENCH_DATABASE")
	if database == "" {
		database = pull.DefaultDatabase
	}
	users, _ = strconv.Atoi(os.Getenv("PUSHPULL_BENCH_USERS"))
	if users <= 0 {
		users = 10000
	}
	recentLen, _ = strconv.Atoi(os.Getenv("PUSHPULL_BENCH_RECENT_LEN"))
	return database, users, recentLen
}

// benchConfig is the store configuration the benchmarks use; ok is false
// for pull-recent and pull-active when no memcached is named in
// PUSHPULL_BENCH_MEMCACHE. Every strategy gets the memcached named there,
// for the write hooks the database may have recorded.
func benchConfig(dsn, database string, strategy pull.Strategy, recentLen int) (cfg pull.Config, ok bool) {
	read, err := pull.Read(strategy)
	if err != nil {
		return cfg, false
	}
	cfg = pull.Config{DSN: dsn, Database: database, MaxConns: 64, Read: read}
	mc := os.Getenv("PUSHPULL_BENCH_MEMCACHE")
	if mc != "" {
		cfg.Memcache = []string{mc}
		cfg.Namespace = "bench" + strconv.Itoa(recentLen) + "/"
	}
	switch read.(type) {
	case recent.Recent:
		cfg.Read = recent.Recent{RecentLen: recentLen}
	case recent.Active:
		cfg.Read = recent.Active{Recent: recent.Recent{RecentLen: recentLen}}
	default:
		return cfg, true
	}
	return cfg, mc != ""
}
