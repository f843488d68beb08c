package redlock

import "github.com/gomodule/redigo/redis"

// The three node scripts of redlock_plus. Each compares the stored token with
// the caller's before touching the key, so a client can never release,
// extend or read another holder's lock. They are loaded once per node by
// InitRedisNodes and run with EVALSHA, falling back to EVAL on NOSCRIPT.
const (
	// releaseSrc deletes the key iff it holds the token: 1 if deleted, else 0.
	releaseSrc = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`

	// extendSrc resets the key's expiry to ARGV[2] ms iff it holds the
	// token ("bump" in redlock_plus): 1 if extended, else 0.
	extendSrc = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`

	// checkSrc returns the key's remaining PTTL in ms iff it holds the
	// token ("get_ttl" in redlock_plus), else 0.
	checkSrc = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PTTL", KEYS[1])
end
return 0`
)

var (
	releaseScript = redis.NewScript(1, releaseSrc)
	extendScript  = redis.NewScript(1, extendSrc)
	checkScript   = redis.NewScript(1, checkSrc)

	// scriptSources is what InitRedisNodes loads on every node.
	scriptSources = []string{releaseSrc, extendSrc, checkSrc}
)
