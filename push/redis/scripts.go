package redis

import "github.com/pushpull/pushpull/internal/redisx"

// The feeds' scripts. Each runs atomically in Redis, so a feed is never
// seen half-changed, and under the store's redisx.Fence: KEYS[1] is the
// epoch's key and ARGV[1] the epoch, which every script checks first, so
// that a process that missed a fence learns the new epoch before it
// touches a feed. A feed's sentinel is the member "e" .. epoch: its score is the
// floor (>= 0) of a complete feed, which holds every id of the timeline
// above it, or minus the token (< 0) of the rebuild under way. A feed
// without the sentinel of the current epoch is missing.

// helpers are the Lua functions the scripts share.
const helpers = `
-- trim keeps the newest cap ids of a complete feed (the sentinel, whose
-- score is below every id, has rank 0) and raises the floor to the
-- newest id it removed.
local function trim(key, cap)
	local cut = redis.call('ZCARD', key) - 1 - cap
	if cut > 0 then
		local top = redis.call('ZRANGE', key, cut, cut, 'WITHSCORES')
		redis.call('ZREMRANGEBYRANK', key, 1, cut)
		redis.call('ZADD', key, top[2], S)
	end
end
-- add adds ids (strings) to key, those above floor only unless building.
local function add(key, ids, first, floor, building, tomb)
	local batch = {}
	for i = first, #ids do
		local id = tonumber(ids[i])
		if (building or id > floor) and (tomb == nil or redis.call('EXISTS', tomb .. ids[i]) == 0) then
			batch[#batch + 1] = id
			batch[#batch + 1] = ids[i]
			if #batch >= 1000 then
				redis.call('ZADD', key, unpack(batch))
				batch = {}
			end
		end
	end
	if #batch > 0 then
		redis.call('ZADD', key, unpack(batch))
	end
end
`

// fanOut adds a post to the complete or building feeds among KEYS[2..]
// whose follower has not unfollowed its author lately (the author's
// unfollow tombstones, a hash of followers, are looked at only when
// there are any), unless the post was deleted. ARGV: epoch, id, cap, trim
// limit, the author's unfollow tombstones, the post's delete tombstone,
// then the followers of KEYS[2..] in order. It returns how many feeds it
// added to.
var fanOut = redisx.FencedScript(helpers, `
if redis.call('EXISTS', ARGV[6]) == 1 then return 0 end
local unfollowed = redis.call('EXISTS', ARGV[5]) == 1
local id = tonumber(ARGV[2])
local cap, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local n = 0
for i = 2, #KEYS do
	local sc = redis.call('ZSCORE', KEYS[i], S)
	if sc then
		sc = tonumber(sc)
		if (sc < 0 or id > sc) and not (unfollowed and redis.call('HEXISTS', ARGV[5], ARGV[5 + i]) == 1) then
			redis.call('ZADD', KEYS[i], id, ARGV[2])
			n = n + 1
			if sc >= 0 and redis.call('ZCARD', KEYS[i]) > limit + 1 then
				trim(KEYS[i], cap)
			end
		end
	end
end
return n
`)

// readFeed reads a page of the feed KEYS[2] and marks its reader active
// (the feed lives ARGV[4] seconds more). ARGV: epoch, the page's upper
// bound ("+inf" or "(" .. id), how many ids, the TTL. It returns {"-"}
// for a missing feed, else the floor and then the ids above it, newest
// first.
var readFeed = redisx.FencedScript(helpers, `
local sc = redis.call('ZSCORE', KEYS[2], S)
if not sc or tonumber(sc) < 0 then return {'-'} end
redis.call('EXPIRE', KEYS[2], ARGV[4])
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[2], ARGV[2], '(' .. sc, 'LIMIT', 0, tonumber(ARGV[3]))
table.insert(ids, 1, sc)
return ids
`)

// beginRebuild starts building the feed KEYS[2] under token ARGV[2]
// (with the TTL ARGV[3]), unless it is complete already: it returns 1 when
// it started, 0 when the feed is complete.
var beginRebuild = redisx.FencedScript(helpers, `
local sc = redis.call('ZSCORE', KEYS[2], S)
if sc and tonumber(sc) >= 0 then return 0 end
redis.call('DEL', KEYS[2])
redis.call('ZADD', KEYS[2], -tonumber(ARGV[2]), S)
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
`)

// completeRebuild ends the rebuild of token ARGV[2] of the feed KEYS[2]
// with the ids ARGV[5..] read from the database and the floor ARGV[3],
// unless another rebuild, a delete or an unfollow took the feed over
// meanwhile; ids that posts and follows added while it was building stay,
// those at or below the floor go. ARGV[4] is the cap. It returns 1 when
// the feed is complete.
var completeRebuild = redisx.FencedScript(helpers, `
local sc = redis.call('ZSCORE', KEYS[2], S)
if not sc or tonumber(sc) ~= -tonumber(ARGV[2]) then return 0 end
local floor = tonumber(ARGV[3])
add(KEYS[2], ARGV, 5, floor, false, nil)
redis.call('ZREMRANGEBYSCORE', KEYS[2], 0, floor)
redis.call('ZADD', KEYS[2], floor, S)
trim(KEYS[2], tonumber(ARGV[4]))
return 1
`)

// follow adds a new followee's newest ids ARGV[6..] to the feed KEYS[2],
// those above its floor, but deleted ones (tombstones ARGV[4] .. id).
// When the followee may have older ids than those (ARGV[5] is the lowest
// given less one, else "0"), the floor rises to ARGV[5], so that the feed
// still holds every id of the timeline above its floor. A feed being
// built is deleted: its rebuild may have read the timeline before the
// follow. ARGV: epoch, cap, trim limit, the delete tombstones' prefix,
// the floor, ids.
var follow = redisx.FencedScript(helpers, `
local sc = redis.call('ZSCORE', KEYS[2], S)
if not sc then return 0 end
sc = tonumber(sc)
if sc < 0 then
	redis.call('DEL', KEYS[2])
	return 0
end
local floor = tonumber(ARGV[5])
if floor > sc then
	redis.call('ZREMRANGEBYSCORE', KEYS[2], 0, floor)
	redis.call('ZADD', KEYS[2], floor, S)
	sc = floor
end
add(KEYS[2], ARGV, 6, sc, false, ARGV[4])
if redis.call('ZCARD', KEYS[2]) > tonumber(ARGV[3]) + 1 then
	trim(KEYS[2], tonumber(ARGV[2]))
end
return 1
`)

// remove removes the ids ARGV[2..] from each feed KEYS[2..] that is
// complete, and deletes those being built (whose rebuild may have read
// the ids from the database before they went): an unfollow's followee's
// ids, or a deleted message.
var remove = redisx.FencedScript(helpers, `
for i = 2, #KEYS do
	local sc = redis.call('ZSCORE', KEYS[i], S)
	if sc then
		if tonumber(sc) < 0 then
			redis.call('DEL', KEYS[i])
		elseif #ARGV > 1 then
			redis.call('ZREM', KEYS[i], unpack(ARGV, 2))
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
