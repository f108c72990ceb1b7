package registry

import (
	"context"

	"github.com/pushpull/pushpull/timeline"
)

// The in-memory reference store is always registered: every other model is
// checked against it.
func init() {
	Register(Model{
		Name:    timeline.MemoryModel,
		Family:  FamilyReference,
		Summary: "the in-memory reference store (forgets everything when the process exits)",
		Open: func(context.Context, Config) (timeline.Store, error) {
			return timeline.NewMemory(), nil
		},
		Bench: Bench{Phases: AllPhases},
	})
}
