package openloop

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Stage is one stretch of a rate schedule: Rate planned operations per
// second for Duration.
type Stage struct {
	Rate     float64
	Duration time.Duration
}

// RateSchedule is a rate schedule: stages laid end to end, such as a base
// rate, a burst ten times higher, and the base rate again. Config.Schedule
// drives a run on one.
type RateSchedule []Stage

// MaxStages bounds the stages of a schedule.
const MaxStages = 100

// ParseSchedule reads a schedule written as RATE:DURATION stages separated
// by commas, rates in operations per second (a trailing "/s" is allowed) and
// durations as Go writes them: "300:10s,3000:5s,300:10s" is 300/s for 10
// s, then 3,000/s for 5 s, then 300/s for 10 s. Spaces around a step are
// allowed; anything else malformed, a rate not above 0 (or above 1e9), a
// duration not above 0, or more than MaxStages stages is a *ConfigError.
func ParseSchedule(spec string) (RateSchedule, error) {
	bad := func(value, reason string) error {
		return &ConfigError{Field: "schedule", Value: strconv.Quote(value), Reason: reason}
	}
	if strings.TrimSpace(spec) == "" {
		return nil, bad(spec, "want RATE:DURATION stages separated by commas, e.g. 300:10s,3000:5s,300:10s")
	}
	var out RateSchedule
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		rate, dur, ok := strings.Cut(part, ":")
		if !ok {
			return nil, bad(part, "want RATE:DURATION, e.g. 3000:5s")
		}
		rate = strings.TrimSuffix(strings.TrimSpace(rate), "/s")
		r, err := strconv.ParseFloat(rate, 64)
		if err != nil || !(r > 0) || r > 1e9 || math.IsInf(r, 0) {
			return nil, bad(part, "want a rate in operations per second above 0 (and at most 1e9) before the colon")
		}
		d, err := time.ParseDuration(strings.TrimSpace(dur))
		if err != nil || d <= 0 {
			return nil, bad(part, "want a duration above 0 after the colon, e.g. 5s or 500ms")
		}
		out = append(out, Stage{Rate: r, Duration: d})
		if len(out) > MaxStages {
			return nil, bad(spec, fmt.Sprintf("more than %d stages", MaxStages))
		}
	}
	return out, nil
}

// String writes s as ParseSchedule reads it.
func (s RateSchedule) String() string {
	parts := make([]string, len(s))
	for i, st := range s {
		parts[i] = strconv.FormatFloat(st.Rate, 'f', -1, 64) + ":" + st.Duration.String()
	}
	return strings.Join(parts, ",")
}

// Duration is the schedule's length.
func (s RateSchedule) Duration() time.Duration {
	var d time.Duration
	for _, st := range s {
		d += st.Duration
	}
	return d
}

// Ops is the number of operations the schedule plans, on average.
func (s RateSchedule) Ops() float64 {
	n := 0.0
	for _, st := range s {
		n += st.Rate * st.Duration.Seconds()
	}
	return n
}

// Check reports the first invalid stage as a *ConfigError.
func (s RateSchedule) Check() error {
	if len(s) == 0 || len(s) > MaxStages {
		return &ConfigError{Field: "schedule", Value: fmt.Sprint(len(s)), Reason: fmt.Sprintf("want 1 to %d stages", MaxStages)}
	}
	for _, st := range s {
		if !(st.Rate > 0) || st.Rate > 1e9 || st.Duration <= 0 {
			return &ConfigError{Field: "schedule", Value: fmt.Sprintf("%g:%v", st.Rate, st.Duration),
				Reason: "want a rate above 0 (at most 1e9) and a duration above 0"}
		}
	}
	return nil
}
