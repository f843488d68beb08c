-- Acquires a lock: SET NX PX, then reads the key back, so that a
-- connection with client-side caching on (CLIENT TRACKING, loss detection)
-- tracks it: Redis tracks the keys a connection reads, and a write of the
-- connection itself does not count. KEYS[1] lock name; ARGV[1] token,
-- ARGV[2] ttl in ms. Returns 1 if set, else 0.
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return redis.call("EXISTS", KEYS[1])
end
return 0
