package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/plan"
	"github.com/pushpull/pushpull/loadgen/recommend"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// maxValidateScale bounds --validate-scales: ten times the paper's size
// is more than one machine loads and searches in a working day.
const maxValidateScale = 10

// validation is plan --validate: the model calibrated at one scale and
// checked at a larger one it has not seen, on the uniform and the
// power-law graph, every run made here and saved with the calibration and
// the check under out/validation/<time>:
//
//   - runs/uniform-N, runs/powerlaw-N at the smaller scale (N users):
//     counted runs of the designs with their default mix and a rate
//     search within the objective, whose steps below saturation give the
//     processes' wake-ups;
//   - runs/rate-100: the designs' mix at 100 operations a second, for
//     the servers' idle CPU (as plan --calibrate);
//   - calibration/: fitted on those three;
//   - runs/uniform-M, runs/powerlaw-M at the larger scale, the same runs;
//   - check/: the model set against them (plan --check): rows and keys,
//     CPU per operation, and the highest rate within the objective,
//     predicted against measured, printed and plotted.
type validation struct {
	given  string        // --validate-scales
	scales []float64     // the scale calibrated at, and the one held out (check parses given)
	phase  time.Duration // each counted phase and rate-search step
	models []string      // the designs; none: recommend's candidates
	slo    time.Duration // the rate searches' objective
	out    string
	quiet  bool
}

// check parses the scales and refuses a validation that could not run
// as asked, before any run: a usage error.
func (v *validation) check() error {
	given := v.given
	v.scales = nil
	for _, f := range strings.Split(given, ",") {
		s, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return usagef("--validate-scales %s: %q is not a number", given, f)
		}
		v.scales = append(v.scales, s)
	}
	switch {
	case len(v.scales) != 2:
		return usagef("--validate-scales %s: want two scales, the one calibrated at and the larger one held out", given)
	case !(v.scales[0] > 0) || v.scales[0] > maxValidateScale || !(v.scales[1] > 0) || v.scales[1] > maxValidateScale:
		return usagef("--validate-scales %s: want scales above 0 and at most %d", given, maxValidateScale)
	case !(v.scales[1] > v.scales[0]):
		return usagef("--validate-scales %s: the scale held out must be larger than the one calibrated at", given)
	case v.users(v.scales[0]) < 10:
		return usagef("--validate-scales %s: %d users at the smaller scale; want at least 10", given, v.users(v.scales[0]))
	case v.phase <= 0:
		return usagef("--validate-duration %v: want a duration above 0", v.phase)
	case v.slo <= 0:
		return usagef("--slo %v: want a duration above 0", v.slo)
	}
	for _, m := range v.models {
		if _, err := registry.Lookup(m); err != nil {
			return &usageError{fmt.Errorf("--models: %w", err)}
		}
	}
	return nil
}

// users is the users of the dataset at scale.
func (v validation) users(scale float64) int {
	return int(math.Round(scale * float64(dataset.PaperSpec().Users)))
}

// run makes the runs, the calibration and the check, and prints the
// check's table (and the calibration, unless quiet).
func (v validation) run(cmd *cobra.Command) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	dir := results.RunDir(filepath.Join(v.out, "validation"), time.Now())
	models := v.models
	if len(models) == 0 {
		models = recommend.Candidates()
	}
	list := strings.Join(models, ",")
	d, slo := v.phase.String(), v.slo.String()
	step := 0
	const steps = 5
	bench := func(scale float64, graph string) (string, error) {
		step++
		name := fmt.Sprintf("%s-%d", graph, v.users(scale))
		return runPushpull(cmd, filepath.Join(dir, "runs", name), fmt.Sprintf("validation run %d of %d", step, steps),
			"bench", "--cost", "--find-rate", "--slo", slo, "--step", d, "--mix", "default", "--duration", d, "--extra-duration", d,
			"--scale", strconv.FormatFloat(scale, 'g', -1, 64), "--graph", graph, "--models", list)
	}
	// both makes the runs at scale on both graphs.
	both := func(scale float64) ([]string, error) {
		var dirs []string
		for _, graph := range []string{dataset.GraphUniform, dataset.GraphPowerLaw} {
			r, err := bench(scale, graph)
			if err != nil {
				return nil, err
			}
			dirs = append(dirs, r)
		}
		return dirs, nil
	}
	calDirs, err := both(v.scales[0])
	if err != nil {
		return err
	}
	step++
	low, err := runPushpull(cmd, filepath.Join(dir, "runs", "rate-"+calibrationLowRate), fmt.Sprintf("validation run %d of %d", step, steps),
		"recommend", "--scale", strconv.FormatFloat(v.scales[0], 'g', -1, 64), "--rate", calibrationLowRate, "--duration", d, "--slo", slo, "--models", list)
	if err != nil {
		return err
	}
	calDirs = append(calDirs, low)
	runs, err := loadRuns(calDirs)
	if err != nil {
		return err
	}
	cal, err := plan.Calibrate(runs, runSources(runs, calDirs))
	if err != nil {
		return fmt.Errorf("validation: calibrate: %w", err)
	}
	if err := results.SaveCalibration(filepath.Join(dir, "calibration"), cal); err != nil {
		return err
	}
	if !v.quiet {
		if err := results.WriteCalibration(stdout, cal); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	heldDirs, err := both(v.scales[1])
	if err != nil {
		return err
	}
	held, err := loadRuns(heldDirs)
	if err != nil {
		return err
	}
	c, err := plan.Check(held, runSources(held, heldDirs), cal, commandLine(cmd))
	if err != nil {
		return fmt.Errorf("validation: check: %w", err)
	}
	if err := results.SavePlanCheck(filepath.Join(dir, "check"), c); err != nil {
		return err
	}
	if !v.quiet {
		if err := results.WritePlanCheck(stdout, c); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "saved %s/{runs,calibration,check}\n", dir)
	return nil
}
