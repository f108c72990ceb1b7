package redis

import "github.com/pushpull/pushpull/internal/redisx"

// The feeds' scripts. Each runs atomically in Redis, so a feed is never
// seen half-changed, and under the store's redisx.Fence: KEYS[1] is the
// epoch's key and ARGV[1] the epoch, which every script checks first, so
// that a process that missed a fence learns the new epoch before it
// touches a feed.
//
// A feed is a Redis list: its ids, newest first, each once, then its
// sentinel, the string S .. ":" .. n (as redisx.ReadLists reads it),
// where n is the floor (>= 0) of a complete feed, which holds every id of
// the timeline above it, or minus the token (< 0) of the rebuild under
// way.
// A feed whose last element is not the sentinel of the current epoch is
// missing. A list, unlike a sorted set kept compact, takes a new newest
// id at its head in constant time: a post's fan-out reads a feed's head
// and pushes the id before it, and only an id older than the head (a
// post that reached Redis after a newer one) is put in its place by a
// scan from the head.

// helpers are the Lua functions the scripts share.
const helpers = `
-- state returns the sentinel's number of the feed key, and its text
-- after the colon, when the feed's last element is the current epoch's
-- sentinel; else nil.
local function state(key)
	local t = redis.call('LINDEX', key, -1)
	if not t or string.sub(t, 1, #S + 1) ~= S .. ':' then return nil end
	local raw = string.sub(t, #S + 2)
	return tonumber(raw), raw
end
-- push adds ids (decimal strings, newest first) to the tail of key.
local function push(key, ids)
	for i = 1, #ids, 1000 do
		redis.call('RPUSH', key, unpack(ids, i, math.min(i + 999, #ids)))
	end
end
-- rewrite replaces the feed key by ids (newest first) and the sentinel of
-- n (text), keeping its time to live.
local function rewrite(key, ids, n)
	local ttl = redis.call('PTTL', key)
	redis.call('DEL', key)
	push(key, ids)
	redis.call('RPUSH', key, S .. ':' .. n)
	if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
end
-- merge returns the ids of a and of b from its index j on (decimal
-- strings, newest first; what is not a number is skipped) above floor,
-- newest first, each once.
local function merge(a, b, j, floor)
	local out, i = {}, 1
	local last
	while true do
		local x, y = tonumber(a[i]), tonumber(b[j])
		if a[i] and not x then i = i + 1
		elseif b[j] and not y then j = j + 1
		else
			local v, s
			if x and (not y or x >= y) then
				v, s, i = x, a[i], i + 1
				if v == y then j = j + 1 end
			elseif y then
				v, s, j = y, b[j], j + 1
			else
				return out
			end
			if v <= floor then return out end
			if v ~= last then
				out[#out + 1] = s
				last = v
			end
		end
	end
end
-- trim keeps the newest cap ids of a complete feed and raises its floor to
-- the newest id it removed; a feed of another epoch, which no reader
-- takes, it deletes.
local function trim(key, cap)
	local n = state(key)
	if not n then
		redis.call('DEL', key)
		return
	end
	if n < 0 or redis.call('LLEN', key) - 1 <= cap then return end
	local top = redis.call('LINDEX', key, cap)
	redis.call('LTRIM', key, 0, cap - 1)
	redis.call('RPUSH', key, S .. ':' .. top)
end
-- insert puts id (a decimal string; num its value) in its place in the
-- feed key, unless the feed is missing, holds it already, or is complete
-- with a floor at or above it; it returns the feed's new length, or 0.
local function insert(key, id, num)
	local n = state(key)
	if not n or (n >= 0 and num <= n) then return 0 end
	local from = 0
	while true do
		local part = redis.call('LRANGE', key, from, from + 63)
		for _, v in ipairs(part) do
			local x = tonumber(v)
			if x == num then return 0 end
			if not x or x < num then -- an older id, or the sentinel
				return redis.call('LINSERT', key, 'BEFORE', v, id)
			end
		end
		from = from + 64
	end
end
-- below returns the index of the first id of the feed key older than
-- before, or the sentinel's when it holds none: a binary search, after a
-- look at the first 64 elements for the id before itself (a page's
-- cursor is its last id).
local function below(key, before, beforeText)
	local at = redis.call('LPOS', key, beforeText, 'MAXLEN', 64)
	if at then return at + 1 end
	local lo, hi = 0, redis.call('LLEN', key) - 1
	while lo < hi do
		local mid = math.floor((lo + hi) / 2)
		if tonumber(redis.call('LINDEX', key, mid)) < before then hi = mid else lo = mid + 1 end
	end
	return lo
end
`

// fanOut adds a post to the complete or building feeds among KEYS[2..]
// whose follower has not unfollowed its author lately (the author's
// unfollow tombstones, a hash of followers, are looked at only when
// there are any), unless the post was deleted. ARGV: epoch, id, cap, trim
// limit, the author's unfollow tombstones, the post's delete tombstone,
// then the followers of KEYS[2..] in order. It returns how many feeds it
// added to.
//
// An id newer than a feed's head is pushed before it with no look at the
// sentinel: the head is newer than the floor, and a feed of another epoch
// that takes it is one no reader takes (the trim deletes it). The rest go
// through insert, which checks the sentinel.
var fanOut = redisx.FencedScript(helpers, `
if redis.call('EXISTS', ARGV[6]) == 1 then return 0 end
local unfollowed = redis.call('EXISTS', ARGV[5]) == 1
local id = ARGV[2]
local num = tonumber(id)
local cap, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local n = 0
for i = 2, #KEYS do
	local head = redis.call('LINDEX', KEYS[i], 0)
	if head and not (unfollowed and redis.call('HEXISTS', ARGV[5], ARGV[5 + i]) == 1) then
		local h, len = tonumber(head), 0
		if h and num > h then
			len = redis.call('LPUSH', KEYS[i], id)
		else
			len = insert(KEYS[i], id, num)
		end
		if len > 0 then
			n = n + 1
			if len > limit + 1 then trim(KEYS[i], cap) end
		end
	end
end
return n
`)

// readFeed reads a page of the feed KEYS[2] and marks its reader active
// (the feed lives ARGV[4] seconds more). ARGV: epoch, the page's upper
// bound ("" for none, else an id: the page holds older ids), how many
// ids, the TTL. It returns {"-"} for a missing feed, else the floor and
// then the ids above it, newest first.
var readFeed = redisx.FencedScript(helpers, `
local n, raw = state(KEYS[2])
if not n or n < 0 then return {'-'} end
redis.call('EXPIRE', KEYS[2], ARGV[4])
local from = 0
if ARGV[2] ~= '' then
	local before = tonumber(ARGV[2])
	if before <= n + 1 then return {raw} end
	from = below(KEYS[2], before, ARGV[2])
end
local ids = redis.call('LRANGE', KEYS[2], from, from + tonumber(ARGV[3]) - 1)
if #ids > 0 and not tonumber(ids[#ids]) then ids[#ids] = nil end
table.insert(ids, 1, raw)
return ids
`)

// beginRebuild starts building the feed KEYS[2] under token ARGV[2]
// (with the TTL ARGV[3]), unless it is complete already: it returns 1 when
// it started, 0 when the feed is complete.
var beginRebuild = redisx.FencedScript(helpers, `
local n = state(KEYS[2])
if n and n >= 0 then return 0 end
redis.call('DEL', KEYS[2])
redis.call('RPUSH', KEYS[2], S .. ':-' .. ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
`)

// completeRebuild ends the rebuild of token ARGV[2] of the feed KEYS[2]
// with the ids ARGV[5..] (newest first) read from the database and the
// floor ARGV[3], unless another rebuild, a delete or an unfollow took the
// feed over meanwhile; ids that posts and follows added while it was
// building stay, those at or below the floor go. ARGV[4] is the cap. It
// returns 1 when the feed is complete. The feed is written whole, once:
// its cost grows with the ids, not with their square (the ids go in as
// they are when nothing came in meanwhile, else merged with what did).
var completeRebuild = redisx.FencedScript(helpers, `
local _, raw = state(KEYS[2])
if raw ~= '-' .. ARGV[2] then return 0 end
if redis.call('LLEN', KEYS[2]) == 1 then
	-- Nothing came in while it was building (the usual case): the ids,
	-- all above the floor, go in as they are, after the sentinel, which
	-- goes to the tail with the floor.
	if #ARGV >= 5 then
		for i = 5, #ARGV, 1000 do
			redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 999, #ARGV)))
		end
		redis.call('LPOP', KEYS[2])
		redis.call('RPUSH', KEYS[2], S .. ':' .. ARGV[3])
	else
		redis.call('LSET', KEYS[2], -1, S .. ':' .. ARGV[3])
	end
else
	local built = redis.call('LRANGE', KEYS[2], 0, -2)
	rewrite(KEYS[2], merge(built, ARGV, 5, tonumber(ARGV[3])), ARGV[3])
end
trim(KEYS[2], tonumber(ARGV[4]))
return 1
`)

// follow adds a new followee's newest ids ARGV[6..] (newest first) to the
// feed KEYS[2], those above its floor, but deleted ones (tombstones
// ARGV[4] .. id). When the followee may have older ids than those
// (ARGV[5] is the lowest given less one, else "0"), the floor rises to
// ARGV[5], so that the feed still holds every id of the timeline above
// its floor. A feed being built is deleted: its rebuild may have read the
// timeline before the follow. ARGV: epoch, cap, trim limit, the delete
// tombstones' prefix, the floor, ids.
var follow = redisx.FencedScript(helpers, `
local n, raw = state(KEYS[2])
if not n then return 0 end
if n < 0 then
	redis.call('DEL', KEYS[2])
	return 0
end
if tonumber(ARGV[5]) > n then
	n, raw = tonumber(ARGV[5]), ARGV[5]
end
local add = {}
for i = 6, #ARGV do
	if tonumber(ARGV[i]) > n and redis.call('EXISTS', ARGV[4] .. ARGV[i]) == 0 then
		add[#add + 1] = ARGV[i]
	end
end
local have = redis.call('LRANGE', KEYS[2], 0, -2)
rewrite(KEYS[2], merge(have, add, 1, n), raw)
if #have + #add > tonumber(ARGV[3]) then
	trim(KEYS[2], tonumber(ARGV[2]))
end
return 1
`)

// remove removes the ids ARGV[2..] from each feed KEYS[2..] that is
// complete, and deletes those being built (whose rebuild may have read
// the ids from the database before they went): an unfollow's followee's
// ids, or a deleted message. A few ids are removed one by one, more by
// rewriting the feed once.
var remove = redisx.FencedScript(helpers, `
local gone
for i = 2, #KEYS do
	local n, raw = state(KEYS[i])
	if n then
		if n < 0 then
			redis.call('DEL', KEYS[i])
		elseif #ARGV <= 5 then
			for j = 2, #ARGV do redis.call('LREM', KEYS[i], 1, ARGV[j]) end
		else
			if not gone then
				gone = {}
				for j = 2, #ARGV do gone[ARGV[j]] = true end
			end
			local kept = {}
			for _, v in ipairs(redis.call('LRANGE', KEYS[i], 0, -2)) do
				if not gone[v] then kept[#kept + 1] = v end
			end
			rewrite(KEYS[i], kept, raw)
		end
	end
end
return 1
`)

// tombstone sets KEYS[2] for ARGV[2] seconds: a deleted message's.
var tombstone = redisx.FencedScript(helpers, `
redis.call('SET', KEYS[2], '1', 'EX', ARGV[2])
return 1
`)

// edgeTombstone sets the field ARGV[2] (a follower) of the hash KEYS[2]
// (its followee's unfollow tombstones) and makes the hash live ARGV[3]
// seconds more, or, when ARGV[3] is "0", deletes the field.
var edgeTombstone = redisx.FencedScript(helpers, `
if ARGV[3] == '0' then
	redis.call('HDEL', KEYS[2], ARGV[2])
else
	redis.call('HSET', KEYS[2], ARGV[2], '1')
	redis.call('EXPIRE', KEYS[2], ARGV[3])
end
return 1
`)
