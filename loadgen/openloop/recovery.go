package openloop

import "time"

// Point is one stretch of a time series as Recovery judges it: a figure
// (a bucket's p99 latency, the fan-out lag of the posts applied in it) over
// N observations.
type Point struct {
	// At is the stretch's start.
	At time.Duration
	// N is how many observations Value sums up; a point with none says
	// nothing, good or bad.
	N     int64
	Value float64
	// Failed marks a point over the objective whatever Value says: an
	// operation planned in it never started.
	Failed bool
}

// over reports whether p breaks the objective limit.
func (p Point) over(limit float64) bool { return p.Failed || p.N > 0 && p.Value > limit }

// good reports whether p shows the objective held.
func (p Point) good(limit float64) bool { return !p.Failed && p.N > 0 && p.Value <= limit }

// Recovery is how long after from a series came back within an objective:
// the points (ascending by At, each width long) from the one that holds
// from on are read in order, and the series has recovered at the first
// point within limit from which no point breaks it for at least hold, up
// to the end of the series if need be. Points without observations
// neither start nor break such a stretch. A series within limit at from
// recovers in 0 (the first point may start before from; the time counts
// from from). ok is false when no stretch lasts hold: the series never
// came back, or came back too near its end to tell.
//
// A single point within the objective amid a backlog is not a recovery:
// asking for hold keeps a lull from passing for one.
func Recovery(points []Point, width, from time.Duration, limit float64, hold time.Duration) (after time.Duration, ok bool) {
	start, running := time.Duration(0), false
	var end time.Duration
	for _, p := range points {
		if p.At+width <= from {
			continue
		}
		end = p.At + width
		switch {
		case p.over(limit):
			if running && p.At-start >= hold {
				return start - from, true
			}
			running = false
		case p.good(limit) && !running:
			start, running = max(p.At, from), true
		}
	}
	if running && end-start >= hold {
		return start - from, true
	}
	return 0, false
}
