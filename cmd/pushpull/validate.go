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

// maxValidateRepeat bounds --validate-repeat: each repeat adds about half
// an hour for the candidates on a small box.
const maxValidateRepeat = 10

// validation is plan --validate: the model calibrated at one scale or
// more and checked at a larger one it has not seen, on the uniform and
// the power-law graph, every run made here and saved with the calibration
// and the check under out/validation/<time>:
//
//   - runs/rate-100: the designs' mix at 100 operations a second at the
//     smallest scale, for the servers' idle CPU (as plan --calibrate);
//   - runs/uniform-N/<design>, runs/powerlaw-N/<design> at each scale
//     calibrated at (N users): a counted run of the design with its
//     default mix and a rate search within the objective, whose steps
//     below saturation give the processes' wake-ups;
//   - runs/uniform-M/<design>, runs/powerlaw-M/<design> at the largest
//     scale, the same run, made right after the design's runs at the
//     smaller scales on the same graph (and with --validate-repeat K,
//     K−1 more under runs/uniform-M-repeat-2/<design> and on, right
//     after it): a design's runs are a minute or two apart, where the
//     machine's speed drifts by up to a fifth in an hour (so the
//     design's CPU factors are fitted at the speed its held-out runs
//     meet, and the check measures the model, not the hour);
//   - calibration/: fitted on rate-100 and the runs at the smaller
//     scales alone (at two or more, each design's CPU factors also get
//     their growth with the data, results.CPUFactors.SizeExponent);
//   - check/: the model set against the runs at M (plan --check): rows
//     and keys, CPU per operation, and the highest rate within the
//     objective, predicted against measured, printed and plotted; with
//     repeats, each design's prediction also against the median of its
//     runs' rates, and their spread (results.PlanCheck.RepeatedRates).
//
// Given a calibration (--calibration: a directory, a file or a built-in
// one), it checks that one instead of fitting its own: no rate-100 and no
// runs at smaller scales, the held-out runs alone at the one scale given,
// and calibration/ a copy of the one checked. That is the check of a
// plan made on this machine with it, in a third of the time.
type validation struct {
	given  string        // --validate-scales
	scales []float64     // the scales calibrated at, and last the one held out (check parses given)
	phase  time.Duration // each counted phase and rate-search step
	repeat int           // runs of each design at the held-out scale on each graph
	models []string      // the designs; none: recommend's candidates
	slo    time.Duration // the rate searches' objective
	sets   []string      // mariadbd options of every run (--set)
	out    string
	quiet  bool
	// cal, when set (--calibration), is checked as it is: no runs to fit
	// one, and scales is the one scale measured.
	cal *results.Calibration
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
	for i, s := range v.scales {
		if !(s > 0) || s > maxValidateScale {
			return usagef("--validate-scales %s: want scales above 0 and at most %d", given, maxValidateScale)
		}
		if i > 0 && !(s > v.scales[i-1]) {
			return usagef("--validate-scales %s: want the scales in increasing order, the one held out last and larger than those calibrated at", given)
		}
	}
	switch {
	case v.cal != nil && len(v.scales) != 1:
		return usagef("--validate-scales %s: with --calibration, want the one scale its runs are made at: the calibration is checked, not fitted", given)
	case v.cal == nil && len(v.scales) < 2:
		return usagef("--validate-scales %s: want two scales or more, those calibrated at and last the larger one held out", given)
	case v.users(v.scales[0]) < 10:
		return usagef("--validate-scales %s: %d users at the smallest scale; want at least 10", given, v.users(v.scales[0]))
	case v.repeat < 1 || v.repeat > maxValidateRepeat:
		return usagef("--validate-repeat %d: want 1 to %d runs of each held-out measurement", v.repeat, maxValidateRepeat)
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
	step, steps := 0, 1+2*(len(v.scales)-1+v.repeat)*len(models)
	if v.cal != nil {
		steps = 2 * v.repeat * len(models)
	}
	progress := func() string { step++; return fmt.Sprintf("validation run %d of %d", step, steps) }
	var calDirs, heldDirs []string
	if v.cal == nil {
		low, err := runPushpull(cmd, filepath.Join(dir, "runs", "rate-"+calibrationLowRate), progress(),
			withSets(v.sets, "recommend", "--scale", strconv.FormatFloat(v.scales[0], 'g', -1, 64), "--rate", calibrationLowRate, "--duration", d, "--slo", slo, "--models", list)...)
		if err != nil {
			return err
		}
		calDirs = append(calDirs, low)
	}
	// Each design's runs at every scale on a graph, one after the other.
	for _, m := range models {
		for _, graph := range []string{dataset.GraphUniform, dataset.GraphPowerLaw} {
			for i, scale := range v.scales {
				held := i == len(v.scales)-1
				times := 1
				if held {
					times = v.repeat
				}
				for k := range times {
					name := fmt.Sprintf("%s-%d", graph, v.users(scale))
					if k > 0 {
						name += fmt.Sprintf("-repeat-%d", k+1)
					}
					r, err := runPushpull(cmd, filepath.Join(dir, "runs", name, m), progress(),
						withSets(v.sets, "bench", "--cost", "--find-rate", "--slo", slo, "--step", d, "--mix", "default", "--duration", d, "--extra-duration", d,
							"--scale", strconv.FormatFloat(scale, 'g', -1, 64), "--graph", graph, "--models", m)...)
					if err != nil {
						return err
					}
					if held {
						heldDirs = append(heldDirs, r)
					} else {
						calDirs = append(calDirs, r)
					}
				}
			}
		}
	}
	cal := v.cal
	if cal == nil {
		runs, err := loadRuns(calDirs)
		if err != nil {
			return err
		}
		if cal, err = plan.Calibrate(runs, runSources(runs, calDirs)); err != nil {
			return fmt.Errorf("validation: calibrate: %w", err)
		}
	}
	// The calibration checked is saved beside the check, fitted here or
	// given.
	if err := results.SaveCalibration(filepath.Join(dir, "calibration"), cal); err != nil {
		return err
	}
	if !v.quiet && v.cal == nil {
		if err := results.WriteCalibration(stdout, cal); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
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
