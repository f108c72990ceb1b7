package plan

import (
	"time"

	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// Check sets the plan's model against counted runs: for every phase of
// every design that declares a cost model, the work per operation its
// counters counted beside what the design's cost model predicts for the
// run's own workload (its users, graph, activity, messages and the
// phase's rates), and the CPU per operation of all processes measured
// beside cal's prediction from the predicted work. Phases whose
// database counters the run could not trust are listed apart, not
// checked. runs are named by sources.
func Check(runs []*results.Result, sources []string, cal *results.Calibration, command string) (*results.PlanCheck, error) {
	c := &results.PlanCheck{Version: results.PlanCheckFormatVersion, CreatedAt: time.Now(), Command: command,
		Calibration: *cal, Runs: sources}
	for _, r := range runs {
		phases, err := counted(r)
		if err != nil {
			return nil, err
		}
		for _, p := range phases {
			if p.unreliable {
				c.Unreliable = append(c.Unreliable, p.run+", "+p.model+", "+p.phase)
				continue
			}
			row := results.PlanCheckRow{Run: p.run, Model: p.model, Phase: p.phase,
				Measured: planWork(measuredWork(p.measured)), Predicted: planWork(p.predicted),
				PredictedCPUUs: cpuOf(cal, p.predicted, p.needs).all()}
			row.MeasuredCPUUs, _ = p.measured.AllCPU()
			c.Rows = append(c.Rows, row)
		}
	}
	return c, nil
}

// planWork is w as a plan shows it.
func planWork(w registry.Work) results.PlanWork {
	return results.PlanWork{RowsRead: w.RowsRead, RowsWritten: w.RowsWritten, MCKeys: w.MCKeys,
		RedisCommands: w.RedisCommands, Statements: w.Statements, CacheCalls: w.CacheCalls}
}
