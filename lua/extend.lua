-- Resets the key's expiry iff it holds the caller's token ("bump" in
-- redlock_plus). KEYS[1] lock name, ARGV[1] token, ARGV[2] ttl in ms.
-- Returns 1 if extended, else 0.
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
