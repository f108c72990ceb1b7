package pull_test

import (
	"context"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{}) }

func open(t *testing.T, strategy pull.Strategy, database string) *pull.Store {
	t.Helper()
	s, err := pull.Open(context.Background(), pull.Config{DSN: testserver.DSN(t), Database: database, Strategy: strategy})
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
}
