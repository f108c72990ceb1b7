package main

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pushpull/pushpull/loadgen"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
)

// readerFlags are the bench and sweep flags of the readers who are not
// like the others: drowning readers, who follow far more authors than
// anyone else, and dormant readers, who come back after an absence.
type readerFlags struct {
	drowning  string
	returning int
	absence   time.Duration
}

func (r *readerFlags) register(f *pflag.FlagSet) {
	f.StringVar(&r.drowning, "drowning", "", "add drowning readers: SHARE:FOLLOWEES, e.g. 1%:10000, that share of the users each following that many others drawn uniformly "+
		"(scaled with --scale, at most everyone else); the probe reports their pages' completeness apart, and a phase reads their pages only. Options drowning_follows and drowning of "+
		strings.Join(declaring("drowning_follows"), ", ")+" treat them otherwise")
	f.IntVar(&r.returning, "returning", 0, "add per model a returning-users study: this many dormant users, and as many steady ones, read; then for --absence the dormant read nothing while their followees post and the steady read on; "+
		"then the first read of each after the absence (latency, rows, keys, CPU, completeness of the page against what they missed) against the steady reads. Give "+
		strings.Join(declaring(loadgen.OptionWindow), " and ")+" a shorter --option "+loadgen.OptionWindow+". Not with --traffic-only")
	f.DurationVar(&r.absence, "absence", 0, "--returning: how long the dormant users stay away (needed with --returning)")
}

// apply sets the dataset's drowning readers; a malformed value is a usage
// error.
func (r *readerFlags) apply(spec *dataset.Spec) error {
	if r.drowning == "" {
		return nil
	}
	d, err := dataset.ParseDrowning(r.drowning)
	if err != nil {
		return usagef("--drowning: %v", err)
	}
	spec.Drowning = d
	return nil
}

// configure sets cfg's returning study from the flags of f; values it
// cannot run are usage errors.
func (r *readerFlags) configure(f *pflag.FlagSet, cfg *loadgen.BenchConfig) error {
	switch {
	case r.returning == 0 && f.Changed("absence"):
		return usagef("--absence goes with --returning")
	case r.returning == 0:
		return nil
	case r.returning < 0 || r.returning > workload.MaxReturningUsers:
		return usagef("--returning %d: want 1 to %d users", r.returning, workload.MaxReturningUsers)
	case r.absence <= 0:
		return usagef("--returning needs --absence, a duration above 0 (e.g. 30s)")
	case 2*r.returning > cfg.Spec.Users:
		return usagef("--returning %d: the study draws twice as many users, and the dataset has %d", r.returning, cfg.Spec.Users)
	case cfg.TrafficOnly:
		return usagef("--returning does not go with --traffic-only")
	}
	cfg.Returning = &workload.ReturningConfig{Users: r.returning, Absence: r.absence}
	return nil
}

// declaring lists the models that declare option, not on Vitess.
func declaring(option string) []string {
	var out []string
	for _, m := range registry.Models() {
		if m.OnVitess() {
			continue
		}
		for _, o := range m.Options {
			if o.Name == option {
				out = append(out, m.Name)
				break
			}
		}
	}
	return out
}
