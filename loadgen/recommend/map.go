package recommend

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/sweep"
	"github.com/pushpull/pushpull/results"
)

// Skew is one row of the decision map: how unequal the users are, in who
// is followed and in who posts and reads. Uniform is the paper's graph,
// everyone drawn alike; a power-law graph (dataset.GraphPowerLaw) gives
// follower counts a power law of exponent InExponent (lower is more
// skewed: a few authors followed by a large share of the users) and
// draws the workload's authors and readers by follower count (the
// graph's default skewed activity).
type Skew struct {
	Graph      string  // dataset.GraphUniform or dataset.GraphPowerLaw
	InExponent float64 // GraphPowerLaw only
}

// String is the skew as ParseSkew reads it, e.g. "uniform",
// "powerlaw:2.1".
func (s Skew) String() string {
	if s.Graph == dataset.GraphPowerLaw {
		return dataset.GraphPowerLaw + ":" + fmtFloat(s.InExponent)
	}
	return s.Graph
}

// ParseSkew reads "uniform", "powerlaw" (the default exponent,
// dataset.DefaultInExponent) or "powerlaw:E" (follower counts with
// exponent E), or returns an *InputError.
func ParseSkew(text string) (Skew, error) {
	t := strings.TrimSpace(text)
	if t == dataset.GraphUniform {
		return Skew{Graph: dataset.GraphUniform}, nil
	}
	g, e, hasE := strings.Cut(t, ":")
	if g != dataset.GraphPowerLaw {
		return Skew{}, &InputError{"skew", strconv.Quote(text), fmt.Sprintf("want %s, %s or %s:EXPONENT (e.g. %s:2.1)",
			dataset.GraphUniform, dataset.GraphPowerLaw, dataset.GraphPowerLaw, dataset.GraphPowerLaw)}
	}
	s := Skew{Graph: dataset.GraphPowerLaw, InExponent: dataset.DefaultInExponent}
	if hasE {
		x, err := strconv.ParseFloat(e, 64)
		if err != nil || !(x >= dataset.MinPowerLawExponent && x <= dataset.MaxPowerLawExponent) {
			return Skew{}, &InputError{"skew", strconv.Quote(text), fmt.Sprintf("the exponent must be a number in [%g, %g]",
				float64(dataset.MinPowerLawExponent), float64(dataset.MaxPowerLawExponent))}
		}
		s.InExponent = x
	}
	return s, nil
}

// MapConfig is a decision map: a recommendation at every pair of a read
// share and a skew, all at the same planned rate and objective.
type MapConfig struct {
	// Bench is every cell's run before the cell's graph and mix: its
	// Spec's graph, activity and mix are replaced, its size, seed and
	// followees kept. Bench.Spec is already scaled by Bench.Scale.
	Bench      loadgen.BenchConfig
	ReadShares []float64
	Skews      []Skew
	Command    string
	Progress   io.Writer
}

// cell is one planned run of a map.
type cell struct {
	skew  Skew
	share float64
	cfg   Config
}

// plan checks every cell and derives its run, so that a bad value stops
// the map before anything runs.
func (c MapConfig) plan() ([]cell, error) {
	if len(c.ReadShares) == 0 {
		return nil, &InputError{Field: "read-shares", Reason: "no read shares for the map's columns"}
	}
	if len(c.Skews) == 0 {
		return nil, &InputError{Field: "skews", Reason: "no skews for the map's rows"}
	}
	for i, v := range c.ReadShares {
		if !(v > 0 && v < 1) {
			return nil, &InputError{"read-shares", fmtFloat(v), "want a share of reads between 0 and 1, exclusive"}
		}
		if slices.Contains(c.ReadShares[:i], v) {
			return nil, &InputError{"read-shares", fmtFloat(v), "given twice"}
		}
	}
	for i, s := range c.Skews {
		if slices.Contains(c.Skews[:i], s) {
			return nil, &InputError{"skews", s.String(), "given twice"}
		}
	}
	if c.Bench.Spec.Graph == dataset.GraphEdges {
		return nil, &InputError{Field: "graph", Reason: "the map draws its own graphs (--skews); an edge list fixes one"}
	}
	var cells []cell
	for _, sk := range c.Skews {
		for _, share := range c.ReadShares {
			b := c.Bench
			spec := b.Spec
			spec.Graph = sk.Graph
			spec.InExponent, spec.OutExponent = 0, 0
			if sk.Graph == dataset.GraphPowerLaw {
				spec.InExponent = sk.InExponent
				spec.Followees = 0
			}
			spec.Activity = dataset.Activity{}
			b.Spec = spec
			mix, err := sweep.ReadShareMix(share)
			if err != nil {
				return nil, &InputError{"read-shares", fmtFloat(share), err.Error()}
			}
			b.Mix = &mix
			cfg := Config{Bench: b, Command: c.Command, Progress: c.Progress}
			if _, err := cfg.check(); err != nil {
				return nil, err
			}
			cells = append(cells, cell{skew: sk, share: share, cfg: cfg})
		}
	}
	return cells, nil
}

// CheckMap reports, as an *InputError, the first setting of c that RunMap
// would refuse, without running anything.
func CheckMap(c MapConfig) error {
	_, err := c.plan()
	return err
}

// RunMap runs a recommendation in every cell of the map, skews in the
// order given (rows), read shares within each (columns), each on a fresh
// dataset and, unless Bench names a server, a fresh sandbox. Every cell is
// checked before anything runs (an *InputError). A cell whose run fails
// ends the map with that error; the cells before it are returned with it,
// so that a caller can still save them.
func RunMap(ctx context.Context, c MapConfig) (*results.DecisionMap, error) {
	cells, err := c.plan()
	if err != nil {
		return nil, err
	}
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	m := &results.DecisionMap{
		Version: results.DecisionMapFormatVersion, StartedAt: time.Now().UTC(), Command: c.Command,
		ReadShares: slices.Clone(c.ReadShares), RatePerSec: c.Bench.Rate, SLOMs: ms(c.Bench.SLO), Scale: c.Bench.Scale,
	}
	for _, s := range c.Skews {
		m.Skews = append(m.Skews, s.String())
	}
	for i, cl := range cells {
		fmt.Fprintf(progress, "\n=== decision map: cell %d of %d, skew %s, %s%% reads\n", i+1, len(cells), cl.skew, fmtFloat(100*cl.share))
		rec, err := Run(ctx, cl.cfg)
		if err != nil {
			m.FinishedAt = time.Now().UTC()
			return m, fmt.Errorf("decision map: skew %s, read share %s: %w", cl.skew, fmtFloat(cl.share), err)
		}
		fmt.Fprintf(progress, "=== verdict: %s\n", rec.Verdict.Reason)
		dc := results.DecisionCell{Skew: cl.skew.String(), ReadShare: cl.share, Workload: rec.Workload,
			Candidates: rec.Candidates, Verdict: rec.Verdict}
		if rec.Run != nil {
			dc.Failures = rec.Run.Failures
		}
		m.Cells = append(m.Cells, dc)
	}
	m.FinishedAt = time.Now().UTC()
	return m, nil
}
