package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Format versions of the capacity plan's documents.
const (
	// CalibrationFormatVersion 2 adds Factors; a version 1 calibration
	// loads as one without them (every factor 1). Idle and Wake, added
	// to version 2 later, are optional: a calibration without them adds
	// no CPU below saturation.
	CalibrationFormatVersion = 2
	PlanFormatVersion        = 1
	PlanCheckFormatVersion   = 1
)

// Calibration is what one unit of work costs on a machine: CPU time per
// row, key, command and round trip of each server and of the
// application, and bytes per row on disk, fitted (package loadgen/plan)
// on the cost counters of counted runs on that machine.
type Calibration struct {
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	// Sources are the runs it was fitted on: their commands and
	// directories. Machine says what they ran on.
	Sources []string `json:"sources"`
	Machine string   `json:"machine"`
	// CPUModel is the processor the runs recorded
	// (Environment.CPUModel), when they all recorded the same one: what
	// a plan on another processor tells apart (empty for runs that
	// predate the record).
	CPUModel string `json:"cpu_model,omitempty"`
	// Database CPU: per row read, per row written, per statement, in µs.
	DBRowReadUs    float64 `json:"db_row_read_us"`
	DBRowWrittenUs float64 `json:"db_row_written_us"`
	DBStatementUs  float64 `json:"db_statement_us"`
	// DBRebuiltUs is the database CPU of an entry a rebuild writes into
	// a mailbox (registry.Work.Rebuilt) beyond its rows' at the units
	// above, AppRebuiltUs the application's beyond its statements', in
	// µs; 0 in a calibration that predates them (the designs' newest-page
	// factors took that up).
	DBRebuiltUs  float64 `json:"db_rebuilt_us,omitempty"`
	AppRebuiltUs float64 `json:"app_rebuilt_us,omitempty"`
	// memcached CPU per key and per round trip, Redis CPU per command
	// and per round trip, in µs.
	MCKeyUs        float64 `json:"mc_key_us"`
	MCCallUs       float64 `json:"mc_call_us"`
	RedisCommandUs float64 `json:"redis_command_us"`
	RedisCallUs    float64 `json:"redis_call_us"`
	// Application CPU (the stores' client side, with the load generator
	// that drove them): per operation, per statement, per cache round
	// trip and per cache key or command, in µs.
	AppOpUs        float64 `json:"app_op_us"`
	AppStatementUs float64 `json:"app_statement_us"`
	AppCallUs      float64 `json:"app_call_us"`
	AppItemUs      float64 `json:"app_item_us"`
	// Bytes on disk per message (with its indexes), per follow (both
	// indexes) and per mailbox row.
	MessageBytes    float64 `json:"message_bytes"`
	FollowBytes     float64 `json:"follow_bytes"`
	MailboxRowBytes float64 `json:"mailbox_row_bytes"`
	// Fit is how well the CPU figures reproduce the runs they were
	// fitted on: the median and largest relative error of the CPU per
	// operation of a phase, over Phases phases.
	Fit struct {
		Phases         int     `json:"phases"`
		MedianErrorPct float64 `json:"median_error_pct"`
		MaxErrorPct    float64 `json:"max_error_pct"`
	} `json:"fit"`
	// Factors are each design's CPU beyond what its work costs at the
	// unit costs above, by design name: what the units, averages over
	// every design, leave unexplained (a Lua script, a scratch table, a
	// merge in the client). A design not named here, or a calibration
	// without factors, has factor 1 everywhere.
	Factors map[string]CPUFactors `json:"factors,omitempty"`
	// Idle is the CPU each process burns a second while nothing runs
	// (the mean of the runs' results.Result.Idle); nil when no run
	// measured it: a plan then adds none.
	Idle *ProcessCPU `json:"idle_cpu,omitempty"`
	// Wake is what an operation costs beyond its CPU at saturation when
	// the processes it passes sleep between operations; nil when no run
	// measured CPU below saturation: a plan then adds none.
	Wake *WakeCPU `json:"wake_cpu,omitempty"`
	// SerialRowsPerSec is the rows a second one connection reads running
	// statements one after another on the runs' machine under their load
	// (registry.Demand.SerialRowsPerSec): the pace of a background worker
	// that falls behind, fitted on the counted phases whose rows it
	// decides (selective's posts and newest pages, where its flusher
	// cannot keep up). 0 when no phase decided it, or in a calibration
	// made before it: the designs then use their own figures.
	SerialRowsPerSec float64 `json:"serial_rows_per_sec,omitempty"`
}

// WakeCPU is the CPU of waking a process that slept, µs each, fitted on
// the open-loop phases and rate steps of the calibration's runs. At the
// saturation where the counted phases measure the unit costs, processes
// find the next request waiting and rarely sleep; at a lower rate each
// round trip wakes the server that answers it and the client that waits
// for it (futex and epoll wake-ups, the scheduler, timers), each of
// them asleep a share 1 − u^k of the time, u the busy share of the cores
// it runs on and k its exponent. So a process needs, a second, at rate R:
//
//	idle + R × (CPU per operation at saturation + wake × round trips × (1 − u^k))
//
// with the database's round trips its statements, memcached's and
// Redis's their round trips, and the application's every statement and
// cache round trip and the operation's own start (the load generator's
// timer). An exponent of 1 is a process that sleeps as much as the cores
// are idle; one above 1 a process that still sleeps for most of its
// requests on a box that is mostly busy (a server whose own share of the
// cores is small finds its queue empty even when the others' is not),
// so it keeps paying wake-ups until the cores are nearly full; one below
// 1 a process whose wake-ups fade while the cores are still mostly idle.
type WakeCPU struct {
	DBStatementUs float64 `json:"db_statement_us"`
	MCCallUs      float64 `json:"mc_call_us"`
	RedisCallUs   float64 `json:"redis_call_us"`
	AppTripUs     float64 `json:"app_trip_us"`
	// DBExp, MCExp, RedisExp and AppExp are the processes' exponents k
	// of the share of the time they sleep, 1 − u^k, fitted on the steps
	// of rate searches below saturation; 0 (a calibration made before
	// them) is read as 1.
	DBExp    float64 `json:"db_exp,omitempty"`
	MCExp    float64 `json:"mc_exp,omitempty"`
	RedisExp float64 `json:"redis_exp,omitempty"`
	AppExp   float64 `json:"app_exp,omitempty"`
	// Observations are the open-loop phases and rate steps fitted on.
	Observations int `json:"observations"`
}

// Exp is the sleep exponent of process i (0 the database, 1 memcached,
// 2 Redis, 3 the application): 1 when the calibration has none.
func (k *WakeCPU) Exp(i int) float64 {
	e := [4]float64{k.DBExp, k.MCExp, k.RedisExp, k.AppExp}[i]
	if e == 0 {
		return 1
	}
	return e
}

// CPUFactors are one design's CPU factors: its measured CPU per
// operation over the CPU its predicted work costs at the calibration's
// unit costs, combined over the calibration's runs (geometric mean). A
// factor scales the CPU of every process the operation passes. An
// operation the runs did not measure has 1.
type CPUFactors struct {
	// Newest, Older and Post are the factors of a newest page, an older
	// page and a post (with an asynchronous design's later fan-out),
	// from the counted phases retrieve, retrieve_older and submit.
	Newest float64 `json:"retrieve"`
	Older  float64 `json:"retrieve_older"`
	Post   float64 `json:"submit"`
	// Mix is what a mix of operations costs beyond its operations
	// alone: the traffic phase's measured CPU over its CPU predicted with
	// the factors above (follows and unfollows at 1).
	Mix float64 `json:"mix"`
	// Phases is how many counted phases the factors were measured on.
	Phases int `json:"phases"`
	// Messages and SizeExponent are how the factors move with the size
	// of the data, fitted when the calibration's runs held stores of
	// different sizes: at a store of M messages, Newest, Older and Post
	// are times (M / Messages)^SizeExponent (At), Messages being the
	// size they stand for as written. SizeExponent is 0 for a calibration
	// made at one size, or whose sizes moved the design's CPU by no more
	// than its runs' spread.
	Messages     float64 `json:"messages,omitempty"`
	SizeExponent float64 `json:"size_exponent,omitempty"`
	// Open is what the design's traffic at a planned rate costs beyond
	// its CPU at saturation: fitted on the steps of its rate searches
	// (open-loop traffic below saturation, on a box its processes
	// share), the CPU they used beyond the idle CPU and the wake-ups
	// (Calibration.Wake) over the CPU the factors above predict for their
	// work, a geometric mean. It multiplies the design's CPU wherever it
	// runs at a rate a plan sets (OpenFactor). 0, a calibration made
	// before it or a design without steps, is 1.
	Open float64 `json:"open,omitempty"`
	// Saturation is the share of a box's cores the design's processes
	// fill where its throughput stops rising, on a box they share, as in
	// a benchmark run: the median busy share of the steps of its rate
	// searches in the calibration that fell short of their offered rate
	// (the cores not full, the design held back by something else: a
	// single-threaded server, locks, the kernel's share of each round
	// trip), at least two of them. 0 (none measured) is 1.
	Saturation float64 `json:"saturation,omitempty"`
}

// SaturationShare is f.Saturation, 1 when it is 0.
func (f CPUFactors) SaturationShare() float64 {
	if f.Saturation == 0 {
		return 1
	}
	return f.Saturation
}

// OpenFactor is f.Open, 1 when it is 0.
func (f CPUFactors) OpenFactor() float64 {
	if f.Open == 0 {
		return 1
	}
	return f.Open
}

// MaxSizeExponent bounds a CPU factor's size exponent: at 1 a design's
// CPU per unit of work would grow as fast as the data.
const MaxSizeExponent = 1

// SizeFactor is (messages / f.Messages)^f.SizeExponent: how much the
// factors grow from the size they stand for to a store of messages
// messages; 1 without a size exponent, or at a size that is not a finite
// number above 0.
func (f CPUFactors) SizeFactor(messages float64) float64 {
	if f.SizeExponent == 0 || !(f.Messages > 0) || !(messages > 0) || math.IsInf(messages, 0) {
		return 1
	}
	return math.Pow(messages/f.Messages, f.SizeExponent)
}

// At returns the factors at a store of messages messages: Newest, Older
// and Post times SizeFactor(messages), Mix as it is.
func (f CPUFactors) At(messages float64) CPUFactors {
	g := f.SizeFactor(messages)
	f.Newest, f.Older, f.Post = f.Newest*g, f.Older*g, f.Post*g
	return f
}

// Of returns the factor of a counted phase's operation: retrieve,
// retrieve_older, submit, or mix for the traffic phase; 1 for any other.
func (f CPUFactors) Of(phase string) float64 {
	switch phase {
	case "retrieve":
		return f.Newest
	case "retrieve_older":
		return f.Older
	case "submit":
		return f.Post
	case "mix", "traffic":
		return f.Mix
	}
	return 1
}

// UnmarshalJSON reads factors, keeping a factor written as NaN or Inf
// (or out of float64's range) as that value, for Calibration.Validate to
// refuse by name rather than a decoding error without one.
func (f *CPUFactors) UnmarshalJSON(b []byte) error {
	var raw struct {
		Newest json.RawMessage `json:"retrieve"`
		Older  json.RawMessage `json:"retrieve_older"`
		Post   json.RawMessage `json:"submit"`
		Mix    json.RawMessage `json:"mix"`
		Phases int             `json:"phases"`
		Size   json.RawMessage `json:"messages"`
		Exp    json.RawMessage `json:"size_exponent"`
		Open   json.RawMessage `json:"open"`
		Sat    json.RawMessage `json:"saturation"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*f = CPUFactors{Phases: raw.Phases}
	for _, x := range []struct {
		dst *float64
		src json.RawMessage
		def float64 // when not written: no residual, no growth
	}{{&f.Newest, raw.Newest, 1}, {&f.Older, raw.Older, 1}, {&f.Post, raw.Post, 1}, {&f.Mix, raw.Mix, 1},
		{&f.Messages, raw.Size, 0}, {&f.SizeExponent, raw.Exp, 0}, {&f.Open, raw.Open, 0}, {&f.Saturation, raw.Sat, 0}} {
		if len(x.src) == 0 || string(x.src) == "null" {
			*x.dst = x.def
			continue
		}
		v, err := strconv.ParseFloat(strings.Trim(string(x.src), `"`), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			v = math.NaN()
		}
		*x.dst = v
	}
	return nil
}

// FactorError reports a calibration's CPU factor that is not a number
// above 0: a calibration carrying it is refused.
type FactorError struct {
	Model, Phase string
	Value        float64
	// Want is what the value should be; empty: a finite number above 0.
	Want string
}

func (e *FactorError) Error() string {
	want := e.Want
	if want == "" {
		want = "a finite number above 0"
	}
	return fmt.Sprintf("calibration: %s's CPU factor of %s is %v: want %s", e.Model, e.Phase, e.Value, want)
}

// Validate refuses a calibration with a CPU factor that is not a finite
// number above 0 (a *FactorError).
func (c *Calibration) Validate() error {
	for _, name := range slices.Sorted(maps.Keys(c.Factors)) {
		f := c.Factors[name]
		for _, x := range []struct {
			phase string
			v     float64
		}{{"retrieve", f.Newest}, {"retrieve_older", f.Older}, {"submit", f.Post}, {"mix", f.Mix}} {
			if !(x.v > 0) || math.IsInf(x.v, 0) {
				return &FactorError{Model: name, Phase: x.phase, Value: x.v}
			}
		}
		if !(f.Saturation >= 0 && f.Saturation <= 1) {
			return &FactorError{Model: name, Phase: "saturation", Value: f.Saturation,
				Want: "a share of the cores, above 0 and at most 1 (0: none measured, read as 1)"}
		}
		if f.Open < 0 || math.IsNaN(f.Open) || math.IsInf(f.Open, 0) {
			return &FactorError{Model: name, Phase: "open", Value: f.Open,
				Want: "a finite number above 0 (0: none fitted, read as 1)"}
		}
		if !(math.Abs(f.SizeExponent) <= MaxSizeExponent) {
			return &FactorError{Model: name, Phase: "size exponent", Value: f.SizeExponent,
				Want: fmt.Sprintf("a number from -%d to %d", MaxSizeExponent, MaxSizeExponent)}
		}
		if f.Messages < 0 || math.IsNaN(f.Messages) || math.IsInf(f.Messages, 0) || (f.SizeExponent != 0 && f.Messages == 0) {
			return &FactorError{Model: name, Phase: "messages", Value: f.Messages,
				Want: "the store's size the factors stand for, a finite number above 0 (0 only without a size exponent)"}
		}
	}
	terms := []struct {
		name string
		v    float64
	}{{"serial pace in rows a second", c.SerialRowsPerSec}}
	if i := c.Idle; i != nil {
		terms = append(terms, []struct {
			name string
			v    float64
		}{{"idle application CPU", i.AppUs}, {"idle database CPU", i.DBUs}, {"idle memcached CPU", i.MCUs}, {"idle Redis CPU", i.RedisUs}}...)
	}
	if k := c.Wake; k != nil {
		terms = append(terms, []struct {
			name string
			v    float64
		}{{"database wake-up CPU", k.DBStatementUs}, {"memcached wake-up CPU", k.MCCallUs}, {"Redis wake-up CPU", k.RedisCallUs}, {"application wake-up CPU", k.AppTripUs},
			{"database sleep exponent", k.DBExp}, {"memcached sleep exponent", k.MCExp}, {"Redis sleep exponent", k.RedisExp}, {"application sleep exponent", k.AppExp}}...)
	}
	for _, t := range terms {
		if !(t.v >= 0) || math.IsInf(t.v, 0) {
			return &TermError{Term: t.name, Value: t.v}
		}
	}
	return nil
}

// TermError reports a calibration's idle or wake-up CPU or sleep
// exponent that is not a finite number, 0 or more: a calibration carrying
// it is refused.
type TermError struct {
	Term  string
	Value float64
}

func (e *TermError) Error() string {
	return fmt.Sprintf("calibration: the %s is %v: want a finite number, 0 or more", e.Term, e.Value)
}

// Factor returns model's CPU factors and whether the calibration
// measured them; a design it did not run has 1 everywhere.
func (c *Calibration) Factor(model string) (CPUFactors, bool) {
	if f, ok := c.Factors[model]; ok {
		return f, true
	}
	return CPUFactors{Newest: 1, Older: 1, Post: 1, Mix: 1}, false
}

// WriteCalibration prints c.
func WriteCalibration(w io.Writer, c *Calibration) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	rows := [][2]string{
		{"database, per row read", fmtNum(c.DBRowReadUs) + " µs"},
		{"database, per row written", fmtNum(c.DBRowWrittenUs) + " µs"},
		{"database, per statement", fmtNum(c.DBStatementUs) + " µs"},
		{"database, per rebuilt mailbox entry", fmtNum(c.DBRebuiltUs) + " µs"},
		{"memcached, per key", fmtNum(c.MCKeyUs) + " µs"},
		{"memcached, per round trip", fmtNum(c.MCCallUs) + " µs"},
		{"Redis, per command", fmtNum(c.RedisCommandUs) + " µs"},
		{"Redis, per round trip", fmtNum(c.RedisCallUs) + " µs"},
		{"application, per operation", fmtNum(c.AppOpUs) + " µs"},
		{"application, per statement", fmtNum(c.AppStatementUs) + " µs"},
		{"application, per cache round trip", fmtNum(c.AppCallUs) + " µs"},
		{"application, per cache key or command", fmtNum(c.AppItemUs) + " µs"},
		{"application, per rebuilt mailbox entry", fmtNum(c.AppRebuiltUs) + " µs"},
		{"disk, per message", fmtNum(c.MessageBytes) + " bytes"},
		{"disk, per follow", fmtNum(c.FollowBytes) + " bytes"},
		{"disk, per mailbox row", fmtNum(c.MailboxRowBytes) + " bytes"},
	}
	fmt.Fprintf(tw, "calibration on %s, from %s\n", c.Machine, strings.Join(c.Sources, "; "))
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	fmt.Fprintf(tw, "  fit over %d phases: CPU per operation within %s%% (median), %s%% (largest)\n",
		c.Fit.Phases, fmtNum(c.Fit.MedianErrorPct), fmtNum(c.Fit.MaxErrorPct))
	if i := c.Idle; i != nil {
		fmt.Fprintf(tw, "  idle, a second over %s s\t%s µs application, %s database, %s memcached, %s Redis\n",
			fmtNum(i.Seconds), fmtNum(i.AppUs), fmtNum(i.DBUs), fmtNum(i.MCUs), fmtNum(i.RedisUs))
	} else {
		fmt.Fprintf(tw, "  idle\tnot measured: none added\n")
	}
	if k := c.Wake; k != nil {
		fmt.Fprintf(tw, "  wake-up below saturation, × (1 − busy share^k), over %d phases and steps\t%s µs a statement on the database, %s a memcached and %s a Redis round trip, %s a round trip or operation start in the application\n",
			k.Observations, fmtNum(k.DBStatementUs), fmtNum(k.MCCallUs), fmtNum(k.RedisCallUs), fmtNum(k.AppTripUs))
		fmt.Fprintf(tw, "  sleep exponent k\t%s database, %s memcached, %s Redis, %s application\n",
			fmtNum(k.Exp(0)), fmtNum(k.Exp(1)), fmtNum(k.Exp(2)), fmtNum(k.Exp(3)))
	} else {
		fmt.Fprintf(tw, "  wake-up below saturation\tnot measured: none added\n")
	}
	if c.SerialRowsPerSec > 0 {
		fmt.Fprintf(tw, "  one connection's statements back to back\t%s rows a second (a background worker behind: selective's flusher)\n", fmtNum(c.SerialRowsPerSec))
	} else {
		fmt.Fprintf(tw, "  one connection's statements back to back\tnot measured: the designs' own figures\n")
	}
	if len(c.Factors) > 0 {
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, "  CPU factors: each design's measured CPU per operation over its work's at the unit costs above")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		sized, open, saturated := false, false, false
		for _, f := range c.Factors {
			sized = sized || f.SizeExponent != 0
			open = open || f.Open != 0
			saturated = saturated || f.Saturation != 0
		}
		head := "    design\tnewest\tolder\tpost\tmix\t"
		if open {
			head += "at a rate\t"
		}
		if saturated {
			head += "saturates at\t"
		}
		head += "phases\t"
		if sized {
			head += "size exponent\tat messages\t"
		}
		fmt.Fprintln(tw, head)
		for _, name := range slices.Sorted(maps.Keys(c.Factors)) {
			f := c.Factors[name]
			fmt.Fprintf(tw, "    %s\t%.2f\t%.2f\t%.2f\t%.2f\t", name, f.Newest, f.Older, f.Post, f.Mix)
			if open {
				fmt.Fprintf(tw, "%.2f\t", f.OpenFactor())
			}
			if saturated {
				fmt.Fprintf(tw, "%.0f %%\t", 100*f.SaturationShare())
			}
			fmt.Fprintf(tw, "%d\t", f.Phases)
			switch {
			case f.SizeExponent != 0:
				fmt.Fprintf(tw, "%+.3f\t%s\t", f.SizeExponent, fmtNum(f.Messages))
			case sized:
				fmt.Fprintf(tw, "0\t%s\t", Dash)
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if open {
			fmt.Fprintln(w, "  at a rate: the CPU of the design's traffic at a planned rate (its rate searches' steps) over its CPU at saturation, beyond the idle CPU and wake-ups")
		}
		if saturated {
			fmt.Fprintln(w, "  saturates at: the busy share of a box its processes share at which the design's throughput stopped rising (its rate searches' steps that fell short)")
		}
		if sized {
			fmt.Fprintln(w, "  a size exponent: at a store of M messages newest, older and post are times (M / at messages)^exponent")
		}
	}
	return tw.Flush()
}

// fmtFactor shows a design's CPU factor: "1, not calibrated" when its
// calibration did not run it, "-" when none was computed.
func fmtFactor(f float64, uncalibrated bool) string {
	switch {
	case uncalibrated:
		return "1, not calibrated"
	case !(f > 0):
		return Dash
	}
	return fmt.Sprintf("%.2f", f)
}

// CalibrationFile is the file a calibration is saved as.
const CalibrationFile = "calibration.json"

// SaveCalibration writes c into dir as calibration.json.
func SaveCalibration(dir string, c *Calibration) error { return saveDoc(calibrationDoc, dir, c) }

// LoadCalibration reads the calibration saved in dir (or the path of its
// calibration.json).
func LoadCalibration(path string) (*Calibration, error) { return loadDoc(calibrationDoc, path) }

var calibrationDoc = docKind[Calibration]{
	name: "calibration", jsonFile: CalibrationFile, version: CalibrationFormatVersion,
	versionOf: func(c *Calibration) *int { return &c.Version },
	prepare: func(c *Calibration) *Calibration {
		x := *c
		x.CreatedAt = x.CreatedAt.UTC()
		return &x
	},
	derived: func(string, *Calibration) error { return nil },
	upgrade: func(c *Calibration) error {
		if c.Version != 1 && c.Version != CalibrationFormatVersion {
			return fmt.Errorf("format version %d, want 1 or %d", c.Version, CalibrationFormatVersion)
		}
		return c.Validate()
	},
}

// PlanWork is a design's work per operation of the planned mix, the
// items beside the resources.
type PlanWork struct {
	RowsRead      float64 `json:"rows_read"`
	RowsWritten   float64 `json:"rows_written"`
	MCKeys        float64 `json:"mc_keys"`
	RedisCommands float64 `json:"redis_commands"`
	Statements    float64 `json:"statements"`
	CacheCalls    float64 `json:"cache_calls"`
	// ShardCalls are the shards an operation reaches on Vitess with
	// Shards shards (see PlanDesign).
	ShardCalls float64 `json:"shard_calls,omitempty"`
}

// Items is rows, keys and commands together.
func (w PlanWork) Items() float64 { return w.RowsRead + w.RowsWritten + w.MCKeys + w.RedisCommands }

// PlanDesign is one design at the planned load.
type PlanDesign struct {
	Model string `json:"model"`
	// PerOp is the work of an operation of the mix, on average; Post and
	// Page (a newest page) are shown beside it.
	PerOp PlanWork `json:"per_op"`
	Post  PlanWork `json:"post"`
	Page  PlanWork `json:"page"`
	// CPU per operation, µs: database, caches, application, at the
	// planned rate: at saturation, and the wake-ups of processes that
	// sleep between operations (Calibration.Wake) when the calibration
	// measured them.
	DBUs, CacheUs, AppUs float64
	// CPUFactor is that CPU over what the work costs at the
	// calibration's unit costs alone: the design's CPU factors
	// (CPUFactors) at this mix. Uncalibrated: the calibration did not
	// run the design, and its factors are 1.
	CPUFactor    float64 `json:"cpu_factor,omitempty"`
	Uncalibrated bool    `json:"uncalibrated,omitempty"`
	// Resources at the planned rate, their cost (Prices), and the nodes:
	// database nodes (Vitess shards when more than one), cache nodes,
	// application nodes.
	Resources  Resources `json:"resources"`
	RunCost    float64   `json:"run_cost"`
	DBNodes    int       `json:"db_nodes"`
	CacheNodes int       `json:"cache_nodes"`
	AppNodes   int       `json:"app_nodes"`
	// ShardCeilingPerSec is the rate one database node serves at the
	// planned mix and utilisation: the per-shard ceiling.
	ShardCeilingPerSec float64 `json:"shard_ceiling_per_sec"`
	// MailboxRows and CacheGB are the footprint.
	MailboxRows float64 `json:"mailbox_rows"`
	// P99Ms is the predicted p99 latency of the mix; LagP99Ms and
	// LagMaxMs the fan-out lag of an asynchronous design (p99 of posts,
	// and the most followed author's post), 0 for the others.
	P99Ms    float64 `json:"p99_ms"`
	LagP99Ms float64 `json:"lag_p99_ms,omitempty"`
	LagMaxMs float64 `json:"lag_max_ms,omitempty"`
	Async    bool    `json:"async,omitempty"`
	// FallsBehind: the fan-out needs more workers than the plan's
	// application nodes run, and its lag grows without bound.
	FallsBehind bool `json:"falls_behind,omitempty"`
	// Held and Why: whether it meets the objective and the freshness
	// bound.
	Held bool   `json:"held"`
	Why  string `json:"why,omitempty"`
}

// Plan is a capacity plan: a described workload at its real size, each
// design's work, servers, latency and lag, and the verdict.
type Plan struct {
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	Command   string    `json:"command"`
	// Workload describes the workload in a few lines; Assumptions are
	// the figures the plan takes as given.
	Workload    []string `json:"workload"`
	Assumptions []string `json:"assumptions"`
	RatePerSec  float64  `json:"rate_per_sec"`
	SLOMs       float64  `json:"slo_ms"`
	FreshnessMs float64  `json:"freshness_ms,omitempty"`
	Prices      Prices   `json:"prices"`
	// Calibration is the one the CPU figures come from.
	Calibration Calibration  `json:"calibration"`
	Designs     []PlanDesign `json:"designs"`
	Verdict     Verdict      `json:"verdict"`
	// Margin says how far the chosen design is from its limits and from
	// the next design.
	Margin string `json:"margin,omitempty"`
	// Seconds is how long the plan took to compute.
	Seconds float64 `json:"seconds"`
}

// WritePlan prints p: the workload, a row per design, the verdict.
func WritePlan(w io.Writer, p *Plan) error {
	for _, l := range p.Workload {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tholds\trows read/op\trows written/op\tmc keys/op\tredis cmds/op\tpost: rows written\tCPU/op db+cache+app\tCPU factor\tDB cores\tcache cores\tapp cores\tcache GB\tstorage GB\tDB nodes\tp99\tfan-out lag p99, max\tcost\t")
	for _, d := range p.Designs {
		held := "yes"
		if !d.Held {
			held = "no: " + d.Why
		}
		mark := ""
		if d.Model == p.Verdict.Best {
			mark = " ◀"
		}
		lag := Dash
		switch {
		case d.FallsBehind:
			lag = "unbounded"
		case d.Async:
			lag = fmtMs(d.LagP99Ms) + ", " + fmtMs(d.LagMaxMs)
		}
		r := d.Resources
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s µs\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n",
			d.Model, mark, held, fmtNum(d.PerOp.RowsRead), fmtNum(d.PerOp.RowsWritten), fmtNum(d.PerOp.MCKeys), fmtNum(d.PerOp.RedisCommands),
			fmtNum(d.Post.RowsWritten), fmtNum(d.DBUs+d.CacheUs+d.AppUs), fmtFactor(d.CPUFactor, d.Uncalibrated),
			fmtNum(r.DBCores), fmtNum(r.CacheCores), fmtNum(r.AppCores), fmtNum(r.CacheMemoryGB), fmtNum(r.StorageGB), d.DBNodes,
			fmtMs(d.P99Ms), lag, fmtNum(d.RunCost))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ncost = %s per core + %s per GB of memory + %s per GB of disk; cores at %s ops/s with every server filled to the planned utilisation.\n",
		fmtNum(p.Prices.Core), fmtNum(p.Prices.MemoryGB), fmtNum(p.Prices.DiskGB), fmtNum(p.RatePerSec))
	if p.Calibration.Idle != nil || p.Calibration.Wake != nil {
		fmt.Fprintln(w, "cores include each server's idle CPU and the wake-ups of processes that sleep between operations, as the calibration measured them")
	} else {
		fmt.Fprintln(w, "cores are the CPU at saturation: the calibration measured no idle CPU nor wake-ups, which a low rate adds")
	}
	fmt.Fprintf(w, "calibration: %s, fitted %s on %d counted run(s) (%d phases, CPU within %s%% at the median)\n",
		p.Calibration.Machine, p.Calibration.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"), len(p.Calibration.Sources),
		p.Calibration.Fit.Phases, fmtNum(p.Calibration.Fit.MedianErrorPct))
	var none []string
	for _, d := range p.Designs {
		if d.Uncalibrated {
			none = append(none, d.Model)
		}
	}
	fmt.Fprintln(w, "CPU factor: the design's CPU per operation of this mix over its work's at the calibration's unit costs, from its CPU measured per kind of operation and mix in the calibration's runs")
	if len(none) > 0 {
		fmt.Fprintf(w, "  the calibration did not run %s: factor 1, the unit costs alone\n", strings.Join(none, ", "))
	}
	fmt.Fprintln(w, "assumptions:")
	for _, a := range p.Assumptions {
		fmt.Fprintf(w, "  - %s\n", a)
	}
	fmt.Fprintf(w, "verdict: %s\n", p.Verdict.Reason)
	if p.Margin != "" {
		fmt.Fprintf(w, "margin: %s\n", p.Margin)
	}
	return nil
}

// PlanFile and PlanTableFile are the files SavePlan writes.
const (
	PlanFile      = "plan.json"
	PlanTableFile = "plan.txt"
)

// SavePlan writes p into dir: plan.json and plan.txt (WritePlan).
func SavePlan(dir string, p *Plan) error { return saveDoc(planDoc, dir, p) }

// LoadPlan reads the plan saved in dir (or its plan.json).
func LoadPlan(path string) (*Plan, error) { return loadDoc(planDoc, path) }

var planDoc = docKind[Plan]{
	name: "plan", jsonFile: PlanFile, version: PlanFormatVersion,
	versionOf: func(p *Plan) *int { return &p.Version },
	prepare: func(p *Plan) *Plan {
		x := *p
		x.CreatedAt = x.CreatedAt.UTC()
		x.Designs = make([]PlanDesign, len(p.Designs))
		for i, d := range p.Designs {
			for _, v := range []*float64{&d.P99Ms, &d.LagP99Ms, &d.LagMaxMs, &d.RunCost, &d.ShardCeilingPerSec} {
				*v = zeroIfNotFinite(*v)
			}
			x.Designs[i] = d
		}
		return &x
	},
	derived: func(dir string, p *Plan) error {
		return writeFile(dir, PlanTableFile, func(w io.Writer) error { return WritePlan(w, p) })
	},
}

// PlanCheckRow is one design's phase in a counted run, measured against
// the plan's prediction for the run's own workload.
type PlanCheckRow struct {
	Run   string `json:"run"` // e.g. "uniform, 3,000 users"
	Model string `json:"model"`
	Phase string `json:"phase"`
	// Measured and Predicted work per operation.
	Measured  PlanWork `json:"measured"`
	Predicted PlanWork `json:"predicted"`
	// CPU per operation, all processes, µs.
	MeasuredCPUUs  float64 `json:"measured_cpu_us"`
	PredictedCPUUs float64 `json:"predicted_cpu_us"`
	// CPUFactor is the design's CPU factor the prediction carries
	// (Calibration.Factors: the phase's kind's, times the mix's for the
	// traffic); Uncalibrated, the calibration did not run the design.
	CPUFactor    float64 `json:"cpu_factor,omitempty"`
	Uncalibrated bool    `json:"uncalibrated,omitempty"`
}

// ItemsErrorPct is the relative error of the predicted items per
// operation, in percent of the measured.
func (r PlanCheckRow) ItemsErrorPct() float64 {
	return relErrPct(r.Predicted.Items(), r.Measured.Items())
}

// CPUErrorPct is the relative error of the predicted CPU per operation.
func (r PlanCheckRow) CPUErrorPct() float64 { return relErrPct(r.PredictedCPUUs, r.MeasuredCPUUs) }

func relErrPct(pred, meas float64) float64 {
	if meas == 0 {
		if pred == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return 100 * (pred - meas) / meas
}

// PlanRateRow is one design's highest rate within the latency objective
// in a run that searched for it (bench --find-rate), measured against
// the plan's prediction for the run's workload, mix and machine.
type PlanRateRow struct {
	Run   string `json:"run"`
	Model string `json:"model"`
	// SLOMs is the objective, the p99 of the mix; Cores the machine's,
	// shared by the application and every server.
	SLOMs float64 `json:"slo_p99_ms"`
	Cores float64 `json:"cores"`
	// MeasuredPerSec is the highest rate a step held (0: none held);
	// FailedPerSec the lowest rate above it that a step failed (0: none
	// above it ran, the search ran out of steps first).
	MeasuredPerSec float64 `json:"measured_per_sec"`
	FailedPerSec   float64 `json:"failed_per_sec,omitempty"`
	// FailedSteal is the share of the machine's CPU time a hypervisor
	// took during the step whose failure at FailedPerSec stood
	// (RateStep.StealShare): time no process is charged for, in which
	// the operations that wanted a CPU waited. A failure with much
	// stolen may be the machine's, and the measured rate then too low.
	// Absent when no failure bounds the rate, and for runs that predate
	// it.
	FailedSteal *float64 `json:"failed_steal_share,omitempty"`
	// PredictedPerSec is the plan's highest rate; PredictedCPUUs the CPU
	// per operation of the mix it predicts there, on every process, the
	// wake-ups of processes that sleep at that busy share included, and
	// CeilingPerSec the rate that would fill every core at it.
	PredictedPerSec float64 `json:"predicted_per_sec"`
	PredictedCPUUs  float64 `json:"predicted_cpu_us"`
	CeilingPerSec   float64 `json:"ceiling_per_sec"`
	// MeasuredCPUUs is the CPU per operation of every process in the
	// run's traffic phase, when it was counted (bench --cost), and
	// BusyShare the share of the machine's cores they filled there when
	// that phase was a closed loop: near 1 when the run had the machine
	// to itself, less when other work took the cores. Neither goes into
	// the prediction; they say which of its parts a miss comes from.
	MeasuredCPUUs float64 `json:"measured_cpu_us,omitempty"`
	BusyShare     float64 `json:"busy_share,omitempty"`
	// CPUFactor is the design's CPU factor of the mix the prediction
	// carries; Uncalibrated, the calibration did not run the design.
	CPUFactor    float64 `json:"cpu_factor,omitempty"`
	Uncalibrated bool    `json:"uncalibrated,omitempty"`
	// Workload names what the run measured beyond Run's graph and users
	// (its dataset's parameters, its traffic's mix and the design's
	// options): rows alike in it, Run, Model, SLOMs and Cores are
	// repeats of one measurement (PlanCheck.RepeatedRates).
	Workload string `json:"workload,omitempty"`
}

// ErrorPct is the relative error of the predicted rate, in percent of
// the measured.
func (r PlanRateRow) ErrorPct() float64 { return relErrPct(r.PredictedPerSec, r.MeasuredPerSec) }

// PlanCheck is the plan's model against counted runs.
type PlanCheck struct {
	Version     int            `json:"version"`
	CreatedAt   time.Time      `json:"created_at"`
	Command     string         `json:"command"`
	Calibration Calibration    `json:"calibration"`
	Runs        []string       `json:"runs"`
	Rows        []PlanCheckRow `json:"rows"`
	// Rates are the designs' highest rates within the objective, for the
	// runs that searched for them; RateBasis says what their prediction
	// assumed of the machine.
	Rates     []PlanRateRow `json:"rates,omitempty"`
	RateBasis string        `json:"rate_basis,omitempty"`
	// Unreliable names the phases (run, model, phase) left out because
	// their run could not trust the database's counters of them.
	Unreliable []string `json:"unreliable,omitempty"`
}

// RateSummary counts the rate rows and those predicted within 30% of the
// measured rate.
func (c *PlanCheck) RateSummary() (rows, within30 int) {
	for _, r := range c.Rates {
		rows++
		if math.Abs(r.ErrorPct()) <= 30 {
			within30++
		}
	}
	return rows, within30
}

// StealNoted is the share of stolen CPU time above which a check's text
// counts a failed step as disturbed: the rate search's own bound
// (openloop.DefaultMaxSteal).
const StealNoted = 0.05

// StealSummary says how much of the machine's CPU time a hypervisor took
// in the failed steps that bounded c's measured rates (PlanRateRow.
// FailedSteal): of the rows whose figure is known, how many lost more
// than share, and how many of those, and of the rest, the prediction
// missed by more than 30 %; mid is the rows' median share.
func (c *PlanCheck) StealSummary(share float64) (known, above, missedAbove, missedBelow int, mid float64) {
	var shares []float64
	for _, r := range c.Rates {
		if r.FailedSteal == nil {
			continue
		}
		known++
		shares = append(shares, *r.FailedSteal)
		missed := math.Abs(r.ErrorPct()) > 30
		switch {
		case *r.FailedSteal > share:
			above++
			if missed {
				missedAbove++
			}
		case missed:
			missedBelow++
		}
	}
	if known > 0 {
		slices.Sort(shares)
		mid = median(shares)
	}
	return known, above, missedAbove, missedBelow, mid
}

// PlanRateRepeat is one design's highest rate within the objective on
// one workload, measured by several runs: plan --validate
// --validate-repeat, or plan --check given runs of the same workload.
// Set against the median of the runs' rates, a prediction is checked
// against the measurement rather than against one run's luck, and the
// runs' spread says how closely the machine repeats itself, so how
// closely any prediction can be checked on it.
type PlanRateRepeat struct {
	Run   string
	Model string
	SLOMs float64
	Cores float64
	// MeasuredPerSec are the runs' highest rates, lowest first (0: no
	// step of that run held); PredictedPerSec the median of the
	// predictions for them, which differ only where the runs' cache
	// histories do.
	MeasuredPerSec  []float64
	PredictedPerSec float64
}

// MedianPerSec is the median of the runs' highest rates.
func (r PlanRateRepeat) MedianPerSec() float64 { return median(r.MeasuredPerSec) }

// ErrorPct is the relative error of the predicted rate, in percent of the
// median measured.
func (r PlanRateRepeat) ErrorPct() float64 { return relErrPct(r.PredictedPerSec, r.MedianPerSec()) }

// Spread is the runs' highest rate over their lowest: 1 for a machine
// that repeats itself exactly, +Inf when a run held no step.
func (r PlanRateRepeat) Spread() float64 {
	lo, hi := r.MeasuredPerSec[0], r.MeasuredPerSec[len(r.MeasuredPerSec)-1]
	if lo == 0 {
		return math.Inf(1)
	}
	return hi / lo
}

// median is the median of v, which is sorted.
func median(v []float64) float64 { return (v[(len(v)-1)/2] + v[len(v)/2]) / 2 }

// RepeatedRates gathers c's rate rows that repeat one measurement, the
// same design on the same workload (Run and PlanRateRow.Workload) with the
// same objective and cores, into one PlanRateRepeat each, in the order
// they first appear; a measurement made once is left out.
func (c *PlanCheck) RepeatedRates() []PlanRateRepeat {
	type key struct {
		run, model, workload string
		slo, cores           float64
	}
	var keys []key
	measured, predicted := map[key][]float64{}, map[key][]float64{}
	for _, r := range c.Rates {
		k := key{r.Run, r.Model, r.Workload, r.SLOMs, r.Cores}
		if _, seen := measured[k]; !seen {
			keys = append(keys, k)
		}
		measured[k] = append(measured[k], r.MeasuredPerSec)
		predicted[k] = append(predicted[k], r.PredictedPerSec)
	}
	var out []PlanRateRepeat
	for _, k := range keys {
		if len(measured[k]) < 2 {
			continue
		}
		out = append(out, PlanRateRepeat{Run: k.run, Model: k.model, SLOMs: k.slo, Cores: k.cores,
			MeasuredPerSec:  slices.Sorted(slices.Values(measured[k])),
			PredictedPerSec: median(slices.Sorted(slices.Values(predicted[k])))})
	}
	return out
}

// RepeatSummary counts c's repeated measurements (RepeatedRates), those
// whose prediction is within 30% of their median, and those whose runs
// spread by more than 30% (highest over lowest above 1.3).
func (c *PlanCheck) RepeatSummary() (repeats, within30, spreadOver30 int) {
	return repeatSummary(c.RepeatedRates())
}

// repeatSummary is RepeatSummary of the repeated measurements reps.
func repeatSummary(reps []PlanRateRepeat) (repeats, within30, spreadOver30 int) {
	for _, r := range reps {
		repeats++
		if math.Abs(r.ErrorPct()) <= 30 {
			within30++
		}
		if r.Spread() > 1.3 {
			spreadOver30++
		}
	}
	return repeats, within30, spreadOver30
}

// Summary counts the rows, those within 10% on items, those whose CPU was
// measured and those of them within 30%.
func (c *PlanCheck) Summary() (rows, itemsWithin10, cpuRows, cpuWithin30 int) {
	for _, r := range c.Rows {
		rows++
		if math.Abs(r.ItemsErrorPct()) <= 10 {
			itemsWithin10++
		}
		if r.MeasuredCPUUs > 0 {
			cpuRows++
			if math.Abs(r.CPUErrorPct()) <= 30 {
				cpuWithin30++
			}
		}
	}
	return rows, itemsWithin10, cpuRows, cpuWithin30
}

// RunCPUOffset is one run's CPU measured over predicted, by phase.
type RunCPUOffset struct {
	Run    string
	Phases []PhaseCPUOffset
}

// PhaseCPUOffset is the median over the designs of one phase's CPU per
// operation measured over predicted, and how many designs it is of.
type PhaseCPUOffset struct {
	Phase   string
	Median  float64
	Designs int
}

// RunCPUOffsets are, for each run and phase of c (in the order they first
// appear), the median over the designs of measured over predicted CPU per
// operation, of the rows whose CPU was measured. Runs are told apart by
// their label (graph and users), so two runs of one label are pooled:
// check them one at a time to see each. A run whose every phase
// sits away from 1 by about as much is a run whose machine cost more or
// less than the calibration's runs across the board (its load, its
// state): the saved runs differ so by ±10 to 30 % from one another, in
// every phase alike, which no design's factor or scale term can take up.
func (c *PlanCheck) RunCPUOffsets() []RunCPUOffset {
	type key struct{ run, phase string }
	ratios := map[key][]float64{}
	var out []RunCPUOffset
	at := map[string]int{}
	for _, r := range c.Rows {
		if !(r.MeasuredCPUUs > 0) || !(r.PredictedCPUUs > 0) {
			continue
		}
		i, ok := at[r.Run]
		if !ok {
			i = len(out)
			at[r.Run] = i
			out = append(out, RunCPUOffset{Run: r.Run})
		}
		k := key{r.Run, r.Phase}
		if _, seen := ratios[k]; !seen {
			out[i].Phases = append(out[i].Phases, PhaseCPUOffset{Phase: r.Phase})
		}
		ratios[k] = append(ratios[k], r.MeasuredCPUUs/r.PredictedCPUUs)
	}
	for i := range out {
		for j := range out[i].Phases {
			p := &out[i].Phases[j]
			v := slices.Sorted(slices.Values(ratios[key{out[i].Run, p.Phase}]))
			p.Designs = len(v)
			p.Median = median(v)
		}
	}
	return out
}

// writeRunCPUOffsets prints c's RunCPUOffsets, a row per run and a column
// per phase.
func writeRunCPUOffsets(w io.Writer, c *PlanCheck) error {
	offsets := c.RunCPUOffsets()
	if len(offsets) == 0 {
		return nil
	}
	var phases []string
	for _, o := range offsets {
		for _, p := range o.Phases {
			if !slices.Contains(phases, p.Phase) {
				phases = append(phases, p.Phase)
			}
		}
	}
	if _, err := fmt.Fprintln(w, "\nCPU measured / predicted, median over the designs (how many), by run and phase:"); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "run\t%s\t\n", strings.Join(phases, "\t"))
	for _, o := range offsets {
		cells := make([]string, len(phases))
		for i, ph := range phases {
			cells[i] = Dash
			for _, p := range o.Phases {
				if p.Phase == ph {
					cells[i] = fmt.Sprintf("%.2f (%d)", p.Median, p.Designs)
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", o.Run, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, o := range offsets {
		if lo, hi, ok := o.Drift(); ok {
			than := "slower"
			if hi < 1 {
				than = "faster"
			}
			if _, err := fmt.Fprintf(w, "%s: every phase cost %.2f to %.2f times the CPU predicted: its machine ran %s than the calibration's runs, and CPU and rate errors of that size are the machine's, not the designs' (calibrate just before a check)\n",
				o.Run, lo, hi, than); err != nil {
				return err
			}
		}
	}
	return nil
}

// DriftFactor is how far from 1, as a factor, the median of every phase
// of a run must sit, all on one side, for RunCPUOffset.Drift to call the
// run's machine off its calibration's: the designs' own misses spread the
// medians by less (0.88 to 1.12 in the saved validations whose runs kept
// the calibration's pace), a machine that changed speed moves them all.
const DriftFactor = 1.15

// Drift returns the lowest and highest of o's medians, and whether every
// one of them sits beyond DriftFactor on the same side of 1.
func (o RunCPUOffset) Drift() (lo, hi float64, ok bool) {
	if len(o.Phases) == 0 {
		return 0, 0, false
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range o.Phases {
		lo, hi = math.Min(lo, p.Median), math.Max(hi, p.Median)
	}
	return lo, hi, lo >= DriftFactor || hi <= 1/DriftFactor
}

// WritePlanCheck prints a row per run, design and phase: the items per
// operation measured and predicted (rows read, rows written, memcached
// keys, Redis commands) and their error, and the CPU per operation.
func WritePlanCheck(w io.Writer, c *PlanCheck) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tmodel\tphase\trows read\trows written\tmc keys\tredis cmds\titems error\tCPU µs/op\tCPU error\tCPU factor\t")
	cpuPair := func(m, p float64) string {
		if m == 0 {
			return Dash + " / " + fmtNum(p)
		}
		return fmtNum(m) + " / " + fmtNum(p)
	}
	pair := func(m, p float64) string {
		if m == 0 && p == 0 {
			return "0"
		}
		return fmtNum(m) + " / " + fmtNum(p)
	}
	pct := func(v float64) string {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return Dash
		}
		return fmt.Sprintf("%+.0f%%", v)
	}
	for _, r := range c.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Run, r.Model, r.Phase,
			pair(r.Measured.RowsRead, r.Predicted.RowsRead), pair(r.Measured.RowsWritten, r.Predicted.RowsWritten),
			pair(r.Measured.MCKeys, r.Predicted.MCKeys), pair(r.Measured.RedisCommands, r.Predicted.RedisCommands),
			pct(r.ItemsErrorPct()), cpuPair(r.MeasuredCPUUs, r.PredictedCPUUs), pct(r.CPUErrorPct()), fmtFactor(r.CPUFactor, r.Uncalibrated))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n, items, cpuN, cpu := c.Summary()
	if _, err := fmt.Fprintf(w, "\nmeasured / predicted per operation. %d of %d phases within 10%% on items; %d of the %d with CPU measured within 30%% on CPU.\n", items, n, cpu, cpuN); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, "CPU factor: the design's measured CPU over its unit costs' in the calibration's runs, for the phase's kind of operation (and the mix, for traffic); 1 where the calibration did not run it."); err != nil {
		return err
	}
	if len(c.Unreliable) > 0 {
		if _, err := fmt.Fprintf(w, "not checked, their runs' database counters unreliable: %s.\n", strings.Join(c.Unreliable, "; ")); err != nil {
			return err
		}
	}
	if err := writeRunCPUOffsets(w, c); err != nil {
		return err
	}
	if len(c.Rates) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tmodel\tp99 ≤\tmeasured\tlowest failed\tsteal there\tpredicted\tpredicted / measured\terror\tCPU µs/op\tCPU factor\tceiling\tcores busy, closed loop\t")
	for _, r := range c.Rates {
		failed, ratio := Dash, Dash
		if r.FailedPerSec > 0 {
			failed = fmtRate(r.FailedPerSec, "ops/s")
		}
		if r.MeasuredPerSec > 0 {
			ratio = fmt.Sprintf("%.2f", r.PredictedPerSec/r.MeasuredPerSec)
		}
		busy, steal := Dash, Dash
		if r.BusyShare > 0 {
			busy = fmt.Sprintf("%.0f%%", 100*r.BusyShare)
		}
		if r.FailedSteal != nil {
			steal = fmt.Sprintf("%.1f%%", 100**r.FailedSteal)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Run, r.Model, fmtMs(r.SLOMs),
			fmtBestRate(r.MeasuredPerSec), failed, steal, fmtRate(r.PredictedPerSec, "ops/s"), ratio, pct(r.ErrorPct()),
			cpuPair(r.MeasuredCPUUs, r.PredictedCPUUs), fmtFactor(r.CPUFactor, r.Uncalibrated), fmtRate(r.CeilingPerSec, "ops/s"), busy)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	rn, rw := c.RateSummary()
	if _, err := fmt.Fprintf(w, "\nhighest rate within the objective (bench --find-rate; %s): %d of %d designs predicted within 30%%.\n", c.RateBasis, rw, rn); err != nil {
		return err
	}
	if known, above, missedAbove, missedBelow, median := c.StealSummary(StealNoted); known > 0 {
		if _, err := fmt.Fprintf(w, "steal there: the share of the machine's CPU time a hypervisor gave other machines in the failed step that bounded a measured rate, charged to no process: %.1f%% at the median of %d; above %.0f%% in %d, of which %d missed by more than 30%%; %d of the other %d missed.\n",
			100*median, known, 100*StealNoted, above, missedAbove, missedBelow, known-above); err != nil {
			return err
		}
	}
	return writeRepeatedRates(w, c, pct)
}

// writeRepeatedRates prints c's RepeatedRates, if any: each prediction
// against the median of its runs, and how far the runs spread.
func writeRepeatedRates(w io.Writer, c *PlanCheck, pct func(float64) string) error {
	repeats := c.RepeatedRates()
	if len(repeats) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tmodel\tp99 ≤\truns\tmeasured, lowest\tmedian\thighest\tspread\tpredicted\tpredicted / median\terror\t")
	for _, r := range repeats {
		ratio, spread := Dash, Dash
		if m := r.MedianPerSec(); m > 0 {
			ratio = fmt.Sprintf("%.2f", r.PredictedPerSec/m)
		}
		if s := r.Spread(); !math.IsInf(s, 0) {
			spread = fmt.Sprintf("%.2f", s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Run, r.Model, fmtMs(r.SLOMs), len(r.MeasuredPerSec),
			fmtBestRate(r.MeasuredPerSec[0]), fmtBestRate(r.MedianPerSec()), fmtBestRate(r.MeasuredPerSec[len(r.MeasuredPerSec)-1]),
			spread, fmtRate(r.PredictedPerSec, "ops/s"), ratio, pct(r.ErrorPct()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n, within, spread := repeatSummary(repeats)
	_, err := fmt.Fprintf(w, "\nthe same design and workload measured by several runs: %d of %d predicted within 30%% of their runs' median; the runs themselves spread by more than 30%% (highest over lowest) for %d.\n", within, n, spread)
	return err
}

// Files a plan check saves.
const (
	PlanCheckFile      = "plan-check.json"
	PlanCheckTableFile = "plan-check.txt"
	PlanCheckPNGFile   = "plan-check.png"
)

// SavePlanCheck writes c into dir: plan-check.json, plan-check.txt and
// plan-check.png (predicted against measured).
func SavePlanCheck(dir string, c *PlanCheck) error { return saveDoc(planCheckDoc, dir, c) }

// LoadPlanCheck reads the check saved in dir (or its plan-check.json).
func LoadPlanCheck(path string) (*PlanCheck, error) { return loadDoc(planCheckDoc, path) }

var planCheckDoc = docKind[PlanCheck]{
	name: "plan check", jsonFile: PlanCheckFile, version: PlanCheckFormatVersion,
	versionOf: func(c *PlanCheck) *int { return &c.Version },
	prepare: func(c *PlanCheck) *PlanCheck {
		x := *c
		x.CreatedAt = x.CreatedAt.UTC()
		return &x
	},
	derived: func(dir string, c *PlanCheck) error {
		if err := writeFile(dir, PlanCheckTableFile, func(w io.Writer) error { return WritePlanCheck(w, c) }); err != nil {
			return err
		}
		return writePlanCheckPNG(dir+"/"+PlanCheckPNGFile, c)
	},
}
