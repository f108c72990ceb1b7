package pull_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Memcached: true}) }

var namespaces atomic.Int64

// config returns the Config of a store on database; StrategyRecent and
// StrategyActive get the test memcached and a namespace no other store in
// this run uses.
func config(t testing.TB, strategy pull.Strategy, database string) pull.Config {
	read, err := pull.Read(strategy)
	if err != nil {
		t.Fatal(err)
	}
	cfg := pull.Config{DSN: testserver.DSN(t), Database: database, Read: read}
	if strategy == pull.StrategyRecent || strategy == pull.StrategyActive {
		cfg.Memcache = []string{testserver.Memcache(t)}
		cfg.Namespace = fmt.Sprintf("t%s-%d/", database, namespaces.Add(1))
	}
	return cfg
}

func open(t *testing.T, strategy pull.Strategy, database string) *pull.Store {
	t.Helper()
	return openConfig(t, config(t, strategy, database))
}

func openConfig(t *testing.T, cfg pull.Config) *pull.Store {
	t.Helper()
	s, err := pull.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	for _, strategy := range pull.Strategies {
		t.Run(string(strategy), func(t *testing.T) {
			timelinetest.Run(t, func(t *testing.T) timeline.Store {
				return open(t, strategy, testserver.Database(t))
			})
		})
	}
	// With indexes of one followee, every user who follows three or more
	// authors reads through one.
	t.Run("active/1", func(t *testing.T) {
		timelinetest.Run(t, func(t *testing.T) timeline.Store {
			cfg := config(t, pull.StrategyActive, testserver.Database(t))
			cfg.Read = recent.Active{ActiveLen: 1}
			return openConfig(t, cfg)
		})
	})
}

// TestRead: every strategy the benchmark runs has a ReadStrategy of that
// name, and a store opened with it reports it.
func TestRead(t *testing.T) {
	for _, strategy := range pull.Strategies {
		read, err := pull.Read(strategy)
		if err != nil || read.Name() != string(strategy) {
			t.Fatalf("Read(%q) = %v, %v", strategy, read, err)
		}
	}
	if _, err := pull.Read("nope"); err == nil {
		t.Fatal("Read of an unknown strategy succeeded")
	}
	if s := openConfig(t, pull.Config{DSN: testserver.DSN(t), Database: testserver.Database(t)}); s.Strategy() != pull.StrategySP {
		t.Fatalf("a store with no Config.Read reads with %q, want sp", s.Strategy())
	}
}
