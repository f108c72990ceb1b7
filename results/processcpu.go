package results

import "github.com/pushpull/pushpull/internal/cost"

// ProcessCPU is the CPU time each process of a run's machine used per
// second of wall time, in µs a second (10^6 is one core busy): the
// application (the benchmark process, the stores' client side and the
// load generator), the database server, memcached and Redis.
type ProcessCPU struct {
	// Seconds is the wall time the figures were measured over.
	Seconds float64 `json:"seconds"`
	AppUs   float64 `json:"app_us_per_sec"`
	// DBUs is 0 when the run did not start the database server (its
	// process's CPU is not measured then), MCUs and RedisUs when it ran
	// none.
	DBUs    float64 `json:"db_us_per_sec,omitempty"`
	MCUs    float64 `json:"mc_us_per_sec,omitempty"`
	RedisUs float64 `json:"redis_us_per_sec,omitempty"`
}

// All is every process's CPU together, µs a second.
func (p ProcessCPU) All() float64 { return p.AppUs + p.DBUs + p.MCUs + p.RedisUs }

// ProcessCPUOf is the CPU a second of each process over a window of
// seconds in which c, a cost per operation (cost.PerOp), was measured:
// each process's CPU per operation times the operations, over the
// seconds. ok is false when c lacks the application's CPU or seconds or
// its operations are not above 0.
func ProcessCPUOf(c cost.Cost, seconds float64) (p ProcessCPU, ok bool) {
	app, okApp := c[cost.CPU]
	ops := c[cost.Ops]
	if !okApp || !(ops > 0) || !(seconds > 0) {
		return ProcessCPU{}, false
	}
	per := ops / seconds
	return ProcessCPU{Seconds: seconds, AppUs: app * per, DBUs: c[cost.DBCPU] * per,
		MCUs: c[cost.MCCPU] * per, RedisUs: c[cost.RDCPU] * per}, true
}
