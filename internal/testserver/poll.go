package testserver

import (
	"testing"
	"time"
)

// Poll calls done every 20 ms until it reports true, and returns how long
// that took; it fails the test, naming what it waited for, if that takes
// longer than within. Tests wait for what servers and background work do
// this way, never by sleeping a guessed time.
func Poll(t testing.TB, within time.Duration, what string, done func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !done() {
		if time.Since(start) > within {
			t.Fatalf("%s: not after %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}
