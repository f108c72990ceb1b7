package cost_test

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
)

// TestRedisCost: a script that runs three commands counts one script and
// four commands (the script's run and its three), and Redis's CPU and
// bytes grow.
func TestRedisCost(t *testing.T) {
	addr := testserver.Redis(t)
	m := cost.NewMeter(nil, nil).WithRedis(addr)
	before, err := m.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const n = 50
	script := "redis.call('SET', KEYS[1], '1'); redis.call('INCR', KEYS[1]); return redis.call('GET', KEYS[1])"
	for i := range n {
		key := fmt.Sprintf("costtest:%d", i)
		fmt.Fprintf(conn, "*4\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n$1\r\n1\r\n$%d\r\n%s\r\n", len(script), script, len(key), key)
		buf := make([]byte, 64)
		if _, err := conn.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	after, err := m.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := cost.PerOp(before, after, n)
	// INFO itself adds a call or two per snapshot; other tests of the
	// package share the server.
	if c[cost.RDScripts] != 1 || c[cost.RDCommands] < 4 || c[cost.RDCommands] > 4.4 {
		t.Fatalf("redis scripts %v, commands %v per op; want 1 and 4", c[cost.RDScripts], c[cost.RDCommands])
	}
	if c[cost.RDBytes] <= 0 || c[cost.RDCPU] < 0 || after.Redis["used_memory"] <= 0 {
		t.Fatalf("cost %v, used_memory %d", c, after.Redis["used_memory"])
	}
}
