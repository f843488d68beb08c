-- Deletes the lock key iff it holds the caller's token, then announces the
-- release on the lock's channel so that waiting Acquire calls retry at once.
-- KEYS[1] lock name, ARGV[1] token. Returns 1 if deleted, else 0. redis.pcall
-- makes a key of another type read as "not ours" instead of failing.
--
-- The token is read with GETEX, not GET: GETEX is not a read-only command,
-- so a tracking connection (loss detection) does not start tracking the key
-- it is about to delete. With GET the server adds the key to its tracking
-- table and the DEL takes it out again, on every release: 1-2 µs of the
-- nodes' CPU per W2 cycle (BENCHMARKS.md, step 17).
if redis.pcall("GETEX", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	redis.call("PUBLISH", "redlock:released:" .. KEYS[1], ARGV[1])
	return 1
end
return 0
