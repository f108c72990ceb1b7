package async

import (
	"math"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
)

// Work is push-async's cost model (registry.Model.Work): push's pages and
// follows (push.Work), and a post split in two. Until it is acknowledged a
// post writes its message and its fan-out job (2 rows, 3 statements).
// Later a worker claims the job, counts the author's f followers, copies
// the message to them with INSERT IGNORE ... SELECT (reading the followers
// twice: 2f rows and the jobs it claims), and deletes the job: f+1 rows
// written, and four statements per chunk of followers. One post's fan-out
// is applied by one worker at a time, chunk after chunk; the store runs
// option workers of them.
func Work(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	w, f := push.Work(d, cfg)
	chunk := float64(cfg.Int(OptionChunk))
	later := func(audience float64) registry.Work {
		return registry.Work{RowsRead: 2*audience + 4, RowsWritten: audience + 1, Statements: 1 + 4*math.Max(1, audience/chunk)}
	}
	w.Post = registry.Work{RowsWritten: 2, Statements: 3}
	w.Later = later(d.PostAudience())
	w.LargestPost = later(d.MostFollowers())
	w.Workers = float64(cfg.Int(OptionWorkers))
	if w.Workers == 0 {
		w.Workers = DefaultWorkers
	}
	w.Workers = math.Max(w.Workers, 1)
	return w, f
}
