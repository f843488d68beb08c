-- Deletes the lock key iff it holds the caller's token, then announces the
-- release on the lock's channel so that waiting Acquire calls retry at once.
-- KEYS[1] lock name, ARGV[1] token. Returns 1 if deleted, else 0. redis.pcall
-- makes a key of another type read as "not ours" instead of failing.
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	redis.call("PUBLISH", "redlock:released:" .. KEYS[1], ARGV[1])
	return 1
end
return 0
