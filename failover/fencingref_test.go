package failover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// The fenced reference client mints tokens the two broken ways the
// fencing checks must catch: one round of INCR and max, without the
// write-back (Kleppmann's objection), and the write-back without the
// server-TIME seed (fine until nodes restart empty at once).

// refFenceScripts of each broken variant: SET NX PX, then the node's
// fence value, or nil when the key is taken.
var (
	refIncrAcquire = redis.NewScript(2, `if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return redis.call("INCR", KEYS[2])
end
return false`)
	refNoSeedAcquire = redis.NewScript(2, `if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return tonumber(redis.call("GET", KEYS[2]) or "0")
end
return false`)
	refCommit = redis.NewScript(2, `if redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end
if tonumber(redis.call("GET", KEYS[2]) or "0") < tonumber(ARGV[2]) then
	redis.call("SET", KEYS[2], ARGV[2])
end
return 1`)
)

// refFencedLock is one fenced acquisition by the reference client: with
// writeBack false it is the one-round INCR max, with it true the
// write-back seeded by nothing but the stored fence.
type refFencedLock struct {
	refLock
	writeBack bool
	token     int64
}

func refFencedLockers(cfg *refConfig, pools []redlock.Pool, writeBack bool) func(string) locker {
	return func(name string) locker {
		return &refFencedLock{refLock: refLock{cfg: cfg, pools: pools, name: name}, writeBack: writeBack}
	}
}

func (l *refFencedLock) fence() int64 { return l.token }

func (l *refFencedLock) acquire(ctx context.Context) (time.Duration, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	l.refLock.token = hex.EncodeToString(b[:])
	fenceKey := l.name + redlock.FenceSuffix
	script := refIncrAcquire
	if l.writeBack {
		script = refNoSeedAcquire
	}
	start := time.Now()
	var mu sync.Mutex
	var most int64
	n := l.each(ctx, func(ctx context.Context, c redis.Conn) (bool, error) {
		v, err := redis.Int64(script.DoContext(ctx, c, l.name, fenceKey, l.refLock.token, l.cfg.ttl.Milliseconds()))
		if err != nil {
			return false, err
		}
		mu.Lock()
		most = max(most, v)
		mu.Unlock()
		return true, nil
	})
	ok := n >= l.cfg.quorum
	l.token = most
	if ok && l.writeBack {
		l.token = most + 1
		t := strconv.FormatInt(l.token, 10)
		ok = l.each(ctx, func(ctx context.Context, c redis.Conn) (bool, error) {
			n, err := redis.Int(refCommit.DoContext(ctx, c, l.name, fenceKey, l.refLock.token, t))
			return n == 1, err
		}) >= l.cfg.quorum
	}
	validity := l.cfg.ttl - time.Since(start) - time.Duration(float64(l.cfg.ttl)*l.cfg.driftFactor) - 2*time.Millisecond
	if ok && validity > 0 {
		return validity, nil
	}
	l.releaseAll(context.WithoutCancel(ctx))
	return 0, errNotAcquired
}
