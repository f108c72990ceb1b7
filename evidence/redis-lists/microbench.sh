#!/bin/sh
# Redis CPU of one follower's step of a post's fan-out, by feed structure:
# each figure is the server's own time (TIME inside one Lua script) per
# feed, over 2,000 feeds, so that the feeds do not all sit in the CPU's
# cache. Usage: microbench.sh PORT (a redis-server of your own, started
# with --zset-max-listpack-entries 1024 as the sandbox starts it; the
# script flushes it).
set -e
R="redis-cli -p ${1:?port}"
$R flushall >/dev/null
N=2000

# Feeds of 900 ids and a sentinel: a sorted set as a listpack (score =
# member = id), the same as a skiplist, a listpack with negated scores
# (the newest first), a small listpack of 64 ids, and a list (newest
# first, the sentinel last).
SETUP='
local n, e, p, kind = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]
for k = 1, n do
	local key = p .. k
	redis.call("DEL", key)
	if kind == "list" then
		local b = {}
		for i = e, 1, -1 do b[#b + 1] = 1000000 + i * 7 end
		b[#b + 1] = "e0123456789abcdef:999"
		redis.call("RPUSH", key, unpack(b))
	else
		local b = {-1, "e0123456789abcdef"}
		if kind == "neg" then b[1] = -1e15 end
		for i = 1, e do
			local id = 1000000 + i * 7
			if kind == "neg" then b[#b + 1] = -id else b[#b + 1] = id end
			b[#b + 1] = tostring(id)
		end
		redis.call("ZADD", key, unpack(b))
	end
end
return {redis.call("OBJECT", "ENCODING", p .. "1"), redis.call("MEMORY", "USAGE", p .. "1")}'
echo "setup: encoding, bytes of one feed"
$R eval "$SETUP" 0 $N 900 lp: zset | tr '\n' ' '; echo " sorted set, listpack"
$R config set zset-max-listpack-entries 128 >/dev/null
$R eval "$SETUP" 0 $N 900 sk: zset | tr '\n' ' '; echo " sorted set, skiplist"
$R config set zset-max-listpack-entries 1024 >/dev/null
$R eval "$SETUP" 0 $N 900 neg: neg | tr '\n' ' '; echo " sorted set, listpack, negated scores"
$R eval "$SETUP" 0 $N 64 small: zset | tr '\n' ' '; echo " sorted set of 64, listpack"
$R eval "$SETUP" 0 $N 900 l: list | tr '\n' ' '; echo " list"

# One step per feed: what the fan-out script does for one follower.
STEP='
local n, p, op, id = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4])
local t0 = redis.call("TIME")
for k = 1, n do
	local key = p .. k
	if op == "zadd" then
		redis.call("ZADD", key, id, tostring(id))
	elseif op == "zaddneg" then
		redis.call("ZADD", key, -id, tostring(id))
	elseif op == "sortedset" then -- the sorted-set fan-out: sentinel, add, size
		redis.call("ZSCORE", key, "e0123456789abcdef")
		redis.call("ZADD", key, id, tostring(id))
		redis.call("ZCARD", key)
	elseif op == "list" then -- the list fan-out: head, push (its length decides a trim)
		local h = tonumber(redis.call("LINDEX", key, 0))
		if h and id > h then redis.call("LPUSH", key, id) end
	end
end
local t1 = redis.call("TIME")
return tostring(((t1[1] - t0[1]) * 1e6 + (t1[2] - t0[2])) / n)'
echo "µs per feed:"
echo "  ZADD, listpack of 900:                 $($R eval "$STEP" 0 $N lp: zadd 5000000)"
echo "  ZADD, skiplist of 900:                 $($R eval "$STEP" 0 $N sk: zadd 5000000)"
echo "  ZADD, listpack of 900, negated scores: $($R eval "$STEP" 0 $N neg: zaddneg 5000000)"
echo "  ZADD, listpack of 64:                  $($R eval "$STEP" 0 $N small: zadd 5000000)"
echo "  sorted-set step, listpack of 900:      $($R eval "$STEP" 0 $N lp: sortedset 5000001)"
echo "  sorted-set step, skiplist of 900:      $($R eval "$STEP" 0 $N sk: sortedset 5000001)"
echo "  list step, list of 900:                $($R eval "$STEP" 0 $N l: list 5000001)"

# A feed of 800 ids written whole, as a rebuild writes it.
BUILD='
local n, kind = tonumber(ARGV[1]), ARGV[2]
local b = {}
for i = 800, 1, -1 do
	if kind == "zset" then b[#b + 1] = 1000000 + i * 7 end
	b[#b + 1] = tostring(1000000 + i * 7)
end
local t0 = redis.call("TIME")
for k = 1, n do
	redis.call("DEL", "rb")
	if kind == "zset" then
		redis.call("ZADD", "rb", -1, "e0123456789abcdef")
		redis.call("ZADD", "rb", unpack(b))
	else
		redis.call("RPUSH", "rb", unpack(b))
		redis.call("RPUSH", "rb", "e0123456789abcdef:999")
	end
end
local t1 = redis.call("TIME")
return tostring(((t1[1] - t0[1]) * 1e6 + (t1[2] - t0[2])) / n)'
echo "µs per feed of 800 ids written whole:"
echo "  ZADD into a listpack: $($R eval "$BUILD" 0 100 zset)"
echo "  RPUSH into a list:    $($R eval "$BUILD" 0 100 list)"
$R flushall >/dev/null
