-- Acquires a fenced lock: SET NX PX, and on success reads the node's fence
-- value f = max(stored fence, server TIME in microseconds). The TIME seed
-- keeps tokens growing after a node restarted empty (docs/SAFETY.md).
--
-- The caller also proposes a token g (its own clock in microseconds). When
-- g is above the stored fence and within w of this node's clock, the node
-- commits g at once (the write-back of the two-round scheme, done in the
-- same script while the key is held): a quorum of such commits issues g in
-- one round trip. Otherwise nothing is written, and the caller mints
-- 1 + max f and writes it back with fence_commit.lua.
--
-- KEYS[1] lock name, KEYS[2] fence key; ARGV[1] token, ARGV[2] ttl in ms,
-- ARGV[3] g as a decimal string, ARGV[4] w in microseconds.
-- Returns nil when the key is taken; else {1, g} when g was committed, or
-- {0, f}. A fence key of another type reads as 0 (redis.pcall), so it
-- cannot block the lock. With loss detection on, the lock key is tracked
-- by the detector's first check of the holding, as a plain SET's is.
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return false
end
local now = redis.call("TIME")
local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
local stored = tonumber(redis.pcall("GET", KEYS[2])) or 0
local g = tonumber(ARGV[3])
local w = tonumber(ARGV[4])
if g > stored and g > clock - w and g <= clock + w then
	redis.call("SET", KEYS[2], ARGV[3])
	return {1, g}
end
if stored > clock then
	return {0, stored}
end
return {0, clock}
