package results

import (
	"fmt"
	"strings"

	"github.com/pushpull/pushpull/registry"
)

// Vitess describes the Vitess cluster of a run that had one.
type Vitess struct {
	Version string `json:"version"` // vitess.io/vitess release
	Shards  int    `json:"shards"`  // shards per keyspace
}

// vitessGrid sets each model on Vitess against the same model on MariaDB
// in the run: its rates, the ratio of MariaDB's rate to its own (vtgate's
// overhead, and the shards' sharing of the machine), and per operation of
// its phases the tablet calls (the shards it touched, with repeats; a
// statement routed to two shards is two calls), the round trips (the
// calls and the begins, commits and rollbacks), and a post's commits,
// savepoints, sequence calls and cross-shard transactions (see
// TabletCallFigures); nil without models on Vitess.
func vitessGrid(r *Result) *grid {
	g := &grid{}
	g.add("on Vitess", "shards", "newest/s", "MariaDB : Vitess", "older/s", "MariaDB : Vitess", "post/s", "MariaDB : Vitess",
		"calls/newest", "calls/older", "calls/post", "trips/newest", "trips/post", "commits/post", "savepoints/post", "sequence/post", "cross-shard/post")
	rows := 0
	for i := range r.Models {
		m := &r.Models[i]
		plainName, ok := strings.CutSuffix(m.Name, registry.VitessSuffix)
		if !ok {
			continue
		}
		shards := Dash
		if r.Vitess != nil {
			shards = fmt.Sprint(r.Vitess.Shards)
		}
		plain := r.Model(plainName)
		rate := func(p *Phase) string {
			if p == nil || p.Skipped || p.OpsPerSec <= 0 {
				return Dash
			}
			return fmtInt(int64(p.OpsPerSec + 0.5))
		}
		over := func(pick func(*Model) *Phase) string {
			if plain == nil {
				return Dash
			}
			p, v := pick(plain), pick(m)
			if p == nil || v == nil {
				return Dash
			}
			return fmtRatio(ratio(p.OpsPerSec, v.OpsPerSec))
		}
		extra := func(k string) string {
			v, ok := m.Extra[k]
			if !ok {
				return Dash
			}
			return fmt.Sprintf("%.2f", v)
		}
		newest := func(x *Model) *Phase { return &x.Retrieve }
		older := func(x *Model) *Phase { return &x.RetrieveOlder }
		post := func(x *Model) *Phase { return &x.Submit }
		g.add(m.Name, shards, rate(newest(m)), over(newest), rate(older(m)), over(older), rate(post(m)), over(post),
			extra("newest_tablet_calls"), extra("older_tablet_calls"), extra("post_tablet_calls"),
			extra("newest_tablet_trips"), extra("post_tablet_trips"), extra("post_tablet_commits"),
			extra("post_tablet_savepoints"), extra("post_tablet_sequence_calls"), extra("post_tablet_cross_shard"))
		rows++
	}
	if rows == 0 {
		return nil
	}
	return g
}

// ProbeSample is what one operation on Vitess, run alone, was counted to
// do (package internal/vtstats): the shards of its keyspace it touched;
// vtgate's calls to tablets (of its keyspace and the sequence's), and the
// round trips with the begins, commits and rollbacks of transactions;
// the commits, savepoints and sequence calls among them; and vtgate's
// transactions that spanned shards.
type ProbeSample struct {
	Shards, Calls, Trips, Commits, Savepoints, Sequence, CrossShard float64
}

// ProbeFigures turns samples of one kind of operation into figures named
// with prefix: the mean and the most of each field ("shards_mean",
// "shards_max", "trips_mean", ...). Nil for no samples.
func ProbeFigures(prefix string, samples []ProbeSample) map[string]float64 {
	if len(samples) == 0 {
		return nil
	}
	out := map[string]float64{}
	for _, s := range samples {
		for name, v := range s.fields() {
			out[prefix+name+"_mean"] += v / float64(len(samples))
			out[prefix+name+"_max"] = max(out[prefix+name+"_max"], v)
		}
	}
	return out
}

func (s ProbeSample) fields() map[string]float64 {
	return map[string]float64{
		"shards": s.Shards, "calls": s.Calls, "trips": s.Trips, "commits": s.Commits,
		"savepoints": s.Savepoints, "sequence": s.Sequence, "cross_shard": s.CrossShard,
	}
}

// probeOps are the operations the probe runs, in the order shown.
var probeOps = []string{"newest", "older", "post", "follow", "unfollow", "delete"}

// probeGrid shows, for each model on Vitess that was probed, what each
// kind of operation run alone did: the mean (and most) of the shards it
// touched, its calls, its round trips, and the mean of its commits,
// savepoints, sequence calls and cross-shard transactions; nil without a
// probe.
func probeGrid(r *Result) *grid {
	g := &grid{}
	g.add("on Vitess, one at a time", "operation", "shards (max)", "calls (max)", "trips (max)", "commits", "savepoints", "sequence", "cross-shard")
	rows := 0
	for i := range r.Models {
		m := &r.Models[i]
		for _, op := range probeOps {
			prefix := "probe_" + op + "_"
			if _, ok := m.Extra[prefix+"calls_mean"]; !ok {
				continue
			}
			both := func(k string) string {
				return fmt.Sprintf("%.2f (%.0f)", m.Extra[prefix+k+"_mean"], m.Extra[prefix+k+"_max"])
			}
			mean := func(k string) string { return fmt.Sprintf("%.2f", m.Extra[prefix+k+"_mean"]) }
			g.add(m.Name, op, both("shards"), both("calls"), both("trips"), mean("commits"), mean("savepoints"), mean("sequence"), mean("cross_shard"))
			rows++
		}
	}
	if rows == 0 {
		return nil
	}
	return g
}
