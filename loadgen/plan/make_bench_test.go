package plan

import (
	"testing"
	"time"

	"github.com/pushpull/pushpull/loadgen/dataset"
)

// BenchmarkTwitter2013 makes the plan of docs/plan.md's Twitter 2013
// example (evidence/plan/twitter-2013) with the built-in calibration.
// Its designs keep some of their work in caches between plans, so the
// first iteration (-benchtime 1x) is the command's time.
func BenchmarkTwitter2013(b *testing.B) {
	w := Workload{
		Users: 150_000_000, Graph: dataset.GraphPowerLaw, InExponent: 2.276, AvgFollowees: 100,
		NewestPerSec: 300_000, PostsPerSec: 5700, FollowsPerSec: 1000,
		Retention: 720 * time.Hour, SLO: 100 * time.Millisecond, Freshness: 5 * time.Second,
	}
	for b.Loop() {
		if _, err := Make(w, DefaultCalibration(), ""); err != nil {
			b.Fatal(err)
		}
	}
}
