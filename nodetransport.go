package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/gomodule/redigo/redis"
)

// nodeTransport carries commands to a Node of another client: each command
// runs in a goroutine of the owner, bounded by the node timeout, like the
// pool transport. The client may pipeline them (rueidis does); their order
// is not known, so the transport is not FIFO.
type nodeTransport struct {
	node        Node
	o           *owner
	nodeTimeout time.Duration
}

// nodeTransportOf returns the transport of a Node of another client: a
// batching one when the node can batch.
func nodeTransportOf(nd Node, o *owner, nodeTimeout time.Duration) transport {
	if b, ok := nd.(Batcher); ok {
		return &batchTransport{node: b, o: o, nodeTimeout: nodeTimeout}
	}
	return &nodeTransport{node: nd, o: o, nodeTimeout: nodeTimeout}
}

func (t *nodeTransport) start(ctx context.Context, c *call) {
	if c.cmd.detached {
		ctx = context.WithoutCancel(ctx)
	}
	if !t.o.spawn(func() { t.run(ctx, c) }) {
		c.deliver(reply{err: c.n.wrap(ErrClosed)})
	}
}

func (t *nodeTransport) run(ctx context.Context, c *call) {
	ctx, cancel := context.WithTimeout(ctx, t.nodeTimeout)
	defer cancel()
	var v any
	var err error
	if s := c.cmd.script; s != nil {
		var keys []string
		var args []any
		if keys, args, err = scriptArgs(nil, c.cmd.args[1:]); err == nil {
			v, err = t.node.RunScript(ctx, s.pub, keys, args...)
		}
	} else {
		v, err = t.node.Do(ctx, c.cmd.name, c.cmd.args...)
	}
	v, err = fromNode(v, err)
	c.deliver(c.n.judge(c.cmd, v, err))
	c.recycle()
}

func (t *nodeTransport) fifo() bool { return false }

// close does nothing: the clients are the caller's.
func (t *nodeTransport) close() {}

// fromNode turns a Node's reply into the forms the reply readers take,
// which are redigo's: bulk strings as []byte and error replies as
// redis.Error.
func fromNode(v any, err error) (any, error) {
	if err != nil {
		var re ReplyError
		if errors.As(err, &re) {
			return nil, redis.Error(re)
		}
		return nil, err
	}
	return redigoValue(v), nil
}

// redigoValue converts strings, nested ones included, to []byte.
func redigoValue(v any) any {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redigoValue(e)
		}
		return out
	case ReplyError:
		return redis.Error(v)
	}
	return v
}
