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
// overhead, and the shards' sharing of the machine), and the tablet calls
// per operation (the shards it touched, with repeats; a statement routed
// to two shards is two calls); nil without models on Vitess.
func vitessGrid(r *Result) *grid {
	g := &grid{}
	g.add("on Vitess", "shards", "newest/s", "MariaDB : Vitess", "older/s", "MariaDB : Vitess", "post/s", "MariaDB : Vitess",
		"calls/newest", "calls/older", "calls/post")
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
			extra("newest_tablet_calls"), extra("older_tablet_calls"), extra("post_tablet_calls"))
		rows++
	}
	if rows == 0 {
		return nil
	}
	return g
}
