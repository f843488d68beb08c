-- Registers a reader of a read-write lock iff no writer holds it and none
-- waits. The reader's lease is a key of its own holding its token, which
-- expires by this server's clock (PX), and is extended and released like a
-- lock key; its id is listed in the readers' set, where writers find it.
-- KEYS[1] the reader's key, KEYS[2] the writer key, KEYS[3] the writer
-- intent key, KEYS[4] the readers' set. ARGV[1] token, ARGV[2] ttl in ms,
-- ARGV[3] the reader's id. Returns 1 if registered, else 0. The reader's
-- key is read last, so that a tracking connection tracks it (lossdetection.go).
if redis.call("EXISTS", KEYS[2]) == 1 or redis.call("EXISTS", KEYS[3]) == 1 then
	return 0
end
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return 0
end
redis.call("SADD", KEYS[4], ARGV[3])
return redis.call("EXISTS", KEYS[1])
