package redisindex

import "github.com/pushpull/pushpull/internal/redisx"

// The indexes' scripts, each run atomically under the store's
// redisx.Fence (KEYS[1] the epoch's key, ARGV[1] the epoch). An index is a
// sorted set of a user's followees, each scored by the id of their newest
// message (0 for none), and a sentinel member S scored -1 when the index
// is complete, or -1 - token while a rebuild builds it. An index without
// the sentinel of the current epoch is missing.

// post raises the score of author ARGV[3] to the post's id ARGV[2] in the
// indexes KEYS[2..] of its followers (ARGV[5..], in order): in a complete
// index only where the author is a member (a follower who unfollowed it
// since has none), in one being built wherever the follower has no
// unfollow tombstone for the author (the hash ARGV[4], looked at only
// when it exists). It returns how many indexes it changed.
var post = redisx.FencedScript("", `
local unfollowed = redis.call('EXISTS', ARGV[4]) == 1
local n = 0
for i = 2, #KEYS do
	local sc = redis.call('ZSCORE', KEYS[i], S)
	if sc then
		if tonumber(sc) == -1 then
			n = n + redis.call('ZADD', KEYS[i], 'XX', 'GT', 'CH', ARGV[2], ARGV[3])
		elseif not (unfollowed and redis.call('HEXISTS', ARGV[4], ARGV[3 + i]) == 1) then
			n = n + redis.call('ZADD', KEYS[i], 'GT', 'CH', ARGV[2], ARGV[3])
		end
	end
end
return n
`)

// read returns the ARGV[2] followees of the complete index KEYS[2] who
// posted last, with their newest ids (member, score, ...), and makes the
// index live ARGV[3] seconds more; {"-"} when it is missing.
var read = redisx.FencedScript("", `
local sc = redis.call('ZSCORE', KEYS[2], S)
if not sc or tonumber(sc) ~= -1 then return {'-'} end
redis.call('EXPIRE', KEYS[2], ARGV[3])
return redis.call('ZREVRANGEBYSCORE', KEYS[2], '+inf', '(0', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
`)

// begin starts building the index KEYS[2] under token ARGV[2] (TTL
// ARGV[3]) unless it is complete: 1 when it started, 0 when complete.
var begin = redisx.FencedScript("", `
local sc = redis.call('ZSCORE', KEYS[2], S)
if sc and tonumber(sc) == -1 then return 0 end
redis.call('DEL', KEYS[2])
redis.call('ZADD', KEYS[2], -1 - tonumber(ARGV[2]), S)
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
`)

// complete ends the rebuild of token ARGV[2] of the index KEYS[2] with
// the followees and newest ids (score, member, ...) ARGV[3..] read from
// the database, keeping scores that posts raised meanwhile; it returns 0
// when another rebuild, a delete or an unfollow took the index over.
var complete = redisx.FencedScript("", `
local sc = redis.call('ZSCORE', KEYS[2], S)
if not sc or tonumber(sc) ~= -1 - tonumber(ARGV[2]) then return 0 end
for i = 3, #ARGV, 1000 do
	redis.call('ZADD', KEYS[2], 'GT', unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
redis.call('ZADD', KEYS[2], -1, S)
return 1
`)

// follow clears the unfollow tombstone of follower ARGV[3] in the hash
// KEYS[3] and, with ARGV[4] "0", adds the followee ARGV[2] to the index
// KEYS[2] scored 0, before the followee's newest id is read; with ARGV[4]
// that id, it raises the followee's score to it, if it is still a member.
var follow = redisx.FencedScript("", `
local sc = redis.call('ZSCORE', KEYS[2], S)
if ARGV[4] == '0' then
	redis.call('HDEL', KEYS[3], ARGV[3])
	if sc then redis.call('ZADD', KEYS[2], 'NX', 0, ARGV[2]) end
elseif sc then
	redis.call('ZADD', KEYS[2], 'XX', 'GT', ARGV[4], ARGV[2])
end
return 1
`)

// unfollow sets the unfollow tombstone of follower ARGV[3] in the hash
// KEYS[3] (live ARGV[4] seconds more), removes the followee ARGV[2] from
// the complete index KEYS[2], and deletes the index if it is being built.
var unfollow = redisx.FencedScript("", `
redis.call('HSET', KEYS[3], ARGV[3], '1')
redis.call('EXPIRE', KEYS[3], ARGV[4])
local sc = redis.call('ZSCORE', KEYS[2], S)
if sc and tonumber(sc) == -1 then
	redis.call('ZREM', KEYS[2], ARGV[2])
elseif sc then
	redis.call('DEL', KEYS[2])
end
return 1
`)

// remove deletes, of the indexes KEYS[2..] of a deleted message's
// author's followers, those being built and those where the author's
// score is the message's id ARGV[3] or newer: the score may name the
// deleted message, and only a rebuild knows the author's newest now.
// ARGV[2] is the author.
var remove = redisx.FencedScript("", `
local id = tonumber(ARGV[3])
for i = 2, #KEYS do
	local sc = redis.call('ZSCORE', KEYS[i], S)
	if sc then
		local a = redis.call('ZSCORE', KEYS[i], ARGV[2])
		if tonumber(sc) ~= -1 or (a and tonumber(a) >= id) then
			redis.call('DEL', KEYS[i])
		end
	end
end
return 1
`)
