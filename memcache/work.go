package memcache

import "github.com/pushpull/pushpull/registry"

// work is the variant's cost model (registry.Variant.Work) over its
// base's. Every request to memcached also reads its server's fence (one
// key more, package internal/memcached). Under the invalidate policy a
// newest page is one multi-get of the reader's generation and page: 3
// keys got. A miss reads the base's page and stores it (a set, 2 keys, one
// round trip more); a reader's first read since the cache was empty finds
// no generation and adds one first (2 keys, one round trip more). Under
// the ttl policy a page is one get of the page (2 keys) and a miss stores
// it (2 keys).
//
// The page a read finds was stored by the reader's previous newest read
// (older pages pass through, registry.Demand.NewestRate). Under
// invalidate it is current unless one of the reader's followees posted
// since, or it is older than its ttl: with newest reads at rate r and the
// followees' posts at rate q (PostRate over the followees), a read hits
// with probability r/(r+q)·Since(r+q, ttl), which in the steady state is
// r/(r+q)·(1-exp(-(r+q)·ttl)); under ttl, Since(r, ttl)
// (registry.Demand.Since). In a counted run's phase whose cache began
// empty (registry.Demand.Cold) a read finds no page when it is its
// reader's first since, which Since counts, and then also adds the
// reader's generation (registry.Demand.FirstReads). A reader's own follows
// and unfollows, which bump the generation too, are left out: a user
// follows far less often than the user's followees post. The share of
// newest pages that miss, and what a miss adds (the base's page and the
// set), are OpWork.NewestMiss and NewestMissWork, which a plan queues
// apart from the hits.
//
// Under invalidate a post also reads its author's followers and bumps
// each one's generation (f incrs and the fence, one round trip), and a
// follow or unfollow bumps the follower's (2 keys). Older pages are the
// base's.
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
	var first float64
	miss := d.MeanOverReads(func(c registry.UserClass) float64 {
		r := d.NewestRate(c)
		if r <= 0 {
			return 1
		}
		if !invalidate {
			return 1 - d.Since(r, t)
		}
		q := c.Followees * perFollowee
		return 1 - r/(r+q)*d.Since(r+q, t)
	})
	store := registry.Work{MCKeys: 2, CacheCalls: 1} // a set and the fence
	read := registry.Work{MCKeys: 2, CacheCalls: 1}  // the page and the fence
	if invalidate {
		read.MCKeys = 3 // and the generation
		first = d.FirstReads()
	}
	w.NewestMiss, w.NewestMissWork = miss, w.Newest.Add(store)
	w.Newest = read.Add(w.NewestMissWork.Scale(miss)).Add(store.Scale(first))
	if invalidate {
		a := d.PostAudience()
		w.Post = w.Post.Add(registry.Work{RowsRead: a, MCKeys: 1 + a, Statements: 1, CacheCalls: 1})
		bump := registry.Work{MCKeys: 2, CacheCalls: 1}
		w.Follow, w.Unfollow = w.Follow.Add(bump), w.Unfollow.Add(bump)
	}
	readers := d.Readers()
	f.CacheKeys += 2 * readers
	f.CacheIDs += readers * float64(d.Page) * 20 // a cached page holds its messages: about 160 bytes, 20 ids' worth, each
	return w, f
}
