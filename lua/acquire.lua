-- The attempt's SET NX PX as a script, for the transports on which the
-- node guard needs the node's clock and LASTSAVE from the same execution
-- as the SET (guard.go): a pipelined connection sends the plain SET and a
-- TIME behind it instead. KEYS[1] lock name, ARGV[1] token, ARGV[2] ttl in
-- ms. Returns the SET's reply: OK, or nil when the key is taken.
return redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
