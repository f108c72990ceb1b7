// Package vtstats reads what a vtgate counts about its own work from its
// status pages (/debug/vars): how many calls it made to the tablets of each
// shard, and, where the tablets run in vtgate's process (vtcombo, the
// cluster the project starts), what each shard's primary tablet served:
// statements, begins, commits, rollbacks, savepoints and sequence values,
// and how long its transactions lasted.
//
// One call is one statement on one shard; a transaction adds its begin and
// its commit (or rollback) on each shard it wrote to, and vtgate sets a
// savepoint on a shard before a statement that may write to several. So
// the round trips of an operation on one keyspace are its statements plus
// its begins and ends (Counts.Trips), and the shards it touched are those
// whose counts moved (Snapshot.Touched), which only a snapshot around one
// operation at a time can tell.
package vtstats

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pushpull/pushpull/timeline/counter"
)

// TabletCalls names the count Calls returns: every call vtgate made to a
// tablet of the keyspaces asked about.
const TabletCalls = counter.TabletCalls

// Calls returns the tablet calls vtgate at status (host:port of its status
// pages) has made so far to the shards of keyspaces, and what the
// keyspaces' tablets served (Snapshot.Counters), waiting at most five
// seconds.
func Calls(ctx context.Context, status string, keyspaces ...string) (map[string]int64, error) {
	s, err := Read(ctx, status)
	if err != nil {
		return nil, err
	}
	return s.Counters(keyspaces...), nil
}

// Counts are what one shard, or the shards of a keyspace added up, served.
type Counts struct {
	// Calls are vtgate's calls to the shard's tablets (VttabletCall):
	// statements, with sequence values. (vtcombo does not count a
	// transaction's begin and commit here.)
	Calls int64
	// The rest are the primary tablet's own counts (in vtcombo's
	// /debug/vars; zero from a vtgate whose tablets run apart).
	// Begins, Commits and Rollbacks are transactions begun and ended;
	// Savepoints the savepoints vtgate set; Sequence the calls that
	// handed out sequence values (on the sequence's keyspace).
	Begins, Commits, Rollbacks, Savepoints, Sequence int64
	// Long are the transactions the tablet ended after more than a
	// second.
	Long int64
}

// Trips returns the round trips the counts stand for: every call, and the
// begin and end of every transaction. (Savepoints, which vtgate sends
// with a statement, are counted apart.)
func (c Counts) Trips() int64 { return c.Calls + c.Begins + c.Commits + c.Rollbacks }

func (c Counts) add(d Counts) Counts {
	return Counts{
		Calls: c.Calls + d.Calls, Begins: c.Begins + d.Begins, Commits: c.Commits + d.Commits,
		Rollbacks: c.Rollbacks + d.Rollbacks, Savepoints: c.Savepoints + d.Savepoints,
		Sequence: c.Sequence + d.Sequence, Long: c.Long + d.Long,
	}
}

func (c Counts) sub(d Counts) Counts {
	return Counts{
		Calls: c.Calls - d.Calls, Begins: c.Begins - d.Begins, Commits: c.Commits - d.Commits,
		Rollbacks: c.Rollbacks - d.Rollbacks, Savepoints: c.Savepoints - d.Savepoints,
		Sequence: c.Sequence - d.Sequence, Long: c.Long - d.Long,
	}
}

// Snapshot is what a vtgate had counted at one moment.
type Snapshot struct {
	// Shards are the counts by "keyspace/shard".
	Shards map[string]Counts
	// Transactions are vtgate's transactions by kind: "Single.ReadWrite",
	// "Cross.ReadWrite" (spanning shards), ... (TransactionsProcessed).
	Transactions map[string]int64
}

// Read returns what vtgate at status (host:port of its status pages) has
// counted so far, waiting at most five seconds (vtgate writes every
// count it keeps, and a busy vtgate takes a while).
func Read(ctx context.Context, status string) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+status+"/debug/vars", nil)
	if err != nil {
		return Snapshot{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Snapshot{}, fmt.Errorf("read vtgate counters: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Snapshot{}, fmt.Errorf("read vtgate counters: %s", resp.Status)
	}
	var v vars
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return Snapshot{}, fmt.Errorf("read vtgate counters: %w", err)
	}
	return v.snapshot(), nil
}

// vars are the parts of /debug/vars that Read reads.
type vars struct {
	VttabletCall          timings
	Queries               timings // by "tablet.PlanType"
	Transactions          timings // by "tablet.commit" and "tablet.rollback"
	TabletServerState     map[string]int64
	TransactionsProcessed map[string]int64
}

type timings struct {
	Histograms map[string]map[string]int64
}

// longBuckets are the transaction-time histogram's buckets (upper bounds
// in nanoseconds) above a second.
var longBuckets = []string{"5000000000", "10000000000", "inf"}

func (v vars) snapshot() Snapshot {
	s := Snapshot{Shards: map[string]Counts{}, Transactions: v.TransactionsProcessed}
	for name, h := range v.VttabletCall.Histograms {
		parts := strings.Split(name, ".") // Operation.keyspace.shard.tablet_type
		if len(parts) != 4 {
			continue
		}
		key := parts[1] + "/" + parts[2]
		c := s.Shards[key]
		c.Calls += h["Count"]
		s.Shards[key] = c
	}
	// "test-0000000001.SERVING.PRIMARY.keyspace.shard": the primary
	// tablet of each shard, which serves vtgate's reads and writes.
	shardOf := map[string]string{}
	for name := range v.TabletServerState {
		parts := strings.SplitN(name, ".", 5)
		if len(parts) == 5 && parts[2] == "PRIMARY" {
			shardOf[parts[0]] = parts[3] + "/" + parts[4]
		}
	}
	for name, h := range v.Queries.Histograms {
		tablet, plan, ok := strings.Cut(name, ".")
		key, primary := shardOf[tablet]
		if !ok || !primary {
			continue
		}
		c := s.Shards[key]
		n := h["Count"]
		switch plan {
		case "BEGIN":
			c.Begins += n
		case "COMMIT":
			c.Commits += n
		case "ROLLBACK":
			c.Rollbacks += n
		case "Savepoint":
			c.Savepoints += n
		case "Nextval":
			c.Sequence += n
		}
		s.Shards[key] = c
	}
	for name, h := range v.Transactions.Histograms {
		tablet, _, _ := strings.Cut(name, ".")
		key, primary := shardOf[tablet]
		if !primary {
			continue
		}
		c := s.Shards[key]
		for _, b := range longBuckets {
			c.Long += h[b]
		}
		s.Shards[key] = c
	}
	return s
}

// Sub returns the counts of s that were not yet in before.
func (s Snapshot) Sub(before Snapshot) Snapshot {
	out := Snapshot{Shards: map[string]Counts{}, Transactions: map[string]int64{}}
	for k, c := range s.Shards {
		out.Shards[k] = c.sub(before.Shards[k])
	}
	for k, n := range s.Transactions {
		out.Transactions[k] = n - before.Transactions[k]
	}
	return out
}

// Keyspace returns the counts of keyspace's shards added up.
func (s Snapshot) Keyspace(keyspace string) Counts {
	var sum Counts
	for k, c := range s.Shards {
		if strings.HasPrefix(k, keyspace+"/") {
			sum = sum.add(c)
		}
	}
	return sum
}

// Touched returns, for a snapshot taken by Sub around an operation, the
// shards of keyspace whose counts moved, in order.
func (s Snapshot) Touched(keyspace string) []string {
	var out []string
	for k, c := range s.Shards {
		if name, ok := strings.CutPrefix(k, keyspace+"/"); ok && c != (Counts{}) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// CrossShard returns the transactions that spanned shards
// (TransactionsProcessed "Cross.*"), in all keyspaces.
func (s Snapshot) CrossShard() int64 {
	var n int64
	for k, v := range s.Transactions {
		if strings.HasPrefix(k, "Cross.") {
			n += v
		}
	}
	return n
}

// The counts Snapshot.Counters returns, beside TabletCalls (see package
// counter).
const (
	TabletTrips            = counter.TabletTrips
	TabletCommits          = counter.TabletCommits
	TabletSavepoints       = counter.TabletSavepoints
	SequenceCalls          = counter.SequenceCalls
	LongTransactions       = counter.LongTransactions
	CrossShardTransactions = counter.CrossShardTransactions
)

// ShardTrips names the round trips of one shard among the counters:
// "tablet_trips:keyspace/shard". A shard whose count moved over an
// operation was touched by it.
func ShardTrips(keyspace, shard string) string { return TabletTrips + ":" + keyspace + "/" + shard }

// Counters returns s as the counts of a store (timeline.Counting) that
// lives on keyspaces: the TabletCalls and the other counts above, added
// over keyspaces, and the trips of each of their shards (ShardTrips).
func (s Snapshot) Counters(keyspaces ...string) map[string]int64 {
	var sum Counts
	out := map[string]int64{}
	for _, ks := range keyspaces {
		sum = sum.add(s.Keyspace(ks))
	}
	for k, c := range s.Shards {
		for _, ks := range keyspaces {
			if shard, ok := strings.CutPrefix(k, ks+"/"); ok {
				out[ShardTrips(ks, shard)] = c.Trips()
			}
		}
	}
	out[TabletCalls] = sum.Calls
	out[TabletTrips] = sum.Trips()
	out[TabletCommits] = sum.Commits
	out[TabletSavepoints] = sum.Savepoints
	out[SequenceCalls] = sum.Sequence
	out[LongTransactions] = sum.Long
	out[CrossShardTransactions] = s.CrossShard()
	return out
}

// String shows counts as "calls 3, trips 5 (1 begin, 1 commit, ...)".
func (c Counts) String() string {
	return "calls " + strconv.FormatInt(c.Calls, 10) + ", trips " + strconv.FormatInt(c.Trips(), 10) +
		fmt.Sprintf(" (%d begins, %d commits, %d rollbacks, %d savepoints, %d sequence, %d over 1 s)",
			c.Begins, c.Commits, c.Rollbacks, c.Savepoints, c.Sequence, c.Long)
}
