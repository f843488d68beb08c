-- release.lua for many keys in one call, as the per-node cleanup worker sends
-- its queue. KEYS are the names, ARGV the token of each in turn. Returns one
-- 1 or 0 per key. The tokens are read with GETEX, not GET, so that a
-- tracking connection's server does not spend time quadratic in the batch
-- (see extend_many.lua).
local out = {}
for i, key in ipairs(KEYS) do
	if redis.pcall("GETEX", key) == ARGV[i] then
		redis.call("DEL", key)
		redis.call("PUBLISH", "redlock:released:" .. key, ARGV[i])
		out[i] = 1
	else
		out[i] = 0
	end
end
return out
