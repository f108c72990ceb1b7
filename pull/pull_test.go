package pull_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Memcached: true}) }

var namespaces atomic.Int64

// A race (goroutines that write, read and damage state at once) runs for
// raceMin, and then until what it is there to exercise has happened, for
// raceMax at most: a busy machine makes a race longer, not vacuous, and a
// race that exercised nothing in raceMax fails its test.
const raceMin, raceMax = 2 * time.Second, time.Minute

// raceEnd tells the goroutines of a race when to stop.
type raceEnd struct {
	start  time.Time
	enough func() bool // whether the race has exercised what it is for
	ended  atomic.Bool
}

// newRaceEnd starts the clock of a race that has run long enough once
// enough reports true.
func newRaceEnd(enough func() bool) *raceEnd {
	return &raceEnd{start: time.Now(), enough: enough}
}

// over reports whether the race has run raceMin and exercised enough, or
// has run raceMax; once it has reported true it always does.
func (e *raceEnd) over() bool {
	if e.ended.Load() {
		return true
	}
	if d := time.Since(e.start); d < raceMin || (d < raceMax && !e.enough()) {
		return false
	}
	e.ended.Store(true)
	return true
}

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

func open(t testing.TB, strategy pull.Strategy, database string) *pull.Store {
	t.Helper()
	return openConfig(t, config(t, strategy, database))
}

func openConfig(t testing.TB, cfg pull.Config) *pull.Store {
	t.Helper()
	s, err := pull.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// setting is one configuration of the store that the conformance suite
// and the benchmarks run.
type setting struct {
	name   string
	config func(t testing.TB) pull.Config
}

// settings are every strategy with its defaults, and the memcached
// strategies pushed onto their fallbacks.
func settings() []setting {
	var out []setting
	with := func(name string, strategy pull.Strategy, read pull.ReadStrategy) setting {
		return setting{name, func(t testing.TB) pull.Config {
			cfg := config(t, strategy, testserver.Database(t))
			if read != nil {
				cfg.Read = read
			}
			return cfg
		}}
	}
	for _, strategy := range pull.Strategies {
		out = append(out, with(string(strategy), strategy, nil))
	}
	return append(out,
		// Lists of two ids: most pages reach below an author's list and
		// read that author from the database.
		with("recent/lists-of-2", pull.StrategyRecent, recent.Recent{RecentLen: 2}),
		// Indexes of one followee: every user who follows three or more
		// authors reads through one, and most pages fall back.
		with("active/1", pull.StrategyActive, recent.Active{ActiveLen: 1}),
		with("active/1/lists-of-2", pull.StrategyActive, recent.Active{Recent: recent.Recent{RecentLen: 2}, ActiveLen: 1}),
		// Home timelines (model hybrid-memcached): with the defaults,
		// with an index of 3 ids (most older pages fall back), and with
		// every author who has a follower when the store first reads the
		// celebrities pulled.
		with("home", pull.StrategyActive, recent.Home{}),
		with("home/3", pull.StrategyActive, recent.Home{Keep: 3}),
		with("home/threshold-1", pull.StrategyActive, recent.Home{Threshold: 1}),
		with("home/3/threshold-1/lists-of-2", pull.StrategyActive, recent.Home{Recent: recent.Recent{RecentLen: 2}, Keep: 3, Threshold: 1}),
	)
}

func TestConformance(t *testing.T) {
	var configs []timelinetest.Config
	for _, st := range settings() {
		configs = append(configs, timelinetest.Config{Name: st.name, Open: func(t *testing.T) timeline.Store {
			return openConfig(t, st.config(t))
		}})
	}
	timelinetest.RunConfigs(t, configs)
}

// BenchmarkStrategies runs the kit's benchmarks (newest page, older page,
// post) on every setting, each on a small dataset of its own:
//
//	go test ./pull -run '^$' -bench Strategies
func BenchmarkStrategies(b *testing.B) {
	for _, st := range settings() {
		b.Run(st.name, func(b *testing.B) {
			timelinetest.RunBenchmarks(b, func(b *testing.B) timeline.Store {
				return openConfig(b, st.config(b))
			})
		})
	}
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
