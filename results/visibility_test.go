package results

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/cost"
)

// withVisibility is withTraffic with a probe's figures on push's traffic
// and a delete study on push.
func withVisibility() *Result {
	r := withTraffic()
	push := r.Model("push")
	push.Traffic.Visibility = &Visibility{EveryMs: 500, FollowersPerProbe: 3, PollMs: 5, TimeoutMs: 5000,
		Total: VisibleBand{Followers: "all", Posts: 20, Pages: 60, Visible: 57, Missing: 3, P50Ms: 0.3, P99Ms: 42, MaxMs: 42},
		Bands: []VisibleBand{
			{Followers: "10-99", Posts: 15, Pages: 45, Visible: 45, P50Ms: 0.3, P99Ms: 1.5, MaxMs: 1.5},
			{Followers: "1,000-9,999", Posts: 5, Pages: 15, Visible: 12, Missing: 3, P50Ms: 30, P99Ms: 42, MaxMs: 42},
		},
		Deletes: 10, GonePages: 29, GoneP50Ms: 0.4, GoneP99Ms: 2, GoneMaxMs: 2, StillShown: 1,
		TrafficDeletes: 40, DeletedChecked: 70, DeletedShown: 0}
	push.Deletes = &Deletes{Phase: Phase{Ops: 500, Seconds: 0.5, OpsPerSec: 1000, P50Ms: 2, P99Ms: 9, MaxMs: 12,
		Cost: cost.Cost{cost.Ops: 500, cost.RowsDeleted: 65.5, cost.RowsWritten: 66}},
		Checked: 600, Celebrity: &CelebrityDelete{Author: 1, Followers: 9999, DeleteMs: 180, SettleMs: 0, GoneMs: 180, Checked: 9999,
			Watched: 20, WatchedGoneMaxMs: 0.9}}
	return r
}

func TestVisibilityTable(t *testing.T) {
	out := table(t, withVisibility())
	t.Log("\n" + out)
	for prefix, want := range map[string][]string{
		"  post-to-visible p50 / p99 / max":                                         {"0.30 / 42.0 / 42.0 ms", Dash},
		"    authors of 10-99 followers":                                            {"0.30 / 1.50 / 1.50 ms"},
		"    authors of 1,000-9,999 followers":                                      {"30.0 / 42.0 / 42.0 ms"},
		"  completeness (pages showing the post)":                                   {"95 % of 60"},
		"  delete-to-gone p50 / p99 / max":                                          {"0.40 / 2.00 / 2.00 ms"},
		"  deleted posts still shown":                                               {"1 of 100"},
		"deletes (own phase)":                                                       {"1,000 deletes/s"},
		"  rows deleted / written per delete":                                       {"65.5 / 66.0"},
		"  still shown after settling":                                              {"0 of 600"},
		"  celebrity delete: followers, gone from 20 watched pages, gone by settle": {"9,999, 0.90 ms, 180 ms"},
	} {
		l := line(t, out, prefix)
		for _, w := range want {
			if !strings.Contains(l, w) {
				t.Errorf("line %q lacks %q", l, w)
			}
		}
	}
	if plain := table(t, withTraffic()); strings.Contains(plain, "visible") || strings.Contains(plain, "delete") {
		t.Errorf("a run without a probe or delete study shows them:\n%s", plain)
	}
	if s := withVisibility().Model("push").Traffic.Visibility.DeletedShownShare(); s != 0.01 {
		t.Errorf("deleted shown share %v, want 1 of 100", s)
	}
}

func TestVisibilityRoundTrip(t *testing.T) {
	r := withVisibility()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Model("push").Traffic.Visibility, r.Model("push").Traffic.Visibility) ||
		!reflect.DeepEqual(back.Model("push").Deletes, r.Model("push").Deletes) {
		t.Fatalf("round trip lost the figures:\n%s", data)
	}
}
