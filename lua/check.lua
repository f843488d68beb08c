-- Returns the key's remaining time to live in ms iff it holds the caller's
-- token ("get_ttl" in redlock_plus), else 0. KEYS[1] lock name, ARGV[1] token.
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PTTL", KEYS[1])
end
return 0
