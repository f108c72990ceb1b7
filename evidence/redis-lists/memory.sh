#!/bin/sh
# What 10,000 full feeds take in Redis (used_memory, used_memory_dataset):
# each a list of 900 ids (the default cap of 800 and the 100 a feed takes
# before a trim) between 1,000,000 and 1,200,000 (a paper-scale run numbers its messages from 1 to about 1,000,000 and more), and
# its sentinel; the same ids as sorted sets kept as listpacks for
# comparison. Usage: memory.sh PORT (a redis-server of your own, started
# with --zset-max-listpack-entries 1024; the script flushes it).
set -e
R="redis-cli -p ${1:?port}"
FILL='
local users, ids, kind = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
for u = 1, users do
	local key = "f" .. u
	local b = {}
	if kind == "list" then
		for i = ids, 1, -1 do b[#b + 1] = 1000000 + u * 10 + i * 111 end
		b[#b + 1] = "e0123456789abcdef:999"
		redis.call("RPUSH", key, unpack(b))
	else
		b[1], b[2] = -1, "e0123456789abcdef"
		for i = 1, ids do
			local id = 1000000 + u * 10 + i * 111
			b[#b + 1] = id
			b[#b + 1] = id
		end
		redis.call("ZADD", key, unpack(b))
	end
end
return redis.call("OBJECT", "ENCODING", "f1")'
for kind in list zset; do
	$R flushall >/dev/null
	base=$($R info memory | sed -n 's/^used_memory_dataset:\([0-9]*\).*/\1/p')
	enc=$($R eval "$FILL" 0 10000 900 $kind)
	$R info memory | tr -d '\r' | awk -v kind=$kind -v enc=$enc -v base=$base -F: '
		$1 == "used_memory" { used = $2 }
		$1 == "used_memory_dataset" { data = $2 }
		END { printf "%s (%s): used_memory %.1f MB, used_memory_dataset %.1f MB (%.0f bytes a feed)\n", kind, enc, used / 1e6, data / 1e6, (data - base) / 10000 }'
done
$R flushall >/dev/null
