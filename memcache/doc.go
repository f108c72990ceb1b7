// Package memcache puts memcached in front of any timeline.Store.
//
// New wraps a store. The newest page of a home timeline at the default size
// (a Query with no cursor and Limit 0 or timeline.DefaultLimit), which is
// what almost every read asks for, is served from memcached when a current
// copy is there; every other page, and every read memcached cannot serve,
// goes to the wrapped store untouched. Writes go to the wrapped store first.
// Close closes the wrapped store too.
//
// # Keys and values
//
// Keys are "pushpull:<Namespace>:page:<user>" (the cached page) and, under
// the invalidate policy, "pushpull:<Namespace>:gen:<user>" (the user's
// generation, a decimal number so that memcached's incr works on it). The
// namespace is printable ASCII without spaces, at most 200 bytes, so keys
// stay within memcached's 250. Nothing ever lists or scans keys.
//
// A page value is a compact binary encoding (see codec.go): a version byte,
// the generation it was filled under, the time its read of the store began,
// the Next cursor, then per message the id (delta from the previous),
// author, creation time (delta, nanoseconds) and body, all varints. The page
// is stored exactly as the wrapped store returned it, cursor included:
// cursors are bound to the user and the store's key, not to the page, so
// the cached cursor continues the walk like the original. Decoding validates
// everything (lengths, ids strictly decreasing and positive, authors
// positive, bodies non-empty valid UTF-8, no trailing bytes); a corrupt
// value is counted as an error and treated as a miss, and the refill
// overwrites it. A default page is about 2.5 KB; the largest page the codec
// takes, 200 messages of 280 four-byte characters, is about 225 KB, well
// under memcached's 1 MB item limit.
//
// Whole pages or ids only? Measured (go test -bench . ./cache/, 2-vCPU VM,
// MariaDB and memcached on the same host, 20-message pages with the
// benchmark data set's body lengths):
//
//	value format       size     encode    decode
//	whole page         2520 B   451 ns    3.2 µs
//	ids only             84 B    48 ns    274 ns
//	JSON (reference)   3910 B   12.1 µs   30.9 µs
//
//	first-page read, reader following 43 users      push      pull-sp
//	the store alone                                 130 µs    816 µs
//	whole-page hit, ttl policy (one Get)             56 µs     46 µs
//	whole-page hit, invalidate policy (one GetMulti) 71 µs     70 µs
//	ids-only hit + SELECT ... WHERE id IN (...)     195 µs    292 µs
//
// An ids-only value is 30 times smaller, but every hit then needs a database
// round trip for the bodies, which costs more than the push model's whole
// read: an ids-only cache would make push slower, not faster. The cache
// stores whole pages. Memory is the price: about 2.5 KB per cached user, so
// 25 MB for the paper's 10,000 users.
//
// # Policy ttl
//
// A cached page is served for at most Options.TTL after the read of the
// store that produced it began; writes do not touch the cache (the paper's
// suggestion). Each value records when its read began, and a hit requires
// (start of this read) − (start of the filling read) ≤ TTL on the
// decorator's clock. So a read that begins TTL or more after a Post
// returned includes the post: any page without it came from a read that
// began before the post returned, and has expired by then. The bound is
// exact to the clock, not to memcached's 1-second expiration granularity;
// the memcached expiration (TTL rounded up to seconds, plus one) only frees
// the memory. Processes sharing a namespace must have synchronised clocks.
// Follows and unfollows are stale for up to the TTL in the same way.
//
// # Policy invalidate
//
// Guarantee: once Post returns, no read that begins afterwards is served a
// cached first page that lacks the message; likewise Follow and Unfollow
// show their effect at once on the follower's first page.
//
// Each user has a generation number in memcached. A page value carries the
// generation it was filled under, and a page is current only while that is
// still the user's generation:
//
//   - Read: one multi-get of the user's generation and page, one round
//     trip to one server (both keys are placed by the user id). Hit if the page's generation equals the one read. On
//     a miss, read the wrapped store and Set the page tagged with the
//     generation read before the store read began. A miss costs one more
//     round trip (the Set), plus an Add (and at worst a Get) the first time
//     a user's generation is created: O(1) round trips either way.
//   - Write: after the wrapped store's Post returns, incr the generation of
//     every follower of the author (Options.Followers lists them; the
//     wrapped Store interface cannot); after Follow or Unfollow, incr the
//     follower's. Only then does the write return.
//
// Why that is enough. Let P be a post whose Post returned; its bumps
// happened before that. A read R that begins afterwards reads generation g
// from memcached, and g is P's bump's result or later (incr only moves a
// live key forward). R hits only a page tagged g, and a page is tagged g
// only by a reader that read g before its store read began, so after P's
// bump, so after P committed: that store read includes P. The classic race
// (a reader reads generation 5, misses, reads the store before P commits;
// P commits and bumps to 6; the reader then writes its page) is harmless:
// the page is tagged 5 and nobody looks for 5 any more. When two fills race
// for the one page key the last Set wins, which can replace a newer page
// with an older one; that costs a miss, never a stale hit. Concurrent misses
// are coalesced with singleflight keyed by user and generation, so a caller
// only shares a store read begun by a caller that saw the same generation.
// The follower list is read after the post committed; a follow that commits
// concurrently bumps its follower itself after it commits, so nobody is
// missed either way.
//
// A missing generation (never created, evicted, memcached restarted) makes
// every read of that user miss until a reader creates a new one with Add.
// The new value is random (62 bits), not a count restarted from 0 or 1:
// that would make a surviving page filled under an evicted generation
// current again, whereas a random value equals the one tag an old page can
// carry with probability 2^-62. A writer whose incr finds no generation has
// nothing to do.
//
// Storing the generation inside the page value, rather than putting it in
// the page's key, makes a read one round trip instead of two (versioned
// keys need the generation before they can name the page) and keeps one
// page per user in memcached instead of leaving outdated versions to age
// out.
//
// Cost: one memcached incr per follower per post, pipelined (one round
// trip per server for up to 512 followers), plus the follower lookup (for
// the SQL stores one range scan of the follows index, their
// FollowerLister). That is the push model's fan-out again, in memcached; a single global generation
// would cost one incr per post but make every cached page stale on every
// post, and per-followee generations would make a read cost one lookup per
// followee.
//
// The invalidation runs even if the caller's context is canceled (the
// write has committed), and even when the wrapped write returned an error
// other than invalid input (a commit may have happened without its
// acknowledgement). It is bounded all the same: it has until the caller's
// deadline, or Options.Timeout if that is later. What it cannot finish by
// then (the database is frozen and the followers cannot be looked up, say)
// it makes up for by replacing every server's fence (package
// internal/memcached), within one more Timeout: all cached pages of the
// namespace then miss once, which is the price of keeping both promises, a
// write back by its deadline plus at most two Timeouts, and no stale page
// (Stats.Flushes counts these). A post whose wrapped write failed and that
// commits later still, after its invalidation ran (a frozen database
// resumed with the INSERT in its socket), was never acknowledged; its
// followers see it on their cached pages within the TTL at the latest.
//
// # When memcached misbehaves
//
// A read never fails because of the cache. Every memcached error (refused,
// timed out, a SERVER_ERROR answer, a corrupt value) is counted in
// Stats.Errors and the read goes to the wrapped store; a read whose
// generation could not be read does not fill. memcached gets at most half
// of what the read's context has left (and at most Options.Timeout), so
// the wrapped store gets the rest. Writes never fail because of the cache
// either.
//
// With several servers, a key lives on the server the hash of its key
// names, and stays there when that server fails: its reads go to the
// wrapped store, and calls for its keys fail at once, without traffic, for
// a second after each failure, so a dead server costs nothing and a frozen
// one a timeout a second. New opens as long as one server answers
// (DownServers, Stats.ServersDown report the others). DownServers is
// current even while the store is idle: the client checks every server
// that no call went to lately once a second, so a server that dies is
// named within about a second, and one that comes back is dropped (and
// fenced anew, see below) within about as long.
//
// What a failed server held may come back with it (it was frozen, or cut
// off), without the generation bumps it missed. Every key is therefore
// stored under its server's fence, and a process that saw a server fail
// replaces that server's fence before it sends it anything else, which
// makes everything stored there before unreachable for every process (see
// package internal/memcached for what this cannot cover). A bump that
// failed for another reason (it ran out of time on a server that was
// merely slow, or memcached refused it) is backed by a delete of the page,
// and when that fails too, by replacing the fences. If even that fails, a
// page can be stale for at most the TTL (DefaultInvalidateTTL, a minute,
// unless set): under the invalidate policy the TTL is the bound on
// staleness when invalidation fails, not part of normal operation. A
// generation value that is not a number is deleted by the next reader.
// Every process sharing a namespace must list the same servers in the same
// order, or keys would be looked for on different servers.
//
// New validates the options and asks every server for its fence, within
// the context it is given: an empty server list or an address that is not
// host:port (numeric port) or a socket path is a plain error; a list none
// of whose servers can be reached, or answers within the timeout, gives an
// error matching timeline.ErrUnavailable that names them; a context that
// ends first gives its own error.
package memcache
