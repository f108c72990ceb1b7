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
// written, and four statements per chunk of followers. A job of more
// followers than a chunk is applied chunk after chunk by one worker at a
// time: each chunk but the last counts chunk+1 of the followers left
// (Worker counts no further), finds where it ends by an index read of as
// many, writes chunk of them and moves the job's cursor, chunk+2 rows read
// and one written beyond the whole job's (TestCelebrityFanOutRowsMatchWork
// counts an author's). Those chunks are taken over the posts' authors
// (Demand.MeanOverPosts), the rest at the posts' audience. The store runs
// option workers of them.
//
// Behind a backlog a chunk claims more jobs than fit its budget and
// counts, in up to three rounds, only as many as the budget left would fit
// by their average (Worker, plan): the jobs it leaves queued are counted
// at most once a round, and not at all once the budget is filled
// (TestBacklogRowsMatchWork). What a backlog still reads beyond the model
// is left out: in a posts phase on the power-law graph at 3,000 users,
// 2.5 rows a row written where the model says 2.
func Work(d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	w, f := push.Work(d, cfg)
	chunk := math.Max(1, float64(cfg.Int(OptionChunk)))
	// parts is the chunks that end inside a job of f followers.
	parts := func(f float64) float64 { return math.Max(0, math.Ceil(f/chunk)-1) }
	later := func(audience, parts, chunks float64) registry.Work {
		return registry.Work{RowsRead: 2*audience + 4 + parts*(chunk+2), RowsWritten: audience + 1 + parts, Statements: 1 + 4*chunks}
	}
	w.Post = registry.Work{RowsWritten: 2, Statements: 3}
	w.Later = later(d.PostAudience(), d.MeanOverPosts(func(c registry.UserClass) float64 { return parts(c.Followers) }),
		d.MeanOverPosts(func(c registry.UserClass) float64 { return math.Max(1, c.Followers/chunk) }))
	most := d.MostFollowers()
	w.LargestPost = later(most, parts(most), math.Max(1, most/chunk))
	w.Workers = float64(cfg.Int(OptionWorkers))
	if w.Workers == 0 {
		w.Workers = DefaultWorkers
	}
	w.Workers = math.Max(w.Workers, 1)
	return w, f
}
