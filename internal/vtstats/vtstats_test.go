package vtstats

import (
	"encoding/json"
	"slices"
	"testing"
)

// sample is a cut of vtcombo's /debug/vars, shaped as v0.24.0 writes it:
// a post of push@vitess on shard -80 of ks, with its sequence value.
const sample = `{
 "VttabletCall": {"Histograms": {
  "Execute.ks.-80.primary": {"500000": 3, "Count": 3, "Time": 1},
  "Execute.ks.80-.primary": {"Count": 2},
  "Execute.other.-80.primary": {"Count": 7},
  "Execute.pushpull_seq.0.primary": {"Count": 1},
  "malformed": {"Count": 9}}},
 "Queries": {"Histograms": {
  "t1.BEGIN": {"Count": 1}, "t1.COMMIT": {"Count": 1}, "t1.Savepoint": {"Count": 1}, "t1.Insert": {"Count": 2},
  "t3.BEGIN": {"Count": 1}, "t3.ROLLBACK": {"Count": 1},
  "t9.Nextval": {"Count": 1},
  "t4.BEGIN": {"Count": 5}}},
 "Transactions": {"Histograms": {
  "t1.commit": {"1000000000": 1, "5000000000": 2, "inf": 1, "Count": 4},
  "t3.rollback": {"500000": 1, "Count": 1}}},
 "TabletServerState": {
  "t1.SERVING.PRIMARY.ks.-80": 1, "t3.SERVING.PRIMARY.ks.80-": 1, "t9.SERVING.PRIMARY.pushpull_seq.0": 1,
  "t4.SERVING.RDONLY.ks.80-": 1},
 "TransactionsProcessed": {"Single.ReadWrite": 3, "Cross.ReadWrite": 2, "Cross.ReadOnly": 1}
}`

func read(t *testing.T, doc string) Snapshot {
	t.Helper()
	var v vars
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	return v.snapshot()
}

func TestSnapshot(t *testing.T) {
	s := read(t, sample)
	want := Counts{Calls: 3, Begins: 1, Commits: 1, Savepoints: 1, Long: 3}
	if got := s.Shards["ks/-80"]; got != want {
		t.Errorf("ks/-80: %v, want %v", got, want)
	}
	// The rdonly tablet's begins are not the shard's.
	if got, want := s.Shards["ks/80-"], (Counts{Calls: 2, Begins: 1, Rollbacks: 1}); got != want {
		t.Errorf("ks/80-: %v, want %v", got, want)
	}
	if got := s.Keyspace("ks"); got.Calls != 5 || got.Trips() != 9 {
		t.Errorf("keyspace ks: %v, want 5 calls, 9 trips", got)
	}
	if got := s.Keyspace("pushpull_seq"); got.Sequence != 1 || got.Calls != 1 {
		t.Errorf("sequence: %v", got)
	}
	if n := s.CrossShard(); n != 3 {
		t.Errorf("cross-shard transactions %d, want 3", n)
	}
	c := s.Counters("ks", "pushpull_seq")
	for k, want := range map[string]int64{
		TabletCalls: 6, TabletTrips: 10, TabletCommits: 1, TabletSavepoints: 1, SequenceCalls: 1,
		LongTransactions: 3, CrossShardTransactions: 3,
		ShardTrips("ks", "-80"): 5, ShardTrips("ks", "80-"): 4, ShardTrips("pushpull_seq", "0"): 1,
	} {
		if c[k] != want {
			t.Errorf("counter %s = %d, want %d (all: %v)", k, c[k], want, c)
		}
	}
	if got := s.Counters(); got[TabletCalls] != 0 {
		t.Errorf("no keyspaces: %v", got)
	}
}

func TestTouched(t *testing.T) {
	before := read(t, sample)
	after := read(t, sample)
	c := after.Shards["ks/80-"]
	c.Calls++
	after.Shards["ks/80-"] = c
	c = after.Shards["pushpull_seq/0"]
	c.Sequence++
	after.Shards["pushpull_seq/0"] = c
	d := after.Sub(before)
	if got := d.Touched("ks"); !slices.Equal(got, []string{"80-"}) {
		t.Errorf("touched %v, want [80-]", got)
	}
	if got := d.Touched("pushpull_seq"); !slices.Equal(got, []string{"0"}) {
		t.Errorf("sequence touched %v", got)
	}
	if d.CrossShard() != 0 {
		t.Errorf("cross-shard transactions moved: %v", d.Transactions)
	}
}
