package plan

import (
	_ "embed"
	"encoding/json"

	"github.com/pushpull/pushpull/results"
)

// defaultCalibration is the calibration fitted on the counted runs saved
// in evidence/plan (pushpull plan --calibrate-from), built in so that a
// plan needs no runs of its own.
//
//go:embed calibration.json
var defaultCalibration []byte

// DefaultCalibration is the built-in calibration: the project's machine's
// (its Machine and Sources say which runs).
func DefaultCalibration() *results.Calibration {
	var c results.Calibration
	if err := json.Unmarshal(defaultCalibration, &c); err != nil {
		panic("plan: the built-in calibration does not parse: " + err.Error())
	}
	if err := c.Validate(); err != nil {
		panic("plan: the built-in calibration: " + err.Error())
	}
	return &c
}
