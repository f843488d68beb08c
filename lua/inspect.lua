-- Reads a lock name's value and remaining time to live in one atomic step.
-- KEYS[1] lock name. Returns {value or false, pttl}; a key of another type
-- reads as absent.
local v = redis.pcall("GET", KEYS[1])
if type(v) == "table" then
	v = false
end
return {v, redis.call("PTTL", KEYS[1])}
