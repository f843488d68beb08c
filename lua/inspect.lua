-- Reads a lock name's value, remaining time to live and fence in one atomic
-- step. KEYS[1] lock name, KEYS[2] its fence key. Returns {value or false,
-- pttl, fence or false}; a key of another type reads as absent.
local v = redis.pcall("GET", KEYS[1])
if type(v) == "table" then
	v = false
end
local f = redis.pcall("GET", KEYS[2])
if type(f) == "table" then
	f = false
end
return {v, redis.call("PTTL", KEYS[1]), f}
