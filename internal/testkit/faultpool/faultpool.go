// Package faultpool wraps a redlock.Pool to inject faults at the client side
// of a real connection: replies that are lost after the server executed the
// command, and connections that cannot be obtained. The server itself is
// real; only the client's view of it is disturbed.
package faultpool

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// ErrInjected is returned by connections whose fault is on.
var ErrInjected = errors.New("faultpool: injected fault")

// Pool wraps a pool. With DelayNanos set, every reply is held back that
// long. With LoseReplies on, every command is executed by the
// server but its reply is withheld until the caller's context ends, as when
// the connection is reset after the command was sent. With Refuse on,
// GetContext fails at once. With BreakAfter set to n > 0, the commands
// started after the n-th fail without being sent, as when a node becomes
// unreachable between two commands.
type Pool struct {
	Inner interface {
		GetContext(ctx context.Context) (redis.Conn, error)
	}
	LoseReplies atomic.Bool
	Refuse      atomic.Bool
	DelayNanos  atomic.Int64 // added before each reply is returned
	Commands    atomic.Int64 // commands that reached the server
	BreakAfter  atomic.Int64 // if > 0, commands started beyond it fail unsent
	started     atomic.Int64
}

// GetContext returns a wrapped connection.
func (p *Pool) GetContext(ctx context.Context) (redis.Conn, error) {
	if p.Refuse.Load() {
		return nil, ErrInjected
	}
	c, err := p.Inner.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, p: p}, nil
}

type conn struct {
	redis.Conn
	p *Pool
}

// DoContext runs the command for real, then loses the reply if asked to.
func (c *conn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	if n, i := c.p.BreakAfter.Load(), c.p.started.Add(1); n > 0 && i > n {
		return nil, ErrInjected
	}
	v, err := redis.DoContext(c.Conn, context.WithoutCancel(ctx), cmd, args...)
	c.p.Commands.Add(1)
	if d := time.Duration(c.p.DelayNanos.Load()); d > 0 {
		time.Sleep(d)
	}
	if c.p.LoseReplies.Load() {
		<-ctx.Done()
		return nil, errors.Join(ErrInjected, ctx.Err())
	}
	return v, err
}

// Do runs the command without a context.
func (c *conn) Do(cmd string, args ...any) (any, error) {
	return c.DoContext(context.Background(), cmd, args...)
}

// ReceiveContext completes redis.ConnWithContext; it is not faulted.
func (c *conn) ReceiveContext(ctx context.Context) (any, error) {
	return redis.ReceiveContext(c.Conn, ctx)
}

var _ redis.ConnWithContext = (*conn)(nil)
