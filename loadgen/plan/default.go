package plan

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/pushpull/pushpull/results"
)

// builtIn are the calibrations fitted on the counted runs saved in
// evidence/plan (pushpull plan --calibrate-from), built in so that a plan
// needs no runs of its own: calibrations/<name>.json. amd-epyc and
// intel-xeon are fitted on the validations made on each processor with
// the sandbox's thread pool (amd-epyc on five of them together);
// amd-epyc-first is the first machine's, made with a thread per
// connection before its runs recorded their processor, kept for the
// evidence planned with it and taken only by name.
//
//go:embed calibrations/*.json
var builtIn embed.FS

// ReferenceCalibration is the name of the built-in calibration a plan
// takes on a processor no built-in one was made on, the one the docs'
// worked examples are planned with: the AMD EPYC's, fitted on the most
// runs.
const ReferenceCalibration = "amd-epyc"

// BuiltInCalibrations names the calibrations built in, sorted.
func BuiltInCalibrations() []string {
	entries, err := builtIn.ReadDir("calibrations")
	if err != nil {
		panic("plan: the built-in calibrations: " + err.Error())
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	slices.Sort(names)
	return names
}

// BuiltInCalibration returns the built-in calibration of that name
// (BuiltInCalibrations), or nil if there is none.
func BuiltInCalibration(name string) *results.Calibration {
	if !slices.Contains(BuiltInCalibrations(), name) {
		return nil
	}
	data, err := builtIn.ReadFile(path.Join("calibrations", name+".json"))
	if err != nil {
		panic("plan: the built-in calibration " + name + ": " + err.Error())
	}
	var c results.Calibration
	if err := json.Unmarshal(data, &c); err != nil {
		panic("plan: the built-in calibration " + name + " does not parse: " + err.Error())
	}
	if err := c.Validate(); err != nil {
		panic("plan: the built-in calibration " + name + ": " + err.Error())
	}
	return &c
}

// DefaultCalibration is the built-in calibration for this machine: the one
// whose runs recorded this machine's processor (results.LocalCPUModel),
// else ReferenceCalibration. Its Machine and Sources say which runs.
func DefaultCalibration() *results.Calibration {
	return BuiltInCalibration(calibrationFor(results.LocalCPUModel()))
}

// calibrationFor names the built-in calibration for a processor of that
// model (DefaultCalibration).
func calibrationFor(model string) string {
	if model != "" {
		for _, name := range BuiltInCalibrations() {
			if BuiltInCalibration(name).CPUModel == model {
				return name
			}
		}
	}
	return ReferenceCalibration
}

// CalibrationNote says, for a plan made with cal on a processor of that
// model (results.LocalCPUModel), when cal's runs ran on another or did
// not record theirs: the CPU figures are then another machine's. It is ""
// when cal was made on this processor.
func CalibrationNote(cal *results.Calibration, model string) string {
	if cal.CPUModel != "" && cal.CPUModel == model {
		return ""
	}
	here := "a processor this machine does not name"
	if model != "" {
		here = model
	}
	if cal.CPUModel == "" {
		return fmt.Sprintf("the calibration's runs (%s) did not record their processor, this machine runs on %s: if theirs was another, its CPU figures are that machine's (pushpull plan --calibrate measures this one's)", cal.Machine, here)
	}
	return fmt.Sprintf("the calibration's runs ran on %s, this machine on %s: its CPU figures are that machine's (pushpull plan --calibrate measures this one's)", cal.Machine, here)
}
