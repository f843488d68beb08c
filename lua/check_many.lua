-- Whether this node still holds each of many locks, as loss detection asks
-- after invalidations: one call for a whole batch of names. KEYS are the
-- names, ARGV the token of each in turn. Returns one 1 (the key holds the
-- token) or 0 per key. The closing EXISTS makes a tracking connection track
-- every key again (an invalidation ends the tracking of its key); the
-- tokens are read with GETEX, not GET, for the reason given in
-- extend_many.lua.
local out = {}
for i, key in ipairs(KEYS) do
	if redis.pcall("GETEX", key) == ARGV[i] then
		out[i] = 1
	else
		out[i] = 0
	end
end
if #KEYS > 0 then
	redis.call("EXISTS", unpack(KEYS))
end
return out
