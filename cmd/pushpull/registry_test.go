package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
)

// TestThrowawayModel registers a model from this test alone (the memory
// store under a new name) and finds it in the command line's model lists
// and measured by the benchmark at a tiny scale: adding a model is one
// registration, with no other edit.
func TestThrowawayModel(t *testing.T) {
	const name, summary = "scratch-memory", "the memory store under another name, registered by a test"
	registry.Register(registry.Model{
		Name: name, Family: registry.FamilyReference, Summary: summary,
		Open:  func(context.Context, registry.Config) (timeline.Store, error) { return timeline.NewMemory(), nil },
		Bench: registry.Bench{Default: true, Phases: registry.AllPhases},
	})
	t.Cleanup(func() { registry.Unregister(name) })

	help := mustRun(t, nil, "--help")
	if !strings.Contains(help, name) || !strings.Contains(strings.Join(strings.Fields(help), " "), summary) {
		t.Fatalf("pushpull --help does not list %s:\n%s", name, help)
	}
	if out := mustRun(t, nil, "bench", "--help"); !strings.Contains(out, name) {
		t.Fatalf("bench --help does not list %s:\n%s", name, out)
	}
	// A model that keeps nothing cannot serve the one-shot commands.
	if r := run(t, map[string]string{dsnEnv: testserver.DSN(t)}, "timeline", "--model", name, "--user", "1"); r.code != 2 || !strings.Contains(r.stderr, "keeps nothing") {
		t.Fatalf("timeline --model %s: %v", name, r)
	}

	r := run(t, nil, "bench", "--models", name, "--dsn", testserver.DSN(t), "--scale", "0.002",
		"--ops", "40", "--warmup", "0s", "--read-ratio", "0.5", "--json", "--out", t.TempDir())
	if r.code != 0 {
		t.Fatalf("bench --models %s: %v", name, r)
	}
	var res results.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bench --json printed no JSON: %v\n%s", err, r.stdout)
	}
	if len(res.Models) != 1 || res.Models[0].Name != name || res.Models[0].Family != registry.FamilyReference {
		t.Fatalf("measured %+v, want %s alone", res.Models, name)
	}
	m := res.Models[0]
	for phase, p := range map[string]*results.Phase{"retrieve": &m.Retrieve, "retrieve-older": &m.RetrieveOlder, "submit": &m.Submit, "mixed": m.Mixed} {
		if p == nil || p.Ops != 40 || p.Errors != 0 {
			t.Fatalf("%s %s: %+v", name, phase, p)
		}
	}
}
