package redlocktest

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// nodePool is the connection pool of one node. It knows its address (for
// redlock's error messages) and drops, when they are borrowed, the idle
// connections opened before the node's last Kill or Restart: they are dead,
// and a test should not have to retry its first command after a restart.
type nodePool struct {
	*redis.Pool
	addr string
	gen  *atomic.Int64 // bumped by Kill and Restart
}

var (
	_ redlock.Pool      = (*nodePool)(nil)
	_ redlock.Addresser = (*nodePool)(nil)
)

// Addr returns the node's client address (its proxy).
func (p *nodePool) Addr() string { return p.addr }

var errStaleConn = errors.New("redlocktest: connection predates a node restart")

func newNodePool(addr string) *nodePool {
	p := &nodePool{addr: addr, gen: new(atomic.Int64)}
	p.Pool = &redis.Pool{
		MaxIdle:     64,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			gen := p.gen.Load()
			c, err := redis.DialContext(ctx, "tcp", addr, redis.DialConnectTimeout(5*time.Second))
			if err != nil {
				return nil, err
			}
			return &genConn{Conn: c, gen: gen}, nil
		},
		TestOnBorrow: func(c redis.Conn, _ time.Time) error {
			if gc, ok := c.(*genConn); ok && gc.gen != p.gen.Load() {
				return errStaleConn
			}
			return nil
		},
	}
	return p
}

// genConn is a connection tagged with the node generation it was opened in.
// It forwards the context and timeout variants that redis.DoContext needs.
type genConn struct {
	redis.Conn
	gen int64
}

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
