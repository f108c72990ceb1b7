package all_test

import (
	"context"
	"testing"

	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// TestTraits opens every model on a database of its own and checks each
// trait its registration declares, and each it does not, against what the
// store is, through any wrapper (timeline.As): a Settler (asynchronous
// writes), a PartialMailbox with a shape that is not push's whole
// mailbox, and the write hooks its database records once it is open.
func TestTraits(t *testing.T) {
	ctx := context.Background()
	seen := registry.Traits(0)
	for _, m := range registry.Listed() {
		t.Run(m.Name, func(t *testing.T) { // a keyspace each, given back at its end
			s, err := m.Open(ctx, config(t, m, fresh(t, m)))
			if err != nil {
				t.Fatalf("open %s: %v", m.Name, err)
			}
			defer s.Close()
			var is registry.Traits
			if _, ok := timeline.As[timeline.Settler](s); ok {
				is |= registry.Async
			}
			if pm, ok := timeline.As[registry.PartialMailbox](s); ok && !pm.MailboxShape().Whole() {
				is |= registry.Partial
			}
			if h, ok := timeline.As[timeline.DBHolder](s); ok {
				hooks, err := pull.RecordedHooks(ctx, h.DB())
				if err != nil {
					t.Fatalf("%s: %v", m.Name, err)
				}
				if hooks != 0 {
					is |= registry.WriteHooks
				}
			}
			if is != m.Traits {
				t.Errorf("%s declares %s; its store is %s", m.Name, m.Traits, is)
			}
			seen |= is
		})
	}
	if all := registry.Async | registry.Partial | registry.WriteHooks; seen != all {
		t.Errorf("the models have the traits %s, not each of %s: the test checked too little", seen, all)
	}
}
