package redlock

import "github.com/gomodule/redigo/redis"

// The node scripts. Each compares the stored token with the caller's before
// touching a key, so a client can never release, extend or read another
// holder's lock. InitRedisNodes and every pipelined connection load them;
// they run with EVALSHA and fall back to EVAL on NOSCRIPT. All are created
// with a variable key count: their arguments start with the number of keys.
const (
	// releaseSrc deletes the key iff it holds the token, and then announces
	// the release with the token on the lock's channel (releaseChannelPrefix
	// + key), waking the Acquire calls that wait for it instead of polling:
	// 1 if deleted, else 0. It is redlock_plus's release script plus the
	// announcement. Cleaning up after a failed attempt uses it too, since a
	// waiter may be blocked by the partial keys being deleted.
	releaseSrc = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	redis.call("PUBLISH", "` + releaseChannelPrefix + `" .. KEYS[1], ARGV[1])
	return 1
end
return 0`

	// extendSrc resets the key's expiry to ARGV[2] ms iff it holds the
	// token ("bump" in redlock_plus): 1 if extended, else 0.
	extendSrc = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`

	// extendManySrc is extendSrc for many locks in one call, as the batched
	// autoextension sends it: KEYS are the names, ARGV the token and TTL of
	// each in turn; the reply lists 1 or 0 per key.
	extendManySrc = `
local out = {}
for i, key in ipairs(KEYS) do
	if redis.call("GET", key) == ARGV[2*i-1] then
		out[i] = redis.call("PEXPIRE", key, ARGV[2*i])
	else
		out[i] = 0
	end
end
return out`

	// checkSrc returns the key's remaining PTTL in ms iff it holds the
	// token ("get_ttl" in redlock_plus), else 0.
	checkSrc = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PTTL", KEYS[1])
end
return 0`
)

// releaseChannelPrefix names the channel on which Release announces a lock.
const releaseChannelPrefix = "redlock:released:"

var (
	releaseScript    = newScript(releaseSrc)
	extendScript     = newScript(extendSrc)
	extendManyScript = newScript(extendManySrc)
	checkScript      = newScript(checkSrc)
)

// sources maps every script of the package to its Lua source, for SCRIPT
// LOAD and for the EVAL fallback.
var sources = map[*redis.Script]string{}

// hashArgs holds every script's SHA1 as a command argument, boxed once.
var hashArgs = map[*redis.Script]any{}

// newScript registers a script taking its key count as first argument.
func newScript(src string) *redis.Script {
	s := redis.NewScript(-1, src)
	sources[s] = src
	hashArgs[s] = s.Hash()
	return s
}

// sourceOf returns a script's Lua source.
func sourceOf(s *redis.Script) string { return sources[s] }

// scriptSources lists the sources of every script, to load on a node.
func scriptSources() []string {
	out := make([]string, 0, len(sources))
	for _, src := range sources {
		out = append(out, src)
	}
	return out
}
