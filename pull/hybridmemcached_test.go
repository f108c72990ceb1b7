package pull_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// hybridMemcachedConfig is the Config of a hybrid-memcached store on a
// database of its own, with the test memcached and a namespace no other
// store in this run uses.
func hybridMemcachedConfig(t testing.TB) pull.Config {
	return pull.Config{
		DSN: testserver.DSN(t), Database: testserver.Database(t),
		Memcache:  []string{testserver.Memcache(t)},
		Namespace: fmt.Sprintf("hm%d/", namespaces.Add(1)),
	}
}

// openHybridMemcached opens hybrid-memcached at threshold (0: the
// default) on a database and namespace of its own.
func openHybridMemcached(t testing.TB, threshold int) timeline.Store {
	t.Helper()
	s, err := pull.OpenHybridMemcached(context.Background(), hybridMemcachedConfig(t), recent.Home{Threshold: threshold})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestHybridMemcachedConformance runs the suite at the default threshold, where nobody
// is pulled, and at a threshold of 1, where every author who has a
// follower when the store first reads the celebrities is.
func TestHybridMemcachedConformance(t *testing.T) {
	timelinetest.RunConfigs(t, []timelinetest.Config{
		{Name: "threshold 1000", Open: func(t *testing.T) timeline.Store { return openHybridMemcached(t, 0) }},
		{Name: "threshold 1", Open: func(t *testing.T) timeline.Store { return openHybridMemcached(t, 1) }},
	})
}

// TestHybridMemcachedFromRegistry: the registry opens the model with its option, and
// refuses a bad threshold with an error that names it.
func TestHybridMemcachedFromRegistry(t *testing.T) {
	m, err := registry.Lookup(pull.HybridMemcachedModelName)
	if err != nil {
		t.Fatal(err)
	}
	if m.Family != registry.FamilyHybrid || m.Needs&registry.Memcached == 0 {
		t.Fatalf("model %+v", m)
	}
	open := func(threshold string) (timeline.Store, error) {
		c := hybridMemcachedConfig(t)
		return m.Open(context.Background(), registry.Config{
			DSN: c.DSN, Database: c.Database, Memcache: c.Memcache, Namespace: c.Namespace,
			Options: map[string]string{pull.OptionThreshold: threshold},
		})
	}
	s, err := open("5")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	timelinetest.Follow(t, s, 1, 2)
	m1 := timelinetest.Post(t, s, 2, "hello")
	if got := timelinetest.Newest(t, s, 1); len(got.Messages) != 1 || got.Messages[0].ID != m1.ID {
		t.Fatalf("newest page %+v", got)
	}
	for _, bad := range []string{"0", "-3", "many"} {
		if s, err := open(bad); !errors.Is(err, registry.ErrBadOption) || !strings.Contains(err.Error(), "threshold") {
			if s != nil {
				s.Close()
			}
			t.Errorf("threshold %q: %v", bad, err)
		}
	}
}
