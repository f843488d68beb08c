-- Sets every key of a multi-lock to the caller's token, or none of them:
-- if any key exists (held by anyone, or of another type) nothing is set.
-- Scripts run atomically, so no other client sees a part of the set. KEYS
-- the names in the multi-lock's fixed (sorted) order, ARGV[1] token, ARGV[2]
-- ttl in ms. Returns 1 if every key was set, else 0. Each key is read after
-- its write, so that a tracking connection tracks them (lossdetection.go).
for _, key in ipairs(KEYS) do
	if redis.call("EXISTS", key) == 1 then
		return 0
	end
end
for _, key in ipairs(KEYS) do
	redis.call("SET", key, ARGV[1], "PX", ARGV[2])
	redis.call("EXISTS", key)
end
return 1
