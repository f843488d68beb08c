-- Takes the writer key of a read-write lock iff no writer holds it and no
-- live reader is registered. A reader is live while its key exists: its
-- lease expires by this server's clock. When readers are in, the writer
-- records its intent instead, which keeps new readers out until it gets
-- in (no writer starvation); another writer's intent makes it wait its turn.
-- KEYS[1] the writer key, KEYS[2] the intent key, KEYS[3] the readers' set.
-- ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] the writer's id, ARGV[4] the
-- intent's ttl in ms, ARGV[5] the prefix of the readers' keys (their id
-- follows). Reader keys are derived here, so this runs on standalone nodes,
-- not Redis Cluster. Returns 1 if taken, else 0. The writer key is read
-- last, so that a tracking connection tracks it (lossdetection.go).
if redis.call("EXISTS", KEYS[1]) == 1 then
	return 0
end
local intent = redis.call("GET", KEYS[2])
if intent and intent ~= ARGV[3] then
	return 0
end
local live = 0
for _, id in ipairs(redis.call("SMEMBERS", KEYS[3])) do
	if redis.call("EXISTS", ARGV[5] .. id) == 1 then
		live = live + 1
	else
		redis.call("SREM", KEYS[3], id)
	end
end
if live > 0 then
	redis.call("SET", KEYS[2], ARGV[3], "PX", ARGV[4])
	return 0
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
if intent then
	redis.call("DEL", KEYS[2])
end
return redis.call("EXISTS", KEYS[1])
