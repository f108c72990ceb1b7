// Package costtest measures, for the tests of a design's cost model, what
// operations cost a database server by its own counters (package cost).
package costtest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
)

// Counted is what each of n operations that do makes cost the server
// behind db, as its counters count them (cost.Meter.Measure). t fails at
// once when the counters cannot be read or trusted.
func Counted(t testing.TB, db *sql.DB, n int, do func()) cost.Cost {
	t.Helper()
	c, err := cost.NewMeter(db, nil).Measure(context.Background(), int64(n), do)
	if err != nil {
		t.Fatal(err)
	}
	if c.CountersUnreliable() {
		t.Fatalf("the counters could not be trusted: %v", c)
	}
	return c
}
