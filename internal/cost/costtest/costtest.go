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

// RedisCommands is the commands the Redis server at addr runs while do
// runs, by its own count (cost.RedisStats' "commands"), less the INFO
// that reads the count: divide by the operations do makes for each
// one's. t fails at once when the count cannot be read.
func RedisCommands(t testing.TB, addr string, do func()) float64 {
	t.Helper()
	commands := func() float64 {
		t.Helper()
		st, err := cost.RedisStats(addr)
		if err != nil {
			t.Fatal(err)
		}
		return float64(st["commands"])
	}
	before := commands()
	do()
	return commands() - before - 1
}
