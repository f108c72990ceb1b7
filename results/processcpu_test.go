package results

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
)

// TestProcessCPUOf: a cost per operation over a window gives each
// process's CPU a second (400 operations of 50 µs in the application over
// 2 s: 10,000 µs a second); a window without operations, seconds or the
// application's CPU gives none; and a rate step or run saved before the
// figures existed loads without them, and writes none.
func TestProcessCPUOf(t *testing.T) {
	c := cost.Cost{cost.Ops: 400, cost.CPU: 50, cost.DBCPU: 120, cost.MCCPU: 5}
	p, ok := ProcessCPUOf(c, 2)
	if !ok || p.Seconds != 2 || p.AppUs != 10_000 || p.DBUs != 24_000 || p.MCUs != 1000 || p.RedisUs != 0 || math.Abs(p.All()-35_000) > 1e-9 {
		t.Errorf("%+v, %v", p, ok)
	}
	for _, bad := range []struct {
		c    cost.Cost
		secs float64
	}{{c, 0}, {cost.Cost{cost.Ops: 0, cost.CPU: 5}, 1}, {cost.Cost{cost.Ops: 10, cost.DBCPU: 5}, 1}, {nil, 1}} {
		if p, ok := ProcessCPUOf(bad.c, bad.secs); ok {
			t.Errorf("%v over %v s: %+v", bad.c, bad.secs, p)
		}
	}
	var old RateStep
	if err := json.Unmarshal([]byte(`{"rate_per_sec":300,"achieved_per_sec":299,"p99_ms":4,"held":true}`), &old); err != nil ||
		old.Cost != nil || old.CPU != nil || old.RatePerSec != 300 {
		t.Errorf("an old step: %+v, %v", old, err)
	}
	if b, _ := json.Marshal(old); string(b) != `{"rate_per_sec":300,"offered_per_sec":0,"achieved_per_sec":299,"p50_ms":0,"p99_ms":4,"p999_ms":0,"errors":0,"late":0,"missed":0,"held":true}` {
		t.Errorf("an old step written again: %s", b)
	}
	var r Result
	if err := json.Unmarshal([]byte(`{"version":1,"models":[]}`), &r); err != nil || r.Idle != nil {
		t.Errorf("an old run: idle %+v, %v", r.Idle, err)
	}
}
