package memcache

import (
	"math"

	"github.com/pushpull/pushpull/registry"
)

// work is the variant's cost model (registry.Variant.Work) over its
// base's. A newest page is 3 keys got (the page and the generations it
// was cached under); a miss reads the base's page and stores it (a key
// set). Under the invalidate policy a page is missed when its reader's
// previous read is older than its ttl or when one of the reader's
// followees posted since: with reads at rate r and the followees' posts
// at rate q (registry.Demand.ReadRate, PostRate over the followees), a
// read hits with probability r/(r+q)·(1-exp(-(r+q)·ttl)); under the ttl
// policy, 1-exp(-r·ttl). Under invalidate a post also reads its
// author's followers and bumps each one's generation (f+1 keys), and a
// follow or unfollow bumps the follower's. Older pages are the base's.
func work(_ registry.Model, w registry.OpWork, f registry.Footprint, d registry.Demand, cfg registry.Config) (registry.OpWork, registry.Footprint) {
	invalidate := Policy(cfg.Choice(OptionPolicy)) == PolicyInvalidate
	ttl := cfg.Duration(OptionTTL)
	if ttl == 0 {
		ttl = DefaultTTL
		if invalidate {
			ttl = DefaultInvalidateTTL
		}
	}
	t := ttl.Seconds()
	// q is the posts per second of a reader's followees together, per
	// followee drawn by followers.
	perFollowee := d.MeanOverFollowees(d.PostRate)
	hit := d.MeanOverReads(func(c registry.UserClass) float64 {
		r := d.ReadRate(c)
		if r <= 0 {
			return 0
		}
		if !invalidate {
			return 1 - math.Exp(-r*t)
		}
		q := c.Followees * perFollowee
		return r / (r + q) * (1 - math.Exp(-(r+q)*t))
	})
	w.Newest = registry.Work{MCKeys: 3, CacheCalls: 1}.Add(w.Newest.Add(registry.Work{MCKeys: 1, CacheCalls: 1}).Scale(1 - hit))
	if invalidate {
		a := d.PostAudience()
		w.Post = w.Post.Add(registry.Work{RowsRead: a, MCKeys: 1 + a, Statements: 1, CacheCalls: 1})
		bump := registry.Work{MCKeys: 1, CacheCalls: 1}
		w.Follow, w.Unfollow = w.Follow.Add(bump), w.Unfollow.Add(bump)
	}
	readers := d.Readers()
	f.CacheKeys += 2 * readers
	f.CacheIDs += readers * float64(d.Page) * 20 // a cached page holds its messages: about 160 bytes, 20 ids' worth, each
	return w, f
}
