package redlocktest

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// errStaleConn rejects a pooled connection opened before its node's last
// Kill or Restart.
var errStaleConn = errors.New("redlocktest: connection predates a node restart")

// newNodePool returns the connection pool of one node: a plain *redis.Pool
// made by redlock.NewPool (so the library knows its address and can dial
// its own connections with it), whose idle connections opened before the
// node's last Kill or Restart (gen, bumped by both) are dropped when they
// are borrowed: they are dead, and a test should not have to retry its
// first command after a restart.
func newNodePool(addr string, gen *atomic.Int64) (*redis.Pool, error) {
	p, err := redlock.NewPool("redis://" + addr)
	if err != nil {
		return nil, err
	}
	dial := p.DialContext
	p.MaxIdle = 64
	p.IdleTimeout = time.Minute
	p.DialContext = func(ctx context.Context) (redis.Conn, error) {
		g := gen.Load()
		c, err := dial(ctx)
		if err != nil {
			return nil, err
		}
		return &genConn{Conn: c, gen: g}, nil
	}
	p.TestOnBorrow = func(c redis.Conn, _ time.Time) error {
		if gc, ok := c.(*genConn); ok && gc.gen != gen.Load() {
			return errStaleConn
		}
		return nil
	}
	return p, nil
}

// genConn is a connection tagged with the node generation it was opened in.
// It forwards the context and timeout variants that redigo's helpers need.
type genConn struct {
	redis.Conn
	gen int64
}

var (
	_ redis.ConnWithContext = (*genConn)(nil)
	_ redis.ConnWithTimeout = (*genConn)(nil)
)

func (c *genConn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	return redis.DoContext(c.Conn, ctx, cmd, args...)
}

func (c *genConn) ReceiveContext(ctx context.Context) (any, error) {
	return redis.ReceiveContext(c.Conn, ctx)
}

func (c *genConn) DoWithTimeout(d time.Duration, cmd string, args ...any) (any, error) {
	return redis.DoWithTimeout(c.Conn, d, cmd, args...)
}

func (c *genConn) ReceiveWithTimeout(d time.Duration) (any, error) {
	return redis.ReceiveWithTimeout(c.Conn, d)
}
