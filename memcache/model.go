package memcache

import (
	"context"
	"fmt"
	"time"

	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// Variant is the name of the memcache variant in package registry:
// "push+memcache" is the push model with its newest pages in memcached.
const Variant = "memcache"

// Options of the memcache variant (registry.Variant.Options).
const (
	// OptionPolicy is the Policy, PolicyInvalidate by default.
	OptionPolicy = "policy"
	// OptionTTL is the TTL as a Go duration ("1s"); 0s, the default,
	// means the policy's default.
	OptionTTL = "ttl"
)

// options are the variant's registry options.
var options = []registry.Option{
	registry.Choice(OptionPolicy, string(PolicyInvalidate), []string{string(PolicyInvalidate), string(PolicyTTL)},
		"how cached pages stay fresh: invalidated by every write, or served until their ttl"),
	registry.Duration(OptionTTL, 0, time.Millisecond, MaxTTL, "how long a cached page may be served after the read that filled it began").
		OrZero(fmt.Sprintf("the policy's: %s under ttl, %s under invalidate", registry.FormatDuration(DefaultTTL), registry.FormatDuration(DefaultInvalidateTTL))),
}

func init() {
	registry.RegisterVariant(registry.Variant{
		Name:  Variant,
		Needs: registry.Memcached,
		// Under the invalidate policy (the default) a write that bypasses
		// the cache would leave its pages stale: it records the pages hook.
		Traits: registry.WriteHooks,
		// The keys carry the database's identity, and invalidation
		// needs the wrapped store's followers: models on a database.
		// ... and that apply their writes before they return: no
		// invalidation keeps a page current across a fan-out that
		// lands later (ErrApplyLater).
		Accepts: func(base registry.Model) bool { return base.Persistent() && !base.Traits.Has(registry.Async) },
		Summary: "memcached in front of the newest page, kept current by invalidation on every write",
		Options: options,
		Describe: func(base registry.Model) string {
			return base.Name + " with its newest pages in memcached, invalidated on every write"
		},
		Note: func(base registry.Model) string {
			return fmt.Sprintf("older pages pass through to %s uncached; not measured again", base.Name)
		},
		Wrap:      wrap,
		Work:      work,
		Reconcile: Checker,
		Bench: registry.Bench{
			Phases:         []registry.Phase{registry.PhaseNewest, registry.PhaseCacheMixed},
			WarmReads:      true,
			OwnSubmission:  true,
			SubmissionNote: "its posts also bump the generation of each of the author's followers in memcached",
		},
	})
}

// wrap puts the decorator in front of inner, a store of base. Its keys
// carry base's name, cfg.Namespace and a digest of the database's identity,
// so that a re-created database never sees its predecessor's pages.
func wrap(ctx context.Context, base registry.Model, inner timeline.Store, cfg registry.Config) (timeline.Store, error) {
	name := base.Name + "+" + Variant
	fail := func(err error) (timeline.Store, error) {
		inner.Close()
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	holder, ok := timeline.As[timeline.DBHolder](inner)
	if !ok {
		return fail(fmt.Errorf("%s has no database to key the cache by", base.Name))
	}
	id, err := schema.Identity(ctx, holder.DB(), "pushpull cache")
	if err != nil {
		return fail(err)
	}
	s, err := New(ctx, inner, Options{
		Servers:      cfg.Memcache,
		Namespace:    cfg.Namespace + name + ":" + id,
		Policy:       Policy(cfg.Choice(OptionPolicy)),
		TTL:          cfg.Duration(OptionTTL),
		MaxIdleConns: max(cfg.MaxConns, 8),
	})
	if err != nil {
		return fail(err)
	}
	return s, nil
}
