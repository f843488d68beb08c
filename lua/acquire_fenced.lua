-- Acquires a fenced lock: SET NX PX, and on success returns the node's
-- fence value f = max(stored fence, server TIME in microseconds). The TIME
-- seed keeps tokens growing after a node restarted empty (docs/SAFETY.md).
-- KEYS[1] lock name, KEYS[2] fence key; ARGV[1] token, ARGV[2] ttl in ms.
-- Returns f, or nil when the key is taken. A fence key of another type
-- reads as 0 (redis.pcall), so it cannot block the lock.
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return false
end
local now = redis.call("TIME")
local f = tonumber(now[1]) * 1000000 + tonumber(now[2])
local stored = tonumber(redis.pcall("GET", KEYS[2]))
if stored ~= nil and stored > f then
	f = stored
end
return f
