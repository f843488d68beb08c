-- extend.lua for many locks in one call, as the batched autoextension sends
-- it. KEYS are the names, ARGV the token and ttl of each in turn. Returns a
-- string of one character per key, "1" extended or "0" not: one bulk string
-- costs both sides far less than an array of a thousand integers. Each key is judged alone: a key of another type (a hash
-- named like a lock) reads as "not ours" for that lock only, so one bad key
-- never fails the batch for the others.
--
-- Tracking (loss detection) needs every key read after its write. The
-- tokens are read with GETEX, which is not a read-only command: Redis 7.0
-- tracks all of a script's KEYS at each read-only command the script runs,
-- so a GET per key would cost the server time quadratic in the batch (43 ms
-- for 1,000 keys, against 1.5 ms). One EXISTS of every key at the end
-- tracks them all at once.
local out = {}
for i, key in ipairs(KEYS) do
	if redis.pcall("GETEX", key) == ARGV[2*i-1] then
		redis.call("PEXPIRE", key, ARGV[2*i])
		out[i] = "1"
	else
		out[i] = "0"
	end
end
if #KEYS > 0 then
	redis.call("EXISTS", unpack(KEYS))
end
return table.concat(out)
