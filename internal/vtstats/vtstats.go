// Package vtstats reads what a vtgate counts about its own work from its
// status pages (/debug/vars): how many calls it made to the tablets of each
// shard, by kind. One call is one statement (or a begin or commit) on one
// shard, so calls per operation is how many shards an operation touched,
// counted with repeats.
package vtstats

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pushpull/pushpull/timeline/counter"
)

// TabletCalls names the count Calls returns: every call vtgate made to a
// tablet of the keyspaces asked about.
const TabletCalls = counter.TabletCalls

// Calls returns the tablet calls vtgate at status (host:port of its status
// pages) has made so far to the shards of keyspaces, waiting at most two
// seconds. (vtcombo, which runs the tablets in vtgate's process, counts a
// transaction's statements and not its begin and commit.)
func Calls(ctx context.Context, status string, keyspaces ...string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+status+"/debug/vars", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read vtgate counters: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read vtgate counters: %s", resp.Status)
	}
	var vars struct {
		VttabletCall struct {
			Histograms map[string]struct{ Count int64 }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil {
		return nil, fmt.Errorf("read vtgate counters: %w", err)
	}
	return sum(vars.VttabletCall.Histograms, keyspaces), nil
}

// sum adds up the histograms named "Operation.keyspace.shard.tablet_type"
// of keyspaces.
func sum(h map[string]struct{ Count int64 }, keyspaces []string) map[string]int64 {
	out := map[string]int64{TabletCalls: 0}
	for name, v := range h {
		parts := strings.Split(name, ".")
		if len(parts) != 4 {
			continue
		}
		for _, ks := range keyspaces {
			if parts[1] != ks {
				continue
			}
			out[TabletCalls] += v.Count
		}
	}
	return out
}
