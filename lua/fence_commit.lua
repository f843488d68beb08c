-- Commits a fencing token (the write-back): raises the stored fence to
-- ARGV[2] iff this node still holds the caller's token, so that a later
-- holder, whose SET NX can only succeed once this key is gone, reads it.
-- KEYS[1] lock name, KEYS[2] fence key; ARGV[1] token, ARGV[2] the token t
-- as a decimal string, stored as given (Lua would print a large number in
-- exponent form). The fence key has no TTL. Returns 1 if held, else 0.
if redis.pcall("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local stored = tonumber(redis.pcall("GET", KEYS[2]))
if stored == nil or stored < tonumber(ARGV[2]) then
	redis.call("SET", KEYS[2], ARGV[2])
end
return 1
