package push_test

import (
	"context"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{}) }

func open(t *testing.T) (*push.Store, string) {
	t.Helper()
	db := testserver.Database(t)
	s, err := push.Open(context.Background(), push.Config{DSN: testserver.DSN(t), Database: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, db
}

func TestConformance(t *testing.T) {
	timelinetest.Run(t, func(t *testing.T) timeline.Store {
		s, _ := open(t)
		return s
	})
}
