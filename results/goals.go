package results

import (
	"fmt"

	"github.com/pushpull/pushpull/registry"
)

// Targets of the goals Judge records, as ratios of rates measured in one
// run.
const (
	// GoalCachedOverPush: the best cached model's newest-page rate
	// against the paper's push model's.
	GoalCachedOverPush = 5.0
	// GoalCachedOverGet: the best cached model against plain memcached
	// gets of one page-sized value.
	GoalCachedOverGet = 0.5
	// GoalPullOverPaperPull: the best pull model beyond the paper's own
	// against the paper's pull (stored procedures).
	GoalPullOverPaperPull = 10.0
	// GoalPullOverPush: the best pull model against push.
	GoalPullOverPush = 1.0
	// GoalPullSubmission: the best pull model's submission against the
	// plain pull post's.
	GoalPullSubmission = 0.7
	// GoalCachedSubmission: the cached push model's posts (which
	// invalidate the followers' pages, pipelined) against push's own.
	GoalCachedSubmission = 0.8
	// HarnessOverPush: the harness must drive a no-op store at least this
	// many times faster than push reads, or it measures itself.
	HarnessOverPush = 20.0
)

// Judge records the goals of the cache and of the fast pull models, for
// the figures the run measured, and fails a run whose harness was too slow
// to measure push's reads. It reads the models' roles (Family, PaperModel,
// Base, SharedSubmit), never their names.
func (r *Result) Judge() {
	rate := func(m *Model) float64 {
		if m != nil && m.Retrieve.Ran() {
			return m.Retrieve.OpsPerSec
		}
		return 0
	}
	add := func(name string, value, target float64, detail string) {
		r.Goals = append(r.Goals, Goal{Name: name, Value: value, Target: target, Met: value >= target, Detail: detail})
	}
	r.judgeHTTP()
	pushM, paperPull := r.paperModel(registry.FamilyPush), r.paperModel(registry.FamilyPull)
	push := rate(pushM)

	// The cache: its best model against push and against memcached itself.
	var cached *Model
	for i := range r.Models {
		if m := &r.Models[i]; m.Base != "" && (cached == nil || rate(m) > rate(cached)) {
			cached = m
		}
	}
	if cached != nil && push > 0 {
		add(fmt.Sprintf("cached retrieval / %s retrieval", pushM.Name), rate(cached)/push, GoalCachedOverPush,
			fmt.Sprintf("%s %.0f/s, %s %.0f/s", cached.Name, rate(cached), pushM.Name, push))
	}
	if cached != nil && r.MemcacheGet != nil && r.MemcacheGet.OpsPerSec > 0 {
		get := r.MemcacheGet.OpsPerSec
		add("cached retrieval / raw memcached get", rate(cached)/get, GoalCachedOverGet,
			fmt.Sprintf("%s %.0f/s, get %.0f/s", cached.Name, rate(cached), get))
	}
	// Posting through the cache: the cached push model against push. (A
	// cached pull model's post adds the follower lookup and the bumps to
	// one INSERT, and is not held to this.)
	for i := range r.Models {
		m := &r.Models[i]
		if pushM != nil && m.Base == pushM.Name && m.Submit.Ran() && pushM.Submit.Ran() && pushM.Submit.OpsPerSec > 0 {
			add(fmt.Sprintf("%s submission / %s submission", m.Name, pushM.Name), m.Submit.OpsPerSec/pushM.Submit.OpsPerSec, GoalCachedSubmission,
				fmt.Sprintf("%s %.0f msg/s, %s %.0f msg/s", m.Name, m.Submit.OpsPerSec, pushM.Name, pushM.Submit.OpsPerSec))
		}
	}
	if push > 0 && r.Harness != nil && r.Harness.OpsPerSec < HarnessOverPush*push {
		r.Failures = append(r.Failures, fmt.Sprintf("the harness ran a no-op store at only %.0f ops/s, under %.0fx %s retrieval (%.0f/s): it would be measuring itself",
			r.Harness.OpsPerSec, HarnessOverPush, pushM.Name, push))
	}

	// Pull at push speed: the best pull model other than the paper's.
	var best *Model
	for i := range r.Models {
		m := &r.Models[i]
		if m.Family == registry.FamilyPull && m.Base == "" && m != paperPull && (best == nil || rate(m) > rate(best)) {
			best = m
		}
	}
	if best == nil || rate(best) == 0 {
		return
	}
	if sp := rate(paperPull); sp > 0 {
		add(fmt.Sprintf("best pull retrieval / %s retrieval", paperPull.Name), rate(best)/sp, GoalPullOverPaperPull,
			fmt.Sprintf("%s %.0f/s, %s %.0f/s", best.Name, rate(best), paperPull.Name, sp))
	}
	if push > 0 {
		add(fmt.Sprintf("best pull retrieval / %s retrieval", pushM.Name), rate(best)/push, GoalPullOverPush,
			fmt.Sprintf("%s %.0f/s, %s %.0f/s", best.Name, rate(best), pushM.Name, push))
	}
	var plain float64
	for i := range r.Models {
		if m := &r.Models[i]; m.Family == registry.FamilyPull && m.Base == "" && m.SharedSubmit && m.Submit.Ran() {
			plain = m.Submit.OpsPerSec
			break
		}
	}
	if best.Submit.Ran() && plain > 0 {
		add("best pull submission / plain pull submission", best.Submit.OpsPerSec/plain, GoalPullSubmission,
			fmt.Sprintf("%s %.0f msg/s, plain %.0f msg/s", best.Name, best.Submit.OpsPerSec, plain))
	}
}
