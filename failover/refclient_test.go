package failover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// The reference client is a plain Redlock written inside the suite, with
// switches that plant the classic bugs. Run with no switch on, it is a
// second, independent implementation; with one on, it is the broken
// variant the checks must flag. It waits for every node (no early
// decision), which is slower but simpler to get right.

var errNotAcquired = errors.New("reference client: not acquired")

// refConfig is the reference client's algorithm, bugs included.
type refConfig struct {
	ttl         time.Duration
	nodeTimeout time.Duration
	driftFactor float64
	quorum      int  // the correct one is N/2+1
	plainDEL    bool // bug: release with DEL, whoever owns the key
	noDrift     bool // bug: validity = ttl - elapsed
	noElapsed   bool // bug: validity = ttl - drift
}

// refReleaseScript deletes the key only if it holds the token.
var refReleaseScript = redis.NewScript(1, `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

// refLock is one acquisition by the reference client.
type refLock struct {
	cfg   *refConfig
	pools []redlock.Pool
	name  string
	token string
}

func refLockers(cfg *refConfig, pools []redlock.Pool) func(string) locker {
	return func(name string) locker { return &refLock{cfg: cfg, pools: pools, name: name} }
}

func (l *refLock) id() string { return l.token }

// each runs op on every node at once and waits for all of them.
func (l *refLock) each(ctx context.Context, op func(ctx context.Context, c redis.Conn) (bool, error)) int {
	oks := make(chan bool, len(l.pools))
	for _, p := range l.pools {
		go func() {
			nctx, cancel := context.WithTimeout(ctx, l.cfg.nodeTimeout)
			defer cancel()
			c, err := p.GetContext(nctx)
			if err != nil {
				oks <- false
				return
			}
			defer c.Close()
			ok, err := op(nctx, c)
			oks <- ok && err == nil
		}()
	}
	n := 0
	for range l.pools {
		if <-oks {
			n++
		}
	}
	return n
}

func (l *refLock) acquire(ctx context.Context) (time.Duration, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	l.token = hex.EncodeToString(b[:])
	ttlMs := strconv.FormatInt(l.cfg.ttl.Milliseconds(), 10)
	start := time.Now()
	n := l.each(ctx, func(ctx context.Context, c redis.Conn) (bool, error) {
		v, err := redis.DoContext(c, ctx, "SET", l.name, l.token, "NX", "PX", ttlMs)
		return v != nil, err
	})
	validity := l.cfg.ttl
	if !l.cfg.noElapsed {
		validity -= time.Since(start)
	}
	if !l.cfg.noDrift {
		validity -= time.Duration(float64(l.cfg.ttl)*l.cfg.driftFactor) + 2*time.Millisecond
	}
	if n >= l.cfg.quorum && validity > 0 {
		return validity, nil
	}
	l.releaseAll(context.WithoutCancel(ctx))
	return 0, errNotAcquired
}

func (l *refLock) release(ctx context.Context) error {
	if n := l.releaseAll(ctx); n < l.cfg.quorum {
		return errors.New("reference client: released on fewer than a quorum")
	}
	return nil
}

func (l *refLock) releaseAll(ctx context.Context) int {
	return l.each(ctx, func(ctx context.Context, c redis.Conn) (bool, error) {
		if l.cfg.plainDEL {
			n, err := redis.Int(redis.DoContext(c, ctx, "DEL", l.name))
			return n == 1, err
		}
		n, err := redis.Int(refReleaseScript.DoContext(ctx, c, l.name, l.token))
		return n == 1, err
	})
}

// fastClockPool stands for a node whose clock runs fast: every TTL sent to
// it (SET ... PX ms) elapses sooner in real time, here by cut. The command
// is rewritten on its way out; the node is real and decides everything.
type fastClockPool struct {
	inner redlock.Pool
	cut   func(ms int64) int64
}

// Addr names the node in error messages.
func (p *fastClockPool) Addr() string {
	if a, ok := p.inner.(redlock.Addresser); ok {
		return a.Addr()
	}
	return "unknown"
}

func (p *fastClockPool) GetContext(ctx context.Context) (redis.Conn, error) {
	c, err := p.inner.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	return &fastClockConn{Conn: c, cut: p.cut}, nil
}

type fastClockConn struct {
	redis.Conn
	cut func(int64) int64
}

func (c *fastClockConn) rewrite(cmd string, args []any) []any {
	if cmd != "SET" {
		return args
	}
	out := append([]any(nil), args...)
	for i := 0; i+1 < len(out); i++ {
		if s, ok := out[i].(string); ok && s == "PX" {
			switch v := out[i+1].(type) {
			case string:
				if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
					out[i+1] = strconv.FormatInt(c.cut(ms), 10)
				}
			case int64:
				out[i+1] = c.cut(v)
			case int:
				out[i+1] = c.cut(int64(v))
			}
		}
	}
	return out
}

func (c *fastClockConn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	return redis.DoContext(c.Conn, ctx, cmd, c.rewrite(cmd, args)...)
}

func (c *fastClockConn) Do(cmd string, args ...any) (any, error) {
	return c.Conn.Do(cmd, c.rewrite(cmd, args)...)
}

func (c *fastClockConn) DoWithTimeout(d time.Duration, cmd string, args ...any) (any, error) {
	return redis.DoWithTimeout(c.Conn, d, cmd, c.rewrite(cmd, args)...)
}

// Send covers the library's pipelined path.
func (c *fastClockConn) Send(cmd string, args ...any) error {
	return c.Conn.Send(cmd, c.rewrite(cmd, args)...)
}

func (c *fastClockConn) ReceiveContext(ctx context.Context) (any, error) {
	return redis.ReceiveContext(c.Conn, ctx)
}

func (c *fastClockConn) ReceiveWithTimeout(d time.Duration) (any, error) {
	return redis.ReceiveWithTimeout(c.Conn, d)
}

var (
	_ redis.ConnWithContext = (*fastClockConn)(nil)
	_ redis.ConnWithTimeout = (*fastClockConn)(nil)
)

// fastClock wraps every pool.
func fastClock(pools []redlock.Pool, cut func(int64) int64) []redlock.Pool {
	out := make([]redlock.Pool, len(pools))
	for i, p := range pools {
		out[i] = &fastClockPool{inner: p, cut: cut}
	}
	return out
}
