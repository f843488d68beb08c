-- Resets the key's expiry iff it holds the caller's token ("bump" in
-- redlock_plus). KEYS[1] lock name, ARGV[1] token, ARGV[2] ttl in ms.
-- Returns 1 if extended, else 0. The key is read after the write, so that
-- a tracking connection (loss detection) keeps tracking it; the token is
-- read with GETEX, not GET, since the write ends whatever tracking a read
-- before it would start (see release.lua).
if redis.pcall("GETEX", KEYS[1]) == ARGV[1] then
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
	return redis.call("EXISTS", KEYS[1])
end
return 0
