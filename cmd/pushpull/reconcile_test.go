package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/reconcile"
)

// TestReconcileCommand: a clean database checks clean; a mailbox row
// deleted behind the store's back is found (exit 3, in the table and the
// JSON report, which says the rate limit kept: reconcile.DefaultRate on
// MariaDB unless --rate says otherwise), repaired, and gone; a state file of a stopped run is
// resumed after its last user.
func TestReconcileCommand(t *testing.T) {
	env := map[string]string{"PUSHPULL_DSN": testserver.DSN(t)}
	database := testserver.Database(t)
	push := func(args ...string) []string {
		return append([]string{args[0], "--model", "push", "--database", database}, args[1:]...)
	}
	for _, f := range [][2]string{{"1", "2"}, {"3", "2"}, {"4", "1"}} {
		mustRun(t, env, push("follow", f[0], f[1])...)
	}
	mustRun(t, env, push("post", "--author", "2", "hello")...)
	mustRun(t, env, push("post", "--author", "1", "again")...)

	if out := mustRun(t, env, push("reconcile")...); !strings.Contains(out, "no drift") || !strings.Contains(out, "complete; 3 users") {
		t.Fatalf("clean check:\n%s", out)
	}
	admin := testserver.Admin(t)
	if _, err := admin.Exec(`DELETE FROM ` + database + `.mailbox WHERE user_id = 3`); err != nil {
		t.Fatal(err)
	}
	r := run(t, env, push("reconcile")...)
	if r.code != exitDrift || !strings.Contains(r.stdout, "missing") || !strings.Contains(r.stderr, "1 drift items left") {
		t.Fatalf("check of the corrupted mailbox: %s", r)
	}
	r = run(t, env, push("reconcile", "--json", "-")...)
	var rep reconcile.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json -: %v\n%s", err, r)
	}
	if len(rep.Drift) != 1 || rep.Drift[0].Kind != reconcile.Missing || rep.Drift[0].User != 3 || rep.Model != "push" {
		t.Fatalf("JSON report: %+v", rep)
	}
	// The rate limit: the default on MariaDB, or what --rate says (0:
	// none).
	if rep.Rate != reconcile.DefaultRate {
		t.Errorf("the report of a run without --rate kept to %v rows/s, want %d", rep.Rate, reconcile.DefaultRate)
	}
	for _, want := range []float64{reconcile.DefaultVitessRate, 0} {
		r := run(t, env, push("reconcile", "--json", "-", "--rate", strconv.FormatFloat(want, 'f', -1, 64))...)
		var rep reconcile.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Rate != want {
			t.Errorf("--rate %v: the report kept to %v rows/s (%v)\n%s", want, rep.Rate, err, r)
		}
	}

	state := filepath.Join(t.TempDir(), "state.json")
	if out := mustRun(t, env, push("reconcile", "--repair", "--state", state)...); !strings.Contains(out, "1 entries repaired") {
		t.Fatalf("repair:\n%s", out)
	}
	var saved reconcile.Report
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &saved); err != nil || !saved.Complete || saved.Repaired != 1 {
		t.Fatalf("state after the repair: %v %+v", err, saved)
	}
	mustRun(t, env, push("reconcile")...)

	// A run stopped after user 2 (of followers 1, 3 and 4, having
	// walked one), resumed: users 3 and 4 are left.
	stopped := reconcile.Report{Model: "push", Batch: 1, Users: 1, Rows: 7, Last: 2}
	if err := writeJSONFile(state, stopped); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, env, push("reconcile", "--state", state, "--batch", "1")...)
	if !strings.Contains(out, "complete; 3 users") {
		t.Fatalf("resumed run:\n%s", out)
	}

	// Bad inputs write nothing and exit 2.
	for _, args := range [][]string{
		{"reconcile", "--model", "pull-sp", "--database", database},
		push("reconcile", "--rate", "-1"),
		push("reconcile", "--batch", "0"),
		push("reconcile", "--timeout", "0s"),
		push("reconcile", "--timeout", "-1s"),
	} {
		if r := run(t, env, args...); r.code != exitUsage {
			t.Errorf("%v: %s", args, r)
		}
	}
	if err := writeJSONFile(state, stopped); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		push("reconcile", "--state", state, "--repair"),
		{"reconcile", "--model", "push-capped", "--state", state},
	} {
		if r := run(t, env, args...); r.code != exitUsage {
			t.Errorf("%v with a check's state of push: %s", args, r)
		}
	}
}
