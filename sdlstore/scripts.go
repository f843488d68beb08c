package sdlstore

import "github.com/gomodule/redigo/redis"

// The Lua scripts that stand in for the DBaaS module commands of ricsdl
// (SETIE, DELIE, MSETMPUB, SETIEMPUB, SETNXMPUB, DELMPUB, DELIEMPUB) on stock
// Redis. Each runs atomically on the namespace's instance. Values are
// compared as whole Lua strings: byte for byte, NUL bytes and length
// included (the module compared with strncmp and stopped at a NUL).
// Publishing arguments come last as (channel, message) pairs, published in
// order and only when the write happened. They go by EVALSHA, with EVAL on
// NOSCRIPT (after a restart, for example): through redigo's Script on a
// pool, through Node.Do on a node (nodes.go).
const (
	// setIfSrc: KEYS[1] key; ARGV[1] new value, ARGV[2] expected value,
	// ARGV[3..] pairs. 1 if set (the value was ARGV[2]), else 0.
	setIfSrc = `
local cur = redis.call('GET', KEYS[1])
if cur ~= ARGV[2] then
	return 0
end
redis.call('SET', KEYS[1], ARGV[1])
for i = 3, #ARGV, 2 do
	redis.call('PUBLISH', ARGV[i], ARGV[i + 1])
end
return 1`

	// setNXPubSrc: KEYS[1] key; ARGV[1] value, ARGV[2..] pairs. 1 if set
	// (the key did not exist), else 0.
	setNXPubSrc = `
if redis.call('SETNX', KEYS[1], ARGV[1]) == 0 then
	return 0
end
for i = 2, #ARGV, 2 do
	redis.call('PUBLISH', ARGV[i], ARGV[i + 1])
end
return 1`

	// delIfSrc: KEYS[1] key; ARGV[1] expected value, ARGV[2..] pairs. 1 if
	// deleted (the value was ARGV[1]), else 0.
	delIfSrc = `
local cur = redis.call('GET', KEYS[1])
if cur ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
for i = 2, #ARGV, 2 do
	redis.call('PUBLISH', ARGV[i], ARGV[i + 1])
end
return 1`

	// msetPubSrc: KEYS keys; ARGV[1..#KEYS] their values, then pairs.
	// Returns the number of keys set. SET per key keeps clear of Lua's
	// unpack limit for large writes.
	msetPubSrc = `
local n = #KEYS
for i = 1, n do
	redis.call('SET', KEYS[i], ARGV[i])
end
for i = n + 1, #ARGV, 2 do
	redis.call('PUBLISH', ARGV[i], ARGV[i + 1])
end
return n`

	// delPubSrc: KEYS keys; ARGV[1] keys already removed by earlier batches
	// of the same call, ARGV[2..] pairs. Deletes the keys and publishes iff
	// this batch and the earlier ones removed at least one key. Returns the
	// number removed by this batch.
	delPubSrc = `
local n = 0
for i = 1, #KEYS do
	n = n + redis.call('DEL', KEYS[i])
end
if n + tonumber(ARGV[1]) > 0 then
	for i = 2, #ARGV, 2 do
		redis.call('PUBLISH', ARGV[i], ARGV[i + 1])
	end
end
return n`

	// lockReleaseSrc: KEYS[1] lock key; ARGV[1] token. Deletes the key iff
	// it holds the token: 1, else 0.
	lockReleaseSrc = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0`

	// lockRefreshSrc: KEYS[1] lock key; ARGV[1] token, ARGV[2] expiry in ms.
	// Resets the expiry iff the key holds the token: 1, else 0.
	lockRefreshSrc = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`

	// lockValiditySrc: KEYS[1] lock key; ARGV[1] token. The key's PTTL in ms
	// iff it holds the token; -10 when the key is gone, -11 when another
	// token holds it (ricsdl's codes).
	lockValiditySrc = `
local token = redis.call('GET', KEYS[1])
if not token then
	return -10
end
if token ~= ARGV[1] then
	return -11
end
return redis.call('PTTL', KEYS[1])`
)

var (
	setIfScript        = newScript(1, setIfSrc)
	setNXPubScript     = newScript(1, setNXPubSrc)
	delIfScript        = newScript(1, delIfSrc)
	msetPubScript      = newScript(-1, msetPubSrc) // key count passed first
	delPubScript       = newScript(-1, delPubSrc)  // key count passed first
	lockReleaseScript  = newScript(1, lockReleaseSrc)
	lockRefreshScript  = newScript(1, lockRefreshSrc)
	lockValidityScript = newScript(1, lockValiditySrc)
)

// script is one of the Lua scripts: redigo's form for pools, and its
// source and key count for nodes.
type script struct {
	keyCount int // -1: the key count is the first argument
	src      string
	rs       *redis.Script
}

func newScript(keyCount int, src string) *script {
	return &script{keyCount: keyCount, src: src, rs: redis.NewScript(keyCount, src)}
}

// commandArgs returns the arguments of EVALSHA (head is the hash) or EVAL
// (head is the source): head, the key count, then keysAndArgs.
func (sc *script) commandArgs(head string, keysAndArgs []any) []any {
	out := make([]any, 0, 2+len(keysAndArgs))
	out = append(out, head)
	if sc.keyCount >= 0 {
		out = append(out, sc.keyCount)
	}
	return append(out, keysAndArgs...)
}
