-- extend.lua for many locks in one call, as the batched autoextension sends
-- it. KEYS are the names; ARGV the token of each in turn, then the TTLs as
-- runs: a count and a TTL in ms for that many keys in turn, so that a batch
-- of locks of one TTL carries it once. Returns a string of one character
-- per key, "1" extended or "0" not: one bulk string costs both sides far
-- less than an array of a thousand integers. Each key is judged alone: a
-- key of another type (a hash named like a lock) reads as "not ours" for
-- that lock only, so one bad key never fails the batch for the others.
--
-- Tracking (loss detection) needs every key read after its write. The
-- tokens are read with GETEX, which is not a read-only command: Redis 7.0
-- tracks all of a script's KEYS at each read-only command the script runs,
-- so a GET per key would cost the server time quadratic in the batch (43 ms
-- for 1,000 keys, against 1.5 ms). One EXISTS of every key at the end
-- tracks them all at once.
local n = #KEYS
local out = {}
local i = 1
for r = n + 1, #ARGV - 1, 2 do
	local ttl = ARGV[r + 1]
	for _ = 1, tonumber(ARGV[r]) do
		if redis.pcall("GETEX", KEYS[i]) == ARGV[i] then
			redis.call("PEXPIRE", KEYS[i], ttl)
			out[i] = "1"
		else
			out[i] = "0"
		end
		i = i + 1
	end
end
if n > 0 then
	redis.call("EXISTS", unpack(KEYS))
end
return table.concat(out)
