-- extend.lua for many locks in one call, as the batched autoextension sends
-- it. KEYS are the names, ARGV the token and ttl of each in turn. Returns one
-- 1 or 0 per key. Each key is judged alone: a key of another type (a hash
-- named like a lock) reads as "not ours" for that lock only, so one bad key
-- never fails the batch for the others. Each key is read after its write,
-- as in extend.lua, so that a tracking connection keeps tracking it.
local out = {}
for i, key in ipairs(KEYS) do
	if redis.pcall("GET", key) == ARGV[2*i-1] then
		redis.call("PEXPIRE", key, ARGV[2*i])
		out[i] = redis.call("EXISTS", key)
	else
		out[i] = 0
	end
end
return out
