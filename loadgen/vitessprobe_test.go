package loadgen

import (
	"testing"

	"github.com/pushpull/pushpull/internal/vtstats"
	"github.com/pushpull/pushpull/results"
)

// TestProbeSample: an operation's sample counts the shards of its own
// keyspace whose trips moved, not the sequence's nor another keyspace's,
// and the differences of the other counts.
func TestProbeSample(t *testing.T) {
	before := map[string]int64{
		vtstats.TabletCalls: 10, vtstats.TabletTrips: 20, vtstats.TabletCommits: 3, vtstats.SequenceCalls: 4,
		vtstats.ShardTrips("ks", "-80"): 7, vtstats.ShardTrips("ks", "80-"): 9, vtstats.ShardTrips("ks2", "-80"): 1,
		vtstats.ShardTrips("pushpull_seq", "0"): 4,
	}
	after := map[string]int64{
		vtstats.TabletCalls: 14, vtstats.TabletTrips: 27, vtstats.TabletCommits: 4, vtstats.SequenceCalls: 5,
		vtstats.ShardTrips("ks", "-80"): 13, vtstats.ShardTrips("ks", "80-"): 9, vtstats.ShardTrips("ks2", "-80"): 2,
		vtstats.ShardTrips("pushpull_seq", "0"): 5,
	}
	want := results.ProbeSample{Shards: 1, Calls: 4, Trips: 7, Commits: 1, Sequence: 1}
	if got := sample("ks", before, after); got != want {
		t.Fatalf("sample %+v, want %+v", got, want)
	}
}
