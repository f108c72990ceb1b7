package main

import (
	"github.com/spf13/pflag"

	"github.com/pushpull/pushpull/loadgen/dataset"
)

// readerFlags are the bench and sweep flags of the readers who are not
// like the others: drowning readers, who follow far more authors than
// anyone else.
type readerFlags struct {
	drowning string
}

func (r *readerFlags) register(f *pflag.FlagSet) {
	f.StringVar(&r.drowning, "drowning", "", "add drowning readers: SHARE:FOLLOWEES, e.g. 1%:10000, that share of the users each following that many others drawn uniformly "+
		"(scaled with --scale, at most everyone else); the probe reports their pages' completeness apart. Options drowning_follows and drowning of push and push-async treat them otherwise")
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
